// The Train page's state (Svelte 5 runes): datasets, the forms, the runs and the selected run's
// losses, previews and checkpoint scores, kept here so they survive switching pages and so a
// drop on the page can add inputs to the dataset form.
import * as api from './api';
import type {
  AudioInput,
  DatasetRow,
  JudgeReport,
  JudgeWeights,
  Notification,
  SeparationModel,
  TrainingMetric,
  TrainingPreview,
  TrainingRow,
  VoiceModel,
} from './api';
import { app } from './stores.svelte';
import { sameInput } from './studio.svelte';
import { basename } from './format';
import { defaults } from './defaults.svelte';
import { t } from './i18n.svelte';
import {
  ACTIVE_RUN,
  defaultPrepareForm,
  trainingForm,
  prepareParams,
  trainingRequest,
  type PrepareForm,
  type TrainingForm,
} from './train';
import { judgeNotes, upsertScore, type JudgeNote } from './judge';

/** Coalesces bursts of job progress into one refresh. */
const REFRESH_DELAY_MS = 400;
/** While the selected run trains, its job's events (the judge's notes) are read at most this often. */
const NOTES_EVERY_MS = 5000;

/** What the Train page shows of the judge's report: the scores (notifications add to them at
 * once) and, as last asked, the recommendation and each step's weighted score. */
type JudgeView = Pick<JudgeReport, 'scores' | 'recommendation'> & { weightedByStep: Record<number, number> };

const noReport = (): JudgeView => ({ scores: [], recommendation: null, weightedByStep: {} });

class TrainerState {
  datasets = $state<DatasetRow[]>([]);
  datasetsLoaded = $state(false);
  /** Why the datasets could not be listed, until they are. */
  datasetsError = $state<string | null>(null);
  runs = $state<TrainingRow[]>([]);
  isolationModels = $state<SeparationModel[]>([]);
  prepare = $state<PrepareForm>(defaultPrepareForm());
  settings = $state<TrainingForm>(trainingForm(null));
  /** The dataset the settings train on. */
  datasetId = $state<number | null>(null);
  /** The run whose losses, previews and profile are shown. */
  runId = $state<number | null>(null);
  metrics = $state<TrainingMetric[]>([]);
  previews = $state<TrainingPreview[]>([]);
  /** The selected run's checkpoint scores, in step order, and the checkpoint the backend
   * recommends (with the weights of the settings). */
  judge = $state<JudgeView>(noReport());
  /** The judge's notes among the selected run's job events (why it is off, what failed). */
  judgeNotes = $state<JudgeNote[]>([]);
  /** The judge's weights as stored (`judge_weights`), from the backend's report; null until
   * one is read. */
  judgeWeights = $state<JudgeWeights | null>(null);
  /** The weights a new library starts with, from the backend's report; null until read. */
  defaultWeights = $state<JudgeWeights | null>(null);
  /** The model "Export recommended" last made of the selected run. */
  exported = $state<{ step: number; name: string } | null>(null);
  exporting = $state(false);
  /** Runs whose Stop was pressed here, until they are queued or running no more (a running
   * one first finishes its step and saves a checkpoint). */
  stopAsked = $state<number[]>([]);
  /** Dataset jobs queued from this window, oldest first. */
  datasetJobIds = $state<number[]>([]);
  submitting = $state(false);

  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  private settingsDefaulted = false;
  /** Bumped when the selected run changes, so a late answer for the old one is dropped. */
  private runSeq = 0;
  /** Bumped at each judge report asked for, so only the latest answer is kept. */
  private judgeSeq = 0;
  private notesReadAt = 0;

  get selectedDataset(): DatasetRow | null {
    return this.datasets.find((d) => d.id === this.datasetId) ?? null;
  }

  get selectedRun(): TrainingRow | null {
    return this.runs.find((r) => r.id === this.runId) ?? null;
  }

  datasetName(id: number | null): string {
    if (id === null) return t('train.dataset_deleted');
    return this.datasets.find((d) => d.id === id)?.name ?? t('train.dataset_fallback', { id: String(id) });
  }

  inputLabel(input: AudioInput): string {
    if ('file' in input) return basename(input.file);
    return app.takes.find((take) => take.id === input.take)?.name ?? t('train.take_fallback', { id: String(input.take) });
  }

  addInputs(inputs: AudioInput[]) {
    for (const input of inputs) if (!this.prepare.inputs.some((i) => sameInput(i, input))) this.prepare.inputs.push(input);
  }

  removeInput(input: AudioInput) {
    this.prepare.inputs = this.prepare.inputs.filter((i) => !sameInput(i, input));
  }

  async load(): Promise<void> {
    // Scores saved while the page was closed (its notifications are followed only while open).
    if (this.runId !== null) void this.refreshJudge();
    await Promise.all([
      this.refreshDatasets(),
      this.refreshRuns(),
      this.loadIsolationModels(),
      this.loadDefaults(),
    ]);
  }

  /** Fills the settings' empty numbers with the backend's defaults (asked for once, at
   * start-up), the first time the page opens. */
  private async loadDefaults() {
    if (this.settingsDefaulted) return;
    try {
      const filled = trainingForm((await defaults.load()).training);
      this.settingsDefaulted = true;
      this.settings.epochs ??= filled.epochs;
      this.settings.saveEvery ??= filled.saveEvery;
      this.settings.keepCheckpoints ??= filled.keepCheckpoints;
    } catch (err) {
      app.reportError(err, t('train.error_defaults'));
    }
  }

  private async loadIsolationModels() {
    try {
      this.isolationModels = (await api.listIsolationModels()).models;
      const chosen = this.prepare.isolation;
      if (chosen.kind === 'model' && !this.isolationModels.some((m) => m.name === chosen.name)) {
        this.prepare.isolation = { kind: 'none' };
      }
    } catch (err) {
      app.reportError(err, t('train.error_separation_models'));
    }
  }

  async refreshDatasets(): Promise<void> {
    try {
      this.datasets = await api.listDatasets();
      this.datasetsLoaded = true;
      this.datasetsError = null;
      if (this.datasetId === null || !this.selectedDataset) {
        const ready = this.datasets.find((d) => d.status === 'ready');
        if (ready) this.selectDataset(ready.id);
      }
    } catch (err) {
      this.datasetsError = api.errorMessage(err);
      app.reportError(err, t('train.error_datasets'));
    }
  }

  async refreshRuns(): Promise<void> {
    try {
      this.runs = await api.listTrainings();
      this.forgetEndedStops();
      if (!this.selectedRun) {
        this.showRun(this.runs[0]?.id ?? null);
        await this.loadSelectedRun();
      } else if (this.judgeNotesWanted()) {
        await this.refreshJudgeNotes();
      }
    } catch (err) {
      app.reportError(err, t('train.error_runs'));
    }
  }

  /**
   * The selected run's losses and previews so far; later ones arrive as notifications
   * (`handleNotification`), kept when they came while this was loading.
   */
  private async loadSelectedRun(): Promise<void> {
    const id = this.runId;
    const seq = this.runSeq;
    if (id === null) return;
    void this.refreshJudge();
    void this.refreshJudgeNotes();
    try {
      const [metrics, previews] = await Promise.all([api.trainingMetrics(id), api.trainingPreviews(id)]);
      if (seq !== this.runSeq) return;
      this.metrics = upsertBy(metrics, this.metrics, (m) => m.step);
      this.previews = upsertBy(previews, this.previews, (p) => p.epoch);
    } catch (err) {
      app.reportError(err, t('train.error_losses_previews'));
    }
  }

  /**
   * The selected run's checkpoint scores and recommendation; scores that came as notifications
   * while this was asked are kept, and only the latest answer counts.
   */
  async refreshJudge(): Promise<void> {
    const id = this.runId;
    const seq = this.runSeq;
    const asked = ++this.judgeSeq;
    if (id === null) return;
    try {
      const report = await api.judgeReport(id);
      if (seq !== this.runSeq || asked !== this.judgeSeq) return;
      this.judge = {
        scores: upsertBy(report.scores, this.judge.scores, (s) => s.step),
        recommendation: report.recommendation,
        weightedByStep: Object.fromEntries(report.scores.map((s, i) => [s.step, report.weighted[i]])),
      };
      this.judgeWeights = report.weights;
      this.defaultWeights = report.default_weights;
    } catch (err) {
      if (seq === this.runSeq) app.reportError(err, t('train.error_scores'));
    }
  }

  /** Whether the selected run's job events may hold a judge's note not read yet. */
  private judgeNotesWanted(): boolean {
    const run = this.selectedRun;
    if (!run || run.job_id === null || !ACTIVE_RUN.includes(run.status)) return false;
    return Date.now() - this.notesReadAt >= NOTES_EVERY_MS;
  }

  private async refreshJudgeNotes(): Promise<void> {
    const jobId = this.selectedRun?.job_id ?? null;
    const seq = this.runSeq;
    if (jobId === null) return;
    this.notesReadAt = Date.now();
    try {
      const notes = judgeNotes(await api.jobEvents(jobId));
      if (seq === this.runSeq) this.judgeNotes = notes;
    } catch (err) {
      if (seq === this.runSeq) app.reportError(err, t('train.error_events'));
    }
  }

  /** Stores the judge's weights (`json`, checked by the backend) and asks the report again, so
   * the recommendation follows; null once stored, else the backend's refusal. */
  async saveWeights(json: string): Promise<string | null> {
    try {
      this.judgeWeights = (await api.setSetting('judge_weights', json)).settings.judge_weights;
    } catch (err) {
      return api.errorMessage(err);
    }
    await this.refreshJudge();
    return null;
  }

  /** Follows the selected run's losses, previews and scores as the backend records them. */
  handleNotification(n: Notification) {
    if (n.type === 'training_metric' && n.training_id === this.runId) {
      this.metrics = upsertBy(this.metrics, [n.metric], (m) => m.step);
    } else if (n.type === 'training_preview' && n.preview.training_id === this.runId) {
      this.previews = upsertBy(this.previews, [n.preview], (p) => p.epoch);
    } else if (n.type === 'checkpoint_scored' && n.training_id === this.runId) {
      // Shown at once; the recommendation is the backend's, asked again.
      this.judge = { ...this.judge, scores: upsertScore(this.judge.scores, n.score) };
      void this.refreshJudge();
    } else if (n.type === 'training_rewound' && n.training_id === this.runId) {
      this.metrics = this.metrics.filter((m) => m.step <= n.step);
      this.previews = this.previews.filter((p) => p.epoch <= n.epoch);
      const scores = this.judge.scores.filter((s) => s.step <= n.step);
      if (scores.length !== this.judge.scores.length) {
        const recommendation = this.judge.recommendation;
        this.judge = {
          scores,
          recommendation: recommendation && recommendation.step <= n.step ? recommendation : null,
          weightedByStep: this.judge.weightedByStep,
        };
        void this.refreshJudge();
      }
    }
  }

  /** Refreshes datasets and runs soon, once for a burst of calls (job progress). */
  scheduleRefresh() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.refreshDatasets();
      void this.refreshRuns();
    }, REFRESH_DELAY_MS);
  }

  selectDataset(id: number) {
    const previous = this.selectedDataset;
    this.datasetId = id;
    // The model's name follows the dataset's until a person types another.
    const name = this.settings.name.trim();
    if (!name || name === previous?.name) this.settings.name = this.selectedDataset?.name ?? '';
  }

  selectRun(id: number) {
    if (id === this.runId) return;
    this.showRun(id);
    void this.loadSelectedRun();
  }

  private showRun(id: number | null) {
    this.runId = id;
    this.runSeq++;
    this.metrics = [];
    this.previews = [];
    this.judge = noReport();
    this.judgeNotes = [];
    this.notesReadAt = 0;
    this.exported = null;
  }

  /** Queues the `dataset` job; resolves to its id. */
  async prepareDataset(): Promise<number | null> {
    this.submitting = true;
    try {
      const job = await api.prepareDataset(prepareParams(this.prepare));
      app.addQueuedJob(job);
      app.watchJob(job.id);
      this.datasetJobIds.push(job.id);
      this.prepare.inputs = [];
      this.scheduleRefresh();
      return job.id;
    } catch (err) {
      app.reportError(err, t('train.error_prepare'));
      return null;
    } finally {
      this.submitting = false;
    }
  }

  /** Starts a run on the selected dataset and selects it. */
  async start(): Promise<TrainingRow | null> {
    const datasetId = this.datasetId;
    if (datasetId === null) return null;
    this.submitting = true;
    try {
      const run = await api.startTraining(trainingRequest(this.settings, datasetId));
      this.upsertRun(run);
      this.selectRun(run.id);
      return run;
    } catch (err) {
      app.reportError(err, t('train.error_start'));
      return null;
    } finally {
      this.submitting = false;
    }
  }

  async stop(id: number): Promise<void> {
    if (!this.stopAsked.includes(id)) this.stopAsked.push(id);
    try {
      this.upsertRun(await api.stopTraining(id));
    } catch (err) {
      this.stopAsked = this.stopAsked.filter((asked) => asked !== id);
      app.reportError(err, t('train.error_stop'));
    }
  }

  async resume(id: number): Promise<void> {
    try {
      this.upsertRun(await api.resumeTraining(id));
    } catch (err) {
      app.reportError(err, t('train.error_resume'));
    }
  }

  /** Makes a model of the run's checkpoint of `step`, the latest when null, now (a stopped run,
   * or one still learning); resolves to it, or null when that failed (and was said). */
  async exportModel(id: number, step: number | null = null): Promise<VoiceModel | null> {
    try {
      const model = await api.exportTraining(id, step);
      app.notify(t('train.exported_notice', { name: model.name }), 'success', {
        label: t('train.exported_open'),
        run: () => (app.page = 'models'),
      });
      return model;
    } catch (err) {
      app.reportError(err, t('train.error_export'));
      return null;
    }
  }

  /** Makes a model of the selected run's recommended checkpoint. */
  async exportRecommended(): Promise<void> {
    const id = this.runId;
    const step = this.judge.recommendation?.step;
    if (id === null || step === undefined) return;
    this.exporting = true;
    const model = await this.exportModel(id, step);
    this.exporting = false;
    if (model && id === this.runId) this.exported = { step, name: model.name };
  }

  private upsertRun(run: TrainingRow) {
    const i = this.runs.findIndex((r) => r.id === run.id);
    if (i >= 0) this.runs[i] = run;
    else this.runs.unshift(run);
    this.forgetEndedStops();
  }

  private forgetEndedStops() {
    const ended = (id: number) => !this.runs.some((r) => r.id === id && ACTIVE_RUN.includes(r.status));
    if (this.stopAsked.some(ended)) this.stopAsked = this.stopAsked.filter((id) => !ended(id));
  }

  /** Back to a blank state (tests). */
  reset() {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    this.runSeq++;
    this.datasets = [];
    this.datasetsLoaded = false;
    this.datasetsError = null;
    this.runs = [];
    this.isolationModels = [];
    this.prepare = defaultPrepareForm();
    this.settings = trainingForm(null);
    this.settingsDefaulted = false;
    this.datasetId = null;
    this.runId = null;
    this.metrics = [];
    this.previews = [];
    this.judge = noReport();
    this.judgeNotes = [];
    this.judgeWeights = null;
    this.judgeSeq++;
    this.notesReadAt = 0;
    this.exported = null;
    this.exporting = false;
    this.stopAsked = [];
    this.datasetJobIds = [];
    this.submitting = false;
  }
}

/** `items` with `added` put in, one per key (an added one replaces its namesake), in key order. */
function upsertBy<T>(items: T[], added: T[], key: (item: T) => number): T[] {
  const byKey = new Map(items.map((item) => [key(item), item]));
  for (const item of added) byKey.set(key(item), item);
  return [...byKey.values()].sort((a, b) => key(a) - key(b));
}

export const trainer = new TrainerState();
