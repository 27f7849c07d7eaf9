// The Train page's forms turned into what the backend takes, and what its runs report turned
// into what the page shows.
import { CANCELLABLE_STATES, jobJson } from './api';
import type {
  DeviceReport,
  AssetStatus,
  AudioInput,
  DatasetReport,
  DatasetRow,
  Embedder,
  EnhancePreset,
  F0Method,
  Job,
  ModelVersion,
  PrepareRequest,
  TrainingMetric,
  TrainingProfile,
  TrainRequest,
  TrainingRow,
  TrainingDefaults,
  TrainingSampleRate,
} from './api';
import { usable } from './assets';
import { isolationMethod, type Isolation } from './clean';
import { fixed, t, type MessageKey } from './i18n.svelte';

export const SAMPLE_RATES: readonly TrainingSampleRate[] = [32000, 40000, 48000];

/** The content encoders a dataset can be prepared with (not `custom`: a voice cannot name it). */
export const TRAINABLE_EMBEDDERS: readonly Embedder[] = [
  'contentvec',
  'spin',
  'spin-v2',
  'chinese-hubert-base',
  'japanese-hubert-base',
  'korean-hubert-base',
];

/** The "Prepare dataset" form. */
export interface PrepareForm {
  name: string;
  voiceId: number | null;
  inputs: AudioInput[];
  sampleRate: TrainingSampleRate;
  version: ModelVersion;
  pitch: F0Method | 'none';
  /** The content encoder of the features, Applio's name (`contentvec` for RVC's). */
  embedder: Embedder;
  isolation: Isolation;
  enhance: EnhancePreset | 'none';
}

export function defaultPrepareForm(): PrepareForm {
  return {
    name: '',
    voiceId: null,
    inputs: [],
    sampleRate: 40000,
    version: 'v2',
    pitch: 'rmvpe',
    embedder: 'contentvec',
    isolation: { kind: 'none' },
    enhance: 'training',
  };
}

/** Why the form cannot be submitted yet, or null. */
export function prepareProblem(form: PrepareForm): string | null {
  if (!form.name.trim()) return t('train.prepare_problem_name');
  if (form.inputs.length === 0) return t('train.prepare_problem_inputs');
  return null;
}

export function prepareParams(form: PrepareForm): PrepareRequest {
  return {
    name: form.name.trim(),
    voice_id: form.voiceId,
    inputs: form.inputs.map((i) => ({ ...i })),
    sample_rate: form.sampleRate,
    version: form.version,
    f0_method: form.pitch === 'none' ? null : form.pitch,
    embedder: form.embedder,
    isolate: isolationMethod(form.isolation),
    enhance: form.enhance === 'none' ? null : form.enhance,
  };
}

/** The training settings form; number fields are null while empty. */
export interface TrainingForm {
  name: string;
  epochs: number | null;
  saveEvery: number | null;
  keepCheckpoints: number | null;
  /** null: the largest batch that fits the device. */
  batchSize: number | null;
  /** RVC's bases (`auto`), none, or a community base of the catalogue as `base:<name>`. */
  pretrained: string;
  /** null: at every checkpoint. */
  previewEvery: number | null;
  /** Stop once the judge's recommended checkpoint has not changed for `patience` saves. */
  stopEarly: boolean;
  patience: number | null;
  /** Takes or files of another speaker the checkpoint judge converts with every checkpoint. */
  judgeSources: AudioInput[];
  /** The GPUs to train on together (`cuda:0`, …); none: the device in Settings. */
  devices: string[];
}

/** Saves without a better checkpoint before a run that stops early stops, unless changed. */
export const DEFAULT_PATIENCE = 3;

/** The form at the backend's defaults (`get_training_defaults`); empty numbers until they are
 * known. */
export function trainingForm(defaults: TrainingDefaults | null, name = ''): TrainingForm {
  return {
    name,
    epochs: defaults?.epochs ?? null,
    saveEvery: defaults?.save_every ?? null,
    keepCheckpoints: defaults?.keep_checkpoints ?? null,
    batchSize: null,
    pretrained: 'auto',
    previewEvery: null,
    stopEarly: false,
    patience: DEFAULT_PATIENCE,
    judgeSources: [],
    devices: [],
  };
}

const wholeAtLeast = (n: number | null, min: number): n is number => n !== null && Number.isInteger(n) && n >= min;

/** Why the settings cannot start a run yet, or null. */
export function trainingProblem(form: TrainingForm): string | null {
  if (!form.name.trim()) return t('train.problem_name');
  if (!wholeAtLeast(form.epochs, 1)) return t('train.problem_epochs');
  if (!wholeAtLeast(form.saveEvery, 1)) return t('train.problem_save_every');
  if (!wholeAtLeast(form.keepCheckpoints, 1)) return t('train.problem_keep');
  if (form.batchSize !== null && !wholeAtLeast(form.batchSize, 1)) return t('train.problem_batch');
  if (form.previewEvery !== null && !wholeAtLeast(form.previewEvery, 1)) return t('train.problem_preview_every');
  if (form.stopEarly && !wholeAtLeast(form.patience, 1)) return t('train.problem_patience');
  return null;
}

/** The request for `form` on a dataset; call once `trainingProblem` is null. */
export function trainingRequest(form: TrainingForm, datasetId: number): TrainRequest {
  const problem = trainingProblem(form);
  if (problem) throw new Error(problem);
  const saveEvery = form.saveEvery as number;
  return {
    dataset_id: datasetId,
    name: form.name.trim(),
    epochs: form.epochs as number,
    save_every: saveEvery,
    keep_checkpoints: form.keepCheckpoints as number,
    batch_size: form.batchSize,
    pretrained: pretrainedChoice(form.pretrained),
    preview_every: form.previewEvery ?? saveEvery,
    patience_saves: form.stopEarly ? form.patience : null,
    judge_sources: form.judgeSources,
    devices: form.devices,
  };
}

/** The GPUs a training can be spread over: the CUDA devices of the device report, when there
 * are two or more. */
export function trainingGpus(report: DeviceReport | null): string[] {
  const gpus = (report?.available ?? []).filter((d) => d.startsWith('cuda:'));
  return gpus.length > 1 ? gpus : [];
}

/** The backend's `Pretrained` for the form's choice. */
function pretrainedChoice(choice: string): TrainRequest['pretrained'] {
  if (choice.startsWith('base:')) return { community: { name: choice.slice('base:'.length) } };
  return choice === 'none' ? 'none' : 'auto';
}

/** A community training base of the catalogue: its name and its title ("TITAN by blaise-tk"). */
export interface CommunityBase {
  name: string;
  title: string;
}

/** The community bases the catalogue lists (its `base-<name>-<rate>k-g` generators), once each. */
export function communityBases(catalogue: readonly AssetStatus[]): CommunityBase[] {
  const bases: CommunityBase[] = [];
  for (const asset of catalogue) {
    const name = asset.role === 'community-generator' ? /^base-(.+)-\d+k-g$/.exec(asset.name)?.[1] : undefined;
    if (name && !bases.some((b) => b.name === name)) bases.push({ name, title: asset.description.split(',')[0] });
  }
  return bases;
}

/**
 * The catalogue's files of the community base `name` for a dataset's rate (generator, then
 * discriminator); none when the base has no version at that rate (the backend refuses it).
 */
export function communityBasePaths(name: string, dataset: DatasetRow, catalogue: readonly AssetStatus[]): string[] | null {
  if (dataset.sample_rate === null) return null;
  const rate = `${Math.floor(dataset.sample_rate / 1000)}k`;
  return ['g', 'd'].flatMap((network) => catalogue.find((a) => a.name === `base-${name}-${rate}-${network}`)?.path ?? []);
}

/**
 * The base models `pretrained: 'auto'` starts a dataset's model from, as paths in the models
 * folder where the backend looks them up (RVC's layout: `pretrained/` for v1, else
 * `pretrained_v2/`; `f0G40k.pth` the generator of a 40 kHz model with pitch, `D32k.pth` the
 * discriminator of a 32 kHz one without); null while the dataset's version or rate is unknown.
 */
export function pretrainedPaths(dataset: DatasetRow): string[] | null {
  if (dataset.version === null || dataset.sample_rate === null) return null;
  const folder = dataset.version === 'v1' ? 'pretrained' : 'pretrained_v2';
  const pitch = dataset.f0_method === null ? '' : 'f0';
  const rate = `${Math.floor(dataset.sample_rate / 1000)}k`;
  return ['G', 'D'].map((network) => `${folder}/${pitch}${network}${rate}.pth`);
}

/** Which of `paths` a run cannot start from, by the asset catalogue. */
export interface MissingPretrained {
  /** Listed but not usable (missing, partial or corrupt): a download brings them. */
  assets: AssetStatus[];
  /** Not in the catalogue: nothing says whether the models folder has them. */
  unlisted: string[];
}

export function missingPretrained(paths: readonly string[], catalogue: readonly AssetStatus[]): MissingPretrained {
  const listed = paths.map((path) => ({ path, asset: catalogue.find((a) => a.path === path) }));
  return {
    assets: listed.flatMap(({ asset }) => (asset && !usable(asset) ? [asset] : [])),
    unlisted: listed.flatMap(({ path, asset }) => (asset ? [] : [path])),
  };
}

/** A report's warnings, with whether each is serious enough to stop a person training. */
export function reportWarnings(report: DatasetReport | null): { kind: string; message: string; severe: boolean }[] {
  return (report?.warnings ?? []).map((w) => ({
    ...w,
    severe: w.kind === 'too_little_audio' || w.kind === 'silence_only',
  }));
}

/** What a dataset's report says of its held-out set, the speech the checkpoint judge scores on. */
export function heldOutText(report: DatasetReport): string {
  const held = report.held_out;
  if (!held || held.pieces === 0) return t('train.held_out_none');
  return t('train.held_out', {
    pieces: held.pieces,
    seconds: fixed(held.seconds, 1),
    from: held.sources.length === 0 ? 'none' : held.whole_sources ? 'whole' : 'end',
    sources: listText(held.sources),
  });
}

/** Items in a row, with the UI language's separator ("a, b" in English, "a、b" in Japanese). */
export function listText(items: readonly string[]): string {
  return items.join(t('train.list_separator'));
}

/** The newest queued or running `dataset` job preparing the dataset of this name. */
export function preparingJob(jobs: Job[], datasetName: string): Job | undefined {
  return jobs
    .filter((j) => j.kind === 'dataset' && CANCELLABLE_STATES.includes(j.state))
    .filter((j) => jobJson<Partial<PrepareRequest>>(j.params)?.name === datasetName)
    .sort((a, b) => b.id - a.id)[0];
}

export const ACTIVE_RUN: readonly TrainingRow['status'][] = ['queued', 'running'];

/** The job a run runs as, among the jobs the app follows. */
export function runJob(run: TrainingRow, jobs: readonly Job[]): Job | undefined {
  return run.job_id === null ? undefined : jobs.find((j) => j.id === run.job_id);
}

/**
 * Whether the run's row should show its job's reports: they come at every step, while the row's
 * epoch and step are stored only every few steps (a CPU's first epoch can pass without one).
 */
export function reportsLive(job: Job | undefined): job is Job {
  return job?.state === 'running';
}

const unit = (fraction: number) => Math.min(1, Math.max(0, fraction));

/** How far a run is, 0..1: its job's progress while that runs, else the epochs it finished. */
export function runProgress(run: TrainingRow, job?: Job): number {
  if (reportsLive(job)) return Number.isFinite(job.progress) ? unit(job.progress) : 0;
  if (run.status === 'done') return 1;
  return run.epochs > 0 ? unit(run.epoch / run.epochs) : 0;
}

/** Seconds until a running job ends at the pace it has kept since it started (`now`: ms since
 * the epoch); null until it has made progress. */
export function jobSecsLeft(job: Job, now: number): number | null {
  if (job.state !== 'running' || !job.started_at || !(job.progress > 0)) return null;
  const elapsed = (now - Date.parse(job.started_at)) / 1000;
  if (!Number.isFinite(elapsed) || elapsed < 0) return null;
  const done = Math.min(1, job.progress);
  return (elapsed * (1 - done)) / done;
}

/** The loss series the chart draws, in legend order; `labelKey` names each in the
 * catalogue (`t` is called where it is shown). */
export const LOSSES = [
  { key: 'g_total', labelKey: 'train.loss_generator', color: '#f2a33a' },
  { key: 'd_total', labelKey: 'train.loss_discriminator', color: '#6aa7ec' },
  { key: 'mel', labelKey: 'train.loss_mel', color: '#56c28a' },
  { key: 'kl', labelKey: 'train.loss_kl', color: '#c78bea' },
  { key: 'fm', labelKey: 'train.loss_feature_match', color: '#e8c547' },
] as const satisfies readonly { key: string; labelKey: MessageKey; color: string }[];

export type LossKey = (typeof LOSSES)[number]['key'];

/** What the loss chart says while it has no point: losses are logged every few steps, so a
 * run's first ones can take a while on a CPU. */
export function lossesEmptyText(run: TrainingRow): string {
  return ACTIVE_RUN.includes(run.status) ? t('train.losses_empty_active') : t('train.losses_empty_done');
}

/** The (step, value) points of one loss, in step order. */
export function lossPoints(metrics: TrainingMetric[], key: LossKey): { x: number; y: number }[] {
  return metrics
    .map((m) => ({ x: m.step, y: m[key] }))
    .filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y))
    .sort((a, b) => a.x - b.x);
}

export interface ProfileSegment {
  key: 'step' | 'all_reduce' | 'to_device' | 'waited' | 'load' | 'assemble';
  label: string;
  seconds: number;
  /** Share of its bar, 0..1. */
  share: number;
}

export interface ProfileBreakdown {
  /** The trainer's time: stepping, copying a batch to the device, or waiting for one. */
  trainer: ProfileSegment[];
  /** The data threads' time (summed over threads): loading, assembling. */
  data: ProfileSegment[];
  /** Share of the trainer's time spent waiting, 0..1. */
  waitedShare: number;
  /** Trainer milliseconds per batch (step + copy + wait). */
  msPerBatch: number | null;
  starved: boolean;
  /** The training GPU's mean utilisation, percent; null on the CPU. */
  gpuPercent: number | null;
}

function segments(parts: Omit<ProfileSegment, 'share'>[]): ProfileSegment[] {
  const safe = parts.map((p) => ({ ...p, seconds: Number.isFinite(p.seconds) && p.seconds > 0 ? p.seconds : 0 }));
  const total = safe.reduce((sum, p) => sum + p.seconds, 0);
  return safe.map((p) => ({ ...p, share: total > 0 ? p.seconds / total : 0 }));
}

/**
 * A run's profile as totals: the sums of the per-epoch list the trainer stores, starved when
 * the latest epoch was (the first one also fills the
 * spectrogram cache, so it often waits).
 */
export function runProfile(profile: TrainingRow['profile']): TrainingProfile | null {
  if (!profile || profile.length === 0) return null;
  const finite = (value: number | null | undefined): value is number => Number.isFinite(value);
  const sum = (key: 'load_secs' | 'assemble_secs' | 'waited_secs' | 'step_secs' | 'to_device_secs' | 'batches') =>
    profile.reduce((total, epoch) => total + (finite(epoch[key]) ? epoch[key] : 0), 0);
  // The epochs' utilisations weighted by their lengths.
  const measured = profile.filter((e) => finite(e.gpu_percent) && finite(e.seconds) && e.seconds > 0);
  const measuredSecs = measured.reduce((total, e) => total + e.seconds, 0);
  return {
    load_s: sum('load_secs'),
    assemble_s: sum('assemble_secs'),
    waited_s: sum('waited_secs'),
    step_s: sum('step_secs'),
    to_device_s: sum('to_device_secs'),
    batches: sum('batches'),
    starved: profile[profile.length - 1].starved,
    gpu_percent:
      measuredSecs > 0 ? measured.reduce((total, e) => total + (e.gpu_percent ?? 0) * e.seconds, 0) / measuredSecs : null,
    all_reduce_s: profile.some((e) => finite(e.all_reduce_secs))
      ? profile.reduce((total, e) => total + (finite(e.all_reduce_secs) ? e.all_reduce_secs : 0), 0)
      : null,
  };
}

export function profileBreakdown(profile: TrainingProfile): ProfileBreakdown {
  // A data-parallel run's steps: computing, then averaging the gradients over the GPUs.
  const allReduce = Math.min(Math.max(profile.all_reduce_s ?? 0, 0), profile.step_s);
  const averaging: Omit<ProfileSegment, 'share'>[] =
    allReduce > 0 ? [{ key: 'all_reduce', label: t('train.profile_all_reduce'), seconds: allReduce }] : [];
  const trainer = segments([
    { key: 'step', label: t('train.profile_step'), seconds: profile.step_s - allReduce },
    ...averaging,
    { key: 'to_device', label: t('train.profile_to_device'), seconds: profile.to_device_s ?? 0 },
    { key: 'waited', label: t('train.profile_waited'), seconds: profile.waited_s },
  ]);
  const data = segments([
    { key: 'load', label: t('train.profile_load'), seconds: profile.load_s },
    { key: 'assemble', label: t('train.profile_assemble'), seconds: profile.assemble_s },
  ]);
  const trainerSeconds = trainer.reduce((total, s) => total + s.seconds, 0);
  return {
    trainer,
    data,
    waitedShare: trainer.find((s) => s.key === 'waited')?.share ?? 0,
    msPerBatch: profile.batches > 0 && trainerSeconds > 0 ? (trainerSeconds / profile.batches) * 1000 : null,
    starved: profile.starved,
    gpuPercent: Number.isFinite(profile.gpu_percent) ? (profile.gpu_percent as number) : null,
  };
}
