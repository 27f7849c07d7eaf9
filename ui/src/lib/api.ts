// Every call to the Rust backend goes through this module.
// JSON field names are snake_case (as serde sends them); invoke argument keys
// are camelCase (Tauri v2 converts them to the Rust parameter names).
import { Channel, invoke, type InvokeArgs } from '@tauri-apps/api/core';

export type TakeOrigin = 'imported' | 'recorded';

export interface Take {
  id: number;
  voice_id: number | null;
  name: string;
  sha256: string;
  source_path: string | null;
  origin: TakeOrigin;
  format: string;
  duration_secs: number;
  sample_rate: number;
  channels: number;
  peak_dbfs: number;
  loudness_lufs: number | null;
  tags: string[];
  /** 0..1 peaks, about 120 bins */
  waveform: number[];
  /** RFC 3339 */
  created_at: string;
}

export interface Voice {
  id: number;
  name: string;
  created_at: string;
  take_count: number;
}

export type JobState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted';

export interface Job {
  id: number;
  kind: string;
  state: JobState;
  /** 0..1 */
  progress: number;
  message: string;
  attempts: number;
  max_retries: number;
  error: string | null;
  params: unknown;
  result: unknown | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export type EventLevel = 'info' | 'warn' | 'error';

export interface JobEvent {
  id: number;
  job_id: number;
  at: string;
  level: EventLevel;
  kind: string;
  data: any;
}

/** `data` of an import job's "file" event. */
export interface FileEventData {
  path: string;
  ok: boolean;
  take_id?: number;
  duplicate?: boolean;
  error?: string;
}

export interface InputDevice {
  name: string;
  is_default: boolean;
  channels: number;
  sample_rate: number;
}

export interface Level {
  peak: number;
  rms: number;
  clipping: boolean;
  seconds: number;
}

export interface GpuSnapshot {
  name: string;
  memory_used_bytes: number;
  memory_total_bytes: number;
  utilization_percent: number;
  temperature_c: number;
}

export interface ResourceSnapshot {
  cpu_percent: number;
  ram_used_bytes: number;
  ram_total_bytes: number;
  gpus: GpuSnapshot[];
}

/** The devices to choose from and what the `device` / `extraction_device` settings give. */
export interface DeviceReport {
  /** `cpu`, then `cuda:0`, `cuda:1`… */
  available: string[];
  /** As stored; empty means automatic. */
  device: string;
  extraction_device: string;
  /** What they resolve to; null when a set device is missing (`problem` says which). */
  main: string | null;
  extraction: string | null;
  problem: string | null;
}

/** A voice model in the library (an RVC `.pth`, with its `.index` when attached). */
export interface VoiceModel {
  id: number;
  voice_id: number | null;
  name: string;
  kind: string;
  weights_sha256: string;
  index_sha256: string | null;
  version: string | null;
  sample_rate: number | null;
  /** Whether the model follows the input's pitch. */
  f0: boolean | null;
  /** speakers, feature_dim, epoch, author, info, source_path… as the file says. */
  metadata: Record<string, unknown>;
  created_at: string;
}

/** A shared weight file of the models folder (HuBERT, RMVPE…). */
export interface KnownFile {
  name: string;
  role: string;
  description: string;
  location: string;
  present: boolean;
  needed_for: string[];
}

export interface ModelFiles {
  /** The models folder the app reads. */
  dir: string;
  files: KnownFile[];
}

export type F0Method = 'rmvpe' | 'pm' | 'yin';
export type OutputFormat = 'wav16' | 'wav24' | 'wav_float' | 'flac';

/** The conversion parameters the UI sets; the backend defaults every other one. */
export interface ConvertOptions {
  speaker_id: number;
  /** Semitones. */
  transpose: number;
  f0_method: F0Method;
  index_rate: number;
  protect: number;
  rms_mix_rate: number;
}

export type ConvertInput = { take: number } | { file: string };

export interface Conversion {
  id: number;
  job_id: number | null;
  model_id: number | null;
  model_name: string;
  input_take_id: number | null;
  input_path: string | null;
  input_sha256: string;
  params: Partial<ConvertOptions>;
  sha256: string;
  format: string;
  sample_rate: number;
  duration_secs: number;
  peak_dbfs: number;
  seconds_taken: number;
  created_at: string;
}

/** `params` of a convert job. */
export interface ConvertJobParams {
  input: ConvertInput;
  model_id: number;
  options: Partial<ConvertOptions>;
  format: OutputFormat;
  out_dir: string | null;
}

/** `result` of a succeeded convert job. */
export interface ConvertJobResult {
  conversion: Conversion;
  output_path: string;
  seconds: number;
  /** Whether the input's analysis was reused: a second model on one input is fast. */
  analysis_cache: 'memory' | 'disk' | 'computed';
}

export type ListeningMode = 'ab' | 'abx';

export interface ListeningTest {
  id: number;
  mode: ListeningMode;
  input_sha256: string;
  conversion_ids: number[];
  hidden_conversion_id: number | null;
  chosen_conversion_id: number;
  /** Blind tests only: whether the listener named the hidden output. */
  correct: boolean | null;
  loudness_matched: boolean;
  created_at: string;
}

/** Enhancement steps (`timbre_audio::enhance::EnhanceOptions`); null turns a step off. */
export interface TrimOptions {
  margin_secs: number;
  max_pause_secs: number | null;
  aggressiveness: number;
}

export interface EnhanceOptions {
  mono: boolean;
  high_pass_hz: number | null;
  declick: boolean;
  denoise_strength: number | null;
  trim: TrimOptions | null;
  loudness_lufs: number | null;
  true_peak_ceiling_db: number | null;
}

export interface EnhancePresets {
  training: EnhanceOptions;
  natural: EnhanceOptions;
}

/** Which separator: the first model found, the weight-free rough preview, or a named model. */
export type IsolationMethod = 'auto' | 'rough' | { model: string };

/** A RoFormer `.ckpt` + `.yaml` pair in the models folder's `separation/`. */
export interface SeparationModel {
  name: string;
  checkpoint: string;
  config: string;
}

export interface IsolationModels {
  dir: string;
  models: SeparationModel[];
}

export type CleanInput = ConvertInput;

/** A take made from another (`derived_takes`), with the take itself. */
export interface DerivedResult {
  take: Take;
  link: {
    take_id: number;
    source_take_id: number | null;
    operation: 'enhance' | 'isolate_vocals' | 'isolate_instrumental' | string;
    params: Record<string, unknown>;
    job_id: number | null;
    created_at: string;
  };
}

/** A saved result as an enhance or isolate job reports it. */
export interface SavedTake {
  operation: string;
  take: Take;
  duplicate: boolean;
}

/** `result` of a succeeded enhance or isolate job (the fields the UI reads). */
export interface CleanJobResult {
  source: string;
  source_take_id: number;
  takes: SavedTake[];
  notes: string[];
  rough_preview?: boolean;
  seconds: number;
}

export interface PreviewRequest {
  input: CleanInput;
  /** null: the loudest stretch. */
  start_secs: number | null;
  secs: number;
  isolation: IsolationMethod | null;
  enhance: EnhanceOptions | null;
}

export interface PreviewInfo {
  start_secs: number;
  secs: number;
  input_secs: number;
  rough_preview: boolean;
  model: string | null;
  notes: string[];
}

/** The model rates RVC trains at. */
export type TrainingSampleRate = 32000 | 40000 | 48000;
export type ModelVersion = 'v1' | 'v2';
/** Enhancement of each dataset input before slicing, by preset. */
export type EnhancePreset = 'training' | 'natural';
export type DatasetInput = ConvertInput;

/** `crates/timbre-core` `PrepareParams`: what the `dataset` job prepares. */
export interface PrepareParams {
  /** A new dataset, or an existing one (by name) prepared again. */
  name: string;
  voice_id: number | null;
  inputs: DatasetInput[];
  sample_rate: TrainingSampleRate;
  version: ModelVersion;
  /** null: a dataset for a model without pitch. */
  f0_method: F0Method | null;
  /** Vocal isolation of each input first; its vocals are the dataset. */
  isolate: IsolationMethod | null;
  enhance: EnhancePreset | null;
}

export type DatasetWarningKind = 'too_little_audio' | 'silence_only' | 'clipped' | 'noisy';

export interface DatasetWarning {
  kind: DatasetWarningKind;
  message: string;
}

/** `timbre_audio::dataset::DatasetReport` (the fields the UI reads). */
export interface DatasetReport {
  input_seconds: number;
  /** Audio in the pieces written. */
  kept_seconds: number;
  pieces: number;
  /** Share of input samples at full scale. */
  clipping_ratio: number;
  /** Share of the input the slicer dropped as silence. */
  silence_ratio: number;
  pitch: { low_hz: number; median_hz: number; high_hz: number; voiced_frames: number } | null;
  snr_db: number | null;
  warnings: DatasetWarning[];
}

export type DatasetStatus = 'preparing' | 'ready' | 'failed';

export interface DatasetRow {
  id: number;
  name: string;
  voice_id: number | null;
  status: DatasetStatus;
  sample_rate: number;
  version: ModelVersion;
  f0_method: F0Method | null;
  piece_count: number;
  total_secs: number;
  report: DatasetReport | null;
  created_at: string;
}

export type TrainingStatus = 'queued' | 'running' | 'stopped' | 'done' | 'failed';

/** Where a run's time went, in seconds summed over the run. */
export interface TrainingProfile {
  /** Data threads: reading audio and features, spectrograms (summed over threads). */
  load_s: number;
  /** Data threads: padding items into batches. */
  assemble_s: number;
  /** The trainer blocked on an empty batch queue. */
  waited_s: number;
  /** The trainer's steps (forward, backward, optimiser). */
  step_s: number;
  /** The trainer copying batches to the device. */
  to_device_s?: number;
  batches: number;
  /** Whether the device waited on data long enough to matter. */
  starved: boolean;
  /** The training GPU's mean utilisation, percent; null on the CPU. */
  gpu_percent?: number | null;
}

/** One epoch's profile, as the trainer stores it (`trainings.profile` holds one per epoch). */
export interface EpochProfile {
  epoch: number;
  batch_size: number;
  batches: number;
  seconds: number;
  step_secs: number;
  load_secs: number;
  assemble_secs: number;
  waited_secs: number;
  starved: boolean;
  /** Absent in profiles written before they were measured. */
  to_device_secs?: number;
  gpu_percent?: number | null;
}

export interface TrainingRow {
  id: number;
  name: string;
  /** null once the dataset was deleted. */
  dataset_id: number | null;
  status: TrainingStatus;
  epoch: number;
  epochs: number;
  global_step: number;
  batch_size: number | null;
  precision: string | null;
  device: string | null;
  model_id: number | null;
  job_id: number | null;
  error: string | null;
  /** The run's totals, or the per-epoch list the trainer stores (see `train.ts` `runProfile`). */
  profile: TrainingProfile | EpochProfile[] | null;
  created_at: string;
  updated_at: string;
}

export interface TrainingRequest {
  dataset_id: number;
  name: string;
  epochs: number;
  save_every: number;
  keep_checkpoints: number;
  /** null: the largest that fits. */
  batch_size: number | null;
  pretrained: 'auto' | 'none';
  preview_every: number;
}

/** One logged step's losses. */
export interface TrainingMetric {
  epoch: number;
  step: number;
  g_total: number;
  d_total: number;
  mel: number;
  kl: number;
  fm: number;
  adversarial: number;
  grad_norm_g: number;
  grad_norm_d: number;
  lr: number;
  at: string;
}

/** A sample the model sang at a checkpoint. */
export interface TrainingPreview {
  id: number;
  epoch: number;
  step: number;
  path: string;
  created_at: string;
}

export type AppEvent = { type: 'job'; job: Job } | { type: 'library_changed' };

export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled', 'interrupted'];
export const CANCELLABLE_STATES: readonly JobState[] = ['queued', 'running'];
export const RETRYABLE_STATES: readonly JobState[] = ['failed', 'cancelled', 'interrupted'];

/** A rejected command, with the backend's `kind` and a human-readable message. */
export class ApiError extends Error {
  readonly kind: string;
  readonly command: string | undefined;
  constructor(kind: string, message: string, command?: string) {
    super(message);
    this.name = 'ApiError';
    this.kind = kind;
    this.command = command;
  }
}

/** Turn whatever a command rejected with into an ApiError whose message is readable text. */
export function toApiError(err: unknown, command?: string): ApiError {
  if (err instanceof ApiError) return err;
  if (typeof err === 'string') return new ApiError('internal', err, command);
  if (err && typeof err === 'object') {
    const o = err as Record<string, unknown>;
    const kind = typeof o.kind === 'string' ? o.kind : 'internal';
    if (typeof o.message === 'string' && o.message) return new ApiError(kind, o.message, command);
    if (err instanceof Error) return new ApiError(kind, err.message || String(err), command);
    try {
      return new ApiError(kind, JSON.stringify(err), command);
    } catch {
      return new ApiError(kind, 'Unknown error', command);
    }
  }
  return new ApiError('internal', err === undefined ? 'Unknown error' : String(err), command);
}

/** The text to show a user for any thrown value. */
export function errorMessage(err: unknown): string {
  return toApiError(err).message;
}

function inTauri(): boolean {
  const w = globalThis as any;
  return !!(w.__TAURI_INTERNALS__ && typeof w.__TAURI_INTERNALS__.invoke === 'function');
}

async function call<T>(command: string, args?: InvokeArgs): Promise<T> {
  if (!inTauri()) {
    throw new ApiError('internal', `Backend unavailable (not running inside Timbre Studio): ${command}`, command);
  }
  try {
    return await invoke<T>(command, args);
  } catch (err) {
    throw toApiError(err, command);
  }
}

function toArrayBuffer(v: unknown, command: string): ArrayBuffer {
  if (v instanceof ArrayBuffer) return v;
  if (ArrayBuffer.isView(v)) {
    const view = v as ArrayBufferView;
    return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice().buffer;
  }
  if (Array.isArray(v)) return Uint8Array.from(v as number[]).buffer;
  // Some IPC paths hand back an ArrayBuffer from another realm.
  if (v && typeof v === 'object' && typeof (v as ArrayBuffer).byteLength === 'number') {
    return new Uint8Array(v as ArrayBuffer).slice().buffer;
  }
  throw new ApiError('internal', `${command} returned no audio data`, command);
}

// ---- voices & takes ----
export const listVoices = () => call<Voice[]>('list_voices');
export const createVoice = (name: string) => call<Voice>('create_voice', { name });
export const listTakes = (voiceId: number | null) => call<Take[]>('list_takes', { voiceId });
export const renameTake = (id: number, name: string) => call<Take>('rename_take', { id, name });
export const deleteTake = (id: number) => call<null>('delete_take', { id });
export const setTakeTags = (id: number, tags: string[]) => call<Take>('set_take_tags', { id, tags });
export const setTakeVoice = (id: number, voiceId: number | null) =>
  call<Take>('set_take_voice', { id, voiceId });
/** The take's audio as WAV file bytes. */
export const takeAudio = async (id: number) => toArrayBuffer(await call<unknown>('get_take_audio', { id }), 'get_take_audio');

// ---- jobs ----
/** Starts a background import job and resolves to its id. */
export const importFiles = (paths: string[], voiceId: number | null) =>
  call<number>('import_files', { paths, voiceId });
export const listJobs = () => call<Job[]>('list_jobs');
export const jobEvents = (id: number) => call<JobEvent[]>('list_job_events', { id });
export const cancelJob = (id: number) => call<Job>('cancel_job', { id });
export const retryJob = (id: number) => call<Job>('retry_job', { id });
export const jobReport = (id: number) => call<unknown>('get_job_report', { id });

/** Subscribe to live app events; keep the returned channel referenced. */
export async function subscribe(onEvent: (e: AppEvent) => void): Promise<Channel<AppEvent>> {
  const channel = new Channel<AppEvent>();
  channel.onmessage = onEvent;
  await call<null>('subscribe_notifications', { onEvent: channel });
  return channel;
}

// ---- recording ----
export const listInputDevices = () => call<InputDevice[]>('list_input_devices');

export async function startRecording(
  device: string | null,
  onLevel: (l: Level) => void,
): Promise<Channel<Level>> {
  const channel = new Channel<Level>();
  channel.onmessage = onLevel;
  await call<null>('start_recording', { device, onLevel: channel });
  return channel;
}
export const stopRecording = (name: string | null, voiceId: number | null) =>
  call<Take>('stop_recording', { name, voiceId });
export const cancelRecording = () => call<null>('cancel_recording');

// ---- voice models ----
export const listModels = () => call<VoiceModel[]>('list_models');
/** Loads the .pth to check it (a second or two), then copies it (and its index) into the library. */
export const importModel = (weights: string, index: string | null, name: string | null = null) =>
  call<VoiceModel>('import_model', { weights, index, name, voiceId: null });
export const renameModel = (id: number, name: string) => call<VoiceModel>('rename_model', { id, name });
export const deleteModel = (id: number) => call<null>('delete_model', { id });
export const attachModelIndex = (id: number, index: string) => call<VoiceModel>('attach_model_index', { id, index });
export const modelFiles = () => call<ModelFiles>('list_model_files');

// ---- conversion ----
/** Queues one convert job per (input, model) and resolves to their ids at once. */
export const submitConversions = (
  inputs: ConvertInput[],
  modelIds: number[],
  options: ConvertOptions,
  format: OutputFormat,
  outDir: string | null,
) => call<number[]>('submit_conversions', { inputs, modelIds, options, format, outDir });
/** Every conversion, or those of one input (by content hash). */
export const listConversions = (inputSha256: string | null) =>
  call<Conversion[]>('list_conversions', { inputSha256 });
export const deleteConversion = (id: number) => call<null>('delete_conversion', { id });
/** A conversion's output as WAV bytes. */
export const conversionAudio = async (id: number) =>
  toArrayBuffer(await call<unknown>('get_conversion_audio', { id }), 'get_conversion_audio');
/** The input a conversion was made from, as WAV bytes. */
export const conversionInputAudio = async (id: number) =>
  toArrayBuffer(await call<unknown>('get_conversion_input_audio', { id }), 'get_conversion_input_audio');

// ---- cleaning ----
export const enhancePresets = () => call<EnhancePresets>('list_enhance_presets');
export const listIsolationModels = () => call<IsolationModels>('list_isolation_models');
/** Queues one isolate or enhance job per input and resolves to their ids at once. */
export const submitCleaning = (inputs: CleanInput[], isolation: IsolationMethod | null, enhance: EnhanceOptions | null) =>
  call<number[]>('submit_cleaning', { inputs, isolation, enhance });
export const listDerivedTakes = (sourceTakeId: number) =>
  call<DerivedResult[]>('list_derived_takes', { sourceTakeId });
/** Cleans a short excerpt without storing it; its audio comes from `previewAudio`. */
export const previewCleaning = (request: PreviewRequest) => call<PreviewInfo>('preview_cleaning', { request });
/** The last preview's excerpt, as it was or cleaned, as WAV bytes. */
export const previewAudio = async (part: 'original' | 'cleaned') =>
  toArrayBuffer(await call<unknown>('get_preview_audio', { part }), 'get_preview_audio');

// ---- training ----
export const listDatasets = () => call<DatasetRow[]>('list_datasets');
/** Queues the `dataset` job and resolves to it. */
export const prepareDataset = (params: PrepareParams) => call<Job>('prepare_dataset', { params });
export const listTrainings = () => call<TrainingRow[]>('list_trainings');
export const startTraining = (request: TrainingRequest) => call<TrainingRow>('start_training', { request });
export const stopTraining = (trainingId: number) => call<TrainingRow>('stop_training', { trainingId });
export const resumeTraining = (trainingId: number) => call<TrainingRow>('resume_training', { trainingId });
export const trainingMetrics = (trainingId: number) => call<TrainingMetric[]>('list_training_metrics', { trainingId });
export const trainingPreviews = (trainingId: number) => call<TrainingPreview[]>('list_training_previews', { trainingId });
/** An epoch preview's audio as WAV bytes. */
export const trainingPreviewAudio = async (previewId: number) =>
  toArrayBuffer(await call<unknown>('get_training_preview_audio', { previewId }), 'get_training_preview_audio');
/** Makes a voice model of the run's checkpoint at `step` (null: the latest) and adds it to the library. */
export const exportTraining = (trainingId: number, step: number | null) =>
  call<VoiceModel>('export_training', { trainingId, step });

// ---- listening tests ----
export const recordListeningTest = (
  mode: ListeningMode,
  conversionIds: number[],
  hidden: number | null,
  chosen: number,
  loudnessMatched: boolean,
) => call<ListeningTest>('record_listening_test', { mode, conversionIds, hidden, chosen, loudnessMatched });
export const listListeningTests = () => call<ListeningTest[]>('list_listening_tests');

// ---- system ----
export const resourceSnapshot = () => call<ResourceSnapshot>('get_resource_snapshot');
export const devicesReport = () => call<DeviceReport>('get_device_report');
export const setDevices = (device: string, extractionDevice: string) =>
  call<DeviceReport>('set_devices', { device, extractionDevice });
