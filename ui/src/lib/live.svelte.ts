// The live stream as the Live page drives it. Lives outside the page so a running stream keeps
// being polled (and can be stopped) while the user looks elsewhere.
import * as api from './api';
import type { DeviceList, Gains, LatencyMeasurement, LiveStatus, RecordedSession, StreamParams, TuneReport } from './api';
import { app } from './stores.svelte';
import { defaults } from './defaults.svelte';
import { savedStreamParams } from './savedParams.svelte';
import { buildLiveRequest, liveSide, otherVoice, type AbSide, type LiveForm } from './live';
import { t, type MessageKey } from './i18n.svelte';

/** The page's side of the stream: what it has asked for and not yet heard back about. */
export type LivePhase = 'idle' | 'starting' | 'running' | 'stopping';

export const POLL_MS = 250;
const NO_GAIN: Gains = { input_db: 0, output_db: 0, monitor_db: 0 };

class LiveSession {
  devices = $state<DeviceList | null>(null);
  devicesLoaded = $state(false);
  input = $state<string | null>(null);
  output = $state<string | null>(null);
  monitor = $state<string | null>(null);
  voiceA = $state<number | null>(null);
  voiceB = $state<number | null>(null);
  useIndex = $state(true);
  /** null until the backend's defaults arrive; then those saved at the last change over them. */
  params = $state<StreamParams | null>(null);
  passthrough = $state(false);
  gains = $state<Gains>({ ...NO_GAIN });
  record = $state(false);
  virtualMic = $state(false);
  /** Take the running session's proposed block sizes as they come. */
  autoBlock = $state(false);

  phase = $state<LivePhase>('idle');
  /** The latest polled numbers of the running stream. */
  status = $state<LiveStatus | null>(null);
  measuring = $state(false);
  measurement = $state<LatencyMeasurement | null>(null);
  /** The takes the last recorded stream left. */
  recorded = $state<RecordedSession | null>(null);
  /** Switching voices (A/B) in flight. */
  switching = $state(false);
  /** The `live_tune` job running now, if any. */
  tuningJob = $state<number | null>(null);
  /** The last tuning's report; its pick is applied to the parameters. */
  tuned = $state<TuneReport | null>(null);

  private poll: ReturnType<typeof setInterval> | null = null;

  constructor() {
    savedStreamParams.follow(() => this.params);
  }

  get busy(): boolean {
    return this.phase !== 'idle';
  }

  /** Which voice of the A/B pair is live. */
  get side(): AbSide | null {
    return liveSide(this.status, this.voiceA, this.voiceB);
  }

  form(): LiveForm | null {
    if (!this.params) return null;
    return {
      voiceA: this.voiceA,
      useIndex: this.useIndex,
      params: this.params,
      passthrough: this.passthrough,
      input: this.input,
      output: this.output,
      monitor: this.monitor,
      gains: this.gains,
      record: this.record,
      virtualMic: this.virtualMic,
      measuredLatencyMs: this.measurement?.measurement.result.ok ? this.measurement.stream_latency_ms : null,
    };
  }

  async load(): Promise<void> {
    const [devices, params, ranges] = await Promise.allSettled([
      api.listLiveDevices(),
      this.params ? Promise.resolve(this.params) : api.liveDefaults(),
      // The controls' ranges (LiveParams), shared with the Convert page.
      defaults.load(),
    ]);
    if (devices.status === 'fulfilled') this.devices = devices.value;
    else app.reportError(devices.reason, t('live.error_devices'));
    this.devicesLoaded = true;
    if (params.status === 'fulfilled') this.params ??= savedStreamParams.restore(params.value);
    else app.reportError(params.reason, t('live.error_live_defaults'));
    if (ranges.status === 'rejected') app.reportError(ranges.reason, t('live.error_defaults'));
  }

  /** Finds the smallest block this machine keeps up with for voice A and the parameters, and
   * takes its block and crossfade. */
  async tune(): Promise<void> {
    if (this.busy || this.tuningJob !== null || this.voiceA === null || !this.params) return;
    const rate = this.devices?.inputs.find((d) => (this.input === null ? d.is_default : d.name === this.input))?.sample_rate;
    try {
      const job = await api.tuneLive({
        voice: { model_id: this.voiceA, use_index: this.useIndex },
        params: this.params,
        // The session runs at the input's rate, at most 48 kHz.
        sample_rate: Math.min(rate ?? 48000, 48000),
      });
      this.tuningJob = job.id;
      this.tuned = null;
      app.watchJob(job.id, t('live.tune_started'), (done) => {
        this.tuningJob = null;
        const report = done.state === 'succeeded' ? api.jobJson<TuneReport>(done.result) : null;
        if (!report) return;
        this.tuned = report;
        if (report.params && this.params) {
          this.params = { ...this.params, block_ms: report.params.block_ms, crossfade_ms: report.params.crossfade_ms };
        }
      });
    } catch (err) {
      app.reportError(err, t('live.error_tune'));
    }
  }

  async start(): Promise<void> {
    const form = this.form();
    const request = form && buildLiveRequest(form);
    if (this.phase !== 'idle' || !request) return;
    this.phase = 'starting';
    this.recorded = null;
    try {
      this.status = await api.startLive(request);
      this.phase = 'running';
      this.poll = setInterval(() => void this.refresh(), POLL_MS);
    } catch (err) {
      this.phase = 'idle';
      app.reportError(err, t('live.error_start'));
    }
  }

  /** Polls the stream's numbers; a stream that is gone leaves the page idle. */
  async refresh(): Promise<void> {
    if (this.phase !== 'running') return;
    try {
      const status = await api.liveStatus();
      if (this.phase !== 'running') return;
      if (!status) return this.finish();
      this.status = status;
      const proposed = status.stats.proposed_block_ms;
      if (this.autoBlock && proposed !== null && proposed !== this.params?.block_ms) await this.useProposedBlock();
    } catch (err) {
      app.reportError(err, t('live.error_read'));
    }
  }

  async stop(): Promise<RecordedSession | null> {
    if (this.phase !== 'running') return null;
    this.phase = 'stopping';
    this.stopPolling();
    try {
      const recorded = await api.stopLive();
      if (recorded) {
        this.recorded = recorded;
        app.upsertTake(recorded.input);
        app.upsertTake(recorded.output);
        app.scheduleLibraryRefresh();
        app.notify(t('live.saved_session', { input: recorded.input.name, output: recorded.output.name }), 'success');
      }
      return recorded;
    } catch (err) {
      app.reportError(err, t('live.error_stop'));
      return null;
    } finally {
      this.finish();
    }
  }

  /** Sends a changed part to the running stream (from its next block); a stopped one starts with it. */
  private async update(change: api.LiveUpdate, error: MessageKey): Promise<void> {
    if (this.phase !== 'running') return;
    try {
      this.status = await api.updateLive(change);
    } catch (err) {
      app.reportError(err, t(error));
    }
  }

  setParam<K extends keyof StreamParams>(key: K, value: StreamParams[K]): Promise<void> {
    if (!this.params) return Promise.resolve();
    this.params = { ...this.params, [key]: value };
    return this.update({ params: this.params }, 'live.error_change_params');
  }

  /** Changes to the block size the running session proposes (a larger one while it falls
   * behind, a smaller one when there is room), the crossfade cut to it. */
  useProposedBlock(): Promise<void> {
    const block = this.status?.stats.proposed_block_ms;
    if (!this.params || block === null || block === undefined) return Promise.resolve();
    this.params = { ...this.params, block_ms: block, crossfade_ms: Math.min(this.params.crossfade_ms, block) };
    return this.update({ params: this.params }, 'live.error_change_block');
  }

  setPassthrough(on: boolean): Promise<void> {
    this.passthrough = on;
    return this.update({ passthrough: on }, 'live.error_change_passthrough');
  }

  setGain(key: keyof Gains, db: number): Promise<void> {
    this.gains = { ...this.gains, [key]: db };
    return this.update({ gains: this.gains }, 'live.error_change_gains');
  }

  /** The one-click A/B: the running stream goes to the other voice of the pair. */
  async switchVoice(): Promise<void> {
    const target = otherVoice(this.side, this.voiceA, this.voiceB);
    if (this.phase !== 'running' || target === null || this.switching) return;
    this.switching = true;
    try {
      await this.update({ voice: { model_id: target, use_index: this.useIndex } }, 'live.error_change_voice');
    } finally {
      this.switching = false;
    }
  }

  /** The real round trip through the chosen devices; the devices are the stream's, so only while stopped. */
  async measure(): Promise<void> {
    if (this.phase !== 'idle' || this.measuring || !this.params) return;
    this.measuring = true;
    try {
      this.measurement = await api.measureLiveLatency(this.input, this.output, this.params.block_ms, this.params.crossfade_ms);
    } catch (err) {
      app.reportError(err, t('live.error_measure'));
    } finally {
      this.measuring = false;
    }
  }

  private stopPolling() {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }

  private finish() {
    this.stopPolling();
    this.phase = 'idle';
  }

  reset() {
    this.stopPolling();
    this.devices = null;
    this.devicesLoaded = false;
    this.input = this.output = this.monitor = null;
    this.voiceA = this.voiceB = null;
    this.useIndex = true;
    this.params = null;
    this.passthrough = false;
    this.gains = { ...NO_GAIN };
    this.record = false;
    this.virtualMic = false;
    this.autoBlock = false;
    this.phase = 'idle';
    this.status = null;
    this.measuring = false;
    this.measurement = null;
    this.recorded = null;
    this.switching = false;
    this.tuningJob = null;
    this.tuned = null;
  }
}

export const live = new LiveSession();
