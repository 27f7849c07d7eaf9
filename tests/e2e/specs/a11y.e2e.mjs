// Accessibility: axe-core on every page of an app with a take, a voice model and a conversion in
// its library, and on the keyboard-shortcut overlay, with zero serious or critical violations.
import assert from 'node:assert/strict';
import path from 'node:path';
import { axeViolations, byTestId, importVoice, invoke, openPage, requireEnv, waitFor, waitForApp, waitForJob, writeSineWav } from './helpers.mjs';

const parity = requireEnv('E2E_PARITY_DIR');
const workDir = requireEnv('E2E_TMP');
const PAGES = ['library', 'record', 'live', 'convert', 'compare', 'clean', 'cover', 'train', 'models', 'jobs', 'settings'];

describe('accessibility', () => {
  before(async () => {
    await waitForApp();
    const source = writeSineWav(path.join(workDir, 'a11y-take.wav'), { seconds: 2, freq: 233, amplitude: 0.4 });
    const job = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth') });
  });

  for (const page of PAGES) {
    it(`the ${page} page has no serious or critical axe violation, in the light and the dark theme`, async () => {
      await openPage(page, 'main h1');
      // Let the page's first data arrive (lists, devices) before it is judged.
      await browser.pause(500);
      const found = {};
      for (const theme of ['light', 'dark']) {
        // What the Settings page's Appearance sets: the palette follows data-theme.
        await browser.execute((theme) => (document.documentElement.dataset.theme = theme), theme);
        // Controls fade their colours for 0.12 s: judge the palette, not a frame between two.
        await browser.pause(400);
        found[theme] = await axeViolations();
      }
      assert.deepEqual(found, { light: [], dark: [] });
    });
  }

  it('the keyboard-shortcut overlay has none, and is a modal dialog', async () => {
    await openPage('library', byTestId('library-title'));
    await $('body').click();
    await browser.keys(['?']);
    const dialog = await $('[role="dialog"][aria-modal="true"]');
    await dialog.waitForDisplayed({ timeout: 5000 });
    assert.deepEqual(await axeViolations('[role="dialog"]'), []);
    await browser.keys(['Escape']);
    await waitFor(async () => !(await dialog.isExisting()) || !(await dialog.isDisplayed()), { timeout: 5000, message: 'Escape did not close the overlay' });
  });
});
