import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import Cover from '../src/pages/Cover.svelte';
import CoverResults from '../src/components/CoverResults.svelte';
import { app } from '../src/lib/stores.svelte';
import { coverer } from '../src/lib/coverer.svelte';
import { studio } from '../src/lib/studio.svelte';
import { coverConversions, coverSettings, coverVoice, coversOfSong, songsOf, stageRows } from '../src/lib/cover';
import type { DerivedResult, EffectChain } from '../src/lib/api';
import { BACKEND_DEFAULTS, makeConversion, makeJob, makeModel, makeTake, mockBackend } from './helpers';

function derived(id: number, operation: string, voice: string | null = null): DerivedResult {
  return {
    take: makeTake({ id, name: `song (${operation})`, sha256: `${id}`.padStart(64, '0') }),
    link: {
      take_id: id,
      source_take_id: 7,
      operation,
      params: operation === 'cover' ? { voice } : { method: 'rough' },
      job_id: 1,
      created_at: `2026-11-26T10:0${id}:00Z`,
    },
  };
}

const stems = [
  derived(1, 'isolate_vocals'),
  derived(2, 'isolate_instrumental'),
  derived(3, 'cover_converted_vocals'),
  derived(4, 'cover', 'Ada'),
  derived(5, 'cover', null),
  derived(6, 'cover', 'Bo'),
];

describe('cover logic', () => {
  it('turns the form into the settings the backend takes', () => {
    const form = {
      modelId: 2,
      separation: { kind: 'model' as const, name: 'bs_roformer' },
      secondPass: 'dereverb',
      vocalGainDb: -3,
      instrumentalGainDb: 1.5,
      matchLoudness: false,
      format: 'flac' as const,
      effects: null,
    };
    expect(coverSettings(form, BACKEND_DEFAULTS.get_conversion_defaults)).toEqual({
      model_id: 2,
      options: BACKEND_DEFAULTS.get_conversion_defaults,
      separation: { model: 'bs_roformer' },
      second_pass: 'dereverb',
      vocal_gain_db: -3,
      instrumental_gain_db: 1.5,
      match_loudness: false,
      format: 'flac',
      effects: null,
    });
    const defaults = BACKEND_DEFAULTS.get_conversion_defaults;
    expect(coverSettings({ ...form, separation: { kind: 'rough' }, modelId: null }, defaults)).toMatchObject({
      model_id: null,
      options: defaults,
      separation: 'rough',
    });
  });

  it('reads the stages from the progress while running and from the result once done', () => {
    const running = makeJob({ kind: 'cover', state: 'running', message: 'a: b: convert: with Ada' });
    expect(stageRows(running).map((r) => r.state)).toEqual(['ran', 'ran', 'running', 'waiting', 'waiting']);
    const queued = makeJob({ kind: 'cover', state: 'queued', message: '' });
    expect(stageRows(queued).every((r) => r.state === 'waiting')).toBe(true);
    const done = makeJob({
      kind: 'cover',
      state: 'succeeded',
      result: {
        song_take_id: 7,
        stages: [
          { stage: 'isolate', status: 'cached', seconds: 0, detail: '' },
          { stage: 'second_pass', status: 'skipped', seconds: 0, detail: '' },
          { stage: 'convert', status: 'ran', seconds: 3, detail: '' },
          { stage: 'effects', status: 'skipped', seconds: 0, detail: '' },
          { stage: 'remix', status: 'ran', seconds: 1, detail: '' },
        ],
      },
    });
    expect(stageRows(done).map((r) => r.state)).toEqual(['cached', 'skipped', 'ran', 'skipped', 'ran']);
    expect(songsOf([done, makeJob({ id: 2, state: 'failed' })], [done.id, 2])).toEqual([7]);
  });

  it('groups stems and covers, names the voices and finds the covers to compare', () => {
    const grouped = coversOfSong(stems);
    expect(grouped.stems.map((s) => s.take.id)).toEqual([1, 2, 3]);
    expect(grouped.covers.map((c) => coverVoice(c))).toEqual(['Bo', 'original vocals', 'Ada']);
    const conversions = [
      makeConversion({ id: 10, model_id: 1, input_take_id: 7, sha256: stems[3].take.sha256, created_at: '2026-11-26T10:04:00Z' }),
      makeConversion({ id: 11, model_id: 2, input_take_id: 7, sha256: stems[5].take.sha256, created_at: '2026-11-26T10:06:00Z' }),
      // A plain conversion of the song is not a cover.
      makeConversion({ id: 12, model_id: 2, input_take_id: 7, sha256: 'ff'.repeat(32), created_at: '2026-11-26T10:07:00Z' }),
    ];
    expect(coverConversions(conversions, 7, grouped.covers).map((c) => c.id)).toEqual([11, 10]);
  });
});

describe('Cover page', () => {
  it('queues one cover per song with the chosen voice, separation and gains', async () => {
    app.takes = [makeTake({ id: 7, name: 'Song' })];
    const be = mockBackend({
      list_models: () => [makeModel({ id: 1, name: 'Ada' }), makeModel({ id: 2, name: 'Bo' })],
      list_isolation_models: () => ({ dir: '/m', models: [{ name: 'dereverb', checkpoint: '/m/d.ckpt', config: '/m/d.yaml', stems: ['noreverb'], task: 'de_reverb' }, { name: 'bs_roformer', checkpoint: '/m/s.ckpt', config: '/m/s.yaml', stems: ['vocals'], task: 'vocals' }] }),
      list_assets: () => ({ models_dir: '/m', assets: [] }),
      submit_covers: () => [51, 52],
    });
    render(Cover);
    await fireEvent.change(screen.getByTestId('cover-take-picker'), { target: { value: '7' } });
    coverer.addSongs([{ file: '/music/song.flac' }]);
    await waitFor(() => expect(screen.getAllByTestId('cover-song-input')).toHaveLength(2));
    // The first separation model is chosen when there is one.
    await waitFor(() => expect(screen.getByTestId('cover-separation')).toHaveValue('bs_roformer'));
    // Isolation offers the vocals models only; the second pass every voice model, by task.
    const options = (id: string) => [...screen.getByTestId(id).querySelectorAll('option')].map((o) => o.value);
    expect(options('cover-separation')).toEqual(['', 'bs_roformer']);
    const groups = [...screen.getByTestId('cover-second-pass').querySelectorAll('optgroup')];
    expect(groups.map((g) => [g.label, [...g.querySelectorAll('option')].map((o) => o.value)])).toEqual([
      ['Vocals from a mix', ['bs_roformer']],
      ['Remove reverb', ['dereverb']],
    ]);
    await waitFor(() => expect(studio.models).toHaveLength(2));
    await fireEvent.change(screen.getByTestId('cover-voice'), { target: { value: '2' } });
    await fireEvent.input(screen.getByTestId('cover-vocal-gain'), { target: { value: '-3' } });
    await waitFor(() => expect(studio.options).not.toBeNull());
    await fireEvent.click(screen.getByTestId('cover-submit'));
    await waitFor(() => expect(be.argsOf('submit_covers')).toHaveLength(1));
    expect(be.argsOf('submit_covers')[0]).toEqual({
      songs: [{ take: 7 }, { file: '/music/song.flac' }],
      settings: {
        model_id: 2,
        options: BACKEND_DEFAULTS.get_conversion_defaults,
        separation: { model: 'bs_roformer' },
        second_pass: null,
        vocal_gain_db: -3,
        instrumental_gain_db: 0,
        match_loudness: true,
        format: 'wav16',
        effects: null,
      },
    });
    expect(coverer.jobIds).toEqual([51, 52]);
    // Each stage reads on its own, numbered: "1. Isolate vocals: ran", never "ran2. Second pass".
    app.upsertJob(makeJob({ id: 51, kind: 'cover', state: 'running', message: 'a: b: convert: with Ada' }));
    const stages = await screen.findAllByTestId('cover-stage');
    expect(stages.map((s) => s.textContent?.replace(/\s+/g, ' ').trim())).toEqual([
      '1. Isolate vocals: ran',
      '2. Second pass: ran',
      '3. Convert vocals: running',
      '4. Effects: waiting',
      '5. Remix: waiting',
    ]);
  });

  it('shows the chosen effects preset again when the page is opened again', async () => {
    const chain = { effects: [{ type: 'gain', gain_db: -3 }] } as unknown as EffectChain;
    // Each listing is new objects, as over IPC.
    const be = mockBackend({
      list_models: () => [],
      list_isolation_models: () => ({ dir: '/m', models: [] }),
      list_assets: () => ({ models_dir: '/m', assets: [] }),
      list_effect_presets: () => [{ name: 'Quieter', chain: structuredClone(chain), built_in: false, created_at: null, updated_at: null }],
    });
    const first = render(Cover);
    const picked = () => (screen.getByTestId('cover-effects') as HTMLSelectElement).selectedOptions[0]?.textContent;
    await waitFor(() => expect(screen.getAllByRole('option', { name: 'Quieter' })).toHaveLength(1));
    await fireEvent.change(screen.getByTestId('cover-effects'), { target: { selectedIndex: 1 } });
    expect(coverer.form.effects).toEqual(chain);
    first.unmount();
    render(Cover);
    await waitFor(() => expect(be.argsOf('list_effect_presets')).toHaveLength(2));
    await waitFor(() => expect(picked()).toBe('Quieter'));
    expect(coverer.form.effects).toEqual(chain);
  });

  it('sends the covers of a song with a voice to the Compare page', async () => {
    app.takes = [makeTake({ id: 7, name: 'Song', sha256: 'cd'.repeat(32) })];
    mockBackend({
      list_cover_stems: () => stems,
      list_conversions: () => [
        makeConversion({ id: 10, model_id: 1, input_take_id: 7, sha256: stems[3].take.sha256 }),
        makeConversion({ id: 11, model_id: 2, input_take_id: 7, sha256: stems[5].take.sha256 }),
      ],
    });
    render(CoverResults, { songId: 7 });
    await waitFor(() => expect(screen.getAllByTestId('cover-stem')).toHaveLength(6));
    await fireEvent.click(screen.getByTestId('cover-compare'));
    await waitFor(() => expect(app.page).toBe('compare'));
    expect(studio.compareInput).toBe('cd'.repeat(32));
    expect([...studio.compareIds].sort()).toEqual([10, 11]);
  });
});
