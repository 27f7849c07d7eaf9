// Every call to the Rust backend goes through this module.
// JSON field names are snake_case (as serde sends them); invoke argument keys
// are camelCase (Tauri v2 converts them to the Rust parameter names).
import { Channel, invoke, type InvokeArgs } from '@tauri-apps/api/core';
// Types only from the i18n module: it loads savedParams, which loads this module.
import type { MessageKey } from './i18n.svelte';
import type {
  About,
  AudioInput,
  EffectChain,
  EffectPreset,
  IsolationMethod,
  OutputFormat,
  PrepareRequest,
  PreviewRequest,
  SavedTake,
  TrainRequest,
  AssetList,
  AssetStatus,
  Conversion,
  CoverSettings,
  Dataset,
  DatasetRow,
  DerivedResult,
  DerivedTake,
  DeviceReport,
  DoctorReport,
  EnhanceOptions,
  EnhancePresets,
  EpochProfile,
  ErrorKind,
  UpdateCheck,
  RuntimeStatus,
  F0Method,
  Gains,
  InfoEdits,
  PitchCurve,
  InputDevice,
  IsolationModels,
  Job,
  JobEvent,
  JobKind,
  JobState,
  JudgeReport,
  JsonValue,
  LibraryItem,
  LatencyMeasurement,
  LevelUpdate,
  ListeningMode,
  ListeningTest,
  DeviceList,
  LiveRequest,
  LiveStatus,
  LiveVoice,
  RecordedSession,
  StreamParams,
  TuneReport,
  TuneRequest,
  ModelCacheReport,
  Notification,
  PreviewInfo,
  ResourceSnapshot,
  Take,
  Training,
  TrainingDefaults,
  ParameterRanges,
  VoiceParams,
  TrainingMetric,
  TrainingPreview,
  Settings,
  SettingsView,
  Voice,
  VoiceImportRequest,
  VoiceModel,
} from './generated';

// The types the commands return, the notifications and the error report are generated from the
// Rust types (`ui/src/lib/generated/`, `make bindings`); what follows narrows their JSON columns
// and types the commands' arguments.
export type * from './generated';

/** What the user calls each kind of job, in notices ("Import finished"): `t(JOB_TITLES[kind])`. */
export const JOB_TITLES: Record<JobKind, MessageKey> = {
  convert: 'app.job_convert',
  cover: 'app.job_cover',
  isolate: 'app.job_isolate',
  enhance: 'app.job_enhance',
  train: 'app.job_train',
  dataset: 'app.job_dataset',
  import: 'app.job_import',
  voice_import: 'app.job_voice_import',
  download: 'app.job_download',
  live_tune: 'app.job_live_tune',
  runtime_install: 'app.job_runtime_install',
  update_install: 'app.job_update_install',
};

/** `data` of an import job's "file" event. */
export interface FileEventData {
  path: string;
  ok: boolean;
  take_id?: number;
  duplicate?: boolean;
  error?: string;
}

/** The conversion parameters the UI sets: the voice's (the backend's defaults for them come from
 * `get_conversion_defaults`); the backend defaults every other one. */
export type ConvertOptions = VoiceParams;

/** The model rates RVC trains at. */
export type TrainingSampleRate = 32000 | 40000 | 48000;

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
  /** Within the steps, averaging gradients over the GPUs of a data-parallel run; null alone. */
  all_reduce_s?: number | null;
}

/** A JSON column read as an object: its fields, or none when it holds something else. */
export function jsonObject(value: JsonValue | undefined): { [key: string]: JsonValue | undefined } {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

/** A job's `params` or `result` (JSON columns), read as the shape its kind writes. */
export function jobJson<T>(value: JsonValue | null): T | null {
  return value as T | null;
}

/** A dataset's status (`datasets.status`). */
export type DatasetStatus = Dataset['status'];

/** A training run's status (`trainings.status`). */
export type TrainingStatus = Training['status'];

/** A training run, with `profile` read as the per-epoch list the trainer stores (a JSON column). */
export type TrainingRow = Omit<Training, 'profile'> & { profile: EpochProfile[] | null };

export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled', 'interrupted'];
export const CANCELLABLE_STATES: readonly JobState[] = ['queued', 'running'];
export const RETRYABLE_STATES: readonly JobState[] = ['failed', 'cancelled', 'interrupted'];

/** Every pitch tracker the backend knows. */
export const F0_METHODS: readonly F0Method[] = ['rmvpe', 'fcpe', 'crepe', 'crepe-tiny', 'swiftf0', 'pesto', 'pm', 'yin'];

/** Every kind the backend reports (errorHints.ts says what each means and what to do). */
const ERROR_KINDS: Record<ErrorKind, true> = {
  not_found: true,
  invalid_input: true,
  audio: true,
  busy: true,
  io: true,
  cancelled: true,
  internal: true,
  disk_full: true,
  out_of_memory: true,
  damaged: true,
};

function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ERROR_KINDS, value);
}

/** A rejected command, with the backend's `kind` and a human-readable message. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly command: string | undefined;
  constructor(kind: ErrorKind, message: string, command?: string) {
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
    const kind = isErrorKind(o.kind) ? o.kind : 'internal';
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

/** The kind of a rejected command's error, or of a `{ kind, message }` the backend sent; null
 * for any other failure (the UI's own), which has no kind to explain. */
export function errorKind(err: unknown): ErrorKind | null {
  if (err instanceof ApiError) return err.kind;
  const kind = err && typeof err === 'object' ? (err as { kind?: unknown }).kind : undefined;
  return isErrorKind(kind) ? kind : null;
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
export const resumeJob = (id: number) => call<Job>('resume_job', { id });
export const dropJob = (id: number) => call<Job>('drop_job', { id });
export const jobReport = (id: number) => call<unknown>('get_job_report', { id });
export const modelCache = () => call<ModelCacheReport>('get_model_cache');
export const freeModelCache = () => call<ModelCacheReport>('free_model_cache');

/** Subscribe to live app events; keep the returned channel referenced. */
export async function subscribe(onEvent: (e: Notification) => void): Promise<Channel<Notification>> {
  const channel = new Channel<Notification>();
  channel.onmessage = onEvent;
  await call<null>('subscribe_notifications', { onEvent: channel });
  return channel;
}

// ---- recording ----
export const listInputDevices = () => call<InputDevice[]>('list_input_devices');

export async function startRecording(
  device: string | null,
  onLevel: (l: LevelUpdate) => void,
): Promise<Channel<LevelUpdate>> {
  const channel = new Channel<LevelUpdate>();
  channel.onmessage = onLevel;
  await call<null>('start_recording', { device, onLevel: channel });
  return channel;
}
export const stopRecording = (name: string | null, voiceId: number | null) =>
  call<Take>('stop_recording', { name, voiceId });
export const cancelRecording = () => call<null>('cancel_recording');

// ---- live conversion ----
export const listLiveDevices = () => call<DeviceList>('list_live_devices');
export const liveDefaults = () => call<StreamParams>('get_live_defaults');
/** Loads the voice and opens the devices; rejects with `busy` while a stream runs. */
export const startLive = (request: LiveRequest) => call<LiveStatus>('start_live', { request });
/** The running stream's numbers, or null when none runs. */
export const liveStatus = () => call<LiveStatus | null>('live_status');

/** What `update_live` changes from the next block; each part left out stays. */
export interface LiveUpdate {
  params?: StreamParams;
  voice?: LiveVoice;
  passthrough?: boolean;
  gains?: Gains;
}
export const updateLive = (update: LiveUpdate) =>
  call<LiveStatus>('update_live', {
    params: update.params ?? null,
    voice: update.voice ?? null,
    passthrough: update.passthrough ?? null,
    gains: update.gains ?? null,
  });
/** Stops the stream; a recorded one's input and output come back as takes. */
export const stopLive = () => call<RecordedSession | null>('stop_live');
/** Queues a `live_tune` job: the smallest block this machine keeps up with (its result a `TuneReport`). */
export const tuneLive = (request: TuneRequest) => call<Job>('tune_live', { request });
/** A click train's round trip through the devices (only while no stream runs). */
export const measureLiveLatency = (input: string | null, output: string | null, blockMs: number, crossfadeMs: number) =>
  call<LatencyMeasurement>('measure_live_latency', { input, output, blockMs, crossfadeMs });

// ---- voice models ----
export const listModels = () => call<VoiceModel[]>('list_models');
/**
 * Queues the import of the voices of a .pth, a .zip, a folder or a link (a `voice_import` job,
 * whose result is a `VoiceImportReport`), with `index` for a source of one voice, and resolves to its id.
 */
export const importVoice = (source: string, index: string | null) => {
  const request: VoiceImportRequest = { source, index, use_index: null, name: null, voice_id: null };
  return call<number>('import_voice', { request });
};
export const renameModel = (id: number, name: string) => call<VoiceModel>('rename_model', { id, name });
export const deleteModel = (id: number) => call<null>('delete_model', { id });
export const attachModelIndex = (id: number, index: string) => call<VoiceModel>('attach_model_index', { id, index });
export const chooseModelEmbedder = (id: number, folder: string) => call<VoiceModel>('choose_model_embedder', { id, folder });

// ---- downloadable assets (the models folder's shared weights) ----
export const listAssets = () => call<AssetList>('list_assets');
/** Queues one `download` job per asset and resolves to them at once. */
export const downloadAssets = (names: string[]) => call<Job[]>('download_assets', { names });
/** Hashes the assets' files and resolves to their states. */
export const verifyAssets = (names: string[]) => call<AssetStatus[]>('verify_assets', { names });
export const removeAsset = (name: string) => call<AssetStatus>('remove_asset', { name });
export const doctorReport = () => call<DoctorReport>('get_doctor_report');

// ---- conversion ----
export const conversionDefaults = () => call<VoiceParams>('get_conversion_defaults');
export const parameterRanges = () => call<ParameterRanges>('get_parameter_ranges');
/** Queues one convert job per (input, model) and resolves to their ids at once. */
export const submitConversions = (
  inputs: AudioInput[],
  modelIds: number[],
  options: ConvertOptions,
  format: OutputFormat,
  outDir: string | null,
  effects: EffectChain | null = null,
) => call<number[]>('submit_conversions', { inputs, modelIds, options, format, outDir, effects });
/** The built-in effects presets, then the saved ones. */
export const listEffectPresets = () => call<EffectPreset[]>('list_effect_presets');
export const saveEffectPreset = (name: string, chain: EffectChain) =>
  call<EffectPreset>('save_effect_preset', { name, chain });
export const deleteEffectPreset = (name: string) => call<null>('delete_effect_preset', { name });
/** Every conversion, or those of one input (by content hash). */
export const listConversions = (inputSha256: string | null) =>
  call<Conversion[]>('list_conversions', { inputSha256 });
export const deleteConversion = (id: number) => call<null>('delete_conversion', { id });
/** The file name an export of `item` is offered under. */
export const getExportName = (item: LibraryItem) => call<string>('get_export_name', { item });
/** Writes `item` to `path` (encoded when its extension names another format); the path written. */
export const exportLibraryItem = (item: LibraryItem, path: string) =>
  call<string>('export_library_item', { item, path });
/** Copies `items` into `dir` under their default names, never overwriting; the paths written. */
export const exportLibraryItems = (items: LibraryItem[], dir: string) =>
  call<string[]>('export_library_items', { items, dir });
/** Starts the system's drag of named copies of `items` while the mouse button is down; the copies. */
export const startDragOut = (items: LibraryItem[]) => call<string[]>('start_drag_out', { items });
/** Shows `path` in the system's file manager. */
export const revealFile = (path: string) => call<null>('reveal_file', { path });
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
export const submitCleaning = (inputs: AudioInput[], isolation: IsolationMethod | null, enhance: EnhanceOptions | null) =>
  call<number[]>('submit_cleaning', { inputs, isolation, enhance });
export const listDerivedTakes = (sourceTakeId: number) =>
  call<DerivedResult[]>('list_derived_takes', { sourceTakeId });
/** Which takes were made from which, for the Library's grouping. */
export const listDerivedLinks = () => call<DerivedTake[]>('list_derived_links');
/** Cleans a short excerpt without storing it; its audio comes from `previewAudio`. */
export const previewCleaning = (request: PreviewRequest) => call<PreviewInfo>('preview_cleaning', { request });
/** The last preview's excerpt, as it was or cleaned, as WAV bytes. */
export const previewAudio = async (part: 'original' | 'cleaned') =>
  toArrayBuffer(await call<unknown>('get_preview_audio', { part }), 'get_preview_audio');

// ---- covers ----
/** Queues one cover job per song and resolves to their ids at once. */
export const submitCovers = (songs: AudioInput[], settings: CoverSettings) =>
  call<number[]>('submit_covers', { songs, settings });
/** The stems and covers made from a song, oldest first. */
export const listCoverStems = (songTakeId: number) =>
  call<DerivedResult[]>('list_cover_stems', { songTakeId });

// ---- training ----
export const trainingDefaults = () => call<TrainingDefaults>('get_training_defaults');
export const listDatasets = () => call<DatasetRow[]>('list_datasets');
/** Queues the `dataset` job and resolves to it. */
export const prepareDataset = (params: PrepareRequest) => call<Job>('prepare_dataset', { params });
export const listTrainings = () => call<TrainingRow[]>('list_trainings');
export const startTraining = (request: TrainRequest) => call<TrainingRow>('start_training', { request });
export const stopTraining = (trainingId: number) => call<TrainingRow>('stop_training', { trainingId });
export const resumeTraining = (trainingId: number) => call<TrainingRow>('resume_training', { trainingId });
export const trainingMetrics = (trainingId: number) => call<TrainingMetric[]>('list_training_metrics', { trainingId });
export const trainingPreviews = (trainingId: number) => call<TrainingPreview[]>('list_training_previews', { trainingId });
/** An epoch preview's audio as WAV bytes. */
export const trainingPreviewAudio = async (previewId: number) =>
  toArrayBuffer(await call<unknown>('get_training_preview_audio', { previewId }), 'get_training_preview_audio');
/** The checkpoint judge's scores of a training and the checkpoint it recommends. */
export const judgeReport = (trainingId: number) => call<JudgeReport>('get_judge_report', { trainingId });
/** The judge's rendering of a held-out piece by the checkpoint of `step`, as WAV bytes. */
export const judgeSampleAudio = async (trainingId: number, step: number) =>
  toArrayBuffer(await call<unknown>('get_judge_sample_audio', { trainingId, step }), 'get_judge_sample_audio');
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
export const getSettings = () => call<SettingsView>('get_settings');
/** `value` is JSON (`5`, `"cuda:1"`, `["https://…"]`), checked as `timbre settings set` checks it. */
export const setSetting = (key: keyof Settings, value: string) => call<SettingsView>('set_setting', { key, value });

/** The files the app was opened with ("Open with"), once. */
export const takeOpenedFiles = () => call<string[]>('take_opened_files');
/** This build's version, commit and libtorch, how it was installed, and its CUDA runtime. */
export const getAbout = () => call<About>('get_about');
/** What the signed update feed offers; refused when update checks are off. */
export const checkForUpdates = () => call<UpdateCheck>('check_for_updates');
/** Queues an `update_install` job for the version a check offered. */
export const installUpdate = (version: string) => call<Job>('install_update', { version });
/** Queues (or returns the running) `runtime_install` job: "Enable GPU". */
export const installCudaRuntime = () => call<Job>('install_cuda_runtime');
/** Deletes the CUDA runtime: the next start runs on the CPU. */
export const removeCudaRuntime = () => call<RuntimeStatus>('remove_cuda_runtime');

/** Hz per 10 ms frame of a take, as conversion tracks its pitch (0 where unvoiced). */
export const analyzePitch = (takeId: number, f0Method: F0Method) =>
  call<PitchCurve>('analyze_pitch', { takeId, f0Method });

/** A new library model: the weighted blend of compatible models. */
export const blendModels = (ids: number[], weights: number[], name: string) =>
  call<VoiceModel>('blend_models', { ids, weights, name });
/** Writes a model's .pth into `outDir` with its descriptive entries edited; the path written. */
export const exportModel = (id: number, edits: InfoEdits, outDir: string) =>
  call<string>('export_model', { id, edits, outDir });
