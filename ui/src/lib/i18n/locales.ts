// The languages the UI has catalogues for.

export const LOCALES = ['en', 'zh-CN', 'ja', 'ko', 'es', 'pt-BR', 'ru', 'fr', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

/** Each language in its own words, as a language menu shows them. */
export const LOCALE_NAMES: Record<Locale, string> = {
  en: 'English',
  'zh-CN': '简体中文',
  ja: '日本語',
  ko: '한국어',
  es: 'Español',
  'pt-BR': 'Português (Brasil)',
  ru: 'Русский',
  fr: 'Français',
  de: 'Deutsch',
};

/** The catalogue locale for a list of BCP 47 tags (`navigator.languages`), English when none fits. */
export function matchLocale(tags: readonly string[]): Locale {
  for (const tag of tags) {
    const exact = LOCALES.find((l) => l.toLowerCase() === tag.toLowerCase());
    if (exact) return exact;
    const language = tag.toLowerCase().split(/[-_]/)[0];
    const same = LOCALES.find((l) => l.toLowerCase().split('-')[0] === language);
    if (same) return same;
  }
  return 'en';
}
