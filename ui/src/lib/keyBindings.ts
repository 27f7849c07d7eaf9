// Key combinations as the shortcuts keep them: a `KeyboardEvent.key` normalised, and its
// modifiers; how a key press matches one, how one is made from a press, and how one is shown.
import type { KeyBinding } from './savedParams.svelte';

const KEY_ALIASES: Record<string, string> = {
  Spacebar: ' ',
  Space: ' ',
  Esc: 'Escape',
  Up: 'ArrowUp',
  Down: 'ArrowDown',
  Left: 'ArrowLeft',
  Right: 'ArrowRight',
  Del: 'Delete',
};

/** `KeyboardEvent.key` as bindings keep it: a single character in lower case, old names updated. */
export function normalizeKey(key: string): string {
  const k = KEY_ALIASES[key] ?? key;
  return [...k].length === 1 ? k.toLowerCase() : k;
}

/** Whether Shift is part of a binding of `key`: for letters and named keys; a symbol or digit is
 * what it is whatever it took to type it (`?` is Shift+/ on one layout, a key of its own on another). */
function shiftCounts(key: string): boolean {
  return [...key].length !== 1 || /^\p{L}$/u.test(key);
}

/** The key's place on a US keyboard (`KeyJ` → "j", `Digit1` → "1"), if a letter or digit. */
function physicalKey(code: string): string | null {
  return /^Key([A-Z])$/.exec(code)?.[1].toLowerCase() ?? /^Digit([0-9])$/.exec(code)?.[1] ?? null;
}

/** Whether the key's character says little of the key: a modifier changed it (Option+1 is "¡" on a
 * Mac), or the layout is not Latin (J is "о" in Russian). Then its place on the keyboard counts. */
function byPlace(e: KeyboardEvent, key: string): boolean {
  return e.ctrlKey || e.altKey || e.metaKey || ([...key].length === 1 && !/^[\x20-\x7e]$/.test(key));
}

function eventKeys(e: KeyboardEvent): string[] {
  const key = normalizeKey(e.key);
  const place = physicalKey(e.code ?? '');
  return place !== null && place !== key && byPlace(e, key) ? [key, place] : [key];
}

export function matches(binding: KeyBinding, e: KeyboardEvent): boolean {
  if (binding.ctrl !== e.ctrlKey || binding.alt !== e.altKey || binding.meta !== e.metaKey) return false;
  if (shiftCounts(binding.key) && binding.shift !== e.shiftKey) return false;
  return eventKeys(e).includes(binding.key);
}

export function sameKeys(a: KeyBinding, b: KeyBinding): boolean {
  return (
    a.key === b.key &&
    a.ctrl === b.ctrl &&
    a.alt === b.alt &&
    a.meta === b.meta &&
    (!shiftCounts(a.key) || a.shift === b.shift)
  );
}

export function sameOrNone(a: KeyBinding | null, b: KeyBinding | null): boolean {
  return a === null || b === null ? a === b : sameKeys(a, b);
}

const NOT_A_KEY = new Set([
  'Shift', 'Control', 'Alt', 'AltGraph', 'Meta', 'OS', 'Super', 'Hyper', 'Fn', 'FnLock', 'CapsLock', 'NumLock',
  'ScrollLock', 'Symbol', 'SymbolLock', 'Dead', 'Unidentified', 'Process',
]);

/** The binding a key press makes (Settings' "Change"); null for a modifier pressed alone. */
export function bindingFromEvent(e: KeyboardEvent): KeyBinding | null {
  if (NOT_A_KEY.has(e.key) || e.isComposing || !e.key) return null;
  let key = normalizeKey(e.key);
  const place = physicalKey(e.code ?? '');
  if (place !== null && byPlace(e, key)) key = place;
  return { key, ctrl: e.ctrlKey, alt: e.altKey, shift: shiftCounts(key) && e.shiftKey, meta: e.metaKey };
}

/** The normalised copy of a saved binding (its Shift dropped where it does not count). */
export function clean(b: KeyBinding): KeyBinding {
  const key = normalizeKey(b.key);
  return { key, ctrl: b.ctrl, alt: b.alt, shift: shiftCounts(key) && b.shift, meta: b.meta };
}

const KEY_NAMES: Record<string, string> = {
  ' ': 'Space',
  ArrowUp: '↑',
  ArrowDown: '↓',
  ArrowLeft: '←',
  ArrowRight: '→',
  Escape: 'Esc',
  Delete: 'Del',
  PageUp: 'PgUp',
  PageDown: 'PgDn',
};

/** A binding as it is shown, in names no platform owns: "Ctrl+Shift+K", "Alt+1", "Space". */
export function formatBinding(b: KeyBinding): string {
  const parts: string[] = [];
  if (b.ctrl) parts.push('Ctrl');
  if (b.alt) parts.push('Alt');
  if (b.shift) parts.push('Shift');
  if (b.meta) parts.push('Meta');
  parts.push(KEY_NAMES[b.key] ?? ([...b.key].length === 1 ? b.key.toUpperCase() : b.key));
  return parts.join('+');
}

/** A binding in `aria-keyshortcuts` syntax ("Alt+1", "Control+Shift+K", "Space"). */
export function ariaKeys(b: KeyBinding | null): string | undefined {
  if (!b) return undefined;
  const parts: string[] = [];
  if (b.ctrl) parts.push('Control');
  if (b.alt) parts.push('Alt');
  if (b.shift) parts.push('Shift');
  if (b.meta) parts.push('Meta');
  parts.push(b.key === ' ' ? 'Space' : [...b.key].length === 1 ? b.key.toUpperCase() : b.key);
  return parts.join('+');
}
