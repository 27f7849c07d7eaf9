// Results you can keep: a dropped file converted from the Convert page, exported under the name
// it is offered through the native save dialog, and found again, on the Convert page and under
// its take in the Library, after the app restarts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  answerFileDialog,
  byTestId,
  importVoice,
  invoke,
  openPage,
  requireEnv,
  toasts,
  visibleErrors,
  waitFor,
  waitForApp,
  waitForJob,
  writeSineWav,
} from './helpers.mjs';

const parity = requireEnv('E2E_PARITY_DIR');
const workDir = requireEnv('E2E_TMP');

describe('keep', () => {
  let takeId;
  let conversionId;
  // The fixture voice as the library has it (convert.e2e may have imported and renamed it).
  let voice;

  before(async () => {
    await waitForApp();
  });

  it('converts a dropped file, +3 semitones, from the Convert page', async () => {
    [voice] = await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth') });
    // A tone no other spec writes: the library keeps one take per content, so a file equal to
    // an earlier spec's would be counted a duplicate and keep that spec's name.
    const source = writeSineWav(path.join(workDir, 'keep-source.wav'), { seconds: 2, freq: 247, amplitude: 0.4 });
    const job = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    assert.equal(job.result.imported, 1, `the source was not imported as a new take: ${JSON.stringify(job.result)}`);
    takeId = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'keep-source').id;

    await openPage('convert', byTestId('convert-params'));
    await $(byTestId('convert-take-picker')).selectByAttribute('value', String(takeId));
    await $(`${byTestId('convert-model')}[data-model-id="${voice.id}"] input`).click();
    // A range input: WebDriver cannot type into it, so it is moved as a script would, with the
    // events a drag ends with.
    await browser.execute(() => {
      const slider = document.querySelector('[data-testid="param-transpose"]');
      slider.value = '3';
      for (const type of ['input', 'change']) slider.dispatchEvent(new Event(type, { bubbles: true }));
    });
    await waitFor(async () => (await $('label[for="param-transpose"]').getText()).includes('+3 st'), {
      timeout: 5000,
      message: 'the transpose slider does not show +3 st',
    });
    await $(byTestId('convert-submit')).click();
    const row = await $(`${byTestId('conversion-job')}[data-model-name="${voice.name}"]`);
    await waitFor(async () => ['succeeded', 'failed'].includes(await row.getAttribute('data-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the conversion did not finish: ${await row.getText()}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await row.getAttribute('data-state'), 'succeeded', await row.getText());
    conversionId = Number(await row.getAttribute('data-conversion-id'));
    assert.ok(!(await row.getText()).includes('store/objects'), 'the result shows a hashed store path');
  });

  it('exports the result under the name it is offered, through the save dialog', async () => {
    const offered = await invoke('get_export_name', { item: { kind: 'conversion', id: conversionId } });
    assert.equal(offered, `keep-source (${voice.name}, +3 st).wav`);
    const target = path.join(workDir, offered);
    await $(`${byTestId('conversion-job')}[data-conversion-id="${conversionId}"] ${byTestId('conversion-job-export')}`).click();
    answerFileDialog('Export', target);
    await waitFor(() => fs.existsSync(target), {
      timeout: 15000,
      message: async () => `nothing was written to ${target}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    const written = fs.readFileSync(target);
    assert.equal(written.subarray(0, 4).toString('latin1'), 'RIFF', 'the export is not a WAV file');
    assert.ok(written.length > 44, 'the exported WAV has no samples');
    assert.equal(fs.statSync(target).mode & 0o777, 0o666 & ~process.umask(), 'the export does not have the usual file mode');
    await waitFor(async () => (await toasts()).some((t) => t.includes(`Exported to ${target}`)), {
      timeout: 5000,
      message: async () => `no toast says where the export went: ${JSON.stringify(await toasts())}`,
    });
  });

  it('finds the conversion again after the app restarts', async () => {
    await browser.reloadSession();
    await waitForApp();
    await openPage('convert', byTestId('convert-params'));
    await $(`${byTestId('convert-recent')} [data-conversion-id="${conversionId}"]`).waitForExist({
      timeout: 15000,
      timeoutMsg: 'the Convert page does not list the conversion after a restart',
    });

    await openPage('library', byTestId('library-title'));
    const take = await $(`${byTestId('take-row')}[data-take-id="${takeId}"]`);
    await take.waitForDisplayed({ timeout: 15000, timeoutMsg: 'the Library does not list the converted take' });
    const group = await $(`${byTestId('conversion-group')}[data-input="keep-source"]`);
    await group.$(byTestId('conversion-group-toggle')).click();
    const conversion = await group.$(`${byTestId('conversion-row')}[data-conversion-id="${conversionId}"]`);
    await conversion.waitForDisplayed({ timeout: 5000, timeoutMsg: 'the conversion is not listed under its take' });
    assert.match(await conversion.getText(), /\+3 st/);
  });
});
