// A cover from the Cover page: a song of the library with a fixture voice and the rough
// isolation (run.sh's models folder has no RoFormer), the stages shown as they run; a second
// voice reruns only conversion and remix (the isolation comes from the cache); the covers are
// played against the song, then sent to the Compare page.
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

/** Each stage of the cover job row `jobId` as `stage state`. */
function stagesOf(jobId) {
  return browser.execute((id) => {
    const row = document.querySelector(`[data-testid="cover-job"][data-job-id="${id}"]`);
    return row ? [...row.querySelectorAll('[data-testid="cover-stage"]')].map((s) => `${s.dataset.stage} ${s.dataset.state}`) : [];
  }, jobId);
}

/** Queues a cover of the picked song with the voice `modelId` and waits for its job. */
async function coverWith(modelId) {
  await $(byTestId('cover-voice')).selectByAttribute('value', String(modelId));
  const before = await $$(byTestId('cover-job')).length;
  await $(byTestId('cover-submit')).click();
  await waitFor(async () => (await $$(byTestId('cover-job')).length) === before + 1, { timeout: 10000, message: 'no cover job appeared' });
  const jobId = Number(await $(byTestId('cover-job')).getAttribute('data-job-id'));
  const job = await waitForJob(jobId, BACKEND_WORK_TIMEOUT);
  assert.equal(job.state, 'succeeded', `the cover failed: ${job.error}; errors: ${JSON.stringify(await visibleErrors())}`);
  await waitFor(async () => (await $(`${byTestId('cover-job')}[data-job-id="${jobId}"]`).getAttribute('data-state')) === 'succeeded', {
    timeout: 10000,
    message: 'the job row did not show success',
  });
  return { jobId, stages: await stagesOf(jobId) };
}

describe('cover', () => {
  let songId;
  const voices = {};

  before(async () => {
    await waitForApp();
  });

  it('imports two voices and a song', async () => {
    const [alto] = await importVoice({ source: path.join(parity, 'synth_v1_f0_40k/model.pth') });
    const [tenor] = await importVoice({ source: path.join(parity, 'synth_v1_nono_32k/model.pth') });
    voices.alto = (await invoke('rename_model', { id: alto.id, name: 'Alto' })).id;
    voices.tenor = (await invoke('rename_model', { id: tenor.id, name: 'Tenor' })).id;
    const song = writeSineWav(path.join(workDir, 'cover-song.wav'), { seconds: 3, freq: 196, amplitude: 0.4 });
    const job = await waitForJob(await invoke('import_files', { paths: [song], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    songId = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'cover-song').id;
  });

  it('covers the song with one voice, then another reruns only conversion and remix', async () => {
    assert.ok(songId && voices.tenor, 'needs the song and the voices');
    await openPage('cover', byTestId('cover-choices'));
    await $(byTestId('cover-take-picker')).selectByAttribute('value', String(songId));
    await $(`${byTestId('cover-song-input')}[data-label="cover-song"]`).waitForDisplayed({ timeout: 5000 });
    assert.equal(await $(byTestId('cover-separation')).getValue(), '', 'without a RoFormer the rough isolation is chosen');
    const first = await coverWith(voices.alto);
    assert.deepEqual(first.stages, ['isolate ran', 'second_pass skipped', 'convert ran', 'effects skipped', 'remix ran']);
    const second = await coverWith(voices.tenor);
    assert.deepEqual(second.stages, ['isolate cached', 'second_pass skipped', 'convert ran', 'effects skipped', 'remix ran']);
    await screenshot('e2e-cover.png');
  });

  it('plays the covers against the song and sends them to the Compare page', async () => {
    const song = $(`${byTestId('cover-song')}[data-song-id="${songId}"]`);
    await song.waitForDisplayed({ timeout: 10000 });
    await waitFor(async () => (await song.$$(`${byTestId('cover-stem')}[data-operation="cover"]`).length) === 2, {
      timeout: 10000,
      message: 'the two covers are not listed',
    });
    const operations = await song.$$(byTestId('cover-stem')).map((s) => s.getAttribute('data-operation'));
    for (const op of ['isolate_vocals', 'isolate_instrumental', 'cover_converted_vocals']) assert.ok(operations.includes(op), `${op} missing: ${operations}`);

    await song.$(byTestId('cover-ab')).click();
    const player = song.$(byTestId('cover-ab-player'));
    await player.waitForDisplayed({ timeout: 10000 });
    const slots = await player.$$(byTestId('cover-ab-player-slot')).map((s) => s.getAttribute('data-slot'));
    assert.equal(slots.length, 3, `song and two covers: ${slots}`);
    await player.$(byTestId('cover-ab-player-play')).click();
    await waitFor(async () => (await player.getAttribute('data-state')) === 'playing', { timeout: 15000, message: 'the covers do not play' });
    await player.$(byTestId('cover-ab-player-play')).click();

    await song.$(byTestId('cover-compare')).click();
    await $(byTestId('ab-player')).waitForDisplayed({ timeout: 10000 });
    const compared = await $$(byTestId('ab-slot')).map((s) => s.getAttribute('data-slot'));
    assert.equal(compared.filter((s) => s.startsWith('c')).length, 2, `the Compare page has ${compared}`);
    await screenshot('e2e-cover-compare.png');
  });
});
