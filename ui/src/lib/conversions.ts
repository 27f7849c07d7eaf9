// Conversions listed once (`list_conversions`) and grouped here: under the take they were made
// from, or by file name for files converted without being imported.
import type { Conversion, Take } from './api';
import { basename } from './format';
import { t } from './i18n.svelte';

/** What a conversion was made from, as people call it: its take's name, else its file's. */
export function conversionInputLabel(conversion: Conversion, takes: Take[]): string {
  const take = conversion.input_take_id === null ? undefined : takes.find((t) => t.id === conversion.input_take_id);
  if (take) return take.name;
  return conversion.input_path ? basename(conversion.input_path) : t('convert.conversion_fallback', { id: String(conversion.id) });
}

/** The conversions of each take, by take id, newest first as listed. */
export function conversionsByTake(conversions: Conversion[]): Map<number, Conversion[]> {
  const byTake = new Map<number, Conversion[]>();
  for (const c of conversions) {
    if (c.input_take_id === null) continue;
    const list = byTake.get(c.input_take_id) ?? [];
    list.push(c);
    byTake.set(c.input_take_id, list);
  }
  return byTake;
}

export interface FileConversions {
  name: string;
  conversions: Conversion[];
}

/** The conversions of files outside the library, grouped by file name in the order listed. */
export function conversionsOfFiles(conversions: Conversion[]): FileConversions[] {
  const groups = new Map<string, Conversion[]>();
  for (const c of conversions) {
    if (c.input_take_id !== null) continue;
    const name = c.input_path ? basename(c.input_path) : t('convert.conversion_fallback', { id: String(c.id) });
    groups.set(name, [...(groups.get(name) ?? []), c]);
  }
  return [...groups].map(([name, list]) => ({ name, conversions: list }));
}
