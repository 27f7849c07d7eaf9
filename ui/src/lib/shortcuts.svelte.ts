// Keyboard shortcuts for what people do all the time. Each action has an id and keys: its
// default below, or the keys chosen on the Settings page (saved with the other saved parameters).
// One keydown listener on the window (App installs it) finds the action of a key combination and
// runs the handler registered last for that action: a page or component says what an action does
// while it is mounted (`onMount(() => onShortcut('live-toggle', toggleLive))`), over the app-wide
// defaults (the pages' keys, the help, play/stop of the player). No key acts while the user types
// in a field (Escape aside), and Space or Enter on a focused button stays that button's click.
import { app, type Page } from './stores.svelte';
import { player } from './player';
import { abPlaying, pauseAb } from './abSession.svelte';
import { t, type MessageKey } from './i18n.svelte';
import { savedShortcuts, type KeyBinding } from './savedParams.svelte';
import { clean, matches, normalizeKey, sameKeys, sameOrNone } from './keyBindings';

export type { KeyBinding } from './savedParams.svelte';

/** The pages Alt+1 … Alt+9, Alt+0 open: the sidebar's first ten, in its order. */
export const NUMBERED_PAGES = [
  'library', 'record', 'live', 'convert', 'compare', 'clean', 'cover', 'train', 'models', 'jobs',
] as const satisfies readonly Page[];

export type ActionId =
  | 'play-pause'
  | 'switch-ab'
  | 'next-take'
  | 'previous-take'
  | 'record-toggle'
  | 'live-toggle'
  | `go-${Page}`
  | 'help';

export type ActionGroup = 'playback' | 'recording' | 'navigation';

export interface ShortcutAction {
  id: ActionId;
  group: ActionGroup;
  /** What it does. */
  label: MessageKey;
  /** Where it acts. */
  scope: MessageKey;
  /** Its keys until the user chooses others (null: none). */
  defaultKeys: KeyBinding | null;
}

/** A key that acts on one page without being an action of its own (it cannot be changed). */
export interface FixedShortcut {
  label: MessageKey;
  scope: MessageKey;
  /** The keys as they are shown. */
  keys: string[];
}

function keys(key: string, mods: Partial<Omit<KeyBinding, 'key'>> = {}): KeyBinding {
  return { key: normalizeKey(key), ctrl: false, alt: false, shift: false, meta: false, ...mods };
}

const PAGE_LABELS: Record<Page, MessageKey> = {
  library: 'shortcuts.go_library',
  record: 'shortcuts.go_record',
  live: 'shortcuts.go_live',
  convert: 'shortcuts.go_convert',
  compare: 'shortcuts.go_compare',
  clean: 'shortcuts.go_clean',
  cover: 'shortcuts.go_cover',
  train: 'shortcuts.go_train',
  models: 'shortcuts.go_models',
  jobs: 'shortcuts.go_jobs',
  settings: 'shortcuts.go_settings',
};

const EVERYWHERE: MessageKey = 'shortcuts.scope_everywhere';

/** Every action, in the order the help and the Settings page list them. */
export const ACTIONS: readonly ShortcutAction[] = [
  { id: 'play-pause', group: 'playback', label: 'shortcuts.play_pause', scope: EVERYWHERE, defaultKeys: keys(' ') },
  { id: 'switch-ab', group: 'playback', label: 'shortcuts.switch_ab', scope: 'shortcuts.scope_compare_live', defaultKeys: keys('s') },
  { id: 'next-take', group: 'playback', label: 'shortcuts.next_take', scope: 'shortcuts.scope_library_record', defaultKeys: keys('j') },
  { id: 'previous-take', group: 'playback', label: 'shortcuts.previous_take', scope: 'shortcuts.scope_library_record', defaultKeys: keys('k') },
  { id: 'record-toggle', group: 'recording', label: 'shortcuts.record_toggle', scope: 'shortcuts.scope_record', defaultKeys: keys('r') },
  { id: 'live-toggle', group: 'recording', label: 'shortcuts.live_toggle', scope: 'shortcuts.scope_live', defaultKeys: keys('l') },
  ...NUMBERED_PAGES.map((page, i): ShortcutAction => ({
    id: `go-${page}`,
    group: 'navigation',
    label: PAGE_LABELS[page],
    scope: EVERYWHERE,
    defaultKeys: keys(String((i + 1) % 10), { alt: true }),
  })),
  { id: 'go-settings', group: 'navigation', label: PAGE_LABELS.settings, scope: EVERYWHERE, defaultKeys: keys(',', { ctrl: true }) },
  { id: 'help', group: 'navigation', label: 'shortcuts.help', scope: EVERYWHERE, defaultKeys: keys('?') },
];

/** The A/B player's own keys: 1–9 pick a slot, 0 the original (AbCompare). */
export const FIXED_SHORTCUTS: readonly FixedShortcut[] = [
  { label: 'shortcuts.ab_slot', scope: 'shortcuts.scope_compare', keys: ['1–9', '0'] },
];

export const GROUPS: readonly { group: ActionGroup; label: MessageKey }[] = [
  { group: 'playback', label: 'shortcuts.group_playback' },
  { group: 'recording', label: 'shortcuts.group_recording' },
  { group: 'navigation', label: 'shortcuts.group_navigation' },
];

export function actionById(id: ActionId): ShortcutAction {
  return ACTIONS.find((a) => a.id === id)!;
}

/** The label of what already uses `b` other than the actions (the A/B player's digits), if anything. */
function reservedBy(b: KeyBinding): MessageKey | null {
  return /^[0-9]$/.test(b.key) && !b.ctrl && !b.alt && !b.meta ? 'shortcuts.ab_slot' : null;
}

// ---- the bindings ----

type Bindings = Record<ActionId, KeyBinding | null>;

function defaultBindings(): Bindings {
  return Object.fromEntries(ACTIONS.map((a) => [a.id, a.defaultKeys && { ...a.defaultKeys }])) as Bindings;
}

/** What a change of keys came to: refused when another action (named by its label) has them. */
export type Rebinding = { ok: true } | { ok: false; clash: MessageKey };

class ShortcutState {
  bindings = $state<Bindings>(defaultBindings());
  /** The help overlay is open. */
  helpOpen = $state(false);
  /** The Settings page waits for the keys of an action: no shortcut acts meanwhile. */
  capturing = $state(false);
  /** The take the next and previous keys moved to last (Library, Record). */
  selectedTake = $state<number | null>(null);

  constructor() {
    this.restore();
  }

  keysOf(id: ActionId): KeyBinding | null {
    return this.bindings[id] ?? null;
  }

  /** The action whose keys `e` pressed. */
  actionOf(e: KeyboardEvent): ActionId | null {
    return ACTIONS.find((a) => {
      const b = this.bindings[a.id];
      return b !== null && matches(b, e);
    })?.id ?? null;
  }

  /** The saved choices over the defaults; a default another action's choice took is left without keys. */
  restore(): void {
    const saved = savedShortcuts.restore({ bindings: {} }).bindings;
    const bindings = defaultBindings();
    const chosen = new Set<ActionId>();
    const takenByChoice = (b: KeyBinding, except: ActionId) =>
      ACTIONS.some((o) => o.id !== except && chosen.has(o.id) && sameOrNone(bindings[o.id], b));
    for (const action of ACTIONS) {
      if (!Object.hasOwn(saved, action.id)) continue;
      const b = saved[action.id];
      const keys = b && clean(b);
      if (keys && (reservedBy(keys) || takenByChoice(keys, action.id))) continue;
      bindings[action.id] = keys;
      chosen.add(action.id);
    }
    for (const action of ACTIONS) {
      const b = bindings[action.id];
      if (!chosen.has(action.id) && b && takenByChoice(b, action.id)) bindings[action.id] = null;
    }
    this.bindings = bindings;
  }

  /** Gives `id` the keys `b`, unless another action has them. */
  rebind(id: ActionId, b: KeyBinding): Rebinding {
    const keys = clean(b);
    const reserved = reservedBy(keys);
    if (reserved) return { ok: false, clash: reserved };
    const other = ACTIONS.find((a) => a.id !== id && sameOrNone(this.bindings[a.id], keys));
    if (other) return { ok: false, clash: other.label };
    this.bindings[id] = keys;
    this.save();
    return { ok: true };
  }

  /** Leaves `id` without keys. */
  unbind(id: ActionId): void {
    this.bindings[id] = null;
    this.save();
  }

  resetDefaults(): void {
    this.bindings = defaultBindings();
    this.save();
  }

  /** Saves the bindings that differ from the defaults, so a later default reaches the others. */
  private save(): void {
    const changed: Record<string, KeyBinding | null> = {};
    for (const action of ACTIONS) {
      const b = this.bindings[action.id];
      if (!sameOrNone(b, action.defaultKeys)) changed[action.id] = b && { ...b };
    }
    savedShortcuts.save({ bindings: changed });
  }

  /** Back to a blank state (tests): the defaults, nothing registered, no listener. */
  reset(): void {
    this.bindings = defaultBindings();
    this.helpOpen = false;
    this.capturing = false;
    this.selectedTake = null;
    registered.clear();
    lastClip = null;
    generation++;
    if (listeners > 0 && typeof window !== 'undefined') window.removeEventListener('keydown', handleKeydown);
    listeners = 0;
  }
}

// ---- handlers and the dispatcher ----

/** What an action does; returning `false` says "not here": the one registered before runs (or the default). */
export type ShortcutHandler = (e: KeyboardEvent) => boolean | void;
export type ShortcutHandlers = Partial<Record<ActionId, ShortcutHandler>>;

const registered = new Map<ActionId, { handler: ShortcutHandler }[]>();
let listeners = 0;
/** Bumped by `reset`, so that a disposer from before it does nothing. */
let generation = 0;

/** Installs the window's keydown listener (once however many ask); returns its release. */
export function installShortcuts(): () => void {
  const own = generation;
  if (listeners++ === 0) window.addEventListener('keydown', handleKeydown);
  let released = false;
  return () => {
    if (released || own !== generation) return;
    released = true;
    if (--listeners === 0) window.removeEventListener('keydown', handleKeydown);
  };
}

/** Makes `handler` what action `id` does until the returned disposer runs; the last registered wins. */
export function onShortcut(id: ActionId, handler: ShortcutHandler): () => void {
  const own = generation;
  const entry = { handler };
  const list = registered.get(id) ?? [];
  list.push(entry);
  registered.set(id, list);
  const release = installShortcuts();
  let disposed = false;
  return () => {
    if (disposed || own !== generation) return;
    disposed = true;
    const current = registered.get(id);
    const i = current?.indexOf(entry) ?? -1;
    if (current && i >= 0) current.splice(i, 1);
    release();
  };
}

/** `onShortcut` for several actions at once; one disposer for all. */
export function onShortcuts(handlers: ShortcutHandlers): () => void {
  const disposers = (Object.entries(handlers) as [ActionId, ShortcutHandler | undefined][])
    .filter((entry): entry is [ActionId, ShortcutHandler] => entry[1] !== undefined)
    .map(([id, handler]) => onShortcut(id, handler));
  return () => {
    for (const dispose of disposers) dispose();
  };
}

/** The last thing the player played, for Space to play again once it stopped. */
let lastClip: { takeId: number | null; conversionId: number | null; label: string } | null = null;
player.subscribe((s) => {
  if (s.status !== 'stopped') lastClip = { takeId: s.takeId, conversionId: s.conversionId, label: s.label };
});

function reportPlayError(err: unknown): void {
  app.reportError(err, t('shortcuts.play_failed'));
}

/** Space anywhere: stops what plays (the player, or pauses an A/B comparison), else plays the last again. */
function playOrStop(): boolean {
  if (player.state.status !== 'stopped') {
    player.stop();
    return true;
  }
  if (abPlaying()) {
    pauseAb();
    return true;
  }
  const clip = lastClip;
  if (!clip) return false;
  if (clip.takeId !== null) player.play(clip.takeId, clip.label).catch(reportPlayError);
  else if (clip.conversionId !== null) player.playConversion(clip.conversionId, clip.label).catch(reportPlayError);
  else return false;
  return true;
}

const DEFAULT_HANDLERS: ShortcutHandlers = {
  'play-pause': playOrStop,
  help: () => {
    shortcuts.helpOpen = !shortcuts.helpOpen;
  },
  ...Object.fromEntries(
    (Object.keys(PAGE_LABELS) as Page[]).map((page) => [
      `go-${page}`,
      () => {
        app.page = page;
      },
    ]),
  ),
};

function run(id: ActionId, e: KeyboardEvent): boolean {
  const list = registered.get(id) ?? [];
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i].handler(e) !== false) return true;
  }
  const fallback = DEFAULT_HANDLERS[id];
  return fallback !== undefined && fallback(e) !== false;
}

const TEXT_FIELDS = 'textarea, select, [contenteditable=""], [contenteditable="true"], [contenteditable="plaintext-only"]';
const NOT_TYPED_IN = new Set(['button', 'submit', 'reset', 'checkbox', 'radio', 'range', 'color', 'file', 'image', 'hidden']);
const ACTIVATABLE =
  'button, a[href], summary, [role="button"], [role="checkbox"], [role="switch"], [role="radio"], [role="tab"], ' +
  '[role="menuitem"], [role="option"], [role="link"], input[type="button"], input[type="submit"], input[type="reset"], ' +
  'input[type="checkbox"], input[type="radio"], input[type="file"], input[type="image"], input[type="color"]';

/** Whether keys pressed on `el` type text. */
function typesText(el: Element): boolean {
  if (el.closest(TEXT_FIELDS)) return true;
  return el instanceof HTMLInputElement && !NOT_TYPED_IN.has(el.type);
}

/** The window's keydown listener: runs the action of the keys pressed, if any acts here. */
export function handleKeydown(e: KeyboardEvent): void {
  if (e.defaultPrevented || e.isComposing || shortcuts.capturing) return;
  const id = shortcuts.actionOf(e);
  if (id === null) return;
  const target = e.target instanceof Element ? e.target : null;
  if (target && e.key !== 'Escape' && typesText(target)) return;
  // Space and Enter on a focused button are its click.
  if (target && (e.key === ' ' || e.key === 'Enter') && target.closest(ACTIVATABLE)) return;
  // A modal dialog takes the keys; the help's own keys close the help.
  if (document.querySelector('[aria-modal="true"]') && !(id === 'help' && shortcuts.helpOpen)) return;
  // Holding a key down acts once (the take keys step on).
  if (e.repeat && id !== 'next-take' && id !== 'previous-take') {
    e.preventDefault();
    return;
  }
  if (run(id, e)) e.preventDefault();
}

export const shortcuts = new ShortcutState();

/** Whether keys are not shortcuts now: Settings waits for new keys, or a modal dialog is open.
 * For components that read keys of their own (the A/B player's digits). */
export function shortcutsPaused(): boolean {
  return shortcuts.capturing || document.querySelector('[aria-modal="true"]') !== null;
}
