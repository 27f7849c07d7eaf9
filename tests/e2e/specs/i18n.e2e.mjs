// The app in another language: the core flow (import, convert, play, compare) with the UI in
// Japanese, on a file with a Japanese name, screenshot at each step; then every page in German, the longest of the catalogues,
// at 1024×700 with no text cut off.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  byTestId,
  chooseLanguage,
  clippedTexts,
  importVoice,
  invoke,
  openPage,
  requireEnv,
  screenshot,
  translated,
  visibleErrors,
  waitFor,
  waitForApp,
  writeSineWav,
} from './helpers.mjs';

const parity = requireEnv('E2E_PARITY_DIR');
const workDir = requireEnv('E2E_TMP');
const NAV = {
  library: 'Library', record: 'Record', live: 'Live', convert: 'Convert', compare: 'Compare', clean: 'Clean',
  cover: 'Cover', train: 'Train', models: 'Models', jobs: 'Jobs', settings: 'Settings',
};

const playbackState = () => $(byTestId('playback-state')).getAttribute('data-state');

describe('the app in Japanese, and in German at 1024×700', () => {
  let modelId;

  before(async () => {
    await waitForApp();
    [{ id: modelId }] = await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth') });
    await chooseLanguage('ja');
  });

  // The choice is saved with the library the spec files share: the next ones start in English.
  after(async () => {
    await openPage('settings', byTestId('setting-language'));
    await $(byTestId('setting-language')).selectByAttribute('value', 'system');
    await waitFor(async () => (await browser.execute(() => document.documentElement.lang)) === 'en', {
      timeout: 5000,
      message: 'the UI did not go back to the system language',
    });
  });

  it('names every page in Japanese', async () => {
    for (const [page, english] of Object.entries(NAV)) {
      assert.equal((await $(byTestId(`nav-${page}`)).getText()).trim(), translated(english, 'ja'), `the ${page} nav item`);
    }
  });

  it('imports a file as a drop does, and lists it in the Japanese Library', async () => {
    await openPage('library', byTestId('library-title'));
    const file = writeSineWav(path.join(workDir, '日本語の声.wav'), { seconds: 2, freq: 262, amplitude: 0.4 });
    // What the window's drop handler calls with the dropped paths.
    await invoke('import_files', { paths: [file], voiceId: null });
    const row = await $(`${byTestId('take-row')}[data-take-name="日本語の声"]`);
    await waitFor(() => row.isDisplayed(), {
      timeout: 60000,
      message: async () => `the take did not appear; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await $(byTestId('library-import-files')).getText(), translated('Import files…', 'ja'));
    await screenshot('e2e-ja-library.png');
  });

  it('converts it, plays the result and compares, in Japanese', async () => {
    await openPage('convert', byTestId('convert-params'));
    const picker = await $(byTestId('convert-take-picker'));
    const value = await browser.execute(
      () => [...document.querySelectorAll('[data-testid="convert-take-picker"] option')].find((o) => o.textContent.includes('日本語の声'))?.value,
    );
    await picker.selectByAttribute('value', value);
    await $(`${byTestId('convert-model')}[data-model-id="${modelId}"] input`).click();
    const submit = await $(byTestId('convert-submit'));
    assert.ok(!/[A-Za-z]{3,}/.test(await submit.getText()), `the Convert button reads "${await submit.getText()}"`);
    await submit.click();
    const job = () => $(byTestId('conversion-job'));
    await waitFor(async () => ['succeeded', 'failed'].includes(await job().getAttribute('data-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the conversion did not finish; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await job().getAttribute('data-state'), 'succeeded', await job().getText());
    await screenshot('e2e-ja-convert.png');

    await $(byTestId('conversion-play')).click();
    await waitFor(async () => (await playbackState()) === 'playing', { timeout: 15000, interval: 50, message: 'the result did not play' });
    assert.equal(await $(byTestId('playback-state')).getText(), translated('playing', 'ja'));

    await $(byTestId('conversion-compare')).click();
    await $(byTestId('ab-player')).waitForDisplayed({ timeout: 10000 });
    await $(byTestId('ab-play')).click();
    await waitFor(async () => (await $(byTestId('ab-player')).getAttribute('data-state')) === 'playing', {
      timeout: 15000,
      message: 'the comparison did not play',
    });
    await screenshot('e2e-ja-compare.png');
    await $(byTestId('ab-play')).click();
    assert.deepEqual(await visibleErrors(), []);
  });

  it('fits every page in German at 1024×700', async () => {
    await chooseLanguage('de');
    await browser.setWindowSize(1024, 700);
    await waitFor(async () => (await browser.execute(() => window.innerWidth)) <= 1024, { timeout: 5000, message: 'the window did not shrink' });
    const clipped = {};
    for (const page of Object.keys(NAV)) {
      await openPage(page, 'main h1');
      await browser.pause(300);
      const found = await clippedTexts();
      if (found.length) clipped[page] = found;
      await screenshot(`e2e-de-${page}.png`);
    }
    assert.deepEqual(clipped, {});
  });
});
