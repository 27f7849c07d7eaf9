import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Compare from '../src/pages/Compare.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import type { ListeningTest } from '../src/lib/api';
import { FakeAudioContext, installFakeAudio, makeConversion, makeModel, makeTake, mockBackend } from './helpers';

const SHA = 'aa'.repeat(32);
const conversions = [
  makeConversion({ id: 11, model_id: 1, model_name: 'Ada', input_sha256: SHA, input_take_id: 7 }),
  makeConversion({ id: 12, model_id: 2, model_name: 'Bo', input_sha256: SHA, input_take_id: 7 }),
  makeConversion({ id: 13, model_id: 1, model_name: 'Ada', input_sha256: 'ff'.repeat(32), input_take_id: null, input_path: '/x/other.wav' }),
];

/** Audio levels: Ada 0.5, Bo 0.25, the original 0.4 (the fake decoder reads the first byte). */
function backend(extra: Record<string, (a: any) => unknown> = {}) {
  installFakeAudio();
  app.takes = [makeTake({ id: 7, name: 'Verse', sha256: SHA })];
  const tests: ListeningTest[] = [];
  const be = mockBackend({
    list_conversions: () => conversions,
    list_models: () => [makeModel({ id: 1, name: 'Ada' }), makeModel({ id: 2, name: 'Bo' }), makeModel({ id: 3, name: 'Cy' })],
    list_listening_tests: () => tests,
    get_conversion_audio: (a) => [a.id === 11 ? 50 : 25],
    get_conversion_input_audio: () => [40],
    record_listening_test: (a) => {
      const test: ListeningTest = {
        id: tests.length + 1,
        mode: a.mode,
        input_sha256: SHA,
        conversion_ids: a.conversionIds,
        hidden_conversion_id: a.hidden,
        chosen_conversion_id: a.chosen,
        correct: a.mode === 'abx' ? a.hidden === a.chosen : null,
        loudness_matched: a.loudnessMatched,
        created_at: '2026-11-20T11:00:00Z',
      };
      tests.unshift(test);
      return test;
    },
    ...extra,
  });
  return be;
}

async function openPlayer() {
  studio.openCompare(SHA, [11, 12]);
  render(Compare);
  const ab = await screen.findByTestId('ab-player');
  await fireEvent.click(screen.getByTestId('ab-play'));
  await waitFor(() => expect(ab).toHaveAttribute('data-state', 'playing'));
  return { ab, ctx: FakeAudioContext.last! };
}

const slot = (key: string) => screen.getAllByTestId('ab-slot').find((s) => s.dataset.slot === key)!;

describe('Compare page', () => {
  it('lists the conversions of the chosen input and queues the missing models', async () => {
    const be = backend({ submit_conversions: () => [90] });
    render(Compare);
    expect(await screen.findByTestId('compare-empty')).toBeInTheDocument();
    await waitFor(() => expect(studio.conversions).toHaveLength(3));
    await fireEvent.change(screen.getByTestId('compare-input'), { target: { value: SHA } });
    await waitFor(() => expect(screen.getAllByTestId('compare-output')).toHaveLength(2));
    // The newest of each model is chosen for listening.
    expect(studio.compareIds).toEqual([11, 12]);
    const missing = screen.getAllByTestId('compare-queue-model');
    expect(missing.map((m) => m.dataset.modelName)).toEqual(['Cy']);
    await fireEvent.click(within(missing[0]).getByRole('checkbox'));
    await fireEvent.click(screen.getByTestId('compare-queue-submit'));
    await waitFor(() => expect(be.argsOf('submit_conversions')).toHaveLength(1));
    expect(be.argsOf('submit_conversions')[0]).toMatchObject({ inputs: [{ take: 7 }], modelIds: [3] });
    expect(studio.convertJobIds).toEqual([90]);
  });

  it('plays every output and the original together and switches by gain, keeping the position', async () => {
    const be = backend();
    const { ab, ctx } = await openPlayer();
    expect(be.argsOf('get_conversion_audio')).toEqual([{ id: 11 }, { id: 12 }]);
    expect(be.argsOf('get_conversion_input_audio')).toEqual([{ id: 11 }]);
    expect(ctx.sources).toHaveLength(3);
    expect(ab).toHaveAttribute('data-active', 'c11');
    expect(ctx.gains.map((g) => g.gain.value)).toEqual([1, 0, 0]);

    ctx.currentTime = 1.53;
    await fireEvent.keyDown(window, { key: '2' });
    expect(ab).toHaveAttribute('data-active', 'c12');
    expect(ctx.gains.map((g) => g.gain.value)).toEqual([0, 1, 0]);
    expect(ab).toHaveAttribute('data-position', '1.500');
    expect(ab).toHaveAttribute('data-starts', '1');
    expect(ctx.sources).toHaveLength(3);
    expect(ctx.sources.every((s) => s.started && s.stops === 0)).toBe(true);

    await fireEvent.click(slot('original'));
    expect(ctx.gains.map((g) => g.gain.value)).toEqual([0, 0, 1]);
    await fireEvent.keyDown(window, { key: '1' });
    expect(ab).toHaveAttribute('data-active', 'c11');
    expect(ab).toHaveAttribute('data-starts', '1');

    // Seeking restarts all three at the new point.
    await fireEvent.input(screen.getByTestId('ab-seek'), { target: { value: '0.5' } });
    expect(ctx.sources).toHaveLength(6);
    expect(ctx.sources.slice(3).every((s) => s.startedWith[1] === 0.5)).toBe(true);
    expect(ab).toHaveAttribute('data-starts', '2');

    // Space pauses where it is (the seek restarted the sources 30 ms ahead, at 1.56).
    ctx.currentTime = 2.06;
    await fireEvent.keyDown(window, { key: ' ' });
    expect(ab).toHaveAttribute('data-state', 'paused');
    expect(ab).toHaveAttribute('data-position', '1.000');
    expect(ctx.sources.slice(3).every((s) => s.stops === 1)).toBe(true);
  });

  it('matches loudness and shows the gain applied to each', async () => {
    backend();
    const { ctx } = await openPlayer();
    expect(screen.queryAllByTestId('ab-gain')).toHaveLength(0);
    await fireEvent.click(screen.getByTestId('ab-match'));
    expect(within(slot('c11')).getByTestId('ab-gain')).toHaveTextContent('-6.0 dB');
    expect(within(slot('c12')).getByTestId('ab-gain')).toHaveTextContent('0.0 dB');
    expect(within(slot('original')).getByTestId('ab-gain')).toHaveTextContent('-4.1 dB');
    expect(ctx.gains[0].gain.value).toBeCloseTo(0.5, 5);
  });

  it('runs a blind ABX test: X is hidden, the vote is recorded, revealed and scored', async () => {
    const be = backend();
    const { ab, ctx } = await openPlayer();
    vi.spyOn(Math, 'random').mockReturnValue(0.9); // X = B (12)
    await fireEvent.click(screen.getByTestId('ab-match'));
    await fireEvent.click(screen.getByTestId('ab-blind'));
    expect(screen.getAllByTestId('ab-slot').map((s) => s.dataset.slot)).toEqual(['a', 'b', 'x', 'original']);
    expect(slot('x')).toHaveTextContent('hidden');
    expect(within(slot('x')).queryByTestId('ab-gain')).toBeNull();

    await fireEvent.click(screen.getByTestId('ab-play'));
    await waitFor(() => expect(ab).toHaveAttribute('data-state', 'playing'));
    const gains = () => FakeAudioContext.last!.gains.slice(-3).map((g) => g.gain.value);
    await fireEvent.keyDown(window, { key: '3' });
    expect(ab).toHaveAttribute('data-active', 'x');
    expect(gains()[1]).toBe(1); // B's track is heard
    expect(FakeAudioContext.last).toBe(ctx);

    await fireEvent.click(screen.getByTestId('abx-vote-a'));
    await waitFor(() => expect(be.argsOf('record_listening_test')).toHaveLength(1));
    expect(be.argsOf('record_listening_test')[0]).toEqual({
      mode: 'abx',
      conversionIds: [11, 12],
      hidden: 12,
      chosen: 11,
      loudnessMatched: true,
    });
    const result = await screen.findByTestId('abx-result');
    expect(result).toHaveAttribute('data-correct', 'false');
    expect(result).toHaveTextContent('X was B (Bo)');
    expect(screen.getByTestId('abx-score')).toHaveTextContent('0 / 1 correct');
    expect(screen.getByTestId('abx-vote-b')).toBeDisabled();

    vi.spyOn(Math, 'random').mockReturnValue(0.1); // X = A (11)
    await fireEvent.click(screen.getByTestId('abx-next'));
    expect(gains()[0]).toBeCloseTo(0.5, 5); // X still selected, now A's track (loudness matched)
    expect(gains()[1]).toBe(0);
    await fireEvent.click(screen.getByTestId('abx-vote-a'));
    await waitFor(() => expect(screen.getByTestId('abx-score')).toHaveTextContent('1 / 2 correct'));
    expect(be.argsOf('record_listening_test')[1]).toMatchObject({ hidden: 11, chosen: 11 });
    await waitFor(() => expect(screen.getByTestId('history-blind')).toHaveAttribute('data-correct', '1'));
    expect(screen.getByTestId('history-blind')).toHaveAttribute('data-trials', '2');
  });

  it('records a preference in A/B mode', async () => {
    const be = backend();
    await openPlayer();
    await fireEvent.keyDown(window, { key: '2' });
    await fireEvent.click(screen.getByTestId('ab-prefer'));
    await waitFor(() =>
      expect(be.argsOf('record_listening_test')).toEqual([
        { mode: 'ab', conversionIds: [11, 12], hidden: null, chosen: 12, loudnessMatched: false },
      ]),
    );
  });
});
