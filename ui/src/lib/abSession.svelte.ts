// The transport around an AbPlayer (lib/abPlayer) for a component: its audio context, the
// tracks loaded on the first play, a position that follows the clock while playing, and one
// A/B player sounding at a time across the app.
import { app } from './stores.svelte';
import { player, createAudioContext, decodeAudio } from './player';
import { AbPlayer } from './abPlayer';
import { t } from './i18n.svelte';

const TICK_MS = 50;

/** A track to load: its bytes are fetched on the first play. */
export interface AbSource {
  key: string;
  label: string;
  load: () => Promise<ArrayBuffer>;
}

/** The session that started playing last; the next one to start pauses it. */
let sounding = $state<AbSession | null>(null);

/** Whether an A/B comparison is playing somewhere in the app (the status bar shows it). */
export function abPlaying(): boolean {
  return sounding?.playing ?? false;
}

/** Pauses the A/B comparison that is playing, if any. */
export function pauseAb(): void {
  sounding?.pause();
}

export class AbSession {
  player = $state<AbPlayer | null>(null);
  loading = $state(false);
  playing = $state(false);
  position = $state(0);
  /** How many times the sources were started: a switch between tracks never adds one. */
  starts = $state(0);

  private ctx: AudioContext | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;

  /**
   * `sources` names the tracks when they are first needed; `prepare` sets a freshly loaded
   * player up (the selected track, loop, loudness matching).
   */
  constructor(
    private readonly sources: () => AbSource[],
    private readonly prepare: (loaded: AbPlayer) => void,
  ) {}

  async toggle() {
    if (this.loading) return;
    try {
      this.ctx ??= createAudioContext();
    } catch (err) {
      app.reportError(err, t('compare.error_cannot_play'));
      return;
    }
    // Resume inside the click's gesture, without waiting (see player.ts).
    if (this.ctx.state === 'suspended') this.ctx.resume().catch(() => {});
    this.player ??= await this.load(this.ctx);
    const ab = this.player;
    if (!ab) return;
    if (!ab.playing) {
      player.stop();
      if (sounding !== this) sounding?.pause();
      sounding = this;
    }
    ab.toggle();
    if (ab.playing && !this.timer) this.timer = setInterval(() => this.sync(), TICK_MS);
    this.sync();
  }

  pause() {
    this.player?.pause();
    this.sync();
  }

  select(track: number) {
    this.player?.select(track);
    this.sync();
  }

  seek(seconds: number) {
    this.player?.seek(seconds);
    this.sync();
  }

  /** Drops the loaded tracks; the next play loads them again. */
  unload() {
    this.stopTimer();
    this.player?.dispose();
    this.player = null;
    this.playing = false;
    this.position = 0;
  }

  dispose() {
    this.unload();
    if (sounding === this) sounding = null;
    this.ctx?.close().catch(() => {});
    this.ctx = null;
  }

  private sync() {
    const ab = this.player;
    if (!ab) return;
    if (ab.tick()) this.stopTimer();
    this.playing = ab.playing;
    this.position = ab.position();
    this.starts = ab.starts;
  }

  private stopTimer() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async load(context: AudioContext): Promise<AbPlayer | null> {
    this.loading = true;
    try {
      const sources = this.sources();
      const bytes = await Promise.all(sources.map((s) => s.load()));
      const buffers = await Promise.all(bytes.map((b) => decodeAudio(context, b)));
      const loaded = new AbPlayer(
        context,
        sources.map((s, i) => ({ key: s.key, label: s.label, buffer: buffers[i] })),
      );
      this.prepare(loaded);
      return loaded;
    } catch (err) {
      app.reportError(err, t('compare.error_load_audio'));
      return null;
    } finally {
      this.loading = false;
    }
  }
}
