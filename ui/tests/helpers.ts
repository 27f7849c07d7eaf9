import { mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import type { Job, Take, Voice } from '../src/lib/api';

export type Handler = (args: any) => unknown;

export interface Backend {
  calls: { cmd: string; args: any }[];
  /** Arguments of every call of `cmd`. */
  argsOf(cmd: string): any[];
}

/**
 * Mock the Tauri backend: `handlers` answer commands by name; a handler that
 * throws makes the command reject with the thrown value (like a Rust Err).
 * Unknown commands answer null.
 */
export function mockBackend(handlers: Record<string, Handler>, opts: { windows?: boolean } = {}): Backend {
  const calls: Backend['calls'] = [];
  if (opts.windows) mockWindows('main');
  mockIPC(
    (cmd, args) => {
      calls.push({ cmd, args });
      const h = handlers[cmd];
      return h ? h(args) : null;
    },
    { shouldMockEvents: !!opts.windows },
  );
  return {
    calls,
    argsOf: (cmd) => calls.filter((c) => c.cmd === cmd).map((c) => c.args),
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

export function makeJob(over: Partial<Job> = {}): Job {
  return {
    id: 1,
    kind: 'import',
    state: 'queued',
    progress: 0,
    message: '',
    attempts: 0,
    max_retries: 2,
    error: null,
    params: { paths: [] },
    result: null,
    created_at: '2026-11-20T10:00:00Z',
    started_at: null,
    finished_at: null,
    ...over,
  };
}

/** A minimal Web Audio fake: decode always succeeds; sources end when told. */
export class FakeAudioContext {
  static last: FakeAudioContext | null = null;
  state = 'running';
  currentTime = 0;
  destination = {};
  sources: any[] = [];
  constructor() {
    FakeAudioContext.last = this;
  }
  resume() {
    return Promise.resolve();
  }
  decodeAudioData(_buf: ArrayBuffer, ok?: (b: any) => void) {
    const b = { duration: 3.2 };
    ok?.(b);
    return Promise.resolve(b);
  }
  createBufferSource() {
    const src: any = {
      buffer: null,
      onended: null,
      started: false,
      connect() {},
      disconnect() {},
      start() {
        src.started = true;
      },
      stop() {
        src.started = false;
      },
    };
    this.sources.push(src);
    return src;
  }
}

export function installFakeAudio() {
  (globalThis as any).AudioContext = FakeAudioContext;
}
