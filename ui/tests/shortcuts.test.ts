import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import App from '../src/App.svelte';
import Compare from '../src/pages/Compare.svelte';
import Library from '../src/pages/Library.svelte';
import RecordPage from '../src/pages/Record.svelte';
import ShortcutSettings from '../src/components/ShortcutSettings.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import { recorder } from '../src/lib/recorder.svelte';
import { ACTIONS, handleKeydown, installShortcuts, onShortcut, shortcuts } from '../src/lib/shortcuts.svelte';
import { bindingFromEvent, formatBinding } from '../src/lib/keyBindings';
import { SHELL, installFakeAudio, makeConversion, makeModel, makeTake, mockBackend } from './helpers';

const key = (init: KeyboardEventInit) => new KeyboardEvent('keydown', { bubbles: true, cancelable: true, ...init });

const added: HTMLElement[] = [];
afterEach(() => {
  for (const el of added.splice(0)) el.remove();
});

/** An element of `tag` in the document, until the test ends. */
function element<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  document.body.appendChild(el);
  added.push(el);
  return el;
}

describe('shortcut dispatcher', () => {
  it('runs the action of the keys pressed, but not while typing in a field (Escape aside)', async () => {
    const release = installShortcuts();
    const record = vi.fn();
    const dispose = onShortcut('record-toggle', record);

    await fireEvent.keyDown(window, { key: 'r', code: 'KeyR' });
    expect(record).toHaveBeenCalledTimes(1);
    // Caps Lock: the same key.
    await fireEvent.keyDown(window, { key: 'R', code: 'KeyR' });
    expect(record).toHaveBeenCalledTimes(2);
    // Shift+R is other keys, and so are Ctrl+R and a held key's repeats.
    await fireEvent.keyDown(window, { key: 'R', code: 'KeyR', shiftKey: true });
    await fireEvent.keyDown(window, { key: 'r', code: 'KeyR', ctrlKey: true });
    await fireEvent.keyDown(window, { key: 'r', code: 'KeyR', repeat: true });
    expect(record).toHaveBeenCalledTimes(2);

    for (const field of [
      element('input'),
      element('input', { type: 'search' }),
      element('textarea'),
      element('select'),
      element('div', { contenteditable: 'true' }),
    ]) {
      await fireEvent.keyDown(field, { key: 'r', code: 'KeyR' });
    }
    expect(record).toHaveBeenCalledTimes(2);
    // A checkbox or a slider takes no text: the keys act there.
    await fireEvent.keyDown(element('input', { type: 'range' }), { key: 'r', code: 'KeyR' });
    expect(record).toHaveBeenCalledTimes(3);

    // Keys bound to Escape act even in a field.
    expect(shortcuts.rebind('record-toggle', { key: 'Escape', ctrl: false, alt: false, shift: false, meta: false })).toEqual({ ok: true });
    await fireEvent.keyDown(element('input'), { key: 'Escape' });
    expect(record).toHaveBeenCalledTimes(4);

    dispose();
    release();
  });

  it('leaves Space on a focused button to the button, and prevents the default only when it acted', () => {
    const release = installShortcuts();
    const play = vi.fn();
    const dispose = onShortcut('play-pause', play);
    const button = element('button');
    const onButton = key({ key: ' ', code: 'Space' });
    button.dispatchEvent(onButton);
    expect(play).not.toHaveBeenCalled();
    expect(onButton.defaultPrevented).toBe(false);
    const onPage = key({ key: ' ', code: 'Space' });
    document.body.dispatchEvent(onPage);
    expect(play).toHaveBeenCalledTimes(1);
    expect(onPage.defaultPrevented).toBe(true);
    // No handler for the action here (and no default): the key does what it did.
    const unhandled = key({ key: 'l', code: 'KeyL' });
    document.body.dispatchEvent(unhandled);
    expect(unhandled.defaultPrevented).toBe(false);
    dispose();
    release();
  });

  it('runs the handler registered last; disposing it gives the action back, and `false` passes it on', async () => {
    const release = installShortcuts();
    const page = vi.fn();
    const player = vi.fn();
    const disposePage = onShortcut('switch-ab', page);
    const disposePlayer = onShortcut('switch-ab', player);
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(player).toHaveBeenCalledTimes(1);
    expect(page).not.toHaveBeenCalled();
    disposePlayer();
    disposePlayer(); // twice is once
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(page).toHaveBeenCalledTimes(1);
    const passing = vi.fn(() => false);
    const disposePassing = onShortcut('switch-ab', passing);
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(passing).toHaveBeenCalledTimes(1);
    expect(page).toHaveBeenCalledTimes(2);
    disposePassing();
    disposePage();
    release();
    // Nothing holds the listener now.
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(page).toHaveBeenCalledTimes(2);
  });

  it('opens the pages with Alt+digits, also where Alt changes the character (a Mac) or the layout is not Latin', () => {
    app.page = 'library';
    handleKeydown(key({ key: '0', code: 'Digit0', altKey: true }));
    expect(app.page).toBe('jobs');
    handleKeydown(key({ key: '¡', code: 'Digit1', altKey: true }));
    expect(app.page).toBe('library');
    handleKeydown(key({ key: '3', code: 'Digit3', altKey: true }));
    expect(app.page).toBe('live');
    // Plain digits are the A/B player's.
    handleKeydown(key({ key: '2', code: 'Digit2' }));
    expect(app.page).toBe('live');
    const next = vi.fn();
    const dispose = onShortcut('next-take', next);
    handleKeydown(key({ key: 'о', code: 'KeyJ' })); // J on a Russian layout
    expect(next).toHaveBeenCalledTimes(1);
    dispose();
  });

  it('names the keys without a platform, and takes `?` as it is typed', () => {
    const of = (id: string) => formatBinding(shortcuts.keysOf(id as never)!);
    expect(of('play-pause')).toBe('Space');
    expect(of('go-library')).toBe('Alt+1');
    expect(of('go-jobs')).toBe('Alt+0');
    expect(of('help')).toBe('?');
    expect(formatBinding(bindingFromEvent(key({ key: 'K', code: 'KeyK', ctrlKey: true, shiftKey: true }))!)).toBe('Ctrl+Shift+K');
    // Shift is how `?` is typed, not part of it.
    expect(bindingFromEvent(key({ key: '?', code: 'Slash', shiftKey: true }))).toEqual({ key: '?', ctrl: false, alt: false, shift: false, meta: false });
    expect(bindingFromEvent(key({ key: 'Shift', shiftKey: true }))).toBeNull();
    // Every action has keys of its own by default.
    const shown = ACTIONS.map((a) => formatBinding(a.defaultKeys!));
    expect(new Set(shown).size).toBe(ACTIONS.length);
  });
});

describe('shortcut settings', () => {
  const row = (id: string) => screen.getAllByTestId('shortcut-row').find((r) => r.dataset.action === id)!;

  it('captures new keys, saves them, and restores them after a restart', async () => {
    render(ShortcutSettings);
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('J');
    const change = within(row('next-take')).getByTestId('shortcut-change');
    expect(change).toHaveAccessibleName('Change Next take');
    await fireEvent.click(change);
    expect(change).toHaveTextContent('Press keys…');
    expect(screen.getByTestId('shortcut-message')).toHaveTextContent('Press the new keys for “Next take”, or Escape to cancel.');
    // A modifier alone is not keys yet; while capturing, no shortcut acts.
    const record = vi.fn();
    const dispose = onShortcut('record-toggle', record);
    await fireEvent.keyDown(window, { key: 'Shift', shiftKey: true });
    await fireEvent.keyDown(change, { key: 'ArrowDown', code: 'ArrowDown', shiftKey: true });
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('Shift+↓');
    expect(screen.getByTestId('shortcut-message')).toHaveTextContent('“Next take” is now Shift+↓.');
    expect(change).toHaveTextContent('Change');
    expect(record).not.toHaveBeenCalled();
    dispose();

    expect(JSON.parse(localStorage.getItem('timbre.shortcuts')!)).toEqual({
      bindings: { 'next-take': { key: 'ArrowDown', ctrl: false, alt: false, shift: true, meta: false } },
    });
    shortcuts.reset();
    expect(shortcuts.keysOf('next-take')?.key).toBe('j');
    shortcuts.restore();
    expect(formatBinding(shortcuts.keysOf('next-take')!)).toBe('Shift+↓');
    expect(formatBinding(shortcuts.keysOf('previous-take')!)).toBe('K');
  });

  it('refuses keys another action has, naming it, and the A/B digits; Escape cancels', async () => {
    render(ShortcutSettings);
    const change = within(row('next-take')).getByTestId('shortcut-change');
    await fireEvent.click(change);
    await fireEvent.keyDown(window, { key: 'l', code: 'KeyL' });
    expect(screen.getByTestId('shortcut-message')).toHaveTextContent('L is already used by “Start or stop live conversion”: choose other keys.');
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('J');
    await fireEvent.click(change);
    await fireEvent.keyDown(window, { key: '1', code: 'Digit1' });
    expect(screen.getByTestId('shortcut-message')).toHaveTextContent('1 is already used by “Pick an A/B slot (0: the original)”');
    await fireEvent.click(change);
    await fireEvent.keyDown(window, { key: 'Escape' });
    expect(screen.getByTestId('shortcut-message')).toHaveTextContent('The keys of “Next take” are unchanged.');
    expect(shortcuts.capturing).toBe(false);
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('J');
    expect(localStorage.getItem('timbre.shortcuts')).toBeNull();
  });

  it('removes keys and resets every action to its defaults', async () => {
    render(ShortcutSettings);
    await fireEvent.click(within(row('live-toggle')).getByTestId('shortcut-clear'));
    expect(within(row('live-toggle')).getByTestId('shortcut-keys')).toHaveTextContent('None');
    // L is free now: next take can have it.
    await fireEvent.click(within(row('next-take')).getByTestId('shortcut-change'));
    await fireEvent.keyDown(window, { key: 'l', code: 'KeyL' });
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('L');
    await fireEvent.click(screen.getByTestId('shortcuts-reset'));
    expect(within(row('next-take')).getByTestId('shortcut-keys')).toHaveTextContent('J');
    expect(within(row('live-toggle')).getByTestId('shortcut-keys')).toHaveTextContent('L');
    expect(JSON.parse(localStorage.getItem('timbre.shortcuts')!)).toEqual({ bindings: {} });
  });

  it('restores saved keys over the defaults, leaving a default another choice took without keys, and ignores junk', () => {
    const none = { ctrl: false, alt: false, shift: false, meta: false };
    localStorage.setItem(
      'timbre.shortcuts',
      JSON.stringify({ bindings: { 'next-take': { key: 'L', ...none }, 'help': null, 'no-such-action': { key: 'q', ...none } } }),
    );
    shortcuts.restore();
    expect(shortcuts.keysOf('next-take')?.key).toBe('l');
    expect(shortcuts.keysOf('live-toggle')).toBeNull();
    expect(shortcuts.keysOf('help')).toBeNull();
    localStorage.setItem('timbre.shortcuts', JSON.stringify({ bindings: { 'next-take': { key: 7 } } }));
    shortcuts.restore();
    expect(shortcuts.keysOf('next-take')?.key).toBe('j');
    expect(shortcuts.keysOf('live-toggle')?.key).toBe('l');
  });
});

describe('shortcut help', () => {
  it('opens with ?, is a modal dialog that traps Tab, and closes on Escape, giving the focus back', async () => {
    mockBackend(SHELL);
    render(App);
    await screen.findByTestId('library-empty');
    const nav = screen.getByTestId('nav-jobs');
    nav.focus();
    // `?` typed in a field is text.
    await fireEvent.keyDown(screen.getByRole('searchbox'), { key: '?', code: 'Slash', shiftKey: true });
    expect(screen.queryByRole('dialog')).toBeNull();

    await fireEvent.keyDown(nav, { key: '?', code: 'Slash', shiftKey: true });
    const dialog = await screen.findByRole('dialog', { name: 'Keyboard shortcuts' });
    expect(dialog).toHaveAttribute('aria-modal', 'true');
    const close = within(dialog).getByRole('button', { name: 'Close' });
    const settings = within(dialog).getByTestId('shortcut-help-settings');
    expect(document.activeElement).toBe(close);
    // Every action, with its keys.
    const rows = within(dialog).getAllByTestId('shortcut-help-row');
    expect(rows.filter((r) => r.dataset.action)).toHaveLength(ACTIONS.length);
    expect(rows.find((r) => r.dataset.action === 'play-pause')).toHaveTextContent('Play or pause');
    expect(rows.find((r) => r.dataset.action === 'play-pause')).toHaveTextContent('Space');
    expect(rows.find((r) => r.dataset.action === 'go-compare')).toHaveTextContent('Alt+5');

    // Tab from the last goes to the first, Shift+Tab from the first to the last.
    settings.focus();
    await fireEvent.keyDown(settings, { key: 'Tab' });
    expect(document.activeElement).toBe(close);
    await fireEvent.keyDown(close, { key: 'Tab', shiftKey: true });
    expect(document.activeElement).toBe(settings);
    // Focus that strays outside comes back.
    nav.focus();
    expect(dialog.contains(document.activeElement)).toBe(true);
    // The page keys wait while the dialog is open.
    await fireEvent.keyDown(document.activeElement!, { key: '0', code: 'Digit0', altKey: true });
    expect(app.page).toBe('library');

    await fireEvent.keyDown(document.activeElement!, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(document.activeElement).toBe(nav);
  });

  it('opens from the sidebar button, closes with ? again, and leads to Settings', async () => {
    mockBackend({
      ...SHELL,
      get_settings: () => {
        throw { kind: 'io', message: 'not in this test' };
      },
      get_doctor_report: () => {
        throw { kind: 'io', message: 'not in this test' };
      },
      get_device_report: () => {
        throw { kind: 'io', message: 'not in this test' };
      },
    });
    render(App);
    await screen.findByTestId('library-empty');
    const button = screen.getByRole('button', { name: 'Keyboard shortcuts' });
    expect(button).toHaveAttribute('aria-keyshortcuts', '?');
    await fireEvent.click(button);
    const dialog = await screen.findByRole('dialog', { name: 'Keyboard shortcuts' });
    await fireEvent.keyDown(document.activeElement!, { key: '?', code: 'Slash', shiftKey: true });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(document.activeElement).toBe(button);
    expect(dialog.isConnected).toBe(false);

    await fireEvent.click(button);
    await fireEvent.click(await screen.findByTestId('shortcut-help-settings'));
    expect(app.page).toBe('settings');
    expect(await screen.findByTestId('settings-shortcuts')).toBeInTheDocument();
  });
});

describe('shortcuts on the pages', () => {
  it('moves between the Library takes with J and K, and Space plays the one moved to', async () => {
    installFakeAudio();
    const takes = [makeTake({ id: 1, name: 'Verse' }), makeTake({ id: 2, name: 'Chorus' }), makeTake({ id: 3, name: 'Bridge' })];
    const be = mockBackend({
      list_voices: () => [],
      list_takes: () => takes,
      list_conversions: () => [],
      list_derived_links: () => [],
      get_take_audio: () => [50],
    });
    render(Library);
    const rows = await screen.findAllByTestId('take-row');
    const playOf = (i: number) => within(rows[i]).getByTestId('take-play');
    await fireEvent.keyDown(window, { key: 'j', code: 'KeyJ' });
    expect(shortcuts.selectedTake).toBe(1);
    expect(document.activeElement).toBe(playOf(0));
    await fireEvent.keyDown(document.activeElement!, { key: 'j', code: 'KeyJ' });
    await fireEvent.keyDown(document.activeElement!, { key: 'j', code: 'KeyJ' });
    await fireEvent.keyDown(document.activeElement!, { key: 'j', code: 'KeyJ' });
    expect(shortcuts.selectedTake).toBe(3);
    await fireEvent.keyDown(document.activeElement!, { key: 'k', code: 'KeyK' });
    expect(document.activeElement).toBe(playOf(1));
    expect(be.argsOf('get_take_audio')).toEqual([]);
    // Space from the page (not the focused button, which plays by its own click) plays the take.
    await fireEvent.keyDown(document.body, { key: ' ', code: 'Space' });
    await waitFor(() => expect(app.playback.takeId).toBe(2));
    // While one plays, moving plays the next.
    await fireEvent.keyDown(document.body, { key: 'j', code: 'KeyJ' });
    await waitFor(() => expect(app.playback.takeId).toBe(3));
    await fireEvent.keyDown(document.body, { key: ' ', code: 'Space' });
    expect(app.playback.status).toBe('stopped');
  });

  it('records and stops with R on the Record page', async () => {
    const be = mockBackend({
      list_input_devices: () => [{ name: 'Mic', is_default: true, channels: 1, sample_rate: 48000 }],
      list_voices: () => [],
      start_recording: () => null,
      stop_recording: () => makeTake({ id: 77, name: 'Recording 1', origin: 'recorded' }),
    });
    render(RecordPage);
    await waitFor(() => expect(recorder.device).toBe('Mic'));
    // Typing a name is typing.
    await fireEvent.keyDown(screen.getByTestId('record-name'), { key: 'r', code: 'KeyR' });
    expect(be.argsOf('start_recording')).toHaveLength(0);
    await fireEvent.keyDown(window, { key: 'r', code: 'KeyR' });
    await waitFor(() => expect(recorder.status).toBe('recording'));
    await fireEvent.keyDown(window, { key: 'r', code: 'KeyR' });
    await waitFor(() => expect(be.argsOf('stop_recording')).toHaveLength(1));
    await waitFor(() => expect(recorder.status).toBe('idle'));
  });

  it("gives Space and S to the Compare page's A/B player while it is open, keeping its digits", async () => {
    installFakeAudio();
    const SHA = 'aa'.repeat(32);
    app.takes = [makeTake({ id: 7, name: 'Verse', sha256: SHA })];
    mockBackend({
      list_conversions: () => [
        makeConversion({ id: 11, model_id: 1, model_name: 'Ada', input_sha256: SHA, input_take_id: 7 }),
        makeConversion({ id: 12, model_id: 2, model_name: 'Bo', input_sha256: SHA, input_take_id: 7 }),
      ],
      list_models: () => [makeModel({ id: 1, name: 'Ada' }), makeModel({ id: 2, name: 'Bo' })],
      list_listening_tests: () => [],
      get_conversion_audio: (a) => [a.id === 11 ? 50 : 25],
      get_conversion_input_audio: () => [40],
    });
    studio.openCompare(SHA, [11, 12]);
    render(Compare);
    const ab = await screen.findByTestId('ab-player');
    await fireEvent.keyDown(window, { key: ' ', code: 'Space' });
    await waitFor(() => expect(ab).toHaveAttribute('data-state', 'playing'));
    expect(ab).toHaveAttribute('data-active', 'c11');
    // S goes on to the next slot, then back to the one before.
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(ab).toHaveAttribute('data-active', 'c12');
    await fireEvent.keyDown(window, { key: '0', code: 'Digit0' });
    expect(ab).toHaveAttribute('data-active', 'original');
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(ab).toHaveAttribute('data-active', 'c12');
    await fireEvent.keyDown(window, { key: 's', code: 'KeyS' });
    expect(ab).toHaveAttribute('data-active', 'original');
    // Alt+1 is a page, not slot 1.
    await fireEvent.keyDown(window, { key: '1', code: 'Digit1', altKey: true });
    expect(ab).toHaveAttribute('data-active', 'original');
    expect(app.page).toBe('library');
    await fireEvent.keyDown(window, { key: ' ', code: 'Space' });
    expect(ab).toHaveAttribute('data-state', 'paused');
  });
});
