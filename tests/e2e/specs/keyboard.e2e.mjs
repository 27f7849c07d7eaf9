// The core job with the keyboard alone: a file added on the Convert page through its native
// dialog (typed into, as a keyboard user does), a voice ticked, the conversion queued and its
// result played, every step reached with Tab and pressed with Enter or Space, the focus visible
// at each. The voice model is imported beforehand (a precondition, as a drop of a .pth is).
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  answerFileDialog,
  byTestId,
  focusIsVisible,
  importVoice,
  requireEnv,
  tabTo,
  visibleErrors,
  waitFor,
  waitForApp,
  writeSineWav,
} from './helpers.mjs';

const parity = requireEnv('E2E_PARITY_DIR');
const workDir = requireEnv('E2E_TMP');

/** Tab to `selector`, check the focus shows, and press `key` on it. */
async function press(selector, key = 'Enter') {
  await tabTo(selector);
  assert.ok(await focusIsVisible(), `the focus on ${selector} is not visible`);
  await browser.keys([key]);
}

describe('keyboard only', () => {
  let modelId;

  before(async () => {
    await waitForApp();
    [{ id: modelId }] = await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth') });
    // Start where a keyboard user starts: nothing focused.
    await browser.execute(() => document.activeElement?.blur());
  });

  it('adds a file, converts it and plays the result without the mouse', async () => {
    await press(byTestId('nav-convert'));
    await $(byTestId('convert-inputs')).waitForDisplayed({ timeout: 10000 });

    const file = writeSineWav(path.join(workDir, 'keyboard input.wav'), { seconds: 2, freq: 294, amplitude: 0.4 });
    await press(byTestId('convert-add-files'));
    answerFileDialog('Add audio files', file);
    await waitFor(async () => (await $$(byTestId('convert-input')).length) === 1, {
      timeout: 15000,
      message: async () => `the picked file is not an input; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    // The dialog gave the focus back to the window; Tab goes on from the page's start.
    await press(`${byTestId('convert-model')}[data-model-id="${modelId}"] input`, ' ');
    await waitFor(() => $(`${byTestId('convert-model')}[data-model-id="${modelId}"] input`).isSelected(), {
      timeout: 5000,
      message: 'Space did not tick the voice',
    });
    await press(byTestId('convert-submit'));

    const job = () => $(byTestId('conversion-job'));
    await waitFor(async () => ['succeeded', 'failed'].includes(await job().getAttribute('data-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the conversion did not finish; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await job().getAttribute('data-state'), 'succeeded', await job().getText());

    await press(byTestId('conversion-play'));
    await waitFor(async () => (await $(byTestId('playback-state')).getAttribute('data-state')) === 'playing', {
      timeout: 15000,
      interval: 50,
      message: async () => `Enter on Play did not play the result; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    // Space pauses it again: the play-pause shortcut, from anywhere but a text field.
    await browser.execute(() => document.activeElement?.blur());
    await browser.keys([' ']);
    await waitFor(async () => (await $(byTestId('playback-state')).getAttribute('data-state')) !== 'playing', {
      timeout: 5000,
      message: 'Space did not pause the playback',
    });
  });
});
