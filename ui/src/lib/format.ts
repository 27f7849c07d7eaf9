// Pure display helpers. Numbers are rendered in a monospace font, so keep
// their widths stable (fixed decimals, a real minus sign is NOT used so that
// tests and copy/paste see plain ASCII).

const DASH = '—';

function finite(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n);
}

/** 3.24 → "0:03.2", 754.96 → "12:35.0", 3725 → "1:02:05.0". */
export function formatDuration(secs: number | null | undefined): string {
  if (!finite(secs) || secs < 0) return '0:00.0';
  // Round to tenths first so 59.96 becomes 1:00.0, not 0:60.0.
  const tenths = Math.round(secs * 10);
  const h = Math.floor(tenths / 36000);
  const m = Math.floor((tenths % 36000) / 600);
  const s = Math.floor((tenths % 600) / 10);
  const t = tenths % 10;
  const ss = `${String(s).padStart(2, '0')}.${t}`;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** -3.14159 → "-3.1 dBFS"; -Infinity / null / below -120 → "-inf dBFS". */
export function formatDbfs(db: number | null | undefined, unit = 'dBFS'): string {
  if (db === null || db === undefined || Number.isNaN(db)) return DASH;
  if (!Number.isFinite(db) || db <= -120) return `-inf ${unit}`.trim();
  const v = Math.abs(db) < 0.05 ? 0 : db;
  return `${v.toFixed(1)} ${unit}`.trim();
}

/** Integrated loudness, or a dash when the backend could not measure it. */
export function formatLufs(lufs: number | null | undefined): string {
  if (!finite(lufs)) return DASH;
  return `${lufs.toFixed(1)} LUFS`;
}

/** Linear amplitude (0..1) to dBFS; 0 → -Infinity. */
export function linearToDb(x: number): number {
  if (!finite(x) || x <= 0) return -Infinity;
  return 20 * Math.log10(x);
}

/** 1536 → "1.5 KiB", 8 GiB → "8.0 GiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (!finite(bytes) || bytes < 0) return DASH;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** 48000 → "48 kHz", 44100 → "44.1 kHz". */
export function formatSampleRate(hz: number): string {
  if (!finite(hz) || hz <= 0) return DASH;
  const k = hz / 1000;
  return `${Number.isInteger(k) ? k : k.toFixed(1).replace(/\.0$/, '')} kHz`;
}

export function formatChannels(n: number): string {
  if (n === 1) return 'mono';
  if (n === 2) return 'stereo';
  return finite(n) ? `${n} ch` : DASH;
}

export function formatPercent(p: number | null | undefined, digits = 0): string {
  if (!finite(p)) return DASH;
  return `${p.toFixed(digits)}%`;
}

/** Progress 0..1 → "42%". */
export function formatProgress(p: number | null | undefined): string {
  if (!finite(p)) return '0%';
  return `${Math.round(Math.min(1, Math.max(0, p)) * 100)}%`;
}

function pad2(n: number) {
  return String(n).padStart(2, '0');
}

/** RFC 3339 → local "2026-11-22 14:03:07" (time only when it is today). */
export function formatDateTime(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  const sameDay =
    d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  if (sameDay) return time;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${time}`;
}

/** RFC 3339 → local "2026-11-22". */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
}

/** Elapsed seconds between two RFC 3339 stamps, as "1.2 s" / "3 m 04 s". */
export function formatSpan(from: string | null, to: string | null): string {
  if (!from || !to) return DASH;
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (!Number.isFinite(ms) || ms < 0) return DASH;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${pad2(Math.floor(s % 60))} s`;
  return `${Math.floor(m / 60)} h ${pad2(m % 60)} m`;
}

/** Time still to go, rounded up: 42.1 → "43 s", 136 → "2 min 16 s", 7300 → "2 h 1 min". */
export function formatSecsLeft(secs: number): string {
  const s = Math.ceil(secs);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** "a, b ,, c, a" → ["a", "b", "c"]. */
export function parseTags(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const t = raw.trim();
    if (t && !out.includes(t)) out.push(t);
  }
  return out;
}

export function formatTags(tags: string[]): string {
  return tags.join(', ');
}

/** Last path component, for either separator. */
export function basename(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A conversion's voice parameters in a few words: "+3 st · rmvpe" (no transpose: "rmvpe"). */
export function voiceSummary(json: unknown): string {
  const params = (json ?? {}) as { transpose?: unknown; f0_method?: unknown };
  const transpose = typeof params.transpose === 'number' ? Math.round(params.transpose * 100) / 100 : 0;
  const parts = [
    transpose === 0 ? null : `${transpose > 0 ? '+' : ''}${transpose} st`,
    typeof params.f0_method === 'string' ? params.f0_method : null,
  ];
  return parts.filter((p) => p !== null).join(' · ');
}
