// The UI's language: messages in ICU MessageFormat catalogues (ui/src/lib/i18n/catalogues/<locale>/
// <area>.json), formatted by FormatJS's intl-messageformat with the locale's plural rules; numbers
// and dates through Intl. `t` reads `i18n.locale`, a rune, so every template and `$derived` that
// calls it follows a change of language without a reload. The choice ('system' or a locale) is
// saved with the other saved parameters and applied before the first paint.
import { IntlMessageFormat, type PrimitiveType } from 'intl-messageformat';
import type { MessageKey } from './i18n/english';
import { LOCALES, matchLocale, type Locale } from './i18n/locales';
import { savedLanguage, type LanguageChoice } from './savedParams.svelte';

export type { MessageKey } from './i18n/english';
export { LOCALES, LOCALE_NAMES, matchLocale, type Locale } from './i18n/locales';

type Messages = Record<string, string>;

/** Every catalogue, flattened to `area.key` → message, per locale. */
function loadCatalogues(): Record<Locale, Messages> {
  const files = import.meta.glob<Record<string, string>>('./i18n/catalogues/*/*.json', { eager: true, import: 'default' });
  const out = Object.fromEntries(LOCALES.map((l) => [l, {} as Messages])) as Record<Locale, Messages>;
  for (const [path, messages] of Object.entries(files)) {
    const [, locale, area] = /catalogues\/([^/]+)\/([^/]+)\.json$/.exec(path) ?? [];
    if (!LOCALES.includes(locale as Locale)) continue;
    for (const [key, text] of Object.entries(messages)) out[locale as Locale][`${area}.${key}`] = text;
  }
  return out;
}

export const CATALOGUES = loadCatalogues();

/** The catalogue locale of the system's languages (what the choice 'system' follows). */
export function systemLocale(): Locale {
  const tags = typeof navigator === 'undefined' ? [] : navigator.languages?.length ? navigator.languages : [navigator.language];
  return matchLocale(tags.filter(Boolean));
}

class I18nState {
  /** What the user chose on the Settings page. */
  choice = $state<LanguageChoice>('system');
  /** The language the UI is in. */
  locale = $state<Locale>('en');

  /** The saved choice, applied; at start-up, before the first paint. */
  restore(): void {
    this.choice = savedLanguage.restore({ language: 'system' }).language;
    this.apply();
  }

  choose(choice: LanguageChoice): void {
    this.choice = choice;
    savedLanguage.save({ language: choice });
    this.apply();
  }

  private apply(): void {
    this.locale = this.choice === 'system' ? systemLocale() : this.choice;
    document.documentElement.lang = this.locale;
  }

  /** Back to English, following the system (tests). */
  reset(): void {
    this.choice = 'system';
    this.locale = 'en';
    document.documentElement.lang = 'en';
  }
}

export const i18n = new I18nState();

export type MessageValues = Record<string, PrimitiveType>;

const formats = new Map<string, IntlMessageFormat>();

function compiled(locale: Locale, key: string): IntlMessageFormat {
  const id = `${locale}\u0000${key}`;
  let format = formats.get(id);
  if (!format) {
    const text = CATALOGUES[locale][key] ?? CATALOGUES.en[key] ?? key;
    format = new IntlMessageFormat(text, locale, undefined, { ignoreTag: true });
    formats.set(id, format);
  }
  return format;
}

/** The message `key` in the UI's language, with `values` put in: `t('library.takes', { count: 3 })`. */
export function t(key: MessageKey, values?: MessageValues): string {
  return String(compiled(i18n.locale, key).format(values));
}

/** The English text of `key` (tests and logs; never for what the user reads). */
export function english(key: MessageKey): string {
  return CATALOGUES.en[key] ?? key;
}

const numberFormats = new Map<string, Intl.NumberFormat>();

/** `n` in the UI's language: `formatNumber(1234.5, { maximumFractionDigits: 1 })` → "1.234,5" in German. */
export function formatNumber(n: number, options: Intl.NumberFormatOptions = {}): string {
  const id = `${i18n.locale}\u0000${JSON.stringify(options)}`;
  let format = numberFormats.get(id);
  if (!format) {
    format = new Intl.NumberFormat(i18n.locale, options);
    numberFormats.set(id, format);
  }
  return format.format(n);
}

/** `n` with exactly `digits` decimals in the UI's language. */
export function fixed(n: number, digits: number): string {
  return formatNumber(n, { minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false });
}

const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** A date or time in the UI's language. */
export function formatDateParts(date: Date, options: Intl.DateTimeFormatOptions): string {
  const id = `${i18n.locale}\u0000${JSON.stringify(options)}`;
  let format = dateFormats.get(id);
  if (!format) {
    format = new Intl.DateTimeFormat(i18n.locale, options);
    dateFormats.set(id, format);
  }
  return format.format(date);
}
