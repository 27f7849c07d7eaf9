// Results out of the library: Export… (the native save dialog, offering the result's name), a
// batch into a folder, and Show in folder; each says where the files went in a toast.
import { save, type DialogFilter } from '@tauri-apps/plugin-dialog';
import * as api from './api';
import type { LibraryItem } from './api';
import { app } from './stores.svelte';
import { pickPaths } from './filePicker';
import { t } from './i18n.svelte';

/** The formats an export can be written in: the stored one is copied, the others encoded. */
const EXPORT_EXTENSIONS = ['wav', 'flac', 'mp3', 'ogg', 'opus'];

/** Shows `path` in the system's file manager. */
export async function revealFile(path: string): Promise<void> {
  try {
    await api.revealFile(path);
  } catch (err) {
    app.reportError(err, t('app.show_failed'));
  }
}

function announce(text: string, shown: string) {
  app.notify(text, 'success', { label: t('app.show_in_folder'), run: () => void revealFile(shown) });
}

/** Asks where to save `item`, offering its default name, and writes it there. */
export async function exportItem(item: LibraryItem): Promise<void> {
  try {
    const defaultPath = await api.getExportName(item);
    const formats: DialogFilter = { name: t('app.filter_audio'), extensions: EXPORT_EXTENSIONS };
    const path = await save({ title: t('app.export_title'), defaultPath, filters: [formats] });
    if (path === null) return;
    const written = await api.exportLibraryItem(item, path);
    announce(t('app.exported_to', { path: written }), written);
  } catch (err) {
    app.reportError(err, t('app.export_failed'));
  }
}

/** Asks for a folder and copies `items` into it under their default names; true when done. */
export async function exportItemsToFolder(items: LibraryItem[]): Promise<boolean> {
  try {
    const [dir] = await pickPaths('folder');
    if (dir === undefined) return false;
    const written = await api.exportLibraryItems(items, dir);
    announce(t('app.exported_files', { count: written.length, dir }), written[0] ?? dir);
    return true;
  } catch (err) {
    app.reportError(err, t('app.export_failed'));
    return false;
  }
}
