import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Library from '../src/pages/Library.svelte';
import { app } from '../src/lib/stores.svelte';
import { DRAG_THRESHOLD_PX, foreignPaths } from '../src/lib/dragOut';
import { installFakeAudio, makeConversion, makeTake, makeVoice, mockBackend } from './helpers';

const takes = [
  makeTake({ id: 1, name: 'Verse A', duration_secs: 3.24, tags: ['dry'] }),
  makeTake({ id: 2, name: 'Chorus', duration_secs: 75.05, voice_id: 3, loudness_lufs: null, channels: 2 }),
];

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  return mockBackend({
    list_voices: () => [makeVoice({ id: 3, name: 'Alto', take_count: 1 })],
    list_takes: (a) => (a.voiceId === 3 ? takes.filter((t) => t.voice_id === 3) : takes),
    list_conversions: () => [],
    list_derived_links: () => [],
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
    mockBackend({ list_voices: () => [], list_takes: () => [], list_conversions: () => [], list_derived_links: () => [] });
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

const conversions = [
  makeConversion({ id: 11, input_take_id: 1, model_name: 'Ada', params: { transpose: 3, f0_method: 'rmvpe' } }),
  makeConversion({ id: 12, input_take_id: 2, model_name: 'Bo', params: { transpose: 0, f0_method: 'fcpe' } }),
  makeConversion({ id: 13, input_take_id: 1, model_name: 'Bo', params: { transpose: -2, f0_method: 'pm' } }),
  makeConversion({ id: 14, input_take_id: null, input_path: '/music/demo.flac', model_name: 'Ada' }),
];

const toast = (text: string) => app.notices.find((n) => n.text.startsWith(text));

describe('Library page: conversions, export and batch actions', () => {
  it("groups each take's conversions under it, folded, and files outside the library by name, from one list call", async () => {
    installFakeAudio();
    const be = backend({ list_conversions: () => conversions, get_conversion_audio: () => [50, 1, 2], delete_conversion: () => null });
    render(Library);
    const groups = await screen.findAllByTestId('conversion-group');
    expect(groups.map((g) => g.dataset.input)).toEqual(['Verse A', 'Chorus', 'demo.flac']);
    expect(be.argsOf('list_conversions')).toEqual([{ inputSha256: null }]);
    expect(within(groups[0]).getByTestId('conversion-group-toggle')).toHaveTextContent('2 conversions');
    expect(within(groups[0]).queryAllByTestId('conversion-row')).toHaveLength(0);
    expect(screen.getByTestId('file-conversions')).toHaveTextContent('demo.flac');

    await fireEvent.click(within(groups[0]).getByTestId('conversion-group-toggle'));
    const rows = within(groups[0]).getAllByTestId('conversion-row');
    expect(rows.map((r) => r.dataset.conversionId)).toEqual(['11', '13']);
    expect(rows[0]).toHaveTextContent('Ada');
    expect(rows[0]).toHaveTextContent('+3 st · rmvpe');
    expect(rows[1]).toHaveTextContent('-2 st · pm');
    expect(rows[0]).toHaveTextContent('0:03.2');

    await fireEvent.click(within(rows[0]).getByTestId('conversion-row-play'));
    await waitFor(() => expect(app.playback.conversionId).toBe(11));
    expect(be.argsOf('get_conversion_audio')).toEqual([{ id: 11 }]);

    await fireEvent.click(within(rows[1]).getByTestId('conversion-delete'));
    expect(be.argsOf('delete_conversion')).toEqual([]);
    await fireEvent.click(within(rows[1]).getByTestId('conversion-delete-confirm'));
    await waitFor(() => expect(be.argsOf('delete_conversion')).toEqual([{ id: 13 }]));
    await waitFor(() => expect(within(groups[0]).getAllByTestId('conversion-row')).toHaveLength(1));
  });

  it('exports a take and a conversion through the save dialog under their default names', async () => {
    const be = backend({
      list_conversions: () => conversions,
      get_export_name: (a) => (a.item.kind === 'take' ? 'Verse A.wav' : 'Verse A (Ada, +3 st).wav'),
      'plugin:dialog|save': (a) => `/home/me/${a.options.defaultPath.replace('.wav', '.flac')}`,
      export_library_item: (a) => a.path,
      reveal_file: () => null,
    });
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];
    await fireEvent.click(within(row).getByTestId('take-export'));
    await waitFor(() => expect(be.argsOf('export_library_item')).toHaveLength(1));
    expect(be.argsOf('get_export_name')[0]).toEqual({ item: { kind: 'take', id: 1 } });
    const { options } = be.argsOf('plugin:dialog|save')[0];
    expect(options.defaultPath).toBe('Verse A.wav');
    expect(options.filters[0].extensions).toEqual(['wav', 'flac', 'mp3', 'ogg', 'opus']);
    expect(be.argsOf('export_library_item')[0]).toEqual({ item: { kind: 'take', id: 1 }, path: '/home/me/Verse A.flac' });
    await waitFor(() => expect(toast('Exported to /home/me/Verse A.flac')).toBeDefined());

    toast('Exported to')!.action!.run();
    await waitFor(() => expect(be.argsOf('reveal_file')).toEqual([{ path: '/home/me/Verse A.flac' }]));

    const group = screen.getAllByTestId('conversion-group')[0];
    await fireEvent.click(within(group).getByTestId('conversion-group-toggle'));
    await fireEvent.click(within(group).getAllByTestId('conversion-export')[0]);
    await waitFor(() => expect(be.argsOf('export_library_item')).toHaveLength(2));
    expect(be.argsOf('export_library_item')[1]).toEqual({
      item: { kind: 'conversion', id: 11 },
      path: '/home/me/Verse A (Ada, +3 st).flac',
    });
  });

  it('writes nothing when the save dialog is cancelled, and shows a failed export', async () => {
    const be = backend({
      get_export_name: () => 'Verse A.wav',
      'plugin:dialog|save': () => null,
      export_library_item: () => {
        throw { kind: 'disk_full', message: 'the disk holding /mnt/usb is full' };
      },
    });
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];
    await fireEvent.click(within(row).getByTestId('take-export'));
    await waitFor(() => expect(be.argsOf('plugin:dialog|save')).toHaveLength(1));
    expect(be.argsOf('export_library_item')).toEqual([]);

    mockBackend({
      list_voices: () => [],
      list_takes: () => takes,
      get_export_name: () => 'Verse A.wav',
      'plugin:dialog|save': () => '/mnt/usb/Verse A.wav',
      export_library_item: () => {
        throw { kind: 'disk_full', message: 'the disk holding /mnt/usb is full' };
      },
    });
    await fireEvent.click(within(row).getByTestId('take-export'));
    await waitFor(() => expect(app.notices.some((n) => n.level === 'error')).toBe(true));
    expect(app.notices.find((n) => n.level === 'error')!.text).toContain('the disk holding /mnt/usb is full');
  });

  it("folds a cover's and a cleaning's takes under their song, the cover first", async () => {
    const song = makeTake({ id: 20, name: 'Song' });
    const made = (id: number, name: string) => makeTake({ id, name });
    const link = (takeId: number, sourceId: number, operation: string) => ({
      take_id: takeId,
      source_take_id: sourceId,
      operation,
      params: {},
      job_id: null,
      created_at: '2026-11-20T10:00:00Z',
    });
    const listed = [made(22, 'Song (vocals)'), made(21, 'Song (Ada cover)'), made(24, 'Song (vocals, cleaned)'), song, takes[0]];
    backend({
      list_takes: () => listed,
      list_derived_links: () => [
        link(22, 20, 'isolate_vocals'),
        link(21, 20, 'cover'),
        link(24, 22, 'enhance'),
      ],
    });
    render(Library);
    await waitFor(() =>
      expect(screen.getAllByTestId('take-row').map((r) => r.dataset.takeName)).toEqual(['Song', 'Verse A']),
    );
    const group = screen.getByTestId('derived-group');
    expect(group.dataset.source).toBe('Song');
    expect(within(group).getByTestId('derived-group-toggle')).toHaveTextContent('3 takes made from it');
    await fireEvent.click(within(group).getByTestId('derived-group-toggle'));
    expect(within(group).getAllByTestId('take-row').map((r) => r.dataset.takeName)).toEqual([
      'Song (Ada cover)',
      'Song (vocals)',
      'Song (vocals, cleaned)',
    ]);
  });

  it('exports the ticked takes and conversions into a chosen folder', async () => {
    const be = backend({
      list_conversions: () => conversions,
      'plugin:dialog|open': () => '/home/me/out',
      export_library_items: (a) => a.items.map((i: { id: number }) => `/home/me/out/${i.id}.wav`),
    });
    render(Library);
    const rows = await screen.findAllByTestId('take-select');
    expect(screen.queryByTestId('library-batch')).toBeNull();
    await fireEvent.click(rows[1]);
    const group = screen.getAllByTestId('conversion-group')[2];
    await fireEvent.click(within(group).getByTestId('conversion-group-toggle'));
    await fireEvent.click(within(group).getByTestId('conversion-select'));
    expect(screen.getByTestId('library-batch')).toHaveTextContent('2 items selected');
    await fireEvent.click(screen.getByTestId('library-batch-export'));
    await waitFor(() => expect(be.argsOf('export_library_items')).toHaveLength(1));
    expect(be.argsOf('plugin:dialog|open')[0].options.directory).toBe(true);
    expect(be.argsOf('export_library_items')[0]).toEqual({
      items: [
        { kind: 'take', id: 2 },
        { kind: 'conversion', id: 14 },
      ],
      dir: '/home/me/out',
    });
    await waitFor(() => expect(toast('Exported 2 files to /home/me/out')).toBeDefined());
    expect(screen.queryByTestId('library-batch')).toBeNull();
  });

  it('drags a row out of the window once the pressed pointer moves, the ticked rows with it', async () => {
    const copy = '/data/drag-out/drag-1/Verse A.wav';
    const be = backend({ list_conversions: () => conversions, start_drag_out: () => [copy] });
    render(Library);
    const rows = await screen.findAllByTestId('take-row');
    const press = (on: Element, dx: number) => {
      fireEvent.pointerDown(on, { button: 0, buttons: 1, clientX: 100, clientY: 40 });
      fireEvent.pointerMove(on, { buttons: 1, clientX: 100 + dx, clientY: 40 });
      fireEvent.pointerUp(on, { button: 0, clientX: 100 + dx, clientY: 40 });
    };
    press(within(rows[0]).getByTestId('take-duration'), DRAG_THRESHOLD_PX - 1);
    press(within(rows[0]).getByTestId('take-rename'), 20);
    expect(be.argsOf('start_drag_out'), 'a click, or a press on a control, is not a drag').toEqual([]);

    press(within(rows[0]).getByTestId('take-duration'), DRAG_THRESHOLD_PX);
    await waitFor(() => expect(be.argsOf('start_drag_out')).toEqual([{ items: [{ kind: 'take', id: 1 }] }]));
    await waitFor(() =>
      expect(foreignPaths([copy, '/in/new.wav']), 'a copy dropped back on the window is no new file').toEqual(['/in/new.wav']),
    );

    await fireEvent.click(screen.getAllByTestId('take-select')[1]);
    const group = screen.getAllByTestId('conversion-group')[2];
    await fireEvent.click(within(group).getByTestId('conversion-group-toggle'));
    await fireEvent.click(within(group).getByTestId('conversion-select'));
    press(within(group).getByTestId('conversion-row'), 30);
    await waitFor(() => expect(be.argsOf('start_drag_out')).toHaveLength(2));
    expect(be.argsOf('start_drag_out')[1].items).toEqual([
      { kind: 'take', id: 2 },
      { kind: 'conversion', id: 14 },
    ]);
  });

  it('says why a drag out failed', async () => {
    backend({
      start_drag_out: () => {
        throw { kind: 'disk_full', message: '/data/drag-out: the disk is full' };
      },
    });
    render(Library);
    const row = (await screen.findAllByTestId('take-row'))[0];
    fireEvent.pointerDown(row, { button: 0, buttons: 1, clientX: 10, clientY: 10 });
    fireEvent.pointerMove(row, { buttons: 1, clientX: 40, clientY: 10 });
    await waitFor(() =>
      expect(app.notices.find((n) => n.text.includes('Could not drag') && n.text.includes('the disk is full'))).toBeDefined(),
    );
  });

  it('deletes the ticked rows only once Undo has lapsed; Undo keeps them', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      let listed = [...takes];
      const be = backend({
        list_takes: () => listed,
        delete_take: (a) => {
          listed = listed.filter((t) => t.id !== a.id);
          return null;
        },
      });
      render(Library);
      await fireEvent.click((await screen.findAllByTestId('take-select'))[1]);
      await fireEvent.click(screen.getByTestId('library-batch-delete'));
      await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(1));
      toast('Deleted 1 item')!.action!.run();
      await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(2));
      await vi.advanceTimersByTimeAsync(10_000);
      expect(be.argsOf('delete_take')).toEqual([]);

      await fireEvent.click(screen.getAllByTestId('take-select')[1]);
      await fireEvent.click(screen.getByTestId('library-batch-delete'));
      await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(1));
      expect(be.argsOf('delete_take')).toEqual([]);
      await vi.advanceTimersByTimeAsync(6_000);
      await waitFor(() => expect(be.argsOf('delete_take')).toEqual([{ id: 2 }]));
      await waitFor(() => expect(screen.getAllByTestId('take-row').map((r) => r.dataset.takeId)).toEqual(['1']));
    } finally {
      vi.useRealTimers();
    }
  });
});
