import { describe, expect, it, vi } from 'vitest';
import { flushSync } from 'svelte';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import Live from '../src/pages/Live.svelte';
import LiveMeters from '../src/components/LiveMeters.svelte';
import { live } from '../src/lib/live.svelte';
import { SUMMARY_MS, blockChart, budgetShare, buildLiveRequest, dbToLinear, liveSide, liveSummary, otherVoice, type LiveForm } from '../src/lib/live';
import type { LiveStats, LiveStatus, StreamParams } from '../src/lib/api';
import { app } from '../src/lib/stores.svelte';
import { defaults } from '../src/lib/defaults.svelte';
import { savedStreamParams } from '../src/lib/savedParams.svelte';
import { BACKEND_DEFAULTS, assetList, essentialAssets, makeJob, makeModel, makeTake, mockBackend, type Handler } from './helpers';

const PARAMS: StreamParams = BACKEND_DEFAULTS.get_live_defaults;

function makeStats(over: Partial<LiveStats> = {}): LiveStats {
  return {
    state: 'running',
    message: null,
    sample_rate: 48000,
    block_size: 12000,
    input_device: { name: 'default', sample_rate: 48000, channels: 2 },
    output_device: { name: 'default', sample_rate: 48000, channels: 2 },
    monitor_device: null,
    input_level: { peak_db: -6, rms_db: -12 },
    output_level: { peak_db: -9, rms_db: -15 },
    input_overflows: 0,
    output_underruns: 0,
    blocks_processed: 0,
    budget_ms: 250,
    last_block_ms: 0,
    recent_block_ms: [],
    falling_behind: false,
    advice: null,
    input_latency_ms: null,
    output_latency_ms: null,
    processor_error: null,
    virtual_mic: null,
    mean_block_ms: 0,
    max_block_ms: 0,
    blocks_over_budget: 0,
    proposed_block_ms: null,
    ...over,
  };
}

function makeStatus(over: Partial<LiveStatus> = {}, stats: Partial<LiveStats> = {}): LiveStatus {
  return {
    stats: makeStats(stats),
    voice: { model_id: 1, use_index: true },
    params: PARAMS,
    passthrough: false,
    estimated_latency_ms: 321.5,
    ...over,
  };
}

const devices = {
  inputs: [
    { name: 'default', is_default: true, channels: 2, sample_rate: 48000 },
    { name: 'USB Mic', is_default: false, channels: 1, sample_rate: 44100 },
  ],
  outputs: [
    { name: 'default', is_default: true, channels: 2, sample_rate: 48000 },
    { name: 'Headphones', is_default: false, channels: 2, sample_rate: 48000 },
  ],
};

function backend(extra: Record<string, Handler> = {}) {
  let status: LiveStatus | null = null;
  const be = mockBackend({
    list_models: () => [makeModel({ id: 1, name: 'Ada' }), makeModel({ id: 2, name: 'Bo' })],
    list_assets: () => assetList(essentialAssets(true, true)),
    list_live_devices: () => devices,
    start_live: ({ request }) => (status = makeStatus({ voice: request.voice, params: request.params })),
    live_status: () => status,
    update_live: (a) => {
      if (!status) throw { kind: 'invalid_input', message: 'no live stream is running' };
      status = {
        ...status,
        params: a.params ?? status.params,
        voice: a.voice ?? status.voice,
        passthrough: a.passthrough ?? status.passthrough,
      };
      return status;
    },
    stop_live: () => {
      status = null;
      return null;
    },
    ...extra,
  });
  return {
    ...be,
    /** Changes what live_status answers next. */
    setStats(stats: Partial<LiveStats>) {
      if (status) status = { ...status, stats: makeStats(stats) };
    },
  };
}

const form = (over: Partial<LiveForm> = {}): LiveForm => ({
  voiceA: 3,
  useIndex: false,
  params: PARAMS,
  passthrough: true,
  input: 'USB Mic',
  output: null,
  monitor: 'Headphones',
  gains: { input_db: 3, output_db: -2, monitor_db: 0 },
  record: true,
  virtualMic: false,
  measuredLatencyMs: 270.9,
  ...over,
});

describe('live logic', () => {
  it('builds the request from the form, and none without a voice', () => {
    expect(buildLiveRequest(form())).toEqual({
      voice: { model_id: 3, use_index: false },
      params: PARAMS,
      passthrough: true,
      input: 'USB Mic',
      output: null,
      monitor: 'Headphones',
      gains: { input_db: 3, output_db: -2, monitor_db: 0 },
      record: true,
      virtual_mic: false,
      measured_latency_ms: 270.9,
    });
    expect(buildLiveRequest(form({ virtualMic: true }))?.virtual_mic).toBe(true);
    expect(buildLiveRequest(form({ voiceA: null }))).toBeNull();
  });

  it('tells which voice of the pair is live and which one the switch goes to', () => {
    const onA = makeStatus({ voice: { model_id: 1, use_index: true } });
    const onB = makeStatus({ voice: { model_id: 2, use_index: true } });
    expect(liveSide(onA, 1, 2)).toBe('A');
    expect(liveSide(onB, 1, 2)).toBe('B');
    expect(liveSide(onB, 1, null)).toBeNull();
    expect(liveSide(null, 1, 2)).toBeNull();
    expect(otherVoice('A', 1, 2)).toBe(2);
    expect(otherVoice('B', 1, 2)).toBe(1);
    expect(otherVoice(null, 1, 2)).toBe(1);
  });

  it('charts the latest block times by block number against a flat budget', () => {
    const stats = makeStats({ blocks_processed: 10, recent_block_ms: [80, 120, 300], budget_ms: 250, last_block_ms: 300 });
    expect(blockChart(stats)).toEqual({
      times: [
        { x: 8, y: 80 },
        { x: 9, y: 120 },
        { x: 10, y: 300 },
      ],
      budget: [
        { x: 8, y: 250 },
        { x: 10, y: 250 },
      ],
    });
    expect(blockChart(makeStats())).toEqual({ times: [], budget: [] });
    expect(blockChart(null)).toEqual({ times: [], budget: [] });
    expect(budgetShare(stats)).toBe(120);
    expect(budgetShare(makeStats())).toBeNull();
  });

  it('turns levels in dB into the meter amplitude', () => {
    expect(dbToLinear(0)).toBe(1);
    expect(dbToLinear(-20)).toBeCloseTo(0.1, 10);
    expect(dbToLinear(-Infinity)).toBe(0);
    expect(dbToLinear(-200)).toBe(0);
  });
});

describe('Live levels for screen readers', () => {
  it('sums up the levels and the latency, silence as silence', () => {
    const status = makeStatus({ estimated_latency_ms: 180.4 }, { input_level: { peak_db: -18.3, rms_db: -24 }, output_level: { peak_db: -Infinity, rms_db: -Infinity } });
    expect(liveSummary(status)).toEqual({ inputDb: -18, outputDb: null, latencyMs: 180 });
    expect(liveSummary(null)).toBeNull();
  });

  it('says them in a polite live region at most once every 5 s while running; the meters are no live region', () => {
    vi.useFakeTimers();
    try {
      expect(SUMMARY_MS).toBe(5000);
      const levels = (input: number) => ({ input_level: { peak_db: input, rms_db: input - 6 }, output_level: { peak_db: -20, rms_db: -26 } });
      live.phase = 'running';
      live.status = makeStatus({ estimated_latency_ms: 180.4 }, levels(-6));
      render(LiveMeters);
      flushSync();
      const region = screen.getByTestId('live-summary');
      expect(region).toHaveAttribute('aria-live', 'polite');
      expect(region.textContent).toBe('');
      const meters = screen.getAllByRole('meter');
      expect(meters.map((m) => m.getAttribute('aria-label'))).toEqual(['Input level', 'Output level']);
      for (const meter of meters) {
        expect(meter).toHaveAttribute('aria-valuetext');
        expect(meter.closest('[aria-live]')).toBeNull();
      }

      // The poll brings new levels every 250 ms; the summary follows every 5 s only.
      const changes: number[] = [];
      let said = region.textContent;
      for (let ms = 250; ms <= 20000; ms += 250) {
        live.status = makeStatus({ estimated_latency_ms: 180.4 }, levels(-ms / 250));
        vi.advanceTimersByTime(250);
        flushSync();
        if (region.textContent !== said) {
          changes.push(ms);
          said = region.textContent;
        }
      }
      expect(changes).toEqual([5000, 10000, 15000, 20000]);
      expect(region).toHaveTextContent('Input -80 dBFS, output -20 dBFS, latency 180 ms');

      live.status = makeStatus({ estimated_latency_ms: 95 }, { input_level: { peak_db: -Infinity, rms_db: -Infinity } });
      vi.advanceTimersByTime(5000);
      flushSync();
      expect(region).toHaveTextContent('Input silent, output -9 dBFS, latency 95 ms');

      // Stopped: nothing more is said.
      live.phase = 'idle';
      flushSync();
      expect(region.textContent).toBe('');
      live.status = makeStatus({}, levels(-3));
      vi.advanceTimersByTime(20000);
      flushSync();
      expect(region.textContent).toBe('');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Live page', () => {
  it('starts with the chosen voice, devices and defaults, polls, and stops', async () => {
    const be = backend();
    render(Live);
    const voice = (await screen.findByTestId('live-voice-a')) as HTMLSelectElement;
    await waitFor(() => expect(voice.value).toBe('1'));
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    // The devices' defaults are marked.
    const input = screen.getByTestId('live-input') as HTMLSelectElement;
    expect([...input.options].map((o) => o.textContent)).toEqual(['System default', 'default (default)', 'USB Mic']);
    expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'stopped');

    await fireEvent.change(voice, { target: { value: '2' } });
    await fireEvent.change(input, { target: { value: 'USB Mic' } });
    await fireEvent.change(screen.getByTestId('live-monitor'), { target: { value: 'Headphones' } });
    await fireEvent.click(screen.getByTestId('live-record'));
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(be.argsOf('start_live')).toHaveLength(1));
    expect(be.argsOf('start_live')[0].request).toEqual({
      voice: { model_id: 2, use_index: true },
      params: PARAMS,
      passthrough: false,
      input: 'USB Mic',
      output: null,
      monitor: 'Headphones',
      gains: { input_db: 0, output_db: 0, monitor_db: 0 },
      record: true,
      virtual_mic: false,
      measured_latency_ms: null,
    });
    await waitFor(() => expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'running'));
    expect(screen.getByTestId('live-input')).toBeDisabled();
    expect(screen.getByTestId('live-record')).toBeDisabled();
    expect(screen.getByTestId('live-measure')).toBeDisabled();
    expect(screen.getByTestId('live-estimated-latency')).toHaveTextContent('321.5 ms');

    // The poll brings the meters and the per-block chart.
    be.setStats({ blocks_processed: 4, recent_block_ms: [100, 110, 120, 130], last_block_ms: 130, input_level: { peak_db: -6, rms_db: -10 } });
    await waitFor(() => expect(screen.getByTestId('live-block-ms')).toHaveTextContent('130.0 of 250 ms'));
    expect(screen.getByTestId('live-block-chart')).toHaveAttribute('data-points', '4');
    expect(screen.getByTestId('live-input-meter')).toHaveAttribute('data-peak-db', '-6');
    expect(screen.queryByTestId('live-falling-behind')).toBeNull();

    be.setStats({ blocks_processed: 5, recent_block_ms: [300], last_block_ms: 300, falling_behind: true, advice: 'Try a larger block.' });
    await waitFor(() => expect(screen.getByTestId('live-falling-behind')).toHaveTextContent('Try a larger block.'));

    be.setStats({ state: 'reopening', message: 'the input device disappeared', input_overflows: 3, output_underruns: 7 });
    await waitFor(() => expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'reopening'));
    expect(screen.getByTestId('live-message')).toHaveTextContent('the input device disappeared');
    expect(screen.getByTestId('live-xruns')).toHaveTextContent('Overflows: 3 · Underruns: 7');

    await fireEvent.click(screen.getByTestId('live-stop'));
    await waitFor(() => expect(be.argsOf('stop_live')).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'stopped'));
    expect(screen.getByTestId('live-start')).toBeEnabled();
    expect(screen.getByTestId('live-measure')).toBeEnabled();
    const polls = be.argsOf('live_status').length;
    await new Promise((r) => setTimeout(r, 600));
    expect(be.argsOf('live_status')).toHaveLength(polls);
  });

  it('sends parameter, passthrough and gain changes to the running stream only', async () => {
    const be = backend();
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    // Stopped: the change is kept for the next start, nothing is sent.
    await fireEvent.change(screen.getByTestId('live-block'), { target: { value: '100' } });
    expect(be.argsOf('update_live')).toHaveLength(0);
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'running'));
    expect(be.argsOf('start_live')[0].request.params.block_ms).toBe(100);

    // The voice's controls are the Convert page's, with the backend's ranges.
    const ranges = BACKEND_DEFAULTS.get_parameter_ranges;
    expect(screen.getByTestId('live-transpose')).toHaveAttribute('max', String(ranges.voice.transpose.max));
    expect(screen.getByTestId('live-block')).toHaveAttribute('max', String(ranges.stream.block_ms.max));
    expect(screen.getByTestId('live-autotune')).toBeInTheDocument();
    await fireEvent.change(screen.getByTestId('live-transpose'), { target: { value: '5' } });
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(1));
    expect(be.argsOf('update_live')[0]).toEqual({
      params: { ...PARAMS, block_ms: 100, transpose: 5 },
      voice: null,
      passthrough: null,
      gains: null,
    });
    await fireEvent.change(screen.getByTestId('live-f0-method'), { target: { value: 'pm' } });
    await fireEvent.change(screen.getByTestId('live-context'), { target: { value: '500' } });
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(3));
    expect(be.argsOf('update_live')[2].params).toEqual({ ...PARAMS, block_ms: 100, transpose: 5, f0_method: 'pm', context_ms: 500 });
    await fireEvent.change(screen.getByTestId('live-formant-shift'), { target: { value: '1.5' } });
    await fireEvent.click(screen.getByTestId('live-input-denoise'));
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(5));
    expect(be.argsOf('update_live')[4].params).toMatchObject({ formant_shift: 1.5, input_denoise: true, output_denoise: false });

    await fireEvent.click(screen.getByTestId('live-passthrough'));
    await fireEvent.change(screen.getByTestId('live-gain-input'), { target: { value: '6' } });
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(7));
    expect(be.argsOf('update_live')[5]).toMatchObject({ params: null, passthrough: true });
    expect(be.argsOf('update_live')[6]).toMatchObject({ gains: { input_db: 6, output_db: 0, monitor_db: 0 } });

    expect(screen.getByTestId('live-speech-gate')).not.toBeChecked();
    await fireEvent.click(screen.getByTestId('live-speech-gate'));
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(8));
    expect(be.argsOf('update_live')[7].params).toMatchObject({ speech_gate: true, input_denoise: true });
  });

  it('keeps the parameters across a restart, and starts from the defaults when the saved ones are corrupt', async () => {
    backend();
    const first = render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    await fireEvent.change(screen.getByTestId('live-block'), { target: { value: '100' } });
    await fireEvent.change(screen.getByTestId('live-f0-method'), { target: { value: 'pm' } });
    await fireEvent.click(screen.getByTestId('live-output-denoise'));
    first.unmount();
    live.reset();
    defaults.reset();
    const second = render(Live);
    await waitFor(() => expect(screen.getByTestId('live-block')).toHaveValue(100));
    expect(live.params).toEqual({ ...PARAMS, block_ms: 100, f0_method: 'pm', output_denoise: true });
    second.unmount();

    localStorage.setItem(savedStreamParams.key, 'block_ms=100');
    live.reset();
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    expect(live.params).toEqual(PARAMS);
  });

  it('switches the running stream between voice A and B in one click', async () => {
    const be = backend();
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    await fireEvent.change(screen.getByTestId('live-voice-b'), { target: { value: '2' } });
    expect(screen.getByTestId('live-ab-switch')).toBeDisabled();
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(screen.getByTestId('live-ab-side')).toHaveAttribute('data-side', 'A'));
    expect(screen.getByTestId('live-ab-side')).toHaveTextContent('Live: A (Ada)');

    await fireEvent.click(screen.getByTestId('live-ab-switch'));
    await waitFor(() => expect(screen.getByTestId('live-ab-side')).toHaveAttribute('data-side', 'B'));
    expect(be.argsOf('update_live')[0]).toEqual({ params: null, voice: { model_id: 2, use_index: true }, passthrough: null, gains: null });
    expect(screen.getByTestId('live-ab-switch')).toHaveTextContent('Switch to A');

    await fireEvent.click(screen.getByTestId('live-ab-switch'));
    await waitFor(() => expect(screen.getByTestId('live-ab-side')).toHaveAttribute('data-side', 'A'));
    expect(be.argsOf('update_live')[1].voice).toEqual({ model_id: 1, use_index: true });
  });

  it('plays the voice into the virtual microphone and says other programs can pick it', async () => {
    const be = backend({
      start_live: ({ request }) => makeStatus({ voice: request.voice }, { virtual_mic: 'timbre_studio_voice_mic_42' }),
      live_status: () => makeStatus({}, { virtual_mic: 'timbre_studio_voice_mic_42' }),
    });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    const output = screen.getByTestId('live-output');
    expect(output).toBeEnabled();
    await fireEvent.click(screen.getByTestId('live-virtual-mic'));
    expect(output, 'the output goes to the microphone').toBeDisabled();
    expect(screen.queryByTestId('live-virtual-mic-on')).toBeNull();
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(be.argsOf('start_live')).toHaveLength(1));
    expect(be.argsOf('start_live')[0].request.virtual_mic).toBe(true);
    const note = await screen.findByTestId('live-virtual-mic-on');
    expect(note).toHaveTextContent('Other programs can now pick “Timbre Studio voice” as their microphone');
    expect(note).toHaveAttribute('data-source', 'timbre_studio_voice_mic_42');
    expect(screen.getByTestId('live-virtual-mic')).toBeDisabled();
  });

  it('finds the best settings as a job, takes its block and crossfade, and says why', async () => {
    const times = (max_ms: number, budget_ms: number, blocks = 6) => ({ blocks, budget_ms, mean_ms: max_ms, p95_ms: max_ms, max_ms });
    const report = {
      candidates: [
        { block_ms: 40, crossfade_ms: 40, times: times(61.7, 40, 1), keeps_up: false },
        { block_ms: 60, crossfade_ms: 50, times: times(70.2, 60, 1), keeps_up: false },
        { block_ms: 80, crossfade_ms: 50, times: times(55.5, 80, 9), keeps_up: true },
      ],
      params: { ...PARAMS, block_ms: 80, crossfade_ms: 50 },
      latency_ms: 220,
      budget_share: 0.8,
    };
    const be = backend({ tune_live: () => makeJob({ id: 77, kind: 'live_tune', state: 'queued' }) });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-tune')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-tune'));
    await waitFor(() => expect(be.argsOf('tune_live')).toHaveLength(1));
    expect(be.argsOf('tune_live')[0].request).toEqual({ voice: { model_id: 1, use_index: true }, params: PARAMS, sample_rate: 48000 });
    expect(screen.getByTestId('live-tune')).toBeDisabled();
    expect(screen.getByTestId('live-tune')).toHaveTextContent('Finding the best settings…');

    app.handleEvent({ type: 'job', job: makeJob({ id: 77, kind: 'live_tune', state: 'succeeded', progress: 1, result: report }) });
    const said = await screen.findByTestId('live-tuned');
    expect(said).toHaveAttribute('data-block-ms', '80');
    expect(said).toHaveTextContent('Picked 80 ms blocks with a 50 ms crossfade: the slowest block took 55.5 of its 80 ms (within 80%)');
    expect(said).toHaveTextContent('latency about 220 ms');
    expect(said).toHaveTextContent('Smaller blocks were too slow (40 ms took 62 ms, 60 ms took 70 ms)');
    expect(live.params).toEqual({ ...PARAMS, block_ms: 80, crossfade_ms: 50 });
    expect(screen.getByTestId('live-tune')).toBeEnabled();

    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(be.argsOf('start_live')).toHaveLength(1));
    expect(be.argsOf('start_live')[0].request.params.block_ms, 'the stream starts with the pick').toBe(80);
  });

  it('says when no block keeps up', async () => {
    const report = {
      candidates: [{ block_ms: 750, crossfade_ms: 50, times: { blocks: 1, budget_ms: 750, mean_ms: 900, p95_ms: 900, max_ms: 900 }, keeps_up: false }],
      params: null,
      latency_ms: null,
      budget_share: 0.8,
    };
    backend({ tune_live: () => makeJob({ id: 78, kind: 'live_tune', state: 'queued' }) });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-tune')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-tune'));
    await waitFor(() => expect(live.tuningJob).toBe(78));
    app.handleEvent({ type: 'job', job: makeJob({ id: 78, kind: 'live_tune', state: 'succeeded', result: report }) });
    expect(await screen.findByTestId('live-tuned')).toHaveTextContent('No block up to 750 ms keeps within 80% of its duration here');
    expect(live.params?.block_ms).toBe(PARAMS.block_ms);
  });

  it('offers the block size the session proposes, and takes it by itself when allowed', async () => {
    const be = backend();
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(screen.getByTestId('live-state')).toHaveAttribute('data-state', 'running'));
    expect(screen.queryByTestId('live-proposed-block')).toBeNull();

    be.setStats({ budget_ms: 250, recent_block_ms: [300, 310, 320], falling_behind: true, proposed_block_ms: 500 });
    const offer = await screen.findByTestId('live-proposed-block');
    expect(offer).toHaveTextContent('500 ms blocks would keep up (the slowest recent block took 320 ms)');
    await fireEvent.click(screen.getByTestId('live-use-proposed-block'));
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(1));
    expect(be.argsOf('update_live')[0].params).toMatchObject({ block_ms: 500, crossfade_ms: PARAMS.crossfade_ms });

    // Allowed to, the page takes a proposal as the poll brings it.
    await fireEvent.click(screen.getByTestId('live-auto-block'));
    be.setStats({ budget_ms: 500, recent_block_ms: [30, 31], proposed_block_ms: 40 });
    await waitFor(() => expect(be.argsOf('update_live')).toHaveLength(2));
    expect(be.argsOf('update_live')[1].params).toMatchObject({ block_ms: 40, crossfade_ms: 40 });
    await new Promise((r) => setTimeout(r, 600));
    expect(be.argsOf('update_live'), 'the same proposal is taken once').toHaveLength(2);
  });

  it('shows the two takes a recorded session left, with a way to the Library', async () => {
    const input = makeTake({ id: 11, name: 'Live 1 (input)', origin: 'recorded' });
    const output = makeTake({ id: 12, name: 'Live 1 (Ada)', origin: 'recorded' });
    const be = backend({ stop_live: () => ({ input, output }), list_voices: () => [], list_takes: () => [input, output] });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-record'));
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(screen.getByTestId('live-stop')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-stop'));
    const note = await screen.findByTestId('live-recorded');
    expect(note).toHaveAttribute('data-input-take', '11');
    expect(note).toHaveAttribute('data-output-take', '12');
    expect(note).toHaveTextContent('Live 1 (input)');
    expect(app.takes.map((t) => t.id).sort()).toEqual([11, 12]);
    await fireEvent.click(screen.getByTestId('live-open-library'));
    expect(app.page).toBe('library');
    expect(be.argsOf('stop_live')).toHaveLength(1);
  });

  it('reports a failed start and stays stopped', async () => {
    backend({ start_live: () => { throw { kind: 'not_found', message: 'hubert_base.pt is not in the models folder' }; } });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-start')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() =>
      expect(app.notices.map((n) => n.text)).toContain('Could not start the live stream: hubert_base.pt is not in the models folder'),
    );
    expect(live.phase).toBe('idle');
    expect(screen.getByTestId('live-start')).toBeEnabled();
  });

  it('measures the latency through the chosen devices while stopped', async () => {
    const be = backend({
      measure_live_latency: () => ({
        measurement: {
          result: { ok: true, sample_rate: 48000, round_trip: 4800, round_trip_ms: 100, delays: [4800], pings: 8, snr_db: 30, input_peak_db: -6, clipped: false, reason: null },
          sample_rate: 48000,
          block: 4800,
          block_ms: 100,
          input_latency_ms: null,
          output_latency_ms: null,
          estimated_ms: 95,
          input_overflows: 0,
          output_underruns: 0,
        },
        stream_latency_ms: 160,
      }),
    });
    render(Live);
    await waitFor(() => expect(screen.getByTestId('live-measure')).toBeEnabled());
    await fireEvent.change(screen.getByTestId('live-output'), { target: { value: 'Headphones' } });
    await fireEvent.click(screen.getByTestId('live-measure'));
    await waitFor(() =>
      expect(screen.getByTestId('live-measured-latency')).toHaveTextContent('Round trip 100.0 ms (expected 95.0 ms); with the engine 160.0 ms'),
    );
    expect(be.argsOf('measure_live_latency')).toEqual([{ input: null, output: 'Headphones', blockMs: PARAMS.block_ms, crossfadeMs: PARAMS.crossfade_ms }]);

    // A stream started now keeps the measured latency with its recording.
    await fireEvent.click(screen.getByTestId('live-start'));
    await waitFor(() => expect(be.argsOf('start_live')).toHaveLength(1));
    expect(be.argsOf('start_live')[0].request.measured_latency_ms).toBe(160);
  });
});
