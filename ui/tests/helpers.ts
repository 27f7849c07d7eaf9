import { mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import type { About, AssetStatus, Conversion, DoctorReport, Job, RuntimeStatus, Take, Voice, VoiceModel } from '../src/lib/api';
import commandDefaults from './fixtures/command-defaults.json';

/** What the defaults commands answer, as Rust writes it (`make bindings` regenerates the file). */
export const BACKEND_DEFAULTS = commandDefaults as {
  get_conversion_defaults: import('../src/lib/api').VoiceParams;
  get_parameter_ranges: import('../src/lib/api').ParameterRanges;
  get_training_defaults: import('../src/lib/api').TrainingDefaults;
  get_live_defaults: import('../src/lib/api').StreamParams;
};

export type Handler = (args: any) => unknown;

export interface Backend {
  calls: { cmd: string; args: any }[];
  /** Arguments of every call of `cmd`. */
  argsOf(cmd: string): any[];
}

const defaultHandlers: Record<string, Handler> = {
  get_conversion_defaults: () => BACKEND_DEFAULTS.get_conversion_defaults,
  get_parameter_ranges: () => BACKEND_DEFAULTS.get_parameter_ranges,
  get_training_defaults: () => BACKEND_DEFAULTS.get_training_defaults,
  get_live_defaults: () => BACKEND_DEFAULTS.get_live_defaults,
  list_effect_presets: () => [],
  take_opened_files: () => [],
  get_about: () => makeAbout(),
  // The start's update check, with checks off as a test library would have them.
  check_for_updates: () => {
    throw { kind: 'invalid_input', message: 'update checks are off in Settings (update_check): turn them on to check' };
  },
};

/** Commands called that no handler answers, since the last `takeUnansweredCommands`. */
let unanswered: string[] = [];

/**
 * Mock the Tauri backend: `handlers` answer commands by name (the defaults commands answer
 * with the backend's defaults unless a handler says otherwise); a handler that
 * throws makes the command reject with the thrown value (like a Rust Err).
 * A command without a handler rejects, and the test fails after it ends (setup.ts), even when
 * the page caught the rejection: a renamed or misspelt command cannot pass.
 */
export function mockBackend(handlers: Record<string, Handler>, opts: { windows?: boolean } = {}): Backend {
  const calls: Backend['calls'] = [];
  if (opts.windows) mockWindows('main');
  mockIPC(
    (cmd, args) => {
      calls.push({ cmd, args });
      const h = handlers[cmd] ?? defaultHandlers[cmd];
      if (!h) {
        unanswered.push(cmd);
        throw new Error(`no mock answers the command ${cmd}`);
      }
      return h(args);
    },
    { shouldMockEvents: !!opts.windows },
  );
  return {
    calls,
    argsOf: (cmd) => calls.filter((c) => c.cmd === cmd).map((c) => c.args),
  };
}

/** The commands called without a handler since the last call, forgetting them. */
export function takeUnansweredCommands(): string[] {
  const names = [...new Set(unanswered)];
  unanswered = [];
  return names;
}

/** The About section's answer: a source build on a machine without an NVIDIA driver. */
export function makeAbout(runtime: Partial<RuntimeStatus> = {}, over: Partial<About> = {}): About {
  return {
    version: '0.1.0',
    commit: '004c96b1a2b3',
    installed_as: 'source',
    runtime: {
      torch_version: '2.11.0',
      folder: '/home/me/.local/share/timbre/runtime/cuda',
      installed: false,
      loaded: null,
      problem: 'no CUDA runtime in /home/me/.local/share/timbre/runtime/cuda',
      nvidia_driver: false,
      bytes_on_disk: 0,
      download_bytes: 2_612_000_000,
      ...runtime,
    },
    ...over,
  };
}

export function makeTake(over: Partial<Take> = {}): Take {
  return {
    id: 1,
    voice_id: null,
    name: 'Take one',
    sha256: 'ab'.repeat(32),
    source_path: '/home/me/take-one.wav',
    origin: 'imported',
    format: 'wav',
    duration_secs: 3.24,
    sample_rate: 48000,
    channels: 1,
    frames: 155520,
    peak_dbfs: -3.14,
    loudness_lufs: -18.25,
    tags: ['dry', 'close'],
    waveform: Array.from({ length: 120 }, (_, i) => Math.abs(Math.sin(i / 7))),
    created_at: '2026-11-20T10:15:00Z',
    ...over,
  };
}

export function makeVoice(over: Partial<Voice> = {}): Voice {
  return { id: 1, name: 'Alto', created_at: '2026-11-01T09:00:00Z', take_count: 1, ...over };
}

/** The arguments `import_voice` gets for a source (and the index to import with it). */
export function voiceImport(source: string, index: string | null = null) {
  return { request: { source, index, use_index: null, name: null, voice_id: null } };
}

export function makeJob(over: Partial<Job> = {}): Job {
  return {
    id: 1,
    kind: 'import',
    lane: 'light',
    state: 'queued',
    progress: 0,
    message: '',
    attempts: 0,
    max_retries: 2,
    batch_scale: 1,
    error: null,
    error_kind: null,
    worker: null,
    cancel_requested: false,
    crashes: 0,
    recovered: false,
    params: { paths: [] },
    result: null,
    created_at: '2026-11-20T10:00:00Z',
    started_at: null,
    finished_at: null,
    ...over,
  };
}

/** An AudioParam that applies every automation at once and logs it. */
export class FakeParam {
  automation: { method: string; value?: number; time: number }[] = [];
  constructor(public value: number) {}
  cancelScheduledValues(time: number) {
    this.automation.push({ method: 'cancel', time });
  }
  setValueAtTime(value: number, time: number) {
    this.value = value;
    this.automation.push({ method: 'set', value, time });
  }
  linearRampToValueAtTime(value: number, time: number) {
    this.value = value;
    this.automation.push({ method: 'ramp', value, time });
  }
}

/** A buffer of `seconds` of a constant `level` (so its RMS is `level`). */
export function fakeBuffer(seconds: number, level: number, sampleRate = 1000): AudioBuffer {
  const data = new Float32Array(Math.round(seconds * sampleRate)).fill(level);
  return {
    duration: seconds,
    sampleRate,
    length: data.length,
    numberOfChannels: 1,
    getChannelData: () => data,
  } as unknown as AudioBuffer;
}

/**
 * A minimal Web Audio fake. Decoding always succeeds: the first byte of the data, in percent, is
 * the level of a 3.2 s buffer. Sources record how they were started and stopped; the clock
 * (`currentTime`) moves only when a test sets it.
 */
export class FakeAudioContext {
  static last: FakeAudioContext | null = null;
  state = 'running';
  currentTime = 0;
  destination = {};
  sources: any[] = [];
  gains: any[] = [];
  constructor() {
    FakeAudioContext.last = this;
  }
  resume() {
    return Promise.resolve();
  }
  close() {
    return Promise.resolve();
  }
  decodeAudioData(buf: ArrayBuffer, ok?: (b: any) => void) {
    const b = fakeBuffer(3.2, (new Uint8Array(buf)[0] ?? 0) / 100);
    ok?.(b);
    return Promise.resolve(b);
  }
  createGain() {
    const node = { gain: new FakeParam(1), target: null as unknown, connect(t: unknown) { node.target = t; }, disconnect() {} };
    this.gains.push(node);
    return node;
  }
  createBufferSource() {
    const src: any = {
      buffer: null,
      onended: null,
      started: false,
      startedWith: null as [number, number] | null,
      stops: 0,
      loop: false,
      loopStart: 0,
      loopEnd: 0,
      target: null,
      connect(t: unknown) {
        src.target = t;
      },
      disconnect() {},
      start(when = 0, offset = 0) {
        src.started = true;
        src.startedWith = [when, offset];
      },
      stop() {
        src.started = false;
        src.stops++;
      },
    };
    this.sources.push(src);
    return src;
  }
}

export function installFakeAudio() {
  (globalThis as any).AudioContext = FakeAudioContext;
}

export function makeModel(over: Partial<VoiceModel> = {}): VoiceModel {
  return {
    id: 1,
    voice_id: null,
    name: 'Ada v2',
    kind: 'rvc',
    weights_sha256: 'cd'.repeat(32),
    index_sha256: null,
    version: 'v2',
    sample_rate: 40000,
    f0: true,
    metadata: { speakers: 1, feature_dim: 768, source_path: '/models/ada.pth', file: { epoch: 200, author: 'me' } },
    created_at: '2026-11-20T10:00:00Z',
    ...over,
  };
}

export function makeConversion(over: Partial<Conversion> = {}): Conversion {
  return {
    id: 1,
    job_id: null,
    model_id: 1,
    model_name: 'Ada v2',
    input_take_id: 1,
    input_path: '/store/ab.wav',
    input_sha256: 'ab'.repeat(32),
    params: { transpose: 0, f0_method: 'rmvpe', index_rate: 0.75 },
    sha256: 'ef'.repeat(32),
    format: 'wav',
    sample_rate: 40000,
    duration_secs: 3.2,
    peak_dbfs: -1,
    seconds_taken: 0.8,
    created_at: '2026-11-20T10:05:00Z',
    ...over,
  };
}

/** A catalogue asset with its state (by default the shipped RMVPE entry, missing). */
export function makeAsset(over: Partial<AssetStatus> = {}): AssetStatus {
  return {
    name: 'rmvpe',
    role: 'pitch',
    description: 'RMVPE pitch estimator: the best pitch tracker.',
    path: 'rmvpe.pt',
    urls: ['lj1995/VoiceConversionWebUI/resolve/main/rmvpe.pt'],
    size_bytes: 181184272,
    sha256: '6d62215f4306e3ca278246188607209f09af3dc77ed4232efdd069798c4ec193',
    needed_for: ['convert (rmvpe f0)', 'dataset (rmvpe f0)'],
    essential: true,
    bytes_on_disk: 0,
    state: 'missing',
    ...over,
  } as AssetStatus;
}

/** HuBERT and RMVPE as the catalogue lists them, each present or not. */
export function essentialAssets(hubert: boolean, rmvpe: boolean): AssetStatus[] {
  return [
    makeAsset({
      name: 'hubert',
      role: 'content-features',
      description: 'HuBERT base as the fairseq checkpoint RVC ships.',
      path: 'hubert_base.pt',
      size_bytes: 189507909,
      sha256: 'f54b40fd2802423a5643779c4861af1e9ee9c1564dc9d32f54f20b5ffba7db96',
      needed_for: ['convert', 'dataset', 'train'],
      state: hubert ? 'verified' : 'missing',
    }),
    makeAsset({ state: rmvpe ? 'present' : 'missing' }),
  ];
}

export function assetList(list: AssetStatus[], modelsDir = '/data/models') {
  return { models_dir: modelsDir, catalog: 'the shipped models/models.json', assets: list };
}

/** The doctor's report on a CPU-only machine, with `jobs` as what each job kind lacks. */
export function doctorReport(assets: AssetStatus[], jobs: DoctorReport['jobs'] = []): DoctorReport {
  return {
    libtorch: {
      version: '2.11.0+cu130',
      cuda_runtime: null,
      cuda_runtime_problem: 'no CUDA runtime',
      nvidia_driver: false,
      cuda: false,
      cudnn: false,
      gpus: [],
    },
    devices: { available: ['cpu'], device: '', extraction_device: '', main: 'cpu', extraction: 'cpu', problem: null },
    audio_inputs: [],
    audio_problem: null,
    data_dir: '/data',
    data_dir_free_bytes: 50e9,
    models_dir: '/data/models',
    assets,
    jobs,
  };
}

/** What the shell asks for at start: an empty library, the essential models present. */
export const SHELL = {
  list_voices: () => [],
  list_takes: () => [],
  list_conversions: () => [],
  list_derived_links: () => [],
  list_jobs: () => [],
  list_models: () => [],
  subscribe_notifications: () => null,
  list_assets: () => assetList(essentialAssets(true, true)),
};
