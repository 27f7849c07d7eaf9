// The Train page: its datasets block, the "Prepare dataset" form, the training settings with
// their defaults and the resource charts; then a take of 85 s of speech-like audio prepared into
// a v1 dataset from the page (the tiny parity HuBERT's v1 features have the real v1 width; the
// slicer keeps over a minute, as training refuses less, with some held out for the checkpoint
// judge, whose speaker encoder embeds only what sounds like speech: a sine it would not), a
// two-epoch run trained on it whose losses and previews reach the page as they are recorded and
// whose two checkpoints the judge scores (one row each, one recommended, exported as a model),
// and a second run stopped. The runs train run.sh's tiny generator (TIMBRE_TRAIN_MODEL_CONFIG),
// the app's whole training path in seconds. Each step waits on the state it needs (the job's,
// the run's status, a loss point, a preview), never on a time, which depends on the machine's
// load.
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
  writeSpeechWav,
} from './helpers.mjs';

const workDir = requireEnv('E2E_TMP');
const DATASET = 'e2e-dataset';

describe('train', () => {
  let takeId;

  before(async () => {
    await waitForApp();
    const source = writeSpeechWav(path.join(workDir, 'train-source.wav'), { seconds: 85 });
    const job = await waitForJob(await invoke('import_files', { paths: [source], voiceId: null }));
    assert.equal(job.state, 'succeeded', `the import failed: ${job.error}`);
    takeId = (await invoke('list_takes', { voiceId: null })).find((t) => t.name === 'train-source').id;
  });

  it('shows the datasets, the prepare form and the training settings with their defaults', async () => {
    await openPage('train', byTestId('train-datasets'));
    await $(byTestId('dataset-form')).waitForDisplayed({ timeout: 5000 });
    const empty = $(byTestId('datasets-empty'));
    const expected = /No datasets yet/;
    await waitFor(async () => expected.test(await empty.getText()), {
      timeout: 10000,
      message: async () => `the datasets block says: ${await empty.getText()}`,
    });
    assert.equal(await $(byTestId('dataset-rate')).getValue(), '40000');
    assert.equal(await $(byTestId('dataset-version')).getValue(), 'v2');
    assert.equal(await $(byTestId('dataset-pitch')).getValue(), 'rmvpe');
    assert.equal(await $(byTestId('dataset-enhance')).getValue(), 'training');
    assert.equal(await $(byTestId('training-epochs')).getValue(), '200');
    assert.equal(await $(byTestId('training-save-every')).getValue(), '10');
    assert.equal(await $(byTestId('training-keep')).getValue(), '3');
    assert.equal(await $(byTestId('training-batch')).getValue(), '');
    assert.equal(await $(byTestId('training-start')).isEnabled(), false, 'Start is enabled without a dataset');
    assert.equal(await $(byTestId('dataset-submit')).isEnabled(), false, 'Prepare is enabled without inputs');
    const cpu = $(`${byTestId('resource-charts')} ${byTestId('resource-chart-cpu')}`);
    await cpu.waitForDisplayed({ timeout: 10000 });
    assert.match(await cpu.$(byTestId('resource-chart-reading')).getText(), /^\d+%$/);
    assert.deepEqual(await visibleErrors(), []);
  });

  it('prepares a dataset from a take and lists it', async function () {
    await $(byTestId('dataset-take-picker')).selectByAttribute('value', String(takeId));
    await $(`${byTestId('dataset-input')}[data-label="train-source"]`).waitForDisplayed({ timeout: 5000 });
    await $(byTestId('dataset-name')).setValue(DATASET);
    await $(byTestId('dataset-version')).selectByAttribute('value', 'v1');
    await $(byTestId('dataset-pitch')).selectByAttribute('value', 'pm');
    await $(byTestId('dataset-enhance')).selectByAttribute('value', 'none');
    await $(byTestId('dataset-submit')).click();

    const job = () => $(`${byTestId('train-prepare')} ${byTestId('job-row')}`);
    await waitFor(async () => ['succeeded', 'failed'].includes(await job().getAttribute('data-job-state')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the dataset job did not finish: ${await job().getText()}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.equal(await job().getAttribute('data-job-state'), 'succeeded', await job().getText());

    const dataset = (await invoke('list_datasets')).find((d) => d.name === DATASET);
    assert.ok(dataset, 'list_datasets does not list the dataset');
    assert.equal(dataset.status, 'ready');
    assert.equal(dataset.version, 'v1');
    assert.ok(dataset.piece_count > 0, 'no pieces');
    const row = $(`${byTestId('dataset-row')}[data-dataset-id="${dataset.id}"]`);
    await waitFor(async () => (await row.getAttribute('data-status')) === 'ready', {
      timeout: 10000,
      message: async () => `the dataset row is not ready: ${await row.getText()}`,
    });
    assert.match(await row.getText(), new RegExp(`${dataset.piece_count} pieces`));
    // Enough is spared for the checkpoint judge, keeping the minute training needs.
    const heldOut = dataset.report.held_out;
    assert.ok(heldOut.pieces > 0 && heldOut.seconds >= 5, `no held-out set: ${JSON.stringify(heldOut)}`);
    assert.match(
      await row.$(byTestId('dataset-held-out')).getText(),
      new RegExp(`^Held out for judging: ${heldOut.pieces} pieces?, ${heldOut.seconds.toFixed(1)} s`),
    );
    await $(byTestId('training-dataset')).waitForDisplayed({ timeout: 5000 });
    assert.equal(await $(byTestId('training-dataset')).getText(), DATASET);
  });

  it('trains a two-epoch run whose losses and previews appear as they are recorded', async () => {
    await setNumber('training-epochs', 2);
    await setNumber('training-save-every', 1);
    await $(byTestId('training-pretrained')).selectByAttribute('value', 'none');
    await startRun();
    const run = $(byTestId('training-run'));
    const runId = Number(await run.getAttribute('data-run-id'));
    const [row] = (await invoke('list_trainings')).filter((r) => r.id === runId);
    assert.ok(row, 'list_trainings does not list the run');
    assert.equal(row.epochs, 2);
    assert.equal(row.name, DATASET);
    // While its job runs, the row shows what the job reports at each step, as the Jobs page does.
    await waitFor(
      async () =>
        /epoch \d\/2 · step \d+ · mel loss/.test(await run.getText()) ||
        ['done', 'failed', 'stopped'].includes(await run.getAttribute('data-status')),
      { timeout: BACKEND_WORK_TIMEOUT, message: async () => `the row shows no step of its job: ${await run.getText()}` },
    );

    await waitFor(async () => ['done', 'failed', 'stopped'].includes(await run.getAttribute('data-status')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the run did not finish: ${await run.getText()}`,
    });
    assert.equal(await run.getAttribute('data-status'), 'done', await run.getText());
    assert.match(await run.$(byTestId('training-run-epoch')).getText(), /epoch 2\/2/);
    const chart = $(`${byTestId('train-losses')} ${byTestId('loss-chart')}`);
    await waitFor(async () => Number(await chart.getAttribute('data-points')) > 0, {
      timeout: 10000,
      message: 'no loss of the run reached the chart',
    });
    await $(`${byTestId('training-preview')}[data-epoch="1"]`).waitForDisplayed({ timeout: 10000 });
    await $(`${byTestId('training-preview')}[data-epoch="2"]`).waitForDisplayed({ timeout: 10000 });
    assert.deepEqual(await visibleErrors(), []);
  });

  it("scores each of the run's checkpoints, recommends one and exports it", async () => {
    const runId = Number(await $(byTestId('training-run')).getAttribute('data-run-id'));
    const panel = $(byTestId('train-judge'));
    await panel.waitForDisplayed({ timeout: 10000 });
    const judgeEvents = async () => {
      const [row] = (await invoke('list_trainings')).filter((r) => r.id === runId);
      const events = await invoke('list_job_events', { id: row.job_id });
      return events.filter((e) => e.kind.startsWith('judge_')).map((e) => `${e.kind}: ${JSON.stringify(e.data)}`);
    };
    // The job waits for the judge before it ends: both checkpoints (epochs 1 and 2) are scored.
    const report = await invoke('get_judge_report', { trainingId: runId });
    assert.equal(report.scores.length, 2, `scores ${JSON.stringify(report.scores)}; the judge said ${await judgeEvents()}`);
    assert.deepEqual(report.scores.map((s) => s.epoch), [1, 2]);
    assert.ok(report.recommendation, 'no checkpoint is recommended');
    const rows = () => panel.$$(byTestId('judge-row'));
    await waitFor(async () => (await rows()).length === 2, {
      timeout: 10000,
      message: async () => `the judge panel shows: ${await panel.getText()}`,
    });
    const steps = await rows().map((r) => r.getAttribute('data-step'));
    assert.deepEqual(steps, report.scores.map((s) => String(s.step)));
    const recommended = panel.$(`${byTestId('judge-row')}[data-step="${report.recommendation.step}"]`);
    assert.ok(await recommended.$(byTestId('judge-recommended')).isDisplayed(), 'the recommended row is not marked');
    assert.equal((await panel.$$(byTestId('judge-recommended'))).length, 1);
    for (const s of report.scores) {
      assert.ok(Number.isFinite(s.mel_distance) && Number.isFinite(s.train_mel_distance), JSON.stringify(s));
      assert.ok(s.sample, `checkpoint ${s.step} has no judged sample`);
      assert.equal(typeof s.similarity, 'number', `no similarity: ${JSON.stringify(s)}`);
    }
    await $(byTestId('judge-chart-mel')).waitForDisplayed({ timeout: 5000 });
    assert.equal(await $(byTestId('judge-chart-mel')).getAttribute('data-points'), '2');
    await $(byTestId('judge-play-recommended')).waitForDisplayed({ timeout: 5000 });
    assert.match(await $(byTestId('judge-summary')).getText(), /2 checkpoints scored/);

    await $(byTestId('judge-export')).click();
    const exported = $(byTestId('judge-exported'));
    await waitFor(async () => (await exported.isExisting()) && /made of step/.test(await exported.getText()), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `Export recommended made nothing: ${await panel.getText()}; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    assert.match(await exported.getText(), new RegExp(`made of step ${report.recommendation.step}$`));
    await panel.scrollIntoView();
    await screenshot('e2e-train.png');
    assert.deepEqual(await visibleErrors(), []);
  });

  it('stops a run that is training', async () => {
    // Enough epochs of the tiny generator (run.sh) that the run is still training when Stop
    // is clicked, however fast the machine.
    await setNumber('training-epochs', 5000);
    await startRun();
    const run = $(byTestId('training-run'));
    await waitFor(async () => (await run.getAttribute('data-status')) === 'running', {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the run does not run: ${await run.getText()}`,
    });
    await run.$(byTestId('training-run-stop')).click();
    await waitFor(async () => ['stopped', 'done', 'failed'].includes(await run.getAttribute('data-status')), {
      timeout: BACKEND_WORK_TIMEOUT,
      message: async () => `the run did not stop: ${await run.getText()}`,
    });
    assert.equal(await run.getAttribute('data-status'), 'stopped', await run.getText());
    await run.$(byTestId('training-run-resume')).waitForDisplayed({ timeout: 10000 });
  });
});

/** Types `value` into the number field `testid`, replacing what it held. */
async function setNumber(testid, value) {
  await $(byTestId(testid)).click();
  await browser.keys(['Control', 'a']);
  await browser.keys(String(value).split(''));
}

/** Starts a run with the settings shown and waits for its row to lead the runs list. */
async function startRun() {
  const before = (await invoke('list_trainings')).map((r) => r.id);
  await waitFor(async () => $(byTestId('training-start')).isEnabled(), {
    timeout: 5000,
    message: async () => `Start stays disabled: ${await $(byTestId('training-settings')).getText()}`,
  });
  await $(byTestId('training-start')).click();
  await waitFor(async () => {
    const id = Number(await $(byTestId('training-run')).getAttribute('data-run-id'));
    return id > 0 && !before.includes(id);
  }, { timeout: 15000, message: 'the new run does not lead the runs list' });
}
