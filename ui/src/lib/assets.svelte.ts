// The catalogue's assets and their state in the models folder (Svelte 5 runes), shared by the
// first-run panel, the Models page and the pages whose jobs need an asset. Downloads are
// `download` jobs: their progress arrives with the other job notifications.
import * as api from './api';
import type { AssetList, AssetStatus, DoctorReport, DownloadRequest, Job, Notification } from './api';
import { TERMINAL_STATES, jobJson } from './api';
import { app } from './stores.svelte';
import { t } from './i18n.svelte';
import {
  RateMeter,
  downloadJobsByAsset,
  downloadedBytes,
  essentialsStatus,
  isActive,
  transferProgress,
  usable,
  type EssentialsStatus,
  type TransferProgress,
} from './assets';

class AssetsState {
  list = $state<AssetList | null>(null);
  doctor = $state<DoctorReport | null>(null);
  /** Assets being verified or removed, by name. */
  busy = $state<Record<string, 'verifying' | 'removing'>>({});
  /** Bytes per second of each asset's running download, by name. */
  rates = $state<Record<string, number | null>>({});
  firstRunDismissed = $state(false);

  private meters = new Map<string, RateMeter>();
  private refreshes = 0;
  private unsubscribe: (() => void) | null = null;

  get assets(): AssetStatus[] {
    return this.list?.assets ?? [];
  }

  /** The newest download job of each asset. */
  get jobs(): Map<string, Job> {
    return downloadJobsByAsset(app.jobs);
  }

  get essentials(): EssentialsStatus {
    return essentialsStatus(this.assets, this.jobs);
  }

  /** Whether the first-run panel is up: essentials missing or still downloading. */
  get firstRunShown(): boolean {
    if (!this.list || this.firstRunDismissed) return false;
    const { missing, active } = this.essentials;
    return missing.length > 0 || active.length > 0;
  }

  /** The asset at `path` in the models folder (as jobs look files up). */
  atPath(path: string): AssetStatus | undefined {
    return this.assets.find((a) => a.path === path);
  }

  byName(name: string): AssetStatus | undefined {
    return this.assets.find((a) => a.name === name);
  }

  /** Whether the file at `path` is usable; null until the list is known. */
  usableAt(path: string): boolean | null {
    if (!this.list) return null;
    const asset = this.atPath(path);
    return !!asset && usable(asset);
  }

  /** Summed progress of the named assets' downloads. */
  progressOf(names: readonly string[]): TransferProgress {
    let bytes = 0;
    let total = 0;
    let rate: number | null = null;
    for (const name of names) {
      const asset = this.byName(name);
      if (!asset) continue;
      total += asset.size_bytes ?? 0;
      const job = this.jobs.get(name);
      if (job) bytes += downloadedBytes(job, asset);
      const r = isActive(job) ? this.rates[name] : null;
      if (r != null) rate = (rate ?? 0) + r;
    }
    return transferProgress(bytes, total, rate);
  }

  /** Lists the assets, and follows download jobs from now on. */
  start() {
    this.unsubscribe ??= app.onNotification((n) => this.onNotification(n));
    return this.refresh();
  }

  async refresh(): Promise<void> {
    // Two downloads ending together start two refreshes whose answers can come back in either
    // order: only the latest asked for is kept, or a stale list would keep the first-run panel up.
    const asked = ++this.refreshes;
    try {
      const list = await api.listAssets();
      if (asked === this.refreshes) this.list = list;
    } catch (err) {
      app.reportError(err, t('models.list_failed'));
    }
  }

  async refreshDoctor(): Promise<void> {
    try {
      this.doctor = await api.doctorReport();
    } catch (err) {
      app.reportError(err, t('models.doctor_failed'));
    }
  }

  /** Starts the downloads; their jobs show at once. */
  async download(names: string[]): Promise<Job[]> {
    try {
      const jobs = await api.downloadAssets(names);
      for (const job of jobs) {
        this.meters.get(jobJson<DownloadRequest>(job.params)?.asset ?? '')?.reset();
        app.addQueuedJob(job);
      }
      return jobs;
    } catch (err) {
      app.reportError(err, t('models.download_failed'));
      return [];
    }
  }

  async cancel(jobs: Job[]): Promise<void> {
    try {
      for (const job of jobs) app.upsertJob(await api.cancelJob(job.id));
    } catch (err) {
      app.reportError(err, t('models.download_cancel_failed'));
    }
  }

  async verify(names: string[]): Promise<void> {
    for (const name of names) this.busy[name] = 'verifying';
    try {
      this.merge(await api.verifyAssets(names));
      for (const status of (this.list?.assets ?? []).filter((a) => names.includes(a.name))) {
        if (status.state === 'corrupt') app.notify(t('models.asset_corrupt_notice', { name: status.name, problem: status.problem }), 'error');
        else if (status.state === 'verified') app.notify(t('models.asset_verified_notice', { name: status.name }), 'success');
      }
    } catch (err) {
      app.reportError(err, t('models.verify_failed'));
    } finally {
      for (const name of names) delete this.busy[name];
    }
  }

  async remove(name: string): Promise<void> {
    this.busy[name] = 'removing';
    try {
      this.merge([await api.removeAsset(name)]);
    } catch (err) {
      app.reportError(err, t('models.remove_failed', { name }));
    } finally {
      delete this.busy[name];
    }
  }

  private merge(statuses: AssetStatus[]) {
    if (!this.list) return;
    this.list.assets = this.list.assets.map((a) => statuses.find((s) => s.name === a.name) ?? a);
  }

  private onNotification(n: Notification) {
    if (n.type !== 'job' || n.job.kind !== 'download') return;
    const job = n.job;
    const name = jobJson<DownloadRequest>(job.params)?.asset;
    const asset = name ? this.byName(name) : undefined;
    if (!name || !asset) return;
    if (TERMINAL_STATES.includes(job.state)) {
      this.meters.delete(name);
      delete this.rates[name];
      void this.refresh();
      return;
    }
    let meter = this.meters.get(name);
    if (!meter) this.meters.set(name, (meter = new RateMeter()));
    meter.add(Date.now(), downloadedBytes(job, asset));
    this.rates[name] = meter.bytesPerSec;
  }

  /** Back to a blank state (tests). */
  reset() {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.meters.clear();
    this.list = null;
    this.doctor = null;
    this.busy = {};
    this.rates = {};
    this.firstRunDismissed = false;
  }
}

export const assets = new AssetsState();
