import { describe, expect, it } from 'vitest';
import {
  basename,
  formatBytes,
  formatChannels,
  formatDate,
  formatDateTime,
  formatDbfs,
  formatDuration,
  formatLufs,
  formatProgress,
  formatSampleRate,
  formatSecsLeft,
  formatSpan,
  linearToDb,
  messageParts,
  parseTags,
  plural,
  voiceSummary,
} from '../src/lib/format';
import { i18n } from '../src/lib/i18n.svelte';

describe('formatDuration (m:ss.s)', () => {
  it.each([
    [0, '0:00.0'],
    [3.24, '0:03.2'],
    [59.96, '1:00.0'],
    [61.5, '1:01.5'],
    [754.96, '12:35.0'],
    [3725, '1:02:05.0'],
    [-1, '0:00.0'],
    [Number.NaN, '0:00.0'],
  ])('%s → %s', (secs, text) => {
    expect(formatDuration(secs)).toBe(text);
  });
});

describe('dB formatting', () => {
  it('formats dBFS with one decimal', () => {
    expect(formatDbfs(-3.14159)).toBe('-3.1 dBFS');
    expect(formatDbfs(-0.01)).toBe('0.0 dBFS');
    expect(formatDbfs(-12)).toBe('-12.0 dBFS');
  });
  it('shows silence as -inf and missing as a dash', () => {
    expect(formatDbfs(-Infinity)).toBe('-inf dBFS');
    expect(formatDbfs(-200)).toBe('-inf dBFS');
    expect(formatDbfs(null)).toBe('—');
  });
  it('formats LUFS or a dash', () => {
    expect(formatLufs(-18.25)).toBe('-18.3 LUFS');
    expect(formatLufs(null)).toBe('—');
  });
  it('converts linear amplitude to dB', () => {
    expect(linearToDb(1)).toBe(0);
    expect(linearToDb(0.5)).toBeCloseTo(-6.02, 2);
    expect(linearToDb(0)).toBe(-Infinity);
  });
});

describe('bytes and misc', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(8 * 1024 ** 3)).toBe('8.0 GiB');
    expect(formatBytes(Number.NaN)).toBe('—');
  });
  it('formats rates, channels, progress, plurals', () => {
    expect(formatSampleRate(48000)).toBe('48 kHz');
    expect(formatSampleRate(44100)).toBe('44.1 kHz');
    expect(formatChannels(1)).toBe('mono');
    expect(formatChannels(2)).toBe('stereo');
    expect(formatChannels(6)).toBe('6 ch');
    expect(formatProgress(0.426)).toBe('43%');
    expect(formatProgress(2)).toBe('100%');
    expect(plural(1, 'file')).toBe('1 file');
    expect(plural(12, 'file')).toBe('12 files');
  });
  it('parses comma-separated tags', () => {
    expect(parseTags(' a, b ,, c, a ')).toEqual(['a', 'b', 'c']);
    expect(parseTags('')).toEqual([]);
  });
  it('formats times', () => {
    const now = new Date(2026, 10, 22, 15, 0, 0);
    expect(formatDateTime(new Date(2026, 10, 22, 14, 3, 7).toISOString(), now)).toBe('14:03:07');
    expect(formatDateTime(new Date(2026, 10, 20, 9, 5, 0).toISOString(), now)).toBe('2026-11-20 09:05:00');
    expect(formatDateTime(null)).toBe('—');
    expect(formatSpan('2026-11-22T10:00:00Z', '2026-11-22T10:00:01.5Z')).toBe('1.5 s');
    expect(formatSpan('2026-11-22T10:00:00Z', '2026-11-22T10:03:04Z')).toBe('3 m 04 s');
    expect(formatSecsLeft(42.1)).toBe('43 s');
    expect(formatSecsLeft(136)).toBe('2 min 16 s');
    expect(formatSecsLeft(7300)).toBe('2 h 1 min');
  });
  it('takes basenames of either separator', () => {
    expect(basename('/a/b/c.wav')).toBe('c.wav');
    expect(basename('C:\\x\\y.flac')).toBe('y.flac');
  });
});

describe('in the UI language', () => {
  const now = new Date(2026, 10, 22, 15, 0, 0);
  const today = new Date(2026, 10, 22, 14, 3, 7).toISOString();
  const earlier = new Date(2026, 10, 20, 9, 5, 0).toISOString();

  it('writes German decimals, units and dates', () => {
    i18n.choose('de');
    expect(formatBytes(1536)).toBe('1,5 KiB');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatDbfs(-3.14159)).toBe('-3,1 dBFS');
    expect(formatLufs(-18.25)).toBe('-18,3 LUFS');
    expect(formatDuration(3.24)).toBe('0:03,2');
    expect(formatSampleRate(44100)).toBe('44,1 kHz');
    expect(formatSampleRate(48000)).toBe('48 kHz');
    expect(formatChannels(1)).toBe('Mono');
    expect(formatChannels(6)).toBe('6 Kan.');
    expect(formatProgress(0.426)).toBe('43\u00a0%');
    expect(formatDateTime(today, now)).toBe('14:03:07');
    expect(formatDateTime(earlier, now)).toBe('20.11.2026, 09:05:00');
    expect(formatDate(earlier)).toBe('20.11.2026');
    expect(formatSpan('2026-11-22T10:00:00Z', '2026-11-22T10:00:01.5Z')).toBe('1,5 s');
    expect(formatSecsLeft(136)).toBe('2 min 16 s');
    expect(voiceSummary({ transpose: 2.5, f0_method: 'rmvpe' })).toBe('+2,5 st · rmvpe');
  });

  it('writes Japanese units and dates', () => {
    i18n.choose('ja');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatChannels(2)).toBe('ステレオ');
    expect(formatSecsLeft(42.1)).toBe('43秒');
    expect(formatSecsLeft(136)).toBe('2分16秒');
    expect(formatSecsLeft(7300)).toBe('2時間1分');
    expect(formatSpan('2026-11-22T10:00:00Z', '2026-11-22T10:03:04Z')).toBe('3分04秒');
    expect(formatDateTime(today, now)).toBe('14:03:07');
    expect(formatDateTime(earlier, now)).toBe('2026/11/20 09:05:00');
    expect(formatDate(earlier)).toBe('2026/11/20');
  });

  it('keeps English as it was: ISO dates, a point for decimals', () => {
    expect(formatDate(earlier)).toBe('2026-11-20');
    expect(voiceSummary({ transpose: -1.5, f0_method: 'fcpe' })).toBe('-1.5 st · fcpe');
    expect(voiceSummary({ transpose: 3 })).toBe('+3 st');
  });

  it('cuts a message at its values, so a template can wrap them', () => {
    expect(messageParts('settings.device_summary_split', { main: 'cuda:0', extraction: 'cuda:1' })).toEqual([
      { text: 'Trains on ' },
      { text: 'cuda:0', value: 'main' },
      { text: ', prepares datasets on ' },
      { text: 'cuda:1', value: 'extraction' },
      { text: '.' },
    ]);
    i18n.choose('ja');
    expect(messageParts('settings.device_summary', { main: 'cuda:0' })).toEqual([
      { text: 'cuda:0', value: 'main' },
      { text: ' で学習します。' },
    ]);
  });
});
