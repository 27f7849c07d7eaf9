// Recording session state. Lives outside the Record page so a recording keeps
// running (and stays visible in the sidebar) while the user looks elsewhere.
import type { Channel } from '@tauri-apps/api/core';
import * as api from './api';
import type { InputDevice, LevelUpdate, Take } from './api';
import { app } from './stores.svelte';
import { t } from './i18n.svelte';

export type RecorderStatus = 'idle' | 'starting' | 'recording' | 'stopping';

const SILENT: LevelUpdate = { peak: 0, rms: 0, clipping: false, seconds: 0 };
const CLIP_LATCH_MS = 1000;

class RecorderState {
  devices = $state<InputDevice[]>([]);
  devicesLoaded = $state(false);
  /** Selected device name; null when there are no devices. */
  device = $state<string | null>(null);
  status = $state<RecorderStatus>('idle');
  level = $state<LevelUpdate>({ ...SILENT });
  clipLatched = $state(false);
  elapsed = $state(0);
  name = $state('');
  voiceId = $state<number | null>(null);
  sessionTakes = $state<Take[]>([]);

  private channel: Channel<LevelUpdate> | null = null;
  private clipTimer: ReturnType<typeof setTimeout> | null = null;
  private tick: ReturnType<typeof setInterval> | null = null;
  private startedAt = 0;
  private lastLevelAt = 0;

  get busy(): boolean {
    return this.status !== 'idle';
  }

  async loadDevices(): Promise<void> {
    try {
      const devices = await api.listInputDevices();
      this.devices = devices;
      if (!this.device || !devices.some((d) => d.name === this.device)) {
        this.device = (devices.find((d) => d.is_default) ?? devices[0])?.name ?? null;
      }
    } catch (err) {
      app.reportError(err, t('record.list_devices_error'));
    } finally {
      this.devicesLoaded = true;
    }
  }

  private onLevel = (l: LevelUpdate) => {
    if (this.status !== 'recording' && this.status !== 'starting') return;
    this.level = l;
    this.lastLevelAt = performance.now();
    if (Number.isFinite(l.seconds)) this.elapsed = l.seconds;
    if (l.clipping) {
      this.clipLatched = true;
      if (this.clipTimer) clearTimeout(this.clipTimer);
      this.clipTimer = setTimeout(() => {
        this.clipLatched = false;
        this.clipTimer = null;
      }, CLIP_LATCH_MS);
    }
  };

  async start(): Promise<void> {
    if (this.status !== 'idle') return;
    this.status = 'starting';
    this.level = { ...SILENT };
    this.elapsed = 0;
    this.clipLatched = false;
    try {
      const channel = await api.startRecording(this.device, this.onLevel);
      if (this.status !== 'starting') {
        // Cancelled while the stream was opening.
        channel.onmessage = () => {};
        await api.cancelRecording().catch(() => {});
        return;
      }
      this.channel = channel;
      this.status = 'recording';
      this.startedAt = performance.now();
      this.lastLevelAt = 0;
      this.tick = setInterval(() => {
        // Prefer the backend's clock (LevelUpdate.seconds); fall back to ours if levels stall.
        const now = performance.now();
        if (now - this.lastLevelAt > 300) this.elapsed = (now - this.startedAt) / 1000;
      }, 100);
    } catch (err) {
      if (this.status !== 'starting') return;
      this.finish();
      app.reportError(err, t('record.start_error'));
    }
  }

  async stop(): Promise<Take | null> {
    if (this.status !== 'recording') return null;
    this.status = 'stopping';
    try {
      const take = await api.stopRecording(this.name.trim() || null, this.voiceId);
      this.sessionTakes.unshift(take);
      this.name = '';
      app.upsertTake(take);
      app.scheduleLibraryRefresh();
      app.notify(t('record.saved_take', { name: take.name }), 'success');
      return take;
    } catch (err) {
      app.reportError(err, t('record.save_error'));
      return null;
    } finally {
      this.finish();
    }
  }

  async cancel(): Promise<void> {
    if (this.status !== 'recording' && this.status !== 'starting') return;
    try {
      await api.cancelRecording();
    } catch (err) {
      app.reportError(err, t('record.cancel_error'));
    } finally {
      this.finish();
    }
  }

  private finish() {
    if (this.channel) this.channel.onmessage = () => {};
    this.channel = null;
    if (this.tick) clearInterval(this.tick);
    this.tick = null;
    this.status = 'idle';
    this.level = { ...SILENT };
  }

  reset() {
    this.finish();
    if (this.clipTimer) clearTimeout(this.clipTimer);
    this.clipTimer = null;
    this.clipLatched = false;
    this.devices = [];
    this.devicesLoaded = false;
    this.device = null;
    this.elapsed = 0;
    this.name = '';
    this.voiceId = null;
    this.sessionTakes = [];
  }
}

export const recorder = new RecorderState();
