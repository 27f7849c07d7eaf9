// The native open dialog (tauri-plugin-dialog): what each Browse button may pick. What it
// picks goes where a drop of the same files would.
import { open, type DialogFilter } from '@tauri-apps/plugin-dialog';

export type PickKind = 'audio' | 'model' | 'index' | 'folder';

const AUDIO: DialogFilter = { name: 'Audio', extensions: ['wav', 'flac', 'mp3', 'ogg', 'm4a'] };
const MODEL: DialogFilter = { name: 'Voice model or archive', extensions: ['pth', 'zip'] };
const INDEX: DialogFilter = { name: 'Feature index', extensions: ['index'] };
const ANY: DialogFilter = { name: 'All files', extensions: ['*'] };

interface PickSpec {
  title: string;
  multiple: boolean;
  directory: boolean;
  filters: DialogFilter[];
}

const PICKS: Record<PickKind, PickSpec> = {
  audio: { title: 'Add audio files', multiple: true, directory: false, filters: [AUDIO, ANY] },
  model: { title: 'Choose a voice model or archive', multiple: false, directory: false, filters: [MODEL, ANY] },
  index: { title: 'Choose a feature index', multiple: false, directory: false, filters: [INDEX, ANY] },
  folder: { title: 'Choose a folder', multiple: false, directory: true, filters: [] },
};

/** Paths the user picked: none when the dialog was cancelled. */
export async function pickPaths(kind: PickKind): Promise<string[]> {
  const spec = PICKS[kind];
  const picked = await open({
    title: spec.title,
    multiple: spec.multiple,
    directory: spec.directory,
    filters: spec.filters.length > 0 ? spec.filters : undefined,
  });
  if (picked === null) return [];
  return Array.isArray(picked) ? picked : [picked];
}
