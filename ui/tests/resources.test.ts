import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, waitFor, within } from '@testing-library/svelte';
import ResourceCharts from '../src/components/ResourceCharts.svelte';
import { resources } from '../src/lib/resources.svelte';
import {
  appendSample,
  CHART_HEIGHT,
  CHART_WIDTH,
  chartPath,
  gpuLabel,
  HISTORY_MS,
  MAX_SAMPLES,
  POLL_MS,
  resourceCharts,
  samplePoints,
  type ResourceSample,
} from '../src/lib/resources';
import type { GpuSnapshot, ResourceSnapshot } from '../src/lib/api';
import { mockBackend } from './helpers';

const GiB = 1024 ** 3;

function gpu(over: Partial<GpuSnapshot> = {}): GpuSnapshot {
  return { name: 'NVIDIA H100', memory_used_bytes: 8 * GiB, memory_total_bytes: 80 * GiB, utilization_percent: 50, temperature_c: 60, ...over };
}

function snapshot(over: Partial<ResourceSnapshot> = {}): ResourceSnapshot {
  return { cpu_percent: 25, ram_used_bytes: 4 * GiB, ram_total_bytes: 16 * GiB, process_rss_bytes: GiB, gpus: [], ...over };
}

const sample = (at: number, over: Partial<ResourceSnapshot> = {}): ResourceSample => ({ at, snapshot: snapshot(over) });

describe('resource history', () => {
  it('drops samples older than the window and keeps at most the bound', () => {
    const limits = { windowMs: 10_000, maxSamples: 4 };
    let history: ResourceSample[] = [];
    for (const at of [0, 2000, 4000]) history = appendSample(history, sample(at), limits);
    expect(history.map((s) => s.at)).toEqual([0, 2000, 4000]);
    history = appendSample(history, sample(11_000), limits);
    expect(history.map((s) => s.at)).toEqual([2000, 4000, 11_000]);
    for (const at of [11_500, 12_000, 12_500]) history = appendSample(history, sample(at), limits);
    expect(history.map((s) => s.at)).toEqual([11_000, 11_500, 12_000, 12_500]);
  });

  it('keeps a full window at the polling rate, and stays sorted when the clock goes back', () => {
    let history: ResourceSample[] = [];
    for (let at = 0; at <= 2 * HISTORY_MS; at += POLL_MS) history = appendSample(history, sample(at));
    expect(history).toHaveLength(MAX_SAMPLES);
    expect(history[0].at).toBe(HISTORY_MS);
    const back = HISTORY_MS + 2.5 * POLL_MS;
    history = appendSample(history, sample(back));
    expect(history.map((s) => s.at)).toEqual([HISTORY_MS, HISTORY_MS + POLL_MS, HISTORY_MS + 2 * POLL_MS, back]);
  });
});

describe('resource chart lines', () => {
  it('breaks a measure\'s line at gaps in sampling and where a value is missing', () => {
    const history = [sample(0, { gpus: [gpu()] }), sample(2000), sample(60_000, { gpus: [gpu({ utilization_percent: 90 })] })];
    const util = samplePoints(history, (s) => s.gpus[0]?.utilization_percent);
    expect(util.map((p) => [p.x, p.y])).toEqual([[0, 50], [2000, NaN], [60_000, NaN], [60_000, 90]]);
  });

  it('maps time across the box and 0..max up it, clamping what lies beyond', () => {
    const points = [{ x: 0, y: 0 }, { x: 50, y: 50 }, { x: 100, y: 150 }];
    expect(chartPath(points, { min: 0, max: 100 }, 100)).toBe(
      `M0.0 ${CHART_HEIGHT.toFixed(1)}L${(CHART_WIDTH / 2).toFixed(1)} ${(CHART_HEIGHT / 2).toFixed(1)}L${CHART_WIDTH.toFixed(1)} 0.0`,
    );
    expect(chartPath([{ x: 0, y: 5 }, { x: 1, y: NaN }, { x: 2, y: 5 }], { min: 0, max: 2 }, 0)).toBe(
      `M0.0 0.0M${CHART_WIDTH.toFixed(1)} 0.0`,
    );
  });
});

describe('resource charts', () => {
  it('has a CPU and a RAM chart, and a utilisation and a memory chart per GPU', () => {
    const two = [gpu({ name: 'A' }), gpu({ name: 'B', memory_used_bytes: 76 * GiB, utilization_percent: 3.4 })];
    const charts = resourceCharts([sample(1000, { gpus: two }), sample(3000, { gpus: two })]);
    expect(charts.map((c) => c.key)).toEqual(['cpu', 'ram', 'gpu-0-util', 'gpu-0-mem', 'gpu-1-util', 'gpu-1-mem']);
    expect(charts.map((c) => c.title)).toEqual(['CPU', 'RAM', 'GPU 0 utilisation', 'GPU 0 memory', 'GPU 1 utilisation', 'GPU 1 memory']);
    const byKey = Object.fromEntries(charts.map((c) => [c.key, c]));
    expect(byKey.cpu).toMatchObject({ reading: '25%', maxLabel: '100%', nearlyFull: false });
    expect(byKey.ram).toMatchObject({ reading: '4.0 GiB / 16.0 GiB', maxLabel: '16.0 GiB', nearlyFull: false });
    expect(byKey['gpu-1-util']).toMatchObject({ reading: '3%', hint: 'B' });
    expect(byKey['gpu-1-mem']).toMatchObject({ reading: '76.0 GiB / 80.0 GiB', maxLabel: '80.0 GiB', nearlyFull: true });
    // The window ends at the latest sample: it is at the right edge.
    expect(byKey.cpu.path).toMatch(new RegExp(`L${CHART_WIDTH.toFixed(1)} `));
  });

  it('has none without a sample, and says "GPU" when there is only one', () => {
    expect(resourceCharts([])).toEqual([]);
    expect(gpuLabel(0, 1)).toBe('GPU');
    expect(gpuLabel(1, 2)).toBe('GPU 1');
    expect(resourceCharts([sample(0, { gpus: [gpu()] })]).map((c) => c.title)).toEqual(['CPU', 'RAM', 'GPU utilisation', 'GPU memory']);
  });
});

describe('resource monitor', () => {
  afterEach(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, value: 'visible' });
  });

  it('polls once for all its watchers, pauses while the window is hidden and stops with the last watcher', async () => {
    vi.useFakeTimers();
    let cpu = 0;
    const be = mockBackend({ get_resource_snapshot: () => snapshot({ cpu_percent: (cpu += 10) }) });
    const polls = () => be.argsOf('get_resource_snapshot').length;
    const unwatchStrip = resources.watch();
    const unwatchCharts = resources.watch();
    await vi.advanceTimersByTimeAsync(0);
    expect(polls()).toBe(1);
    await vi.advanceTimersByTimeAsync(2 * POLL_MS);
    expect(polls()).toBe(3);
    expect(resources.history.map((s) => s.snapshot.cpu_percent)).toEqual([10, 20, 30]);
    expect(resources.latest?.cpu_percent).toBe(30);

    Object.defineProperty(document, 'visibilityState', { configurable: true, value: 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(polls()).toBe(3);
    Object.defineProperty(document, 'visibilityState', { configurable: true, value: 'visible' });
    document.dispatchEvent(new Event('visibilitychange'));
    await vi.advanceTimersByTimeAsync(0);
    expect(polls()).toBe(4);

    unwatchStrip();
    unwatchStrip();
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(polls()).toBe(5);
    unwatchCharts();
    await vi.advanceTimersByTimeAsync(5 * POLL_MS);
    expect(polls()).toBe(5);
  });

  it('keeps the history when a poll fails, and says why', async () => {
    vi.useFakeTimers();
    let fail = false;
    mockBackend({
      get_resource_snapshot: () => {
        if (fail) throw { kind: 'io', message: 'no /proc' };
        return snapshot();
      },
    });
    resources.watch();
    await vi.advanceTimersByTimeAsync(0);
    fail = true;
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(resources.history).toHaveLength(1);
    expect(resources.error).toMatch(/no \/proc/);
  });
});

describe('ResourceCharts', () => {
  it('shows CPU and RAM, and says training runs on the CPU without a GPU', async () => {
    mockBackend({ get_resource_snapshot: () => snapshot() });
    render(ResourceCharts);
    const cpu = await screen.findByTestId('resource-chart-cpu');
    expect(within(cpu).getByTestId('resource-chart-reading')).toHaveTextContent('25%');
    expect(screen.getByTestId('resource-chart-ram')).toHaveTextContent('4.0 GiB / 16.0 GiB');
    expect(screen.getByTestId('resource-no-gpu')).toHaveTextContent('No GPU seen: training runs on the CPU');
    expect(screen.queryByTestId('resource-chart-gpu-0-util')).toBeNull();
  });

  it('charts each GPU and marks memory that is nearly full', async () => {
    mockBackend({ get_resource_snapshot: () => snapshot({ gpus: [gpu({ memory_used_bytes: 79 * GiB, utilization_percent: 12 })] }) });
    render(ResourceCharts);
    const util = await screen.findByTestId('resource-chart-gpu-0-util');
    expect(util).toHaveTextContent('GPU utilisation');
    expect(util).toHaveTextContent('12%');
    expect(util).toHaveAttribute('title', 'NVIDIA H100');
    const mem = screen.getByTestId('resource-chart-gpu-0-mem');
    expect(mem).toHaveClass('full');
    expect(mem).toHaveTextContent('79.0 GiB / 80.0 GiB');
    expect(screen.queryByTestId('resource-no-gpu')).toBeNull();
    await waitFor(() => expect(mem.querySelector('path')?.getAttribute('d')).toMatch(/^M/));
  });
});
