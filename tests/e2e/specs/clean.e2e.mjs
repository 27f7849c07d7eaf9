// A take imported the way a drop does, cleaned from the Clean page with the "Keep natural"
// preset (no model needed): the job finishes, the result is listed under its source, and the
// A/B player switches original → cleaned without losing the position or restarting; a 10 s
// preview plays without saving anything.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  byTestId,
  invoke,
  openPage,
  requireEnv,
  screenshot,
  visibleErrors,
  waitFor,
  waitForApp,
  waitForJob,
  writeSineWav,
} from './helpers.mjs';

const workDir = requireEnv('E2E_TMP');

/** An A/B player's state as its data attributes show it, read in one round trip. */
function abState(testid) {
  return browser.execute((testid) => {
    const el = document.querySelector(`[data-testid="${testid}"]`);
    return el && { ...el.dataset, position: Number(el.dataset.position), starts: Number(el.dataset.starts) };
  }, testid);
}

describe('clean', () => {
  let takeId;

  before(async () => {
    await waitForApp();
    const source = writeSineWav(path.join(workDir, 'clean-source.wav'), { seconds: 12, freq: 330, amplitude: 0.3 });
    const job = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    takeId = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'clean-source').id;
  });

  it('cleans a take with the "keep natural" preset and lists the result under its source', async () => {
    assert.ok(takeId, 'needs the imported take');
    await openPage('clean', byTestId('clean-steps'));
    await $(byTestId('clean-take-picker')).selectByAttribute('value', String(takeId));
    await $(`${byTestId('clean-input')}[data-label="clean-source"]`).waitForDisplayed({ timeout: 5000 });
    await $(byTestId('clean-preset-natural')).click();
    assert.equal(await $(byTestId('clean-isolation')).getValue(), 'none');
    await $(byTestId('clean-submit')).click();

    const row = () => $(byTestId('job-row'));
    await waitFor(async () => ['succeeded', 'failed'].includes(await row().getAttribute('data-job-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the cleaning job did not finish: ${await row().getText()}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await row().getAttribute('data-job-state'), 'succeeded', await row().getText());

    const source = $(`${byTestId('clean-source')}[data-source-id="${takeId}"]`);
    await source.waitForDisplayed({ timeout: 10000 });
    const result = source.$(byTestId('clean-result'));
    await result.waitForDisplayed({ timeout: 10000 });
    assert.equal(await result.getAttribute('data-operation'), 'enhance');
    const resultId = Number(await result.getAttribute('data-take-id'));
    const derived = await invoke('list_derived_takes', { sourceTakeId: takeId });
    assert.deepEqual(derived.map((d) => d.take.id), [resultId]);
    assert.equal(derived[0].take.name, 'clean-source (enhanced)');
    assert.equal(derived[0].link.params.options.loudness_lufs, -23);
    await screenshot('e2e-clean.png');
  });

  it('switches A/B between original and cleaned at the same position', async () => {
    const source = $(`${byTestId('clean-source')}[data-source-id="${takeId}"]`);
    await source.$(byTestId('clean-result-compare')).click();
    const ab = source.$(byTestId('clean-ab'));
    await ab.waitForDisplayed({ timeout: 10000 });
    assert.equal(await ab.getAttribute('data-active'), 'cleaned');
    await source.$(byTestId('clean-ab-play')).click();
    let before;
    await waitFor(
      async () => {
        before = await abState('clean-ab');
        return before.state === 'playing' && before.position > 0.4;
      },
      { timeout: 15000, interval: 50, message: async () => `playback did not advance: ${JSON.stringify(before)}; errors: ${JSON.stringify(await visibleErrors())}` },
    );
    await source.$(`${byTestId('clean-ab-slot')}[data-slot="original"]`).click();
    let after;
    await waitFor(async () => (after = await abState('clean-ab')).active === 'original', {
      timeout: 5000,
      message: () => `the original was not selected: ${JSON.stringify(after)}`,
    });
    assert.equal(after.state, 'playing');
    assert.equal(after.starts, before.starts, 'switching restarted the sources');
    assert.ok(after.position >= before.position, `the position went back: ${before.position} → ${after.position}`);
    assert.ok(after.position < before.position + 1, `the position jumped: ${before.position} → ${after.position}`);
    await source.$(byTestId('clean-ab-play')).click();
    assert.deepEqual(await visibleErrors(), []);
  });

  it('previews the cleaning on an excerpt without saving it', async () => {
    const takesBefore = (await invoke('list_takes', { voiceId: null })).length;
    await $(byTestId('clean-preview-start')).setValue('1');
    await $(byTestId('clean-preview-run')).click();
    const info = $(byTestId('clean-preview-info'));
    await info.waitForDisplayed({ timeout: 30000 });
    assert.equal(await info.getAttribute('data-start'), '1');
    const ab = $(byTestId('clean-preview-ab'));
    await ab.waitForDisplayed({ timeout: 10000 });
    await waitFor(async () => (await ab.getAttribute('data-loaded')) === 'true', {
      timeout: 15000,
      message: async () => `the preview did not load; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await ab.getAttribute('data-active'), 'cleaned');
    if ((await ab.getAttribute('data-state')) === 'playing') await $(byTestId('clean-preview-ab-play')).click();
    assert.equal((await invoke('list_takes', { voiceId: null })).length, takesBefore, 'the preview saved a take');
    assert.deepEqual(await visibleErrors(), []);
  });
});
