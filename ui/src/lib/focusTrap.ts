// A modal dialog's focus: `<div role="dialog" aria-modal="true" use:trapFocus={{ onEscape: close }}>`.
// When the node appears, the focus moves into it (to `initialFocus`, else its first focusable
// element, else the node itself); Tab and Shift+Tab go round the node's focusable elements and
// never leave it, focus that strays outside is brought back, Escape calls `onEscape`, and when the
// node goes the focus returns to what had it before. Dialogs opened over a dialog trap in turn:
// only the newest one acts.

export interface TrapOptions {
  /** Escape pressed inside: close the dialog. */
  onEscape?: () => void;
  /** A selector inside the node for what takes the focus first. */
  initialFocus?: string;
}

const FOCUSABLE = [
  'a[href]',
  'area[href]',
  'button:not([disabled])',
  'input:not([disabled]):not([type="hidden"])',
  'select:not([disabled])',
  'textarea:not([disabled])',
  'iframe',
  'audio[controls]',
  'video[controls]',
  '[contenteditable]:not([contenteditable="false"])',
  '[tabindex]',
].join(', ');

/** The elements inside `root` that Tab reaches, in document order. */
export function tabbables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => el.tabIndex >= 0 && !el.closest('[hidden], [inert]') && !(el as HTMLButtonElement).disabled,
  );
}

/** The traps in place, the newest last. */
const traps: HTMLElement[] = [];

export function trapFocus(node: HTMLElement, options: TrapOptions = {}) {
  let opts = options;
  const active = document.activeElement;
  const returnTo = active instanceof HTMLElement && active !== document.body && !node.contains(active) ? active : null;
  traps.push(node);

  const newest = () => traps[traps.length - 1] === node;

  function focusInside(which: 'first' | 'last' = 'first') {
    const items = tabbables(node);
    const target = which === 'first' ? items[0] : items[items.length - 1];
    if (target) target.focus();
    else {
      if (!node.hasAttribute('tabindex')) node.tabIndex = -1;
      node.focus();
    }
  }

  function onKeydown(e: KeyboardEvent) {
    if (!newest()) return;
    if (e.key === 'Escape' && opts.onEscape) {
      e.preventDefault();
      e.stopPropagation();
      opts.onEscape();
      return;
    }
    if (e.key !== 'Tab') return;
    const items = tabbables(node);
    const focused = document.activeElement;
    if (items.length === 0) {
      e.preventDefault();
      focusInside();
      return;
    }
    const first = items[0];
    const last = items[items.length - 1];
    const outside = !(focused instanceof HTMLElement) || !node.contains(focused);
    if (e.shiftKey && (outside || focused === first || focused === node)) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && (outside || focused === last)) {
      e.preventDefault();
      first.focus();
    }
  }

  function onFocusIn(e: FocusEvent) {
    if (newest() && e.target instanceof Node && !node.contains(e.target)) focusInside();
  }

  node.addEventListener('keydown', onKeydown);
  document.addEventListener('focusin', onFocusIn);
  const initial = opts.initialFocus ? node.querySelector<HTMLElement>(opts.initialFocus) : null;
  if (initial) initial.focus();
  else focusInside();

  return {
    update(next: TrapOptions = {}) {
      opts = next;
    },
    destroy() {
      node.removeEventListener('keydown', onKeydown);
      document.removeEventListener('focusin', onFocusIn);
      const i = traps.lastIndexOf(node);
      if (i >= 0) traps.splice(i, 1);
      if (returnTo?.isConnected) returnTo.focus();
    },
  };
}
