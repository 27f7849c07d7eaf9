// Importing files the way a drop does (the `import_files` command the drop handler calls) and
// through the native file dialog, seeing the take in the Library, playing it, and a corrupt file
// failing visibly.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  BACKEND_WORK_TIMEOUT,
  answerFileDialog,
  byTestId,
  invoke,
  inspectTakeAudio,
  openPage,
  requireEnv,
  screenshot,
  stem,
  visibleErrors,
  waitFor,
  waitForApp,
  waitForJob,
  writeSineWav,
} from './helpers.mjs';

const audioPath = requireEnv('E2E_AUDIO'); // 2.000 s, 440 Hz, 16-bit WAV made by run.sh
const workDir = requireEnv('E2E_TMP');
const dataDir = requireEnv('E2E_DATA_DIR'); // the app's TIMBRE_DATA_DIR
const rowSelector = (name) => `${byTestId('take-row')}[data-take-name="${name}"]`;

describe('import', () => {
  let takeId;

  before(async () => {
    await waitForApp();
    await openPage('library', byTestId('library-title'));
  });

  it('imports a dropped WAV and lists it in the Library with its duration', async () => {
    const jobId = await invoke('import_files', { paths: [audioPath], voiceId: null });
    assert.equal(typeof jobId, 'number', `import_files returned ${JSON.stringify(jobId)}, not a job id`);

    const row = await $(rowSelector(stem(audioPath)));
    await waitFor(() => row.isDisplayed(), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `no take row named "${stem(audioPath)}"; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    takeId = Number(await row.getAttribute('data-take-id'));
    assert.ok(takeId > 0, 'the take row has no data-take-id');
    assert.equal(await row.$(byTestId('take-duration')).getText(), '0:02.0');

    const job = await waitForJob(jobId);
    assert.equal(job.state, 'succeeded', `the import job ended ${job.state}: ${job.error}`);
    const take = (await invoke('list_takes', { voiceId: null })).find((t) => t.id === takeId);
    assert.ok(take, `list_takes does not have take ${takeId}`);
    assert.equal(take.origin, 'imported');
    assert.ok(Math.abs(take.duration_secs - 2) < 0.01, `duration_secs is ${take.duration_secs}`);
    assert.equal(take.sample_rate, 44100);
    // The file went into this run's library (TIMBRE_DATA_DIR), byte for byte.
    const source = fs.readFileSync(audioPath);
    assert.equal(take.sha256, crypto.createHash('sha256').update(source).digest('hex'));
    const stored = fs.readdirSync(dataDir, { recursive: true }).filter((f) => path.basename(String(f)).startsWith(take.sha256));
    assert.equal(stored.length, 1, `the library dir holds ${JSON.stringify(stored)} for the take`);
    assert.ok(fs.readFileSync(path.join(dataDir, String(stored[0]))).equals(source), 'the stored copy differs from the source');

    await screenshot('e2e-library.png');
  });

  it('imports the file a second start is opened with ("Open with"), which hands it over and ends', async () => {
    const opened = path.join(workDir, 'opened with the app.wav');
    writeSineWav(opened, { seconds: 1.25, freq: 550 });
    // What the desktop entry runs (`timbre-studio %F`), on the library this app has open.
    const second = spawnSync(requireEnv('E2E_APP'), [opened], { env: process.env, timeout: 30000, encoding: 'utf8' });
    assert.equal(second.status, 0, `the second start ended with ${second.status} ${second.signal ?? ''}: ${second.stderr}`);
    const row = await $(rowSelector(stem(opened)));
    await waitFor(() => row.isDisplayed(), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `no take row named "${stem(opened)}"; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await row.$(byTestId('take-duration')).getText(), '0:01.3');
  });

  it('imports a file picked in the native dialog of "Import files…"', async () => {
    const picked = path.join(workDir, 'picked in the dialog.wav');
    writeSineWav(picked, { seconds: 1.5, freq: 330 });
    await $(byTestId('library-import-files')).click();
    answerFileDialog('Add audio files', picked);
    const row = await $(rowSelector(stem(picked)));
    await waitFor(() => row.isDisplayed(), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `no take row named "${stem(picked)}"; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await row.$(byTestId('take-duration')).getText(), '0:01.5');
  });

  it('serves the take as WAV bytes that Web Audio decodes to the imported signal', async () => {
    assert.ok(takeId, 'needs the imported take');
    const a = await inspectTakeAudio(takeId);
    assert.equal(a.riff, 'RIFF');
    assert.equal(a.wave, 'WAVE');
    assert.ok(Math.abs(a.duration - 2) < 0.01, `decoded duration ${a.duration}`);
    // 440 Hz at amplitude 0.5: RMS 0.5/sqrt(2).
    assert.ok(Math.abs(a.rms - 0.3536) < 0.02, `decoded RMS ${a.rms}`);
    assert.ok(Math.abs(a.frequency - 440) < 2, `decoded tone ${a.frequency} Hz`);
  });

  it('plays the take when its play button is clicked', async () => {
    const row = await $(rowSelector(stem(audioPath)));
    const state = await $(byTestId('playback-state'));
    assert.equal(await state.getText(), 'stopped');
    await row.$(byTestId('take-play')).click();
    // Playback lasts about 2 s: poll often so a short "playing" is not missed.
    await waitFor(async () => (await state.getText()) === 'playing', {
      timeout: 15000,
      interval: 50,
      message: async () => `playback-state never read "playing"; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await state.getAttribute('data-take-id'), String(takeId));
    // And it ends by itself once the 2 s take is over.
    await browser.waitUntil(async () => (await state.getText()) === 'stopped', {
      timeout: 15000,
      timeoutMsg: 'playback did not end after the take finished',
    });
    assert.deepEqual(await visibleErrors(), []);
  });

  it('reports a corrupt file as a failed import naming the file, on the Jobs page', async () => {
    const corrupt = path.join(workDir, 'corrupt-take.wav');
    fs.writeFileSync(corrupt, Buffer.from('this is not audio at all\0\x01\x02\x03'.repeat(64)));
    const jobId = await invoke('import_files', { paths: [corrupt], voiceId: null });
    assert.equal(typeof jobId, 'number');

    const job = await waitForJob(jobId);
    assert.equal(job.state, 'failed', `a corrupt-only import ended ${job.state}`);
    assert.ok(job.error, 'the failed job has no error message');

    const events = await invoke('list_job_events', { id: jobId });
    const fileEvent = events.find((e) => e.data && e.data.path === corrupt);
    assert.ok(fileEvent, `no job event names ${corrupt}: ${JSON.stringify(events)}`);
    assert.equal(fileEvent.level, 'error');
    assert.equal(fileEvent.data.ok, false);
    assert.ok(typeof fileEvent.data.error === 'string' && fileEvent.data.error.length > 0, 'the file event has no error text');
    assert.equal(
      (await invoke('list_takes', { voiceId: null })).some((t) => t.name === 'corrupt-take'),
      false,
      'the corrupt file became a take',
    );

    await openPage('jobs', byTestId('job-list'));
    const failedRow = await $(`${byTestId('job-row')}[data-job-id="${jobId}"]`);
    await failedRow.waitForDisplayed({ timeout: 10000 });
    await browser.waitUntil(async () => (await failedRow.getAttribute('data-job-state')) === 'failed', {
      timeout: 10000,
      timeoutMsg: 'the job row does not show the failed state',
    });
    assert.match(await failedRow.$(byTestId('job-error')).getText(), /\S/);
    // Failed jobs can be retried from their row: it runs again and fails again.
    const retry = await failedRow.$(byTestId('job-retry'));
    assert.ok(await retry.isDisplayed(), 'no retry button on a failed job');
    await retry.click();
    let retried;
    await waitFor(
      async () => {
        retried = (await invoke('list_jobs')).find((j) => j.id === jobId);
        return retried.state === 'failed' && retried.finished_at !== job.finished_at;
      },
      { timeout: 15000, message: () => `retrying did not run the job again: ${JSON.stringify(retried)}` },
    );
    const failures = (await invoke('list_job_events', { id: jobId })).filter((e) => e.kind === 'failed');
    assert.equal(failures.length, 2, `expected a "failed" event per run: ${JSON.stringify(failures)}`);
    // The row follows the live job stream without a refresh, even though the rerun's "failed"
    // update can arrive before the retry_job reply.
    await waitFor(async () => (await failedRow.getAttribute('data-job-state')) === 'failed', {
      timeout: 10000,
      message: async () => `after the retry the row shows ${await failedRow.getAttribute('data-job-state')}`,
    });
    // Both imports of this spec are listed.
    const ids = await $$(byTestId('job-row')).map((r) => r.getAttribute('data-job-id'));
    assert.ok(ids.length >= 2, `only ${ids.length} job rows`);
    assert.ok(ids.includes(String(jobId)));

    // The row's details list the events, including the file's path.
    await failedRow.$(byTestId('job-expand')).click();
    await browser.waitUntil(
      async () => (await failedRow.$$(byTestId('job-event')).map((e) => e.getText())).some((t) => t.includes('corrupt-take.wav')),
      { timeout: 10000, timeoutMsg: 'the expanded job row does not show an event naming corrupt-take.wav' },
    );
  });
});
