// The Live page's pure parts: the request a stream starts with, the per-block chart's series,
// which voice of an A/B pair is live, and how a level in dB reaches a meter.
import type { Point } from './lineChart';
import type { Gains, LiveRequest, LiveStats, LiveStatus, StreamParams } from './api';

/** The Live page's form, as the user set it. Device names are null for the system's default. */
export interface LiveForm {
  voiceA: number | null;
  useIndex: boolean;
  params: StreamParams;
  passthrough: boolean;
  input: string | null;
  output: string | null;
  /** null: no monitor output. */
  monitor: string | null;
  gains: Gains;
  record: boolean;
  /** Play the voice into the virtual microphone instead of the output device. */
  virtualMic: boolean;
  /** The stream latency Measure found before the start, kept with a recorded session. */
  measuredLatencyMs: number | null;
}

/** The microphone other programs see while a stream feeds it (the backend's `DESCRIPTION`). */
export const VIRTUAL_MIC_NAME = 'Timbre Studio voice';

/** What `start_live` gets for the form; null until a voice is chosen. */
export function buildLiveRequest(form: LiveForm): LiveRequest | null {
  if (form.voiceA === null) return null;
  return {
    voice: { model_id: form.voiceA, use_index: form.useIndex },
    params: { ...form.params },
    passthrough: form.passthrough,
    input: form.input,
    output: form.output,
    monitor: form.monitor,
    gains: { ...form.gains },
    record: form.record,
    virtual_mic: form.virtualMic,
    measured_latency_ms: form.measuredLatencyMs,
  };
}

export type AbSide = 'A' | 'B';

/** Which of the pair the running stream converts to; null when it is neither. */
export function liveSide(status: LiveStatus | null, voiceA: number | null, voiceB: number | null): AbSide | null {
  if (!status) return null;
  if (status.voice.model_id === voiceA) return 'A';
  if (status.voice.model_id === voiceB) return 'B';
  return null;
}

/** The voice a click on the A/B switch goes to: the other one of the pair (A when neither is live). */
export function otherVoice(side: AbSide | null, voiceA: number | null, voiceB: number | null): number | null {
  return side === 'A' ? voiceB : voiceA;
}

export interface BlockChart {
  /** Per-block processing time, x the block's number since the start. */
  times: Point[];
  /** The budget (a block's duration) over the same blocks. */
  budget: Point[];
}

/** The running chart of the latest per-block times against the budget. */
export function blockChart(stats: LiveStats | null): BlockChart {
  if (!stats || stats.recent_block_ms.length === 0) return { times: [], budget: [] };
  const first = stats.blocks_processed - stats.recent_block_ms.length + 1;
  const times = stats.recent_block_ms.map((y, i) => ({ x: first + i, y }));
  const last = times[times.length - 1].x;
  return { times, budget: [{ x: times[0].x, y: stats.budget_ms }, { x: last, y: stats.budget_ms }] };
}

/** The share of the budget the latest block used, in percent. */
export function budgetShare(stats: LiveStats | null): number | null {
  if (!stats || !(stats.budget_ms > 0) || stats.blocks_processed === 0) return null;
  return (100 * stats.last_block_ms) / stats.budget_ms;
}

/** A level in dBFS as the linear amplitude the meter takes (silence below -120 dB). */
export function dbToLinear(db: number): number {
  return Number.isFinite(db) && db > -120 ? 10 ** (db / 20) : 0;
}

/** How often, at most, the screen readers' summary of the levels and latency changes (ms). */
export const SUMMARY_MS = 5000;

/** The running stream in a few numbers, for the calm spoken summary: levels in whole dBFS
 * (null: silence), the estimated latency in whole ms. */
export interface LiveSummary {
  inputDb: number | null;
  outputDb: number | null;
  latencyMs: number;
}

export function liveSummary(status: LiveStatus | null): LiveSummary | null {
  if (!status) return null;
  const level = (db: number | null | undefined) => (typeof db === 'number' && Number.isFinite(db) && db > -120 ? Math.round(db) : null);
  return {
    inputDb: level(status.stats.input_level?.peak_db),
    outputDb: level(status.stats.output_level?.peak_db),
    latencyMs: Math.round(status.estimated_latency_ms),
  };
}

/** Parameters whose change rebuffers the stream (the voice parameters apply from the next block). */
export const REBUFFERING: readonly (keyof StreamParams)[] = ['block_ms', 'crossfade_ms', 'context_ms'];
