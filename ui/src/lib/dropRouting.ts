// What a drop holds: voice models (.pth, each with the .index dropped beside it), voice archives
// (.zip, imported by the backend, which pairs what they hold) or audio.
import { basename } from './format';

export interface ModelDrop {
  weights: string;
  index: string | null;
}

export interface DropPlan {
  audio: string[];
  models: ModelDrop[];
  /** Voice archives (.zip). */
  archives: string[];
  /** Indexes with no .pth to go with them. */
  strayIndexes: string[];
}

function extension(path: string): string {
  const name = basename(path);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

function stemOf(path: string): string {
  const name = basename(path);
  const dot = name.lastIndexOf('.');
  return (dot > 0 ? name.slice(0, dot) : name).toLowerCase();
}

/**
 * Splits dropped paths. A lone .pth takes the (first) .index of the drop; with several, an index
 * goes to the .pth whose name it contains, as RVC names them (`added_IVF…_<model>_v2.index`).
 */
export function planDrop(paths: string[]): DropPlan {
  const weights = paths.filter((p) => extension(p) === 'pth');
  const indexes = paths.filter((p) => extension(p) === 'index');
  const archives = paths.filter((p) => extension(p) === 'zip');
  const audio = paths.filter((p) => !['pth', 'index', 'zip'].includes(extension(p)));
  const models: ModelDrop[] = weights.map((w) => ({ weights: w, index: null }));
  const strayIndexes: string[] = [];
  for (const index of indexes) {
    const name = basename(index).toLowerCase();
    const owner =
      models.length === 1
        ? models[0]
        : models.filter((m) => name.includes(stemOf(m.weights))).sort((x, y) => stemOf(y.weights).length - stemOf(x.weights).length)[0];
    if (owner && owner.index === null) owner.index = index;
    else strayIndexes.push(index);
  }
  return { audio, models, archives, strayIndexes };
}

/** The link in pasted text, when the text is one http(s) link and nothing else. */
export function pastedLink(text: string): string | null {
  const trimmed = text.trim();
  return /^https?:\/\/[^\s]+$/i.test(trimmed) ? trimmed : null;
}
