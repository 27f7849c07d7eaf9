// What to do about a failed job, by the kind of its error (the backend keeps the kind with the
// job: `Job.error_kind`). A `Record` over `ErrorKind`, so a new kind must say what to do; its
// keys are also the kinds `api.ts` accepts from a rejected command.
import type { ErrorKind } from './generated/ErrorKind';

export const ERROR_HINTS: Record<ErrorKind, string | null> = {
  not_found: 'A file it needs is gone or was never there: check the path, or the models folder (Models page), then Retry.',
  invalid_input: 'The input or a setting was refused: change it and queue the job again.',
  audio: 'The audio could not be read: convert the file to WAV or FLAC, or try another one.',
  busy: 'Something else held the file or the library: Retry in a moment.',
  io: 'A file could not be read or written: check the folder exists and is writable, then Retry.',
  cancelled: null,
  internal: 'Something went wrong inside the app: Export JSON and report it with the job.',
  disk_full: 'The disk is full: free some space (or delete takes you no longer need), then Retry.',
  out_of_memory: 'The device ran out of memory: close other GPU work or lower the batch size, then Retry.',
  damaged: 'The library is damaged: restore a backup (`timbre library backups`, then `timbre library restore`).',
};

/** The hint for a failed job, if its error has one. */
export function errorHint(kind: ErrorKind | null): string | null {
  return kind ? ERROR_HINTS[kind] : null;
}
