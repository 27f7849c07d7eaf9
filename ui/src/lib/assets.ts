// The download center's logic: which catalogue assets a job kind needs, how far their download
// jobs are (bytes, rate, time left) and what the first-run panel offers. The catalogue
// (`models/models.json`, or TIMBRE_ASSET_CATALOG) is the backend's: nothing here names an asset.
import { CANCELLABLE_STATES, jobJson } from './api';
import type { AssetStatus, DownloadRequest, Job } from './api';
import { formatSecsLeft } from './format';
import { fixed, t, type MessageKey } from './i18n.svelte';

/** A file there that jobs can use (a size mismatch or a wrong hash makes it `corrupt`). */
export function usable(asset: AssetStatus): boolean {
  return asset.state === 'present' || asset.state === 'verified';
}

/** What a person calls the asset: the first word of its description ("HuBERT", "RMVPE"). */
export function assetTitle(asset: AssetStatus): string {
  return asset.description.split(/\s/, 1)[0] || asset.name;
}

/** Decimal megabytes, as download sizes are quoted: 370692181 → "371 MB". */
export function formatMegabytes(bytes: number): string {
  return t('models.megabytes', { mb: fixed(bytes / 1e6, bytes < 1e6 ? 1 : 0) });
}

/** The newest download job of each asset, by asset name. */
export function downloadJobsByAsset(jobs: readonly Job[]): Map<string, Job> {
  const latest = new Map<string, Job>();
  for (const job of jobs) {
    if (job.kind !== 'download') continue;
    const asset = jobJson<DownloadRequest>(job.params)?.asset;
    if (!asset) continue;
    const seen = latest.get(asset);
    if (!seen || job.id > seen.id) latest.set(asset, job);
  }
  return latest;
}

export function isActive(job: Job | undefined): boolean {
  return !!job && CANCELLABLE_STATES.includes(job.state);
}

/** Bytes a download job has, from its progress and the asset's size. */
export function downloadedBytes(job: Job, asset: AssetStatus): number {
  if (job.state === 'succeeded') return asset.size_bytes ?? 0;
  return Math.round(job.progress * (asset.size_bytes ?? 0));
}

/** The group an asset is listed under: the job kind that needs it (a config goes with the
 * model it configures). */
export function assetGroup(asset: AssetStatus, all: readonly AssetStatus[]): string {
  const need = asset.needed_for[0] ?? '';
  const owner = all.find((a) => a.name === need && a !== asset);
  if (owner) return assetGroup(owner, all.filter((a) => a !== asset));
  return need.split(/[\s(]/, 1)[0] || 'other';
}

const GROUP_TITLES: Record<string, MessageKey> = {
  convert: 'models.group_convert',
  dataset: 'models.group_dataset',
  train: 'models.group_train',
  isolate: 'models.group_isolate',
  other: 'models.group_other',
};

/** The group's heading, in the UI's language (a group the app has no title for keeps its name). */
export function groupTitle(group: string): string {
  const key = Object.hasOwn(GROUP_TITLES, group) ? GROUP_TITLES[group] : undefined;
  return key ? t(key) : group;
}

/** The assets in groups, in the catalogue's order of first appearance. */
export function groupAssets(assets: readonly AssetStatus[]): { group: string; assets: AssetStatus[] }[] {
  const groups = new Map<string, AssetStatus[]>();
  for (const asset of assets) {
    const group = assetGroup(asset, assets);
    groups.set(group, [...(groups.get(group) ?? []), asset]);
  }
  return [...groups].map(([group, list]) => ({ group, assets: list }));
}

/** A transfer rate over the last `windowMs` of (time, bytes) samples. */
export class RateMeter {
  private samples: { at: number; bytes: number }[] = [];
  constructor(private readonly windowMs = 5000) {}

  /** Adds a sample; fewer bytes than before (a restarted download) starts over. */
  add(at: number, bytes: number) {
    const last = this.samples.at(-1);
    if (last && bytes < last.bytes) this.samples = [];
    this.samples.push({ at, bytes });
    while (this.samples.length > 2 && at - this.samples[1].at >= this.windowMs) this.samples.shift();
  }

  /** Bytes per second, or null before two samples a moment apart. */
  get bytesPerSec(): number | null {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last || last.at - first.at < 200) return null;
    return ((last.bytes - first.bytes) * 1000) / (last.at - first.at);
  }

  reset() {
    this.samples = [];
  }
}

/** How far a set of downloads is, summed. */
export interface TransferProgress {
  bytes: number;
  total: number;
  bytesPerSec: number | null;
  secsLeft: number | null;
}

export function transferProgress(bytes: number, total: number, bytesPerSec: number | null): TransferProgress {
  const secsLeft = bytesPerSec && bytesPerSec > 0 ? Math.max(0, (total - bytes) / bytesPerSec) : null;
  return { bytes, total, bytesPerSec, secsLeft };
}

/** "12 MB of 371 MB · 4.2 MB/s · 1 min 25 s left" */
export function describeTransfer(p: TransferProgress): string {
  const parts = [t('models.transfer_of', { done: formatMegabytes(p.bytes), total: formatMegabytes(p.total) })];
  if (p.bytesPerSec !== null) parts.push(t('models.transfer_rate', { rate: fixed(p.bytesPerSec / 1e6, 1) }));
  if (p.secsLeft !== null) parts.push(t('models.transfer_left', { time: formatSecsLeft(p.secsLeft) }));
  return parts.join(' · ');
}

/** What the first-run panel shows, from the essentials and their newest download jobs. */
export interface EssentialsStatus {
  /** The essentials not usable yet. */
  missing: AssetStatus[];
  /** Their download jobs still queued or running. */
  active: Job[];
  /** The error of each essential's last download, when it failed. */
  errors: string[];
  /** Bytes still to fetch for the missing ones, by the catalogue's sizes. */
  bytesNeeded: number;
}

export function essentialsStatus(assets: readonly AssetStatus[], jobs: Map<string, Job>): EssentialsStatus {
  const essentials = assets.filter((a) => a.essential);
  const missing = essentials.filter((a) => !usable(a));
  const active = essentials.map((a) => jobs.get(a.name)).filter((j): j is Job => !!j && isActive(j));
  const errors = missing
    .map((a) => jobs.get(a.name))
    .filter((j): j is Job => !!j && j.state === 'failed')
    .map((j) => j.error ?? j.message);
  const bytesNeeded = missing.reduce((sum, a) => sum + (a.size_bytes ?? 0), 0);
  return { missing, active, errors, bytesNeeded };
}
