// Sample-accurate A/B switching: every track plays at once from one AudioContext clock, each
// through its own GainNode, and switching only moves gains. Sources are (re)started only by
// play and seek, so a switch never loses the position nor leaves a gap.

/** Scheduling the start slightly ahead lets every source begin on the same sample. */
const START_LEAD_S = 0.03;
/** A switch fades over a few milliseconds: instant enough to compare, without a click. */
const CROSSFADE_S = 0.005;
/** Below this RMS a track counts as silent and is left out of loudness matching. */
const SILENT_RMS = 1e-5;

export interface AbTrack {
  key: string;
  label: string;
  buffer: AudioBuffer;
}

/** The parts of an AudioContext the player uses (so tests can pass a fake). */
export type AbContext = Pick<BaseAudioContext, 'currentTime' | 'destination' | 'createBufferSource' | 'createGain'>;

interface Channel {
  track: AbTrack;
  gain: GainNode;
  rms: number;
  /** The gain that brings this track to the quietest track's loudness (at most 1). */
  matchGain: number;
}

/** RMS over every channel of the buffer. */
export function bufferRms(buffer: AudioBuffer): number {
  let sum = 0;
  let count = 0;
  for (let c = 0; c < buffer.numberOfChannels; c++) {
    const data = buffer.getChannelData(c);
    for (let i = 0; i < data.length; i++) sum += data[i] * data[i];
    count += data.length;
  }
  return count > 0 ? Math.sqrt(sum / count) : 0;
}

/** Gains that make every non-silent track as loud as the quietest: only ever turned down. */
export function loudnessMatchGains(rmsValues: number[]): number[] {
  const audible = rmsValues.filter((r) => r > SILENT_RMS);
  if (audible.length === 0) return rmsValues.map(() => 1);
  const quietest = Math.min(...audible);
  return rmsValues.map((r) => (r > SILENT_RMS ? quietest / r : 1));
}

export class AbPlayer {
  private readonly ctx: AbContext;
  private readonly channels: Channel[];
  private sources: AudioBufferSourceNode[] = [];
  /** Context time at which `offset` is heard. */
  private startedAt = 0;
  private offset = 0;
  private activeIndex = 0;
  private loopOn = false;
  private matchOn = false;
  playing = false;
  /** How many times the sources were started (play, seek while playing): a switch never adds one. */
  starts = 0;

  constructor(ctx: AbContext, tracks: AbTrack[]) {
    if (tracks.length === 0) throw new Error('nothing to compare');
    this.ctx = ctx;
    const rms = tracks.map((t) => bufferRms(t.buffer));
    const match = loudnessMatchGains(rms);
    this.channels = tracks.map((track, i) => {
      const gain = ctx.createGain();
      gain.connect(ctx.destination);
      return { track, gain, rms: rms[i], matchGain: match[i] };
    });
    this.applyGains(false);
  }

  get tracks(): AbTrack[] {
    return this.channels.map((c) => c.track);
  }

  get active(): number {
    return this.activeIndex;
  }

  /** The common length: the shortest track, so looping keeps every track in step. */
  get duration(): number {
    return Math.min(...this.channels.map((c) => c.track.buffer.duration));
  }

  get loop(): boolean {
    return this.loopOn;
  }

  get loudnessMatched(): boolean {
    return this.matchOn;
  }

  /** The gain in dB that loudness matching applies to track `i` (0 when it is off). */
  matchDb(i: number): number {
    if (!this.matchOn) return 0;
    return 20 * Math.log10(this.channels[i].matchGain);
  }

  position(): number {
    if (!this.playing) return this.offset;
    const t = this.offset + Math.max(0, this.ctx.currentTime - this.startedAt);
    return this.loopOn ? t % this.duration : Math.min(t, this.duration);
  }

  play(): void {
    if (this.playing) return;
    if (this.offset >= this.duration) this.offset = 0;
    this.startSources();
  }

  pause(): void {
    if (!this.playing) return;
    this.offset = this.position();
    this.stopSources();
  }

  toggle(): void {
    if (this.playing) this.pause();
    else this.play();
  }

  seek(seconds: number): void {
    const target = Math.min(Math.max(0, seconds), this.duration);
    if (this.playing) {
      this.stopSources();
      this.offset = target;
      this.startSources();
    } else {
      this.offset = target;
    }
  }

  /** Makes track `i` the one heard; the others keep running silently. */
  select(i: number): void {
    if (i < 0 || i >= this.channels.length || i === this.activeIndex) return;
    this.activeIndex = i;
    this.applyGains(true);
  }

  setLoop(on: boolean): void {
    if (on === this.loopOn) return;
    // Re-anchor so the position stays continuous when the wrap-around rule changes.
    if (this.playing) {
      this.offset = this.position();
      this.startedAt = this.ctx.currentTime;
    }
    this.loopOn = on;
    for (const src of this.sources) {
      src.loop = on;
      src.loopStart = 0;
      src.loopEnd = this.duration;
    }
  }

  setLoudnessMatch(on: boolean): void {
    if (on === this.matchOn) return;
    this.matchOn = on;
    this.applyGains(true);
  }

  /** Call periodically: stops at the end when not looping. Returns whether it stopped now. */
  tick(): boolean {
    if (!this.playing || this.loopOn || this.position() < this.duration) return false;
    this.stopSources();
    this.offset = 0;
    return true;
  }

  dispose(): void {
    this.stopSources();
    for (const c of this.channels) c.gain.disconnect();
  }

  private level(i: number): number {
    if (i !== this.activeIndex) return 0;
    return this.matchOn ? this.channels[i].matchGain : 1;
  }

  private applyGains(fade: boolean): void {
    const now = this.ctx.currentTime;
    this.channels.forEach((c, i) => {
      const param = c.gain.gain;
      const target = this.level(i);
      if (!fade) {
        param.value = target;
        return;
      }
      param.cancelScheduledValues(now);
      param.setValueAtTime(param.value, now);
      param.linearRampToValueAtTime(target, now + CROSSFADE_S);
    });
  }

  private startSources(): void {
    const when = this.ctx.currentTime + START_LEAD_S;
    this.sources = this.channels.map((c) => {
      const src = this.ctx.createBufferSource();
      src.buffer = c.track.buffer;
      src.loop = this.loopOn;
      src.loopStart = 0;
      src.loopEnd = this.duration;
      src.connect(c.gain);
      src.start(when, this.offset);
      return src;
    });
    this.startedAt = when;
    this.playing = true;
    this.starts++;
  }

  private stopSources(): void {
    for (const src of this.sources) {
      try {
        src.stop();
      } catch {
        /* never started or already ended */
      }
      src.disconnect();
    }
    this.sources = [];
    this.playing = false;
  }
}
