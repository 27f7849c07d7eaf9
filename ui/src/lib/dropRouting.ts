// What a drop holds: voices, each imported by the `voice_import` job (a .pth with the .index
// dropped beside it, a .zip or a folder, whose voices the backend pairs with their indexes), or
// audio.
import { basename } from './format';

/** One voice import: what `timbre models import` takes, and the index to import with it. */
export interface VoiceDrop {
  source: string;
  index: string | null;
}

export interface DropPlan {
  audio: string[];
  voices: VoiceDrop[];
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
 * A drop gives paths only: one without an extension is taken for a folder.
 */
export function planDrop(paths: string[]): DropPlan {
  const weights = paths.filter((p) => extension(p) === 'pth');
  const indexes = paths.filter((p) => extension(p) === 'index');
  const archivesAndFolders = paths.filter((p) => ['zip', ''].includes(extension(p)));
  const audio = paths.filter((p) => !['pth', 'index', 'zip', ''].includes(extension(p)));
  const models: VoiceDrop[] = weights.map((w) => ({ source: w, index: null }));
  const strayIndexes: string[] = [];
  for (const index of indexes) {
    const name = basename(index).toLowerCase();
    const owner =
      models.length === 1
        ? models[0]
        : models.filter((m) => name.includes(stemOf(m.source))).sort((x, y) => stemOf(y.source).length - stemOf(x.source).length)[0];
    if (owner && owner.index === null) owner.index = index;
    else strayIndexes.push(index);
  }
  return { audio, voices: [...models, ...archivesAndFolders.map((source) => ({ source, index: null }))], strayIndexes };
}

/** The link in pasted text, when the text is one http(s) link and nothing else. */
export function pastedLink(text: string): string | null {
  const trimmed = text.trim();
  return /^https?:\/\/[^\s]+$/i.test(trimmed) ? trimmed : null;
}
