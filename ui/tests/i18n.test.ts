// The catalogues are complete in every language, and no component shows English that is not in
// them: every `.svelte` template is parsed and its visible text, its visible attributes and the
// string literals it prints are checked.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'svelte/compiler';
import { IntlMessageFormat } from 'intl-messageformat';
import { TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import { CATALOGUES, LOCALES, i18n, matchLocale, t, type Locale } from '../src/lib/i18n.svelte';

const SRC = join(__dirname, '..', 'src');

/** Words that read the same in every language: units, the product, model and format names. */
const UNTRANSLATED = new Set([
  'Timbre Studio', 'A', 'B', 'X', 'A/B', 'ABX', 'dB', 'dBFS', 'LUFS', 'Hz', 'kHz', 'ms', 's', 'st', '%',
  'RVC', 'HuBERT', 'RMVPE', 'FCPE', 'CREPE', 'WAV', 'FLAC', 'MP3', 'JSON', 'CPU', 'GPU', 'CUDA', 'URL',
]);

/** Attributes a person reads or a screen reader speaks. */
const VISIBLE_ATTRIBUTES = new Set(['title', 'placeholder', 'aria-label', 'alt', 'label', 'aria-description', 'aria-valuetext', 'aria-roledescription']);

/** Elements whose text is code, commands or keys: never translated. */
const CODE_ELEMENTS = new Set(['code', 'kbd', 'samp', 'style', 'script']);

function visible(text: string): boolean {
  const trimmed = text.replace(/\s+/g, ' ').trim();
  return /\p{L}/u.test(trimmed) && !UNTRANSLATED.has(trimmed);
}

type Node = { type: string; [key: string]: any };

/** String literals that an expression prints as they are (not compared, not passed to a call). */
function printedLiterals(expr: Node | null | undefined, out: string[]): void {
  if (!expr) return;
  switch (expr.type) {
    case 'Literal':
      if (typeof expr.value === 'string') out.push(expr.value);
      break;
    case 'TemplateLiteral':
      for (const q of expr.quasis) out.push(q.value.cooked ?? '');
      for (const e of expr.expressions) printedLiterals(e, out);
      break;
    case 'ConditionalExpression':
      printedLiterals(expr.consequent, out);
      printedLiterals(expr.alternate, out);
      break;
    case 'LogicalExpression':
      printedLiterals(expr.left, out);
      printedLiterals(expr.right, out);
      break;
    case 'BinaryExpression':
      if (expr.operator === '+') {
        printedLiterals(expr.left, out);
        printedLiterals(expr.right, out);
      }
      break;
  }
}

function lineOf(source: string, offset: number): number {
  return source.slice(0, offset).split('\n').length;
}

/** `file:line "text"` for each hard-coded visible string in a component's template. */
export function hardCodedStrings(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const ast = parse(source, { modern: true });
  const found: string[] = [];
  const report = (offset: number, text: string) => {
    if (visible(text)) found.push(`${relative(SRC, file)}:${lineOf(source, offset)} "${text.replace(/\s+/g, ' ').trim()}"`);
  };
  const walk = (node: Node | null | undefined, inCode: boolean): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const n of node) walk(n, inCode);
      return;
    }
    const code = inCode || (typeof node.name === 'string' && CODE_ELEMENTS.has(node.name)) || hasTranslateNo(node);
    if (node.type === 'Text' && !code) report(node.start, node.data);
    if (node.type === 'ExpressionTag' && !code) {
      const literals: string[] = [];
      printedLiterals(node.expression, literals);
      for (const l of literals) report(node.start, l);
    }
    if (Array.isArray(node.attributes)) {
      for (const attr of node.attributes) {
        if (attr.type !== 'Attribute' || !VISIBLE_ATTRIBUTES.has(attr.name) || attr.value === true) continue;
        for (const part of Array.isArray(attr.value) ? attr.value : [attr.value]) {
          if (part.type === 'Text') report(part.start, part.data);
          else if (part.type === 'ExpressionTag') {
            const literals: string[] = [];
            printedLiterals(part.expression, literals);
            for (const l of literals) report(part.start, l);
          }
        }
      }
    }
    for (const key of ['fragment', 'nodes', 'consequent', 'alternate', 'body', 'pending', 'then', 'catch', 'fallback']) {
      if (key in node && key !== 'expression') walk(node[key], code);
    }
  };
  walk(ast.fragment, false);
  return found;
}

function hasTranslateNo(node: Node): boolean {
  return (
    Array.isArray(node.attributes) &&
    node.attributes.some(
      (a: Node) => a.type === 'Attribute' && a.name === 'translate' && Array.isArray(a.value) && a.value[0]?.data === 'no',
    )
  );
}

function svelteFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? svelteFiles(join(dir, e.name)) : e.name.endsWith('.svelte') ? [join(dir, e.name)] : [],
  );
}

/** The names a message puts values in, with their kinds: `count:plural`, `name:argument`. */
function argumentsOf(elements: MessageFormatElement[], out = new Set<string>()): Set<string> {
  for (const el of elements) {
    if (el.type === TYPE.argument || el.type === TYPE.number || el.type === TYPE.date || el.type === TYPE.time) out.add(el.value);
    if (el.type === TYPE.plural || el.type === TYPE.select) {
      out.add(el.value);
      for (const option of Object.values(el.options)) argumentsOf(option.value, out);
    }
    if (el.type === TYPE.tag) argumentsOf(el.children, out);
  }
  return out;
}

describe('catalogues', () => {
  const englishKeys = Object.keys(CATALOGUES.en).sort();

  it('English has messages', () => {
    expect(englishKeys.length).toBeGreaterThan(0);
  });

  for (const locale of LOCALES) {
    it(`${locale} has every key English has, and no other`, () => {
      const keys = Object.keys(CATALOGUES[locale]).sort();
      expect({ missing: englishKeys.filter((k) => !(k in CATALOGUES[locale])), extra: keys.filter((k) => !(k in CATALOGUES.en)) }).toEqual({
        missing: [],
        extra: [],
      });
    });

    it(`${locale}'s messages parse and take the values English's take`, () => {
      const wrong: string[] = [];
      for (const key of englishKeys) {
        const text = CATALOGUES[locale][key];
        if (text === undefined) continue;
        let ast: MessageFormatElement[];
        try {
          ast = new IntlMessageFormat(text, locale, undefined, { ignoreTag: true }).getAst();
        } catch (err) {
          wrong.push(`${key}: ${String(err)}`);
          continue;
        }
        const english = [...argumentsOf(new IntlMessageFormat(CATALOGUES.en[key], 'en', undefined, { ignoreTag: true }).getAst())].sort();
        const own = [...argumentsOf(ast)].sort();
        if (text.trim() === '') wrong.push(`${key}: empty`);
        else if (own.join() !== english.join()) wrong.push(`${key}: takes {${own.join(', ')}}, English {${english.join(', ')}}`);
      }
      expect(wrong).toEqual([]);
    });
  }
});

describe('t', () => {
  it('formats in the chosen language and follows a change of language', () => {
    const key = Object.keys(CATALOGUES.en).find((k) => !/[{}]/.test(CATALOGUES.en[k]) && CATALOGUES.en[k] !== CATALOGUES.ja[k]);
    expect(key).toBeDefined();
    expect(t(key as never)).toBe(CATALOGUES.en[key!]);
    i18n.choose('ja');
    expect(document.documentElement.lang).toBe('ja');
    expect(t(key as never)).toBe(CATALOGUES.ja[key!]);
  });

  it('matches system locales to a catalogue', () => {
    const cases: [string[], Locale][] = [
      [['de-AT'], 'de'],
      [['pt-PT'], 'pt-BR'],
      [['zh-Hans-CN'], 'zh-CN'],
      [['ja-JP'], 'ja'],
      [['nl-NL', 'fr-BE'], 'fr'],
      [['nl-NL'], 'en'],
      [[], 'en'],
    ];
    for (const [tags, locale] of cases) expect(matchLocale(tags), tags.join()).toBe(locale);
  });

  it('follows the system language until one is chosen, and keeps the choice', () => {
    const languages = vi.spyOn(navigator, 'languages', 'get').mockReturnValue(['ru-RU', 'en-US']);
    i18n.restore();
    expect(i18n.locale).toBe('ru');
    i18n.choose('ko');
    languages.mockReturnValue(['en-US']);
    i18n.restore();
    expect(i18n.locale).toBe('ko');
  });
});

describe('components show no hard-coded English', () => {
  for (const file of svelteFiles(SRC)) {
    it(relative(SRC, file), () => {
      expect(hardCodedStrings(file)).toEqual([]);
    });
  }
});
