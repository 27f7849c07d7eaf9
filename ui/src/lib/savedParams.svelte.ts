// The voice parameters and the appearance the user set, kept in localStorage (the webview keeps
// it for the app) so the Convert, Cover and Live pages and the theme are as they were after a
// restart. Each saved field goes over its default (the backend's, for the voice parameters) only
// when it is of its field's type: a corrupt or outdated entry leaves the defaults.
import { LOCALES, type Locale } from './i18n/locales';
import { F0_METHODS, type Autotune, type Scale, type StreamParams, type Unvoiced, type VoiceParams } from './api';

/** Per field, whether a saved value is of the field's type. */
type FieldChecks<T> = { [K in keyof T]-?: (value: unknown) => value is T[K] };

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isBoolean(value: unknown): value is boolean {
  return typeof value === 'boolean';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function oneOf<T extends string>(values: readonly T[]) {
  return (value: unknown): value is T => values.includes(value as T);
}

function orNull<T>(check: (value: unknown) => value is T) {
  return (value: unknown): value is T | null => value === null || check(value);
}

function isScale(value: unknown): value is Scale {
  if (!isRecord(value)) return false;
  if (value.kind === 'chromatic') return true;
  const tonic = value.tonic;
  return (value.kind === 'major' || value.kind === 'minor') && isNumber(tonic) && Number.isInteger(tonic) && tonic >= 0 && tonic < 12;
}

function isAutotune(value: unknown): value is Autotune {
  return isRecord(value) && isScale(value.scale) && isNumber(value.strength);
}

const VOICE_FIELDS: FieldChecks<VoiceParams> = {
  transpose: isNumber,
  formant_shift: isNumber,
  f0_method: oneOf(F0_METHODS),
  index_rate: isNumber,
  protect: isNumber,
  rms_mix_rate: isNumber,
  speaker_id: (value): value is number => isNumber(value) && Number.isInteger(value) && value >= 0,
  autotune: orNull(isAutotune),
  seed: orNull(isNumber),
};

const STREAM_FIELDS: FieldChecks<StreamParams> = {
  ...VOICE_FIELDS,
  block_ms: isNumber,
  crossfade_ms: isNumber,
  context_ms: isNumber,
  threshold_db: isNumber,
  unvoiced: oneOf<Unvoiced>(['original', 'protect', 'zero']),
  input_denoise: isBoolean,
  output_denoise: isBoolean,
  speech_gate: isBoolean,
};

export type Theme = 'system' | 'light' | 'dark';
export const THEMES: readonly Theme[] = ['system', 'light', 'dark'];

export interface Appearance {
  theme: Theme;
}

const APPEARANCE_FIELDS: FieldChecks<Appearance> = {
  theme: oneOf(THEMES),
};

export type LanguageChoice = 'system' | Locale;

export interface Language {
  language: LanguageChoice;
}

const LANGUAGE_FIELDS: FieldChecks<Language> = {
  language: oneOf<LanguageChoice>(['system', ...LOCALES]),
};

class SavedParams<T extends object> {
  constructor(
    readonly key: string,
    private readonly fields: FieldChecks<T>,
  ) {}

  /** `defaults` with every saved field that is of its type. */
  restore(defaults: T): T {
    const restored = { ...defaults };
    let saved: unknown;
    try {
      saved = JSON.parse(localStorage.getItem(this.key) ?? 'null');
    } catch {
      return restored;
    }
    if (!isRecord(saved)) return restored;
    for (const field of Object.keys(this.fields) as (keyof T & string)[]) {
      const value = saved[field];
      if (this.fields[field](value)) restored[field] = value;
    }
    return restored;
  }

  save(params: T): void {
    try {
      localStorage.setItem(this.key, JSON.stringify(params));
    } catch {
      // Storage full or turned off: the parameters last until the app closes.
    }
  }

  /** Saves what `read` gives (null: nothing to save yet) now and whenever it changes. */
  follow(read: () => T | null): void {
    $effect.root(() => {
      $effect(() => {
        const params = read();
        if (params !== null) this.save(params);
      });
    });
  }
}

/** The Convert and Cover pages' parameters (`studio.options`). */
export const savedVoiceParams = new SavedParams('timbre.voiceParams', VOICE_FIELDS);
/** The Live page's parameters (`live.params`). */
export const savedStreamParams = new SavedParams('timbre.streamParams', STREAM_FIELDS);
/** The Settings page's Appearance section (`appearance`). */
export const savedAppearance = new SavedParams('timbre.appearance', APPEARANCE_FIELDS);
/** The Settings page's Language section (`i18n`). */
export const savedLanguage = new SavedParams('timbre.language', LANGUAGE_FIELDS);

/** A keyboard shortcut: a key (`KeyboardEvent.key`, letters in lower case) and the modifiers held with it. */
export interface KeyBinding {
  key: string;
  ctrl: boolean;
  alt: boolean;
  shift: boolean;
  meta: boolean;
}

export function isKeyBinding(value: unknown): value is KeyBinding {
  return (
    isRecord(value) &&
    typeof value.key === 'string' &&
    value.key.length > 0 &&
    value.key.length <= 32 &&
    isBoolean(value.ctrl) &&
    isBoolean(value.alt) &&
    isBoolean(value.shift) &&
    isBoolean(value.meta)
  );
}

export interface SavedShortcutBindings {
  /** Per action id, the keys the user chose instead of the default (null: none). */
  bindings: Record<string, KeyBinding | null>;
}

const SHORTCUT_FIELDS: FieldChecks<SavedShortcutBindings> = {
  bindings: (value): value is Record<string, KeyBinding | null> =>
    isRecord(value) && Object.values(value).every((b) => b === null || isKeyBinding(b)),
};

/** The keyboard shortcuts changed on the Settings page (`shortcuts`). */
export const savedShortcuts = new SavedParams('timbre.shortcuts', SHORTCUT_FIELDS);
