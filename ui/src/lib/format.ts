// Pure display helpers, in the UI's language (numbers through Intl, unit words from the `format`
// catalogue). Numbers are rendered in a monospace font, so keep their widths stable (fixed
// decimals, a real minus sign is NOT used so that tests and copy/paste see plain ASCII).
import { fixed, formatDateParts, formatNumber, i18n, t, type MessageKey } from './i18n.svelte';

const DASH = '—';

/** The UI language's decimal separator: "." in English, "," in German. */
function decimalSeparator(): string {
  return fixed(0.5, 1).replace(/\d/g, '') || '.';
}

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
  const ss = `${String(s).padStart(2, '0')}${decimalSeparator()}${t}`;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** -3.14159 → "-3.1 dBFS"; -Infinity / null / below -120 → "-inf dBFS". */
export function formatDbfs(db: number | null | undefined, unit = 'dBFS'): string {
  if (db === null || db === undefined || Number.isNaN(db)) return DASH;
  if (!Number.isFinite(db) || db <= -120) return `-inf ${unit}`.trim();
  const v = Math.abs(db) < 0.05 ? 0 : db;
  return `${fixed(v, 1)} ${unit}`.trim();
}

/** Integrated loudness, or a dash when the backend could not measure it. */
export function formatLufs(lufs: number | null | undefined): string {
  if (!finite(lufs)) return DASH;
  return `${fixed(lufs, 1)} LUFS`;
}

/** Linear amplitude (0..1) to dBFS; 0 → -Infinity. */
export function linearToDb(x: number): number {
  if (!finite(x) || x <= 0) return -Infinity;
  return 20 * Math.log10(x);
}

const BYTE_UNITS: readonly MessageKey[] = [
  'format.bytes_b',
  'format.bytes_kib',
  'format.bytes_mib',
  'format.bytes_gib',
  'format.bytes_tib',
  'format.bytes_pib',
];

/** 1536 → "1.5 KiB" ("1,5 KiB" in German), 8 GiB → "8.0 GiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (!finite(bytes) || bytes < 0) return DASH;
  const units = BYTE_UNITS;
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return t(units[i], { value: i === 0 ? String(Math.round(v)) : fixed(v, 1) });
}

/** 48000 → "48 kHz", 44100 → "44.1 kHz". */
export function formatSampleRate(hz: number): string {
  if (!finite(hz) || hz <= 0) return DASH;
  const k = hz / 1000;
  return `${formatNumber(k, { maximumFractionDigits: 1, useGrouping: false })} kHz`;
}

export function formatChannels(n: number): string {
  if (n === 1) return t('format.mono');
  if (n === 2) return t('format.stereo');
  return finite(n) ? t('format.channels', { count: n }) : DASH;
}

export function formatPercent(p: number | null | undefined, digits = 0): string {
  if (!finite(p)) return DASH;
  return t('format.percent', { value: fixed(p, digits) });
}

/** Progress 0..1 → "42%". */
export function formatProgress(p: number | null | undefined): string {
  if (!finite(p)) return t('format.percent', { value: fixed(0, 0) });
  return t('format.percent', { value: fixed(Math.round(Math.min(1, Math.max(0, p)) * 100), 0) });
}

function pad2(n: number) {
  return String(n).padStart(2, '0');
}

const TIME: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
const DAY: Intl.DateTimeFormatOptions = { year: 'numeric', month: '2-digit', day: '2-digit' };

/** A local day: ISO "2026-11-22" in English (unambiguous wherever English is read), else the
 * language's own numeric date ("22.11.2026", "2026/11/22"). */
function day(d: Date): string {
  if (i18n.locale === 'en') return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  return formatDateParts(d, DAY);
}

/** RFC 3339 → local "2026-11-22 14:03:07" (time only when it is today); "22.11.2026, 14:03:07" in German. */
export function formatDateTime(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = formatDateParts(d, TIME);
  const sameDay =
    d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  if (sameDay) return time;
  if (i18n.locale === 'en') return `${day(d)} ${time}`;
  return formatDateParts(d, { ...DAY, ...TIME });
}

/** RFC 3339 → local "2026-11-22" ("22.11.2026" in German). */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return day(d);
}

/** Elapsed seconds between two RFC 3339 stamps, as "1.2 s" / "3 m 04 s". */
export function formatSpan(from: string | null, to: string | null): string {
  if (!from || !to) return DASH;
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (!Number.isFinite(ms) || ms < 0) return DASH;
  const s = ms / 1000;
  if (s < 60) return t('format.seconds', { value: fixed(s, 1) });
  const m = Math.floor(s / 60);
  if (m < 60) return t('format.span_minutes_seconds', { m: String(m), s: pad2(Math.floor(s % 60)) });
  return t('format.span_hours_minutes', { h: String(Math.floor(m / 60)), m: pad2(m % 60) });
}

/** Time still to go, rounded up: 42.1 → "43 s", 136 → "2 min 16 s", 7300 → "2 h 1 min". */
export function formatSecsLeft(secs: number): string {
  const s = Math.ceil(secs);
  if (s < 60) return t('format.seconds', { value: String(s) });
  const m = Math.floor(s / 60);
  if (m < 60) return t('format.minutes_seconds', { m: String(m), s: String(s % 60) });
  return t('format.hours_minutes', { h: String(Math.floor(m / 60)), m: String(m % 60) });
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

/** English only: "1 file", "2 files". A message shown to the user says it with an ICU plural
 * (`{count, plural, one {# file} other {# files}}`) instead. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A conversion's voice parameters in a few words: "+3 st · rmvpe" (no transpose: "rmvpe"). */
export function voiceSummary(json: unknown): string {
  const params = (json ?? {}) as { transpose?: unknown; f0_method?: unknown };
  const transpose = typeof params.transpose === 'number' ? Math.round(params.transpose * 100) / 100 : 0;
  const parts = [
    transpose === 0 ? null : `${formatNumber(transpose, { maximumFractionDigits: 2, signDisplay: 'exceptZero', useGrouping: false })} st`,
    typeof params.f0_method === 'string' ? params.f0_method : null,
  ];
  return parts.filter((p) => p !== null).join(' · ');
}

/** One piece of a message cut at its values: `value` names the value a piece shows, so a template
 * can wrap it (`<code>`, `<strong>`, a link) while the sentence around it stays one message. */
export interface MessagePart {
  text: string;
  value?: string;
}

/** The message `key` with `values` put in, in pieces: each string value its own piece (numbers
 * are formatted into the text, for plurals). */
export function messageParts(key: MessageKey, values: Record<string, string | number>): MessagePart[] {
  const names = Object.keys(values).filter((name) => typeof values[name] === 'string');
  const marked = Object.fromEntries(
    Object.entries(values).map(([name, v]) => [name, typeof v === 'string' ? `\u0001${names.indexOf(name)}\u0002` : v]),
  );
  const parts: MessagePart[] = [];
  for (const [i, piece] of t(key, marked).split(/\u0001(\d+)\u0002/).entries()) {
    if (i % 2 === 0) {
      if (piece !== '') parts.push({ text: piece });
    } else {
      const name = names[Number(piece)];
      parts.push({ text: String(values[name]), value: name });
    }
  }
  return parts;
}
