import '@testing-library/jest-dom/vitest';
import { afterEach, vi } from 'vitest';
import { clearMocks } from '@tauri-apps/api/mocks';
import { cleanup } from '@testing-library/svelte';
import { app } from '../src/lib/stores.svelte';
import { recorder } from '../src/lib/recorder.svelte';
import { live } from '../src/lib/live.svelte';
import { studio } from '../src/lib/studio.svelte';
import { cleaner } from '../src/lib/cleaner.svelte';
import { coverer } from '../src/lib/coverer.svelte';
import { trainer } from '../src/lib/trainer.svelte';
import { resources } from '../src/lib/resources.svelte';
import { defaults } from '../src/lib/defaults.svelte';
import { assets } from '../src/lib/assets.svelte';
import { updates } from '../src/lib/updates.svelte';
import { appearance } from '../src/lib/appearance.svelte';
import { i18n } from '../src/lib/i18n.svelte';
import { shortcuts } from '../src/lib/shortcuts.svelte';
import { takeUnansweredCommands } from './helpers';

// jsdom has no PointerEvent: a MouseEvent carries what the app reads (button, buttons, clientX/Y).
if (typeof globalThis.PointerEvent === 'undefined') {
  class PointerEvent extends MouseEvent {}
  globalThis.PointerEvent = PointerEvent as typeof globalThis.PointerEvent;
}

// jsdom has no Web Audio; tests that need it install a fake (see helpers.ts).
afterEach(() => {
  cleanup();
  recorder.reset();
  live.reset();
  app.reset();
  studio.reset();
  cleaner.reset();
  coverer.reset();
  trainer.reset();
  resources.reset();
  defaults.reset();
  assets.reset();
  updates.reset();
  appearance.reset();
  i18n.reset();
  shortcuts.reset();
  clearMocks();
  localStorage.clear();
  vi.useRealTimers();
  delete (globalThis as any).AudioContext;
  const unanswered = takeUnansweredCommands();
  if (unanswered.length) throw new Error(`commands called that no mock answers: ${unanswered.join(', ')}`);
});
