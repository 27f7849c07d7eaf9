// The Library's takes grouped by what they were made from: a cleaning's stems and a cover's
// stems and result go under their source take (the cover itself first), folded.
import type { DerivedTake, Take } from './api';

export interface TakeEntry {
  take: Take;
  /** The takes made from it, directly or through another derived take. */
  derived: Take[];
}

/** `takes` (in their order) with each derived take under the listed take it comes from. */
export function groupDerived(takes: Take[], links: DerivedTake[]): TakeEntry[] {
  const sourceOf = new Map(links.map((l) => [l.take_id, l]));
  const listed = new Map(takes.map((t) => [t.id, t]));
  const rootOf = (id: number): number => {
    const seen = new Set([id]);
    let current = id;
    for (;;) {
      const source = sourceOf.get(current)?.source_take_id;
      if (source === undefined || source === null || !listed.has(source) || seen.has(source)) return current;
      seen.add(source);
      current = source;
    }
  };
  const entries = new Map<number, TakeEntry>();
  for (const take of takes) {
    const root = rootOf(take.id);
    if (root === take.id) entries.set(take.id, { take, derived: [] });
  }
  for (const take of takes) {
    const root = rootOf(take.id);
    if (root !== take.id) entries.get(root)?.derived.push(take);
  }
  const isCover = (t: Take) => sourceOf.get(t.id)?.operation === 'cover';
  for (const entry of entries.values()) {
    entry.derived.sort((a, b) => Number(isCover(b)) - Number(isCover(a)));
  }
  return [...entries.values()];
}
