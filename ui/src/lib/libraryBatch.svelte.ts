// The Library's batch actions: the rows ticked, and deletions that wait out their Undo. A
// deletion hides its rows at once and deletes only when its toast's Undo has lapsed (or the page
// is left), so an undone deletion never touched a file.
import { SvelteMap, SvelteSet } from 'svelte/reactivity';
import * as api from './api';
import type { LibraryItem } from './api';
import { app, INFO_TIMEOUT_MS } from './stores.svelte';
import { player } from './player';
import { t } from './i18n.svelte';

export const itemKey = (item: LibraryItem) => `${item.kind}:${item.id}`;

export class Selection {
  private picked = new SvelteMap<string, LibraryItem>();

  has(item: LibraryItem): boolean {
    return this.picked.has(itemKey(item));
  }

  toggle(item: LibraryItem) {
    const key = itemKey(item);
    if (this.picked.has(key)) this.picked.delete(key);
    else this.picked.set(key, item);
  }

  clear() {
    this.picked.clear();
  }

  get items(): LibraryItem[] {
    return [...this.picked.values()];
  }
}

interface Batch {
  items: LibraryItem[];
  timer: ReturnType<typeof setTimeout>;
}

export class DeferredDeletion {
  /** Rows whose deletion waits: the page does not show them. */
  readonly hidden = new SvelteSet<string>();
  private batches = new Set<Batch>();

  /** `deleted` runs once the items are deleted (to reload what the page lists). */
  constructor(private deleted: () => Promise<void>) {}

  isHidden(item: LibraryItem): boolean {
    return this.hidden.has(itemKey(item));
  }

  schedule(items: LibraryItem[]) {
    for (const item of items) this.hidden.add(itemKey(item));
    const batch: Batch = { items, timer: setTimeout(() => void this.commit(batch), INFO_TIMEOUT_MS) };
    this.batches.add(batch);
    app.notify(t('library.deleted_items', { count: items.length }), 'info', { label: t('library.undo'), run: () => this.undo(batch) });
  }

  /** Deletes what waits now: the page is being left. */
  flush() {
    for (const batch of this.batches) {
      clearTimeout(batch.timer);
      void this.commit(batch);
    }
  }

  private undo(batch: Batch) {
    clearTimeout(batch.timer);
    this.batches.delete(batch);
    for (const item of batch.items) this.hidden.delete(itemKey(item));
  }

  private async commit(batch: Batch) {
    this.batches.delete(batch);
    for (const item of batch.items) {
      try {
        if (item.kind === 'take') {
          if (player.isActive(item.id)) player.stop();
          await api.deleteTake(item.id);
          player.invalidate(item.id);
        } else {
          if (player.isConversionActive(item.id)) player.stop();
          await api.deleteConversion(item.id);
        }
      } catch (err) {
        app.reportError(err, t('library.delete_item_error', { kind: item.kind, id: String(item.id) }));
      }
    }
    await this.deleted();
    for (const item of batch.items) this.hidden.delete(itemKey(item));
  }
}
