// The maths of the line charts (LossChart.svelte, the resource charts): domains, linear and log
// scales, ticks, SVG paths, thinning long series and finding the point under the pointer. Its
// only dependency is the UI's number format (a tick reads 0,5 in German).
import { formatNumber } from './i18n.svelte';

export interface Point {
  x: number;
  y: number;
}

export interface Domain {
  min: number;
  max: number;
}

export type ScaleKind = 'linear' | 'log';

/** Whether `y` can be drawn on the scale (a log scale has no zero or negatives). */
export function drawable(y: number, kind: ScaleKind): boolean {
  return Number.isFinite(y) && (kind === 'linear' || y > 0);
}

/** The x range of every point; a single step gets a unit-wide range. */
export function xDomain(series: Point[][]): Domain | null {
  let min = Infinity;
  let max = -Infinity;
  for (const points of series) {
    for (const p of points) {
      if (!Number.isFinite(p.x)) continue;
      min = Math.min(min, p.x);
      max = Math.max(max, p.x);
    }
  }
  if (min > max) return null;
  return min === max ? { min, max: min + 1 } : { min, max };
}

/** 1, 2 or 5 times a power of ten, at least `raw`. */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  return nice * power;
}

/**
 * The y range of the drawable values, widened to whole tick steps (linear) or to whole decades
 * when the values span less than one (log); null when nothing can be drawn.
 */
export function yDomain(series: Point[][], kind: ScaleKind, tickCount = 5): Domain | null {
  let min = Infinity;
  let max = -Infinity;
  for (const points of series) {
    for (const p of points) {
      if (!drawable(p.y, kind)) continue;
      min = Math.min(min, p.y);
      max = Math.max(max, p.y);
    }
  }
  if (min > max) return null;
  if (kind === 'log') {
    const lo = Math.log10(min);
    const hi = Math.log10(max);
    if (hi - lo >= 1) return { min, max };
    const floor = Math.floor(lo);
    return { min: 10 ** floor, max: 10 ** Math.max(Math.ceil(hi), floor + 1) };
  }
  if (min === max) {
    const pad = Math.abs(min) * 0.1 || 1;
    min -= pad;
    max += pad;
  }
  const step = niceStep((max - min) / tickCount);
  return { min: Math.floor(min / step) * step, max: Math.ceil(max / step) * step };
}

/** Maps a value of `domain` onto `[from, to]` (pixels; `to` may be below `from`). */
export function scale(domain: Domain, from: number, to: number, kind: ScaleKind = 'linear'): (v: number) => number {
  const f = kind === 'log' ? Math.log10 : (v: number) => v;
  const lo = f(domain.min);
  const span = f(domain.max) - lo || 1;
  return (v) => from + ((f(v) - lo) / span) * (to - from);
}

/** The inverse of `scale`: a pixel back to a value. */
export function invert(domain: Domain, from: number, to: number, kind: ScaleKind = 'linear'): (px: number) => number {
  const f = kind === 'log' ? Math.log10 : (v: number) => v;
  const lo = f(domain.min);
  const span = f(domain.max) - lo;
  return (px) => {
    const v = lo + ((px - from) / (to - from || 1)) * span;
    return kind === 'log' ? 10 ** v : v;
  };
}

/** Tick values: nice linear steps, or powers of ten (with 2× and 5× when there are few). */
export function ticks(domain: Domain, kind: ScaleKind, count = 5): number[] {
  const out: number[] = [];
  if (kind === 'log') {
    const lo = Math.ceil(Math.log10(domain.min) - 1e-9);
    const hi = Math.floor(Math.log10(domain.max) + 1e-9);
    const multiples = hi - lo < 2 ? [1, 2, 5] : [1];
    for (let e = lo - 1; e <= hi; e++) {
      for (const m of multiples) {
        const v = m * 10 ** e;
        if (v >= domain.min * (1 - 1e-9) && v <= domain.max * (1 + 1e-9)) out.push(v);
      }
    }
    return out;
  }
  const step = niceStep((domain.max - domain.min) / count);
  for (let v = Math.ceil(domain.min / step - 1e-9) * step; v <= domain.max + step * 1e-9; v += step) {
    // Snap away floating-point drift (0.30000000000000004).
    out.push(Number(v.toPrecision(12)));
  }
  return out;
}

/** The SVG path of a series; undrawable points break the line. */
export function linePath(points: Point[], sx: (x: number) => number, sy: (y: number) => number, kind: ScaleKind): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (!Number.isFinite(p.x) || !drawable(p.y, kind)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${sx(p.x).toFixed(1)} ${sy(p.y).toFixed(1)}`;
    pen = true;
  }
  return d;
}

/**
 * At most `max` points: consecutive runs averaged, the last point kept as it is so the line
 * ends at the latest value.
 */
export function thin(points: Point[], max: number): Point[] {
  if (points.length <= max || max < 2) return points;
  const out: Point[] = [];
  const size = (points.length - 1) / (max - 1);
  for (let b = 0; b < max - 1; b++) {
    const start = Math.floor(b * size);
    const end = Math.max(start + 1, Math.floor((b + 1) * size));
    let x = 0;
    let y = 0;
    for (let i = start; i < end; i++) {
      x += points[i].x;
      y += points[i].y;
    }
    out.push({ x: x / (end - start), y: y / (end - start) });
  }
  out.push(points[points.length - 1]);
  return out;
}

/** The point of `points` (sorted by x) nearest to `x`. */
export function nearest(points: Point[], x: number): Point | null {
  if (points.length === 0) return null;
  let lo = 0;
  let hi = points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  const before = points[lo - 1];
  return before && x - before.x <= points[lo].x - x ? before : points[lo];
}

/** A tick or readout value, in the UI's language: short, without trailing zeros (12k, 0.5, 0.0012). */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  const short = (n: number) => formatNumber(Number(n.toPrecision(3)), { maximumSignificantDigits: 3, useGrouping: false });
  if (a >= 10000) return `${short(v / 1000)}k`;
  if (a === 0) return '0';
  if (a < 0.001) return formatNumber(v, { notation: 'scientific', minimumFractionDigits: 1, maximumFractionDigits: 1 }).replace(/E/, 'e');
  return short(v);
}
