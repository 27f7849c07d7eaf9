// The resource charts' data: a bounded history of resource snapshots, one chart per measure
// (CPU, RAM, each GPU's utilisation and memory) and each chart's line. Pure: the polling is in
// resources.svelte.ts.
import type { ResourceSnapshot } from './api';
import { formatBytes, formatPercent } from './format';
import { linePath, scale, type Domain, type Point } from './lineChart';
import { t } from './i18n.svelte';

export const POLL_MS = 2000;
/** How far back the charts go. */
export const HISTORY_MS = 10 * 60_000;
/** Samples kept at most: the window's worth at the polling rate. */
export const MAX_SAMPLES = HISTORY_MS / POLL_MS + 1;
/** Samples further apart than this have a gap between them (the window was hidden, the page closed). */
const GAP_MS = 3 * POLL_MS;
/** The charts' drawing box; the SVG stretches it to the chart's width. */
export const CHART_WIDTH = 300;
export const CHART_HEIGHT = 60;
/** A memory chart at this share of its total or above is marked as nearly full. */
const NEARLY_FULL = 0.9;

export interface ResourceSample {
  /** When it was taken, in ms since the epoch. */
  at: number;
  snapshot: ResourceSnapshot;
}

export interface HistoryLimits {
  windowMs: number;
  maxSamples: number;
}

/**
 * The history with `sample` appended, less the samples more than `windowMs` older than it, and
 * at most `maxSamples` long. Samples newer than it (the clock was set back) go too, so the
 * history stays sorted.
 */
export function appendSample(
  history: readonly ResourceSample[],
  sample: ResourceSample,
  { windowMs, maxSamples }: HistoryLimits = { windowMs: HISTORY_MS, maxSamples: MAX_SAMPLES },
): ResourceSample[] {
  const kept = history.filter((s) => s.at >= sample.at - windowMs && s.at <= sample.at);
  kept.push(sample);
  return kept.slice(-maxSamples);
}

/** One measure over the history; a point without a value breaks the line, and so does a gap in sampling. */
export function samplePoints(
  history: readonly ResourceSample[],
  value: (s: ResourceSnapshot) => number | undefined,
): Point[] {
  const points: Point[] = [];
  for (const [i, s] of history.entries()) {
    if (i > 0 && s.at - history[i - 1].at > GAP_MS) points.push({ x: s.at, y: NaN });
    points.push({ x: s.at, y: value(s.snapshot) ?? NaN });
  }
  return points;
}

/** The line of `points` in the chart's box: x over `time`, y from 0 at the bottom to `max` at the top (clamped). */
export function chartPath(points: Point[], time: Domain, max: number): string {
  const top = max > 0 ? max : 1;
  const sx = scale(time, 0, CHART_WIDTH);
  const sy = scale({ min: 0, max: top }, CHART_HEIGHT, 0);
  return linePath(points, sx, (y) => sy(Math.min(Math.max(y, 0), top)), 'linear');
}

/** "GPU" when there is one, "GPU 0", "GPU 1"… when there are several. */
export function gpuLabel(index: number, count: number): string {
  return count > 1 ? `GPU ${index}` : 'GPU';
}

export interface ResourceChart {
  /** cpu, ram, gpu-0-util, gpu-0-mem… */
  key: string;
  title: string;
  /** The device's name, for a GPU. */
  hint: string;
  /** The latest value, as text. */
  reading: string;
  /** The top of the axis, as text: 100% or the memory's total. */
  maxLabel: string;
  /** Memory at NEARLY_FULL of its total or above. */
  nearlyFull: boolean;
  /** The line, in a CHART_WIDTH × CHART_HEIGHT box. */
  path: string;
}

interface Measure {
  key: string;
  title: string;
  hint: string;
  value: (s: ResourceSnapshot) => number | undefined;
  /** The memory's total; undefined for a percentage. */
  total?: number;
}

function measures(latest: ResourceSnapshot): Measure[] {
  const gpus = latest.gpus.flatMap((gpu, i): Measure[] => {
    const label = gpuLabel(i, latest.gpus.length);
    return [
      { key: `gpu-${i}-util`, title: t('jobs.chart_gpu_util', { gpu: label }), hint: gpu.name, value: (s) => s.gpus[i]?.utilization_percent },
      {
        key: `gpu-${i}-mem`,
        title: t('jobs.chart_gpu_memory', { gpu: label }),
        hint: gpu.name,
        value: (s) => s.gpus[i]?.memory_used_bytes,
        total: gpu.memory_total_bytes,
      },
    ];
  });
  return [
    { key: 'cpu', title: 'CPU', hint: '', value: (s) => s.cpu_percent },
    { key: 'ram', title: t('jobs.resource_ram'), hint: '', value: (s) => s.ram_used_bytes, total: latest.ram_total_bytes },
    ...gpus,
  ];
}

/** The charts of the history's measures over the HISTORY_MS up to its latest sample; none when it is empty. */
export function resourceCharts(history: readonly ResourceSample[]): ResourceChart[] {
  const latest = history.at(-1);
  if (!latest) return [];
  const time = { min: latest.at - HISTORY_MS, max: latest.at };
  return measures(latest.snapshot).map(({ key, title, hint, value, total }) => {
    const current = value(latest.snapshot);
    const memory = total !== undefined;
    return {
      key,
      title,
      hint,
      reading: memory ? `${formatBytes(current)} / ${formatBytes(total)}` : formatPercent(current),
      maxLabel: memory ? formatBytes(total) : '100%',
      nearlyFull: memory && current !== undefined && total > 0 && current / total >= NEARLY_FULL,
      path: chartPath(samplePoints(history, value), time, total ?? 100),
    };
  });
}
