// The first run: the app starts on an empty models folder (wdio.conf.mjs starts it through
// app.sh), shows the first-run panel, downloads HuBERT and RMVPE from run.sh's 127.0.0.1 server
// (the test catalogue, TIMBRE_ASSET_CATALOG, gives their real SHA-256), and a conversion with
// RMVPE then runs on them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
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
const modelsDir = path.join(workDir, 'fresh-models');

/** The essentials' states, by name, as list_assets reports them. */
async function essentialStates() {
  const { assets } = await invoke('list_assets');
  return Object.fromEntries(assets.filter((a) => a.essential).map((a) => [a.name, a.state]));
}

describe('first run', () => {
  before(async () => {
    await waitForApp();
  });

  it('offers the essentials on an empty models folder and downloads them verified', async () => {
    const { models_dir } = await invoke('list_assets');
    assert.equal(models_dir, modelsDir, 'the app does not use the empty models folder of this spec');
    assert.deepEqual(await essentialStates(), { hubert: 'missing', rmvpe: 'missing' });

    const panel = await $(byTestId('first-run'));
    await panel.waitForDisplayed({ timeout: 15000 });
    const button = await $(byTestId('first-run-get'));
    const label = await button.getText();
    assert.match(label, /Get the essentials: HuBERT \+ RMVPE, about [\d.]+ MB/);
    await screenshot('e2e-first-run.png');
    await button.click();

    await waitFor(async () => JSON.stringify(await essentialStates()) === JSON.stringify({ hubert: 'verified', rmvpe: 'verified' }), {
      timeout: BACKEND_WORK_TIMEOUT,
      interval: 250,
      message: async () => {
        const jobs = (await invoke('list_jobs')).filter((j) => j.kind === 'download');
        return `the essentials were not verified: ${JSON.stringify(await essentialStates())}; download jobs: ${JSON.stringify(
          jobs.map((j) => [j.state, j.message, j.error]),
        )}; errors: ${JSON.stringify(await visibleErrors())}`;
      },
    });
    // The files are the fixtures, byte for byte, and the panel is gone.
    for (const [file, fixture] of [
      ['hubert_base.pt', 'hubert_tiny/hubert_fairseq.pt'],
      ['rmvpe.pt', 'rmvpe_tiny/rmvpe.pt'],
    ]) {
      assert.ok(fs.readFileSync(path.join(modelsDir, file)).equals(fs.readFileSync(path.join(parity, fixture))), `${file} differs`);
      assert.ok(!fs.existsSync(path.join(modelsDir, `${file}.part`)), `${file}.part is left`);
    }
    await $(byTestId('first-run')).waitForDisplayed({ reverse: true, timeout: 15000 });

    await openPage('models', byTestId('model-files'));
    for (const name of ['hubert', 'rmvpe']) {
      const row = await $(`${byTestId('asset-row')}[data-name="${name}"]`);
      await waitFor(async () => (await row.getAttribute('data-state')) === 'verified', {
        timeout: 10000,
        message: `the Models page does not show ${name} verified`,
      });
    }
  });

  it('converts with RMVPE on the downloaded files', async () => {
    const [model] = await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth'), name: 'First run voice' });
    const source = writeSineWav(path.join(workDir, 'first-run-source.wav'), { seconds: 2, freq: 220, amplitude: 0.4 });
    const imported = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(imported.state, 'succeeded', `the import failed: ${imported.error}`);
    const take = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'first-run-source');

    await openPage('convert', byTestId('convert-params'));
    await $(byTestId('convert-take-picker')).selectByAttribute('value', String(take.id));
    await $(`${byTestId('convert-input')}[data-label="first-run-source"]`).waitForDisplayed({ timeout: 5000 });
    await $(`${byTestId('convert-model')}[data-model-id="${model.id}"] input`).click();
    // RMVPE is there now: it stays the pitch method, and nothing is offered for download.
    assert.equal(await $(byTestId('param-f0-method')).getValue(), 'rmvpe');
    assert.equal((await $$(byTestId('missing-asset'))).length, 0);
    await $(byTestId('convert-submit')).click();

    const row = () => $(byTestId('conversion-job'));
    await waitFor(async () => ['succeeded', 'failed'].includes(await row().getAttribute('data-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the conversion did not finish: ${await row().getText()}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await row().getAttribute('data-state'), 'succeeded', await row().getText());
    await screenshot('e2e-first-run-convert.png');
  });
});
