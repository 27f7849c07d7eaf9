// Voice models imported the way a .pth drop does (the `voice_import` job), a take converted
// with two of them from the Convert page, then compared: A→B switching keeps the playback
// position, and a blind ABX vote is recorded. Runs on the tiny random-weight parity fixtures
// that run.sh links into TIMBRE_MODELS_DIR.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  byTestId,
  importVoice,
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

const parity = requireEnv('E2E_PARITY_DIR');
const workDir = requireEnv('E2E_TMP');
const fixture = (p) => path.join(parity, p);

/** The A/B player's state as its data attributes show it, read in one round trip. */
function playerState() {
  return browser.execute(() => {
    const el = document.querySelector('[data-testid="ab-player"]');
    return el && { ...el.dataset, position: Number(el.dataset.position), starts: Number(el.dataset.starts) };
  });
}

describe('convert and compare', () => {
  let takeId;
  const models = {};
  let conversionIds = [];

  before(async () => {
    await waitForApp();
  });

  it('imports two voice models as a drop of .pth (+ .index) does', async () => {
    const [pitched] = await importVoice({
      source: fixture('synth_v1_f0_40k/model.pth'),
      index: fixture('index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index'),
    });
    assert.equal(pitched.version, 'v1');
    assert.equal(pitched.sample_rate, 40000);
    assert.equal(pitched.f0, true);
    assert.ok(pitched.index_sha256, 'the index was not attached');
    const [plain] = await importVoice({ source: fixture('synth_v1_nono_32k/model.pth') });
    assert.equal(plain.sample_rate, 32000);
    assert.equal(plain.f0, false);
    // Both files are named model.pth: name them apart as the Models page's rename does.
    models.pitched = (await invoke('rename_model', { id: pitched.id, name: 'Pitched 40k' })).id;
    models.plain = (await invoke('rename_model', { id: plain.id, name: 'Plain 32k' })).id;

    // The Models page lists both, and finds HuBERT and RMVPE (catalogue names) in the models folder.
    await openPage('models', byTestId('model-files'));
    await waitFor(async () => (await $$(byTestId('model-row')).length) === 2, { timeout: 5000, message: 'the Models page does not list both models' });
    assert.equal(await $(byTestId('models-dir')).getText(), requireEnv('TIMBRE_MODELS_DIR'));
    for (const name of ['hubert', 'rmvpe']) {
      const state = await $(`${byTestId('asset-row')}[data-name="${name}"]`).getAttribute('data-state');
      assert.ok(['present', 'verified'].includes(state), `${name} is ${state}`);
    }
    await screenshot('e2e-models.png');

    const source = writeSineWav(path.join(workDir, 'convert-source.wav'), { seconds: 3, freq: 220, amplitude: 0.4 });
    const job = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    takeId = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'convert-source').id;
  });

  it('converts a take with both models from the Convert page', async () => {
    assert.ok(takeId && models.plain, 'needs the imported take and models');
    await openPage('convert', byTestId('convert-params'));
    await $(byTestId('convert-take-picker')).selectByAttribute('value', String(takeId));
    await $(`${byTestId('convert-input')}[data-label="convert-source"]`).waitForDisplayed({ timeout: 5000 });
    for (const id of [models.pitched, models.plain]) {
      await $(`${byTestId('convert-model')}[data-model-id="${id}"] input`).click();
    }
    // rmvpe.pt is in the models folder, so RMVPE stays the pitch method.
    assert.equal(await $(byTestId('param-f0-method')).getValue(), 'rmvpe');
    const submit = await $(byTestId('convert-submit'));
    assert.match(await submit.getText(), /2 jobs/);
    await submit.click();

    const rows = () => $$(byTestId('conversion-job'));
    await waitFor(
      async () => {
        const states = await rows().map((r) => r.getAttribute('data-state'));
        return states.length === 2 && states.every((s) => s === 'succeeded' || s === 'failed');
      },
      {
        timeout: BACKEND_WORK_TIMEOUT,
        message: async () =>
          `conversions did not finish: ${JSON.stringify(await rows().map((r) => r.getText()))}; errors: ${JSON.stringify(await visibleErrors())}`,
      },
    );
    for (const row of await rows()) {
      assert.equal(await row.getAttribute('data-state'), 'succeeded', await row.getText());
    }
    conversionIds = await rows().map(async (r) => Number(await r.getAttribute('data-conversion-id')));
    await screenshot('e2e-convert.png');
    const listed = await invoke('list_conversions', { inputSha256: null });
    for (const id of conversionIds) assert.ok(listed.some((c) => c.id === id), `conversion ${id} is not in the library`);
  });

  it('compares the two: switching A→B keeps the playback position', async () => {
    assert.equal(conversionIds.length, 2, 'needs the two conversions');
    await $(byTestId('conversion-compare')).click();
    await $(byTestId('ab-player')).waitForDisplayed({ timeout: 10000 });
    const slots = await $$(byTestId('ab-slot')).map((s) => s.getAttribute('data-slot'));
    assert.deepEqual([...slots].sort(), [...conversionIds.map((id) => `c${id}`), 'original'].sort());

    await $(byTestId('ab-play')).click();
    let before;
    await waitFor(
      async () => {
        before = await playerState();
        return before.state === 'playing' && before.position > 0.4;
      },
      { timeout: 15000, interval: 50, message: async () => `playback did not advance: ${JSON.stringify(before)}; errors: ${JSON.stringify(await visibleErrors())}` },
    );
    assert.equal(before.active, slots[0]);
    await browser.keys('2');
    let after;
    await waitFor(async () => (after = await playerState()).active === slots[1], {
      timeout: 5000,
      message: () => `key 2 did not switch to ${slots[1]}: ${JSON.stringify(after)}`,
    });
    assert.equal(after.state, 'playing');
    assert.equal(after.starts, before.starts, 'switching restarted the sources');
    assert.ok(after.position >= before.position, `the position went back: ${before.position} → ${after.position}`);
    assert.ok(after.position < before.position + 1, `the position jumped: ${before.position} → ${after.position}`);
    await $(byTestId('ab-play')).click();
    assert.deepEqual(await visibleErrors(), []);
  });

  it('records a blind ABX vote and reveals it', async () => {
    await $(byTestId('ab-blind')).click();
    await waitFor(async () => (await $$(byTestId('ab-slot')).map((s) => s.getAttribute('data-slot'))).join() === 'a,b,x,original', {
      timeout: 5000,
      message: 'blind mode did not show A, B and X',
    });
    await $(byTestId('ab-play')).click();
    await waitFor(async () => (await playerState()).state === 'playing', { timeout: 10000, message: 'blind playback did not start' });
    await browser.keys('3');
    await waitFor(async () => (await playerState()).active === 'x', { timeout: 5000, message: 'key 3 did not select X' });
    await $(byTestId('abx-vote-a')).click();
    const result = await $(byTestId('abx-result'));
    await result.waitForDisplayed({ timeout: 10000 });
    const correct = (await result.getAttribute('data-correct')) === 'true';
    assert.equal(await $(byTestId('abx-score')).getAttribute('data-trials'), '1');

    const tests = await invoke('list_listening_tests');
    const vote = tests.find((t) => t.mode === 'abx');
    assert.ok(vote, `no blind vote was recorded: ${JSON.stringify(tests)}`);
    assert.deepEqual([...vote.conversion_ids].sort(), [...conversionIds].sort());
    assert.equal(vote.chosen_conversion_id, vote.conversion_ids[0]);
    assert.ok(vote.conversion_ids.includes(vote.hidden_conversion_id));
    assert.equal(vote.correct, correct);
    assert.equal(vote.correct, vote.hidden_conversion_id === vote.chosen_conversion_id);
    await screenshot('e2e-compare.png');
  });
});
