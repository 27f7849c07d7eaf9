// Managing takes from the Library page: rename in place, delete with confirmation.
import assert from 'node:assert/strict';
import path from 'node:path';
import { byTestId, invoke, openPage, requireEnv, visibleErrors, waitFor, waitForApp, waitForJob, writeSineWav } from './helpers.mjs';

const workDir = requireEnv('E2E_TMP');
const row = (id) => $(`${byTestId('take-row')}[data-take-id="${id}"]`);

async function importSine(name, freq) {
  const file = writeSineWav(path.join(workDir, `${name}.wav`), { seconds: 1, freq });
  const job = await waitForJob(await invoke('import_files', { paths: [file], voiceId: null }));
  assert.equal(job.state, 'succeeded', `importing ${name} ended ${job.state}: ${job.error}`);
  const take = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === name);
  assert.ok(take, `no take named ${name} after its import`);
  return take;
}

describe('library', () => {
  before(async () => {
    await waitForApp();
    await openPage('library', byTestId('library-title'));
  });

  it('renames a take in place', async () => {
    const take = await importSine('rename-me', 330);
    const r = await row(take.id);
    await r.waitForDisplayed({ timeout: 10000 });
    assert.equal(await r.getAttribute('data-take-name'), 'rename-me');

    await r.$(byTestId('take-rename')).click();
    const input = await r.$(byTestId('take-rename-input'));
    await input.waitForDisplayed();
    assert.equal(await input.getValue(), 'rename-me');
    // Type like a user into the focused field, whose text the UI selects on opening. (WebDriver's
    // element clear would blur the field, and blur commits the edit.)
    assert.ok(await input.isFocused(), 'the rename field is not focused');
    await browser.keys([...'renamed take']);
    await browser.keys('Enter');

    await waitFor(async () => (await r.getAttribute('data-take-name')) === 'renamed take', {
      timeout: 10000,
      message: async () => `the row still reads "${await r.getAttribute('data-take-name')}"; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    const stored = (await invoke('list_takes', { voiceId: null })).find((t) => t.id === take.id);
    assert.equal(stored.name, 'renamed take', 'the backend kept the old name');
  });

  it('deletes a take after confirmation', async () => {
    const take = await importSine('delete-me', 550);
    const r = await row(take.id);
    await r.waitForDisplayed({ timeout: 10000 });

    await r.$(byTestId('take-delete')).click();
    // Nothing is deleted until confirmed; "Keep" backs out.
    await r.$(byTestId('take-delete-cancel')).click();
    assert.ok(await r.$(byTestId('take-delete')).isDisplayed(), 'cancelling did not restore the row');
    assert.ok((await invoke('list_takes', { voiceId: null })).some((t) => t.id === take.id));

    await r.$(byTestId('take-delete')).click();
    await r.$(byTestId('take-delete-confirm')).click();
    await waitFor(async () => !(await r.isExisting()), {
      timeout: 10000,
      message: async () => `the deleted take's row is still listed; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal((await invoke('list_takes', { voiceId: null })).some((t) => t.id === take.id), false, 'the backend still lists it');
    assert.deepEqual(await visibleErrors(), []);
  });
});
