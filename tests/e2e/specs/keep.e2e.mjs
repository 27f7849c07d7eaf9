// Results you can keep: a dropped file converted from the Convert page, exported under the name
// it is offered through the native save dialog, found again, on the Convert page and under its
// take in the Library, after the app restarts, and dragged out of the window into another program.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
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
  xdotool,
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

  it('drags the conversion out of the window into another program, as a file named for it', async () => {
    // The other program: a second Timbre Studio on a library of its own, which imports a drop.
    const otherLibrary = path.join(workDir, 'drop-target-library');
    const app = requireEnv('E2E_APP');
    const cli = path.join(path.dirname(app), 'timbre');
    assert.ok(fs.existsSync(cli), `${cli}: the CLI is not built beside the app`);
    const log = fs.openSync(path.join(requireEnv('E2E_LOG_DIR'), 'drop-target-app.log'), 'a');
    const other = spawn(app, [], { env: { ...process.env, TIMBRE_DATA_DIR: otherLibrary }, stdio: ['ignore', log, log] });
    try {
      const target = xdotool('search', '--sync', '--all', '--onlyvisible', '--pid', String(other.pid), '--name', '^Timbre Studio$').split('\n')[0];
      // No window manager: the other window is put at the screen's lower right, over this one.
      xdotool('windowmove', '--sync', target, '760', '500');
      xdotool('windowraise', target);
      const drop = { x: 1000, y: 700 };
      const source = xdotool('search', '--onlyvisible', '--name', '^Timbre Studio$').split('\n').find((w) => w !== target);
      const origin = Object.fromEntries(xdotool('getwindowgeometry', '--shell', source).split('\n').map((l) => l.split('=')));

      const row = await $(`${byTestId('conversion-row')}[data-conversion-id="${conversionId}"] .voice`);
      await browser.execute((el) => el.scrollIntoView({ block: 'center' }), row);
      const [at, size] = [await row.getLocation(), await row.getSize()];
      const from = { x: Number(origin.X) + Math.round(at.x + Math.min(40, size.width / 2)), y: Number(origin.Y) + Math.round(at.y + size.height / 2) };
      assert.ok(from.x < 760 && from.y < 500, `the row, at ${JSON.stringify(from)}, is under the other window`);
      const name = `keep-source (${voice.name}, +3 st)`;
      const drags = path.join(requireEnv('E2E_DATA_DIR'), 'drag-out');
      const copies = () => (fs.existsSync(drags) ? fs.readdirSync(drags).map((d) => path.join(drags, d, `${name}.wav`)).filter(fs.existsSync) : []);
      const importedThere = () =>
        JSON.parse(execFileSync(cli, ['--data-dir', otherLibrary, '--json', 'library', 'list'], { encoding: 'utf8' })).find((t) => t.name === name);

      // The other window may not listen for drops yet when it first shows: up to three drags.
      for (let attempt = 1; ; attempt++) {
        const before = copies().length;
        xdotool('mousemove', '--sync', String(from.x), String(from.y));
        xdotool('mousedown', '1');
        xdotool('mousemove', String(from.x + 12), String(from.y));
        await waitFor(() => copies().length > before, { timeout: 15000, message: 'the drag made no named copy to offer' });
        // GTK's drag starts once the copy is made; the pointer then travels as a hand would.
        xdotool('sleep', '0.5');
        for (let step = 1; step <= 12; step++) {
          const t = step / 12;
          xdotool('mousemove', String(Math.round(from.x + (drop.x - from.x) * t)), String(Math.round(from.y + (drop.y - from.y) * t)));
          xdotool('sleep', '0.05');
        }
        xdotool('sleep', '0.3');
        xdotool('mouseup', '1');
        try {
          await waitFor(() => importedThere() !== undefined, { timeout: 20000, message: `the other program did not take "${name}.wav"` });
          break;
        } catch (err) {
          if (attempt === 3) throw err;
        }
      }
      const offered = copies()[0];
      const sha256 = crypto.createHash('sha256').update(fs.readFileSync(offered)).digest('hex');
      assert.equal(importedThere().sha256, sha256, 'the other program got other bytes than the conversion');
      const here = await invoke('list_takes', { voiceId: null });
      assert.ok(!here.some((t) => t.name === name), 'the drag was imported back into the window it left');
    } finally {
      other.kill();
    }
  });
});
