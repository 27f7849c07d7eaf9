// Results dragged out of the window: a press on a Library row that then moves a few pixels
// starts the system's drag of named copies (a file manager, a DAW or a chat window takes them),
// of every ticked item when the row is one of them, else of the row's own item.
import type { Action } from 'svelte/action';
import * as api from './api';
import type { LibraryItem } from './api';
import type { Selection } from './libraryBatch.svelte';
import { app } from './stores.svelte';
import { t } from './i18n.svelte';

/** How far the pointer moves, pressed, before a press becomes a drag: a click stays a click. */
export const DRAG_THRESHOLD_PX = 6;

/** Presses on these keep their own meaning (typing, ticking, choosing, pressing). */
const INTERACTIVE = 'button, input, select, textarea, a, [contenteditable]';

/** The copies this window's drags have offered: dropped back on it, they are not new files. */
const offered = new Set<string>();

/** `paths` less the copies this window offered (the system's drop reaches the window too). */
export function foreignPaths(paths: string[]): string[] {
  return paths.filter((path) => !offered.has(path));
}

/** What a drag from `item`'s row carries. */
export function draggedItems(item: LibraryItem, selection: Selection): LibraryItem[] {
  return selection.has(item) ? selection.items : [item];
}

/** Makes `node` a drag source of what `items()` returns when the drag begins. */
export const dragOut: Action<HTMLElement, () => LibraryItem[]> = (node, items) => {
  let current = items;
  let pressed: { x: number; y: number } | null = null;
  const down = (event: PointerEvent) => {
    const onControl = event.target instanceof Element && event.target.closest(INTERACTIVE) !== null;
    pressed = event.button === 0 && !onControl ? { x: event.clientX, y: event.clientY } : null;
  };
  const move = (event: PointerEvent) => {
    if (pressed === null) return;
    if ((event.buttons & 1) === 0) {
      pressed = null;
      return;
    }
    if (Math.hypot(event.clientX - pressed.x, event.clientY - pressed.y) < DRAG_THRESHOLD_PX) return;
    pressed = null;
    const dragged = current();
    api
      .startDragOut(dragged)
      .then((copies) => copies.forEach((copy) => offered.add(copy)))
      .catch((err) => app.reportError(err, t('app.drag_out_failed')));
  };
  const up = () => (pressed = null);
  node.addEventListener('pointerdown', down);
  node.addEventListener('pointermove', move);
  node.addEventListener('pointerup', up);
  return {
    update(next) {
      current = next;
    },
    destroy() {
      node.removeEventListener('pointerdown', down);
      node.removeEventListener('pointermove', move);
      node.removeEventListener('pointerup', up);
    },
  };
};
