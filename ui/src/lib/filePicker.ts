// The native open dialog (tauri-plugin-dialog): what each Browse button may pick. What it
// picks goes where a drop of the same files would.
import { open, type DialogFilter } from '@tauri-apps/plugin-dialog';
import { t, type MessageKey } from './i18n.svelte';

export type PickKind = 'audio' | 'model' | 'index' | 'folder';

/** A dialog filter, named by a message key (its name is shown in the UI's language). */
interface Filter {
  name: MessageKey;
  extensions: string[];
}

const AUDIO: Filter = { name: 'app.filter_audio', extensions: ['wav', 'flac', 'mp3', 'ogg', 'm4a'] };
const MODEL: Filter = { name: 'app.filter_model', extensions: ['pth', 'zip'] };
const INDEX: Filter = { name: 'app.filter_index', extensions: ['index'] };
const ANY: Filter = { name: 'app.filter_all', extensions: ['*'] };

interface PickSpec {
  title: MessageKey;
  multiple: boolean;
  directory: boolean;
  filters: Filter[];
}

const PICKS: Record<PickKind, PickSpec> = {
  audio: { title: 'app.pick_audio', multiple: true, directory: false, filters: [AUDIO, ANY] },
  model: { title: 'app.pick_model', multiple: false, directory: false, filters: [MODEL, ANY] },
  index: { title: 'app.pick_index', multiple: false, directory: false, filters: [INDEX, ANY] },
  folder: { title: 'app.pick_folder', multiple: false, directory: true, filters: [] },
};

/** Paths the user picked: none when the dialog was cancelled. */
export async function pickPaths(kind: PickKind): Promise<string[]> {
  const spec = PICKS[kind];
  const picked = await open({
    title: t(spec.title),
    multiple: spec.multiple,
    directory: spec.directory,
    filters: spec.filters.length > 0 ? spec.filters.map((f): DialogFilter => ({ name: t(f.name), extensions: f.extensions })) : undefined,
  });
  if (picked === null) return [];
  return Array.isArray(picked) ? picked : [picked];
}
