import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Library from '../src/pages/Library.svelte';
import { app } from '../src/lib/stores.svelte';
import { makeTake, makeVoice, mockBackend } from './helpers';

const takes = [
  makeTake({ id: 1, name: 'Verse A', duration_secs: 3.24, tags: ['dry'] }),
  makeTake({ id: 2, name: 'Chorus', duration_secs: 75.05, voice_id: 3, loudness_lufs: null, channels: 2 }),
];

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  return mockBackend({
    list_voices: () => [makeVoice({ id: 3, name: 'Alto', take_count: 1 })],
    list_takes: (a) => (a.voiceId === 3 ? takes.filter((t) => t.voice_id === 3) : takes),
    ...extra,
  });
}

describe('Library page', () => {
  it('renders takes from list_takes', async () => {
    const be = backend();
    render(Library);
    const rows = await screen.findAllByTestId('take-row');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveAttribute('data-take-id', '1');
    expect(rows[0]).toHaveAttribute('data-take-name', 'Verse A');
    expect(within(rows[0]).getByTestId('take-duration')).toHaveTextContent('0:03.2');
    expect(within(rows[1]).getByTestId('take-duration')).toHaveTextContent('1:15.1');
    expect(rows[0]).toHaveTextContent('-3.1 dBFS');
    expect(rows[0]).toHaveTextContent('-18.3 LUFS');
    expect(rows[0]).toHaveTextContent('48 kHz · mono');
    expect(rows[1]).toHaveTextContent('stereo');
    expect(within(rows[0]).getByTestId('take-tags')).toHaveTextContent('dry');
    expect(be.argsOf('list_takes')[0]).toEqual({ voiceId: null });
    expect(screen.getByTestId('voice-item')).toHaveTextContent('Alto');
  });

  it('renames a take inline through rename_take', async () => {
    const be = backend({ rename_take: (a) => ({ ...takes[0], name: a.name }) });
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];
    await fireEvent.click(within(row).getByTestId('take-rename'));
    const input = within(row).getByTestId('take-rename-input') as HTMLInputElement;
    expect(input.value).toBe('Verse A');
    await fireEvent.input(input, { target: { value: '  Verse A (final)  ' } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    await waitFor(() => expect(be.argsOf('rename_take')).toEqual([{ id: 1, name: 'Verse A (final)' }]));
    await waitFor(() =>
      expect(screen.getAllByTestId('take-row')[0]).toHaveAttribute('data-take-name', 'Verse A (final)'),
    );
    expect(screen.queryByTestId('take-rename-input')).toBeNull();
  });

  it('does not call rename_take when Escape cancels', async () => {
    const be = backend();
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];
    await fireEvent.click(within(row).getByTestId('take-rename'));
    const input = within(row).getByTestId('take-rename-input');
    await fireEvent.input(input, { target: { value: 'Nope' } });
    await fireEvent.keyDown(input, { key: 'Escape' });
    expect(be.argsOf('rename_take')).toEqual([]);
  });

  it('edits tags, assigns a voice and deletes after confirmation', async () => {
    const be = backend({
      set_take_tags: (a) => ({ ...takes[0], tags: a.tags }),
      set_take_voice: (a) => ({ ...takes[0], voice_id: a.voiceId }),
      delete_take: () => null,
    });
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];

    await fireEvent.click(within(row).getByTestId('take-tags-edit'));
    const tags = within(row).getByTestId('take-tags-input');
    await fireEvent.input(tags, { target: { value: 'warm, breathy,warm' } });
    await fireEvent.keyDown(tags, { key: 'Enter' });
    await waitFor(() => expect(be.argsOf('set_take_tags')).toEqual([{ id: 1, tags: ['warm', 'breathy'] }]));

    await fireEvent.change(within(row).getByTestId('take-voice'), { target: { value: '3' } });
    await waitFor(() => expect(be.argsOf('set_take_voice')).toEqual([{ id: 1, voiceId: 3 }]));

    await fireEvent.click(within(row).getByTestId('take-delete'));
    expect(be.argsOf('delete_take')).toEqual([]);
    await fireEvent.click(within(row).getByTestId('take-delete-confirm'));
    await waitFor(() => expect(be.argsOf('delete_take')).toEqual([{ id: 1 }]));
    await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(1));
  });

  it('filters by voice', async () => {
    const be = backend();
    render(Library);
    await screen.findAllByTestId('take-row');
    await fireEvent.click(screen.getByTestId('voice-item'));
    await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(1));
    expect(be.argsOf('list_takes').at(-1)).toEqual({ voiceId: 3 });
    expect(app.voiceFilter).toBe(3);
    expect(screen.getByTestId('library-title')).toHaveTextContent('Alto');
  });

  it('shows an empty state that explains how to add takes', async () => {
    mockBackend({ list_voices: () => [], list_takes: () => [] });
    render(Library);
    const empty = await screen.findByTestId('library-empty');
    expect(empty).toHaveTextContent('Import audio files or drop them anywhere on this window, or record a new take.');
    expect(empty.textContent).not.toMatch(/,\s*,/);
  });

  it("shows a take's pitch curve, tracked again with another method", async () => {
    const be = backend({
      analyze_pitch: (a) => ({
        input: 'Verse A',
        method: a.f0Method,
        frame_secs: 0.01,
        f0: [0, 220, 221, 0, 0, 330, 331, 332],
        voiced_frames: 5,
        median_hz: 330,
      }),
    });
    render(Library);
    const rows = await screen.findAllByTestId('take-row');
    await fireEvent.click(within(rows[0]).getByTestId('take-pitch'));
    await waitFor(() => expect(screen.getByTestId('pitch-summary')).toHaveTextContent('5 of 8 frames voiced, median 330.0 Hz'));
    expect(screen.getAllByTestId('pitch-line')).toHaveLength(2);
    expect(be.argsOf('analyze_pitch')[0]).toEqual({ takeId: 1, f0Method: 'pm' });
    await fireEvent.change(screen.getByTestId('pitch-method'), { target: { value: 'fcpe' } });
    await waitFor(() => expect(be.argsOf('analyze_pitch')).toHaveLength(2));
    expect(be.argsOf('analyze_pitch')[1]).toEqual({ takeId: 1, f0Method: 'fcpe' });
  });
});
