// What a failure is and what to do about it, by the kind of its error (the backend keeps the kind
// with a failed job, `Job.error_kind`, and with a rejected command, `ApiError.kind`): catalogue
// keys in the `errors` area. A `Record` over `ErrorKind`, so a new kind must be named and say what
// to do. (`api.ts` keeps its own list of the kinds: it cannot load the i18n module this one needs.)
import type { ErrorKind } from './generated/ErrorKind';
import { t, type MessageKey } from './i18n.svelte';

export const ERROR_HINTS: Record<ErrorKind, { title: MessageKey; hint: MessageKey | null }> = {
  not_found: { title: 'errors.not_found_title', hint: 'errors.not_found_hint' },
  invalid_input: { title: 'errors.invalid_input_title', hint: 'errors.invalid_input_hint' },
  audio: { title: 'errors.audio_title', hint: 'errors.audio_hint' },
  busy: { title: 'errors.busy_title', hint: 'errors.busy_hint' },
  io: { title: 'errors.io_title', hint: 'errors.io_hint' },
  cancelled: { title: 'errors.cancelled_title', hint: null },
  internal: { title: 'errors.internal_title', hint: 'errors.internal_hint' },
  disk_full: { title: 'errors.disk_full_title', hint: 'errors.disk_full_hint' },
  out_of_memory: { title: 'errors.out_of_memory_title', hint: 'errors.out_of_memory_hint' },
  damaged: { title: 'errors.damaged_title', hint: 'errors.damaged_hint' },
};

/** What to do about a failure of this kind, in the UI's language, if there is something to do. */
export function errorHint(kind: ErrorKind | null | undefined): string | null {
  const hint = kind ? ERROR_HINTS[kind].hint : null;
  return hint ? t(hint) : null;
}

/** The kind of failure in a few words ("Disk full"), in the UI's language. */
export function errorTitle(kind: ErrorKind | null | undefined): string | null {
  return kind ? t(ERROR_HINTS[kind].title) : null;
}
