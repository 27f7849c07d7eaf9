// Web Audio playback singleton. `<audio src>` cannot play app files on Linux
// WebKitGTK, so takes are fetched as WAV bytes and decoded here.
import { conversionAudio, takeAudio } from './api';
import { t } from './i18n.svelte';

export type PlaybackStatus = 'stopped' | 'loading' | 'playing';

export interface PlaybackState {
  status: PlaybackStatus;
  takeId: number | null;
  conversionId: number | null;
  label: string;
  /** performance.now() when playback started. */
  startedAt: number;
  duration: number;
}

type Listener = (s: PlaybackState) => void;

/** What the player plays: a take, or a conversion's output. */
interface Clip {
  takeId: number | null;
  conversionId: number | null;
}

const STOPPED: PlaybackState = { status: 'stopped', takeId: null, conversionId: null, label: '', startedAt: 0, duration: 0 };
const CACHE_SIZE = 8;

type AudioContextCtor = new () => AudioContext;

function audioContextCtor(): AudioContextCtor | null {
  const w = globalThis as any;
  return (w.AudioContext ?? w.webkitAudioContext ?? null) as AudioContextCtor | null;
}

export function createAudioContext(): AudioContext {
  const Ctor = audioContextCtor();
  if (!Ctor) throw new Error(t('library.no_web_audio'));
  return new Ctor();
}

/** Decodes file bytes (which it detaches). The callback form is the one older WebKit builds support. */
export function decodeAudio(ctx: BaseAudioContext, bytes: ArrayBuffer): Promise<AudioBuffer> {
  return new Promise<AudioBuffer>((resolve, reject) => {
    const p = ctx.decodeAudioData(
      bytes,
      (b) => resolve(b),
      (e) => reject(e ?? new Error(t('library.decode_error'))),
    );
    if (p && typeof (p as Promise<AudioBuffer>).then === 'function') p.then(resolve, reject);
  });
}

export class Player {
  private ctx: AudioContext | null = null;
  private source: AudioBufferSourceNode | null = null;
  private cache = new Map<string, AudioBuffer>();
  private token = 0;
  private listeners = new Set<Listener>();
  private watchdog: ReturnType<typeof setTimeout> | null = null;
  state: PlaybackState = STOPPED;

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    fn(this.state);
    return () => this.listeners.delete(fn);
  }

  private set(s: PlaybackState) {
    this.state = s;
    for (const fn of this.listeners) fn(s);
  }

  private context(): AudioContext {
    this.ctx ??= createAudioContext();
    return this.ctx;
  }

  /** Seconds since playback started, or 0. */
  position(): number {
    if (this.state.status !== 'playing') return 0;
    return Math.max(0, Math.min(this.state.duration, (performance.now() - this.state.startedAt) / 1000));
  }

  isActive(takeId: number): boolean {
    return this.state.takeId === takeId && this.state.status !== 'stopped';
  }

  isConversionActive(conversionId: number): boolean {
    return this.state.conversionId === conversionId && this.state.status !== 'stopped';
  }

  /** Forget a cached decode (e.g. after the take was deleted). */
  invalidate(takeId: number) {
    this.cache.delete(cacheKey({ takeId, conversionId: null }));
  }

  private async load(clip: Clip): Promise<AudioBuffer> {
    const key = cacheKey(clip);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const bytes = clip.takeId !== null ? await takeAudio(clip.takeId) : await conversionAudio(clip.conversionId ?? 0);
    const buffer = await decodeAudio(this.context(), bytes);
    this.cache.set(key, buffer);
    while (this.cache.size > CACHE_SIZE) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
    return buffer;
  }

  /** Play a take from the start; stops whatever was playing. Rejects on failure. */
  play(takeId: number, label = ''): Promise<void> {
    return this.start({ takeId, conversionId: null }, label);
  }

  /** Play a conversion's output from the start; stops whatever was playing. */
  playConversion(conversionId: number, label = ''): Promise<void> {
    return this.start({ takeId: null, conversionId }, label);
  }

  private async start(clip: Clip, label: string): Promise<void> {
    this.stopSource();
    const token = ++this.token;
    this.set({ status: 'loading', ...clip, label, startedAt: 0, duration: 0 });
    try {
      const ctx = this.context();
      // Resume inside the click's user gesture, but do not wait on it: without
      // a gesture (or an output device) the promise may never settle, and a
      // started source simply begins once the context runs.
      if (ctx.state === 'suspended') ctx.resume().catch(() => {});
      const buffer = await this.load(clip);
      if (token !== this.token) return; // superseded by stop() or another play()
      const src = ctx.createBufferSource();
      src.buffer = buffer;
      src.connect(ctx.destination);
      const finished = () => {
        if (this.source !== src) return;
        this.stopSource();
        this.set(STOPPED);
      };
      src.onended = finished;
      this.source = src;
      src.start();
      // Safety net: if the audio clock never runs, still end at the take's length.
      this.watchdog = setTimeout(finished, buffer.duration * 1000 + Math.max(1000, buffer.duration * 100));
      this.set({ status: 'playing', ...clip, label, startedAt: performance.now(), duration: buffer.duration });
    } catch (err) {
      if (token === this.token) this.set(STOPPED);
      throw err;
    }
  }

  /** Toggle: stop if this take is loading/playing, otherwise play it. */
  async toggle(takeId: number, label = ''): Promise<void> {
    if (this.isActive(takeId)) this.stop();
    else await this.play(takeId, label);
  }

  async toggleConversion(conversionId: number, label = ''): Promise<void> {
    if (this.isConversionActive(conversionId)) this.stop();
    else await this.playConversion(conversionId, label);
  }

  private stopSource() {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    const src = this.source;
    this.source = null;
    if (src) {
      src.onended = null;
      try {
        src.stop();
      } catch {
        /* already stopped */
      }
      src.disconnect();
    }
  }

  /** Stop and forget all decoded audio (tests, or after the library was replaced). */
  reset() {
    this.stop();
    this.cache.clear();
    const ctx = this.ctx;
    this.ctx = null;
    if (ctx && typeof ctx.close === 'function') ctx.close().catch(() => {});
  }

  stop() {
    this.token++;
    this.stopSource();
    if (this.state.status !== 'stopped') this.set(STOPPED);
  }
}

function cacheKey(clip: Clip): string {
  return clip.takeId !== null ? `take:${clip.takeId}` : `conversion:${clip.conversionId}`;
}

export const player = new Player();
