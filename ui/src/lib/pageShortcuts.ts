// What the Library, Record and Live pages register while they are open: moving through the
// listed takes, recording, starting and stopping live, switching the live voice.
import { app } from './stores.svelte';
import { player } from './player';
import { recorder } from './recorder.svelte';
import { live } from './live.svelte';
import type { Take } from './api';
import { t } from './i18n.svelte';
import { shortcuts, type ShortcutHandlers } from './shortcuts.svelte';

function playFailed(name: string) {
  return (err: unknown) => app.reportError(err, t('shortcuts.play_take_failed', { name }));
}

/** Moves to `take`: its row's play button takes the focus; while a take plays, `take` plays instead. */
function selectTake(take: Take): void {
  shortcuts.selectedTake = take.id;
  const button = document.querySelector<HTMLElement>(`[data-take-id="${take.id}"] [data-testid="take-play"]`);
  button?.focus();
  button?.scrollIntoView?.({ block: 'nearest' });
  if (player.state.status !== 'stopped' && player.state.takeId !== null && player.state.takeId !== take.id) {
    player.play(take.id, take.name).catch(playFailed(take.name));
  }
}

/**
 * Next and previous take over the takes a page lists (in its order), and Space to play or stop
 * the take moved to (or playing): for the Library and Record pages.
 */
export function takeShortcuts(list: () => readonly Take[]): ShortcutHandlers {
  const current = (takes: readonly Take[]) => {
    const playing = player.state.status !== 'stopped' ? player.state.takeId : null;
    const id = playing ?? shortcuts.selectedTake;
    return id === null ? -1 : takes.findIndex((take) => take.id === id);
  };
  const step = (delta: 1 | -1) => () => {
    const takes = list();
    if (takes.length === 0) return false;
    const i = current(takes);
    const next = i < 0 ? (delta > 0 ? 0 : takes.length - 1) : Math.min(takes.length - 1, Math.max(0, i + delta));
    selectTake(takes[next]);
  };
  return {
    'next-take': step(1),
    'previous-take': step(-1),
    'play-pause': () => {
      const takes = list();
      const take = takes[current(takes)];
      if (!take) return false;
      player.toggle(take.id, take.name).catch(playFailed(take.name));
    },
  };
}

/** R on the Record page: records, or stops and saves. */
export function toggleRecording(): boolean {
  if (recorder.status === 'idle') void recorder.start();
  else if (recorder.status === 'recording') void recorder.stop();
  return true;
}

/** The Record page's keys: the session's takes, and recording. */
export function recordShortcuts(): ShortcutHandlers {
  return { ...takeShortcuts(() => recorder.sessionTakes), 'record-toggle': toggleRecording };
}

/** L on the Live page: starts the stream, or stops it. */
export function toggleLive(): boolean {
  if (live.phase === 'idle') void live.start();
  else if (live.phase === 'running') void live.stop();
  return true;
}

/** The Live page's keys: start and stop, and switching the live voice between A and B. */
export const liveShortcuts: ShortcutHandlers = {
  'live-toggle': toggleLive,
  'switch-ab': () => {
    if (live.voiceB === null || live.phase !== 'running') return false;
    void live.switchVoice();
  },
};
