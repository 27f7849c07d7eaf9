import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import Clean from '../src/pages/Clean.svelte';
import CleanAb from '../src/components/CleanAb.svelte';
import { app } from '../src/lib/stores.svelte';
import { cleaner } from '../src/lib/cleaner.svelte';
import { studio } from '../src/lib/studio.svelte';
import { i18n } from '../src/lib/i18n.svelte';
import { enhanceOptions, isolationMethod, sourcesOf, stepOn, withStep } from '../src/lib/clean';
import type { EnhanceOptions, EnhancePresets } from '../src/lib/api';
import { FakeAudioContext, installFakeAudio, makeJob, makeTake, mockBackend } from './helpers';

const training: EnhanceOptions = {
  mono: true,
  high_pass_hz: 80,
  declick: true,
  denoise_strength: 1,
  trim: { margin_secs: 0.2, max_pause_secs: 0.6, aggressiveness: 1 },
  loudness_lufs: -20,
  true_peak_ceiling_db: -1,
};
const natural: EnhanceOptions = { ...training, mono: false, high_pass_hz: 40, denoise_strength: 0.5, trim: null, loudness_lufs: -23 };
const presets: EnhancePresets = { training, natural };

describe('clean choices', () => {
  it('turns steps on from the base preset and off to null', () => {
    expect(stepOn(natural, 'trim')).toBe(false);
    const trimmed = withStep(natural, 'trim', true, training);
    expect(trimmed.trim).toEqual(training.trim);
    expect(trimmed.trim).not.toBe(training.trim);
    expect(withStep(trimmed, 'denoise', false, training).denoise_strength).toBeNull();
    expect(withStep(natural, 'mono', true, training).mono).toBe(true);
    // A base without the step falls back to a sensible setting.
    expect(withStep({ ...natural, loudness_lufs: null }, 'loudness', true, { ...training, loudness_lufs: null }).loudness_lufs).toBe(-20);
  });

  it('maps the choices onto what the backend takes', () => {
    expect(enhanceOptions('none', presets, natural)).toBeNull();
    expect(enhanceOptions('natural', presets, training)).toEqual(natural);
    expect(enhanceOptions('custom', presets, training)).toEqual(training);
    expect(() => enhanceOptions('training', null, natural)).toThrow(/not loaded/);
    expect(isolationMethod({ kind: 'none' })).toBeNull();
    expect(isolationMethod({ kind: 'rough' })).toBe('rough');
    expect(isolationMethod({ kind: 'model', name: 'bs_roformer' })).toEqual({ model: 'bs_roformer' });
  });

  it('lists the sources of succeeded jobs once, newest first', () => {
    const jobs = [
      makeJob({ id: 1, kind: 'enhance', state: 'succeeded', result: { source_take_id: 7 } }),
      makeJob({ id: 2, kind: 'isolate', state: 'failed' }),
      makeJob({ id: 3, kind: 'isolate', state: 'succeeded', result: { source_take_id: 9 } }),
      makeJob({ id: 4, kind: 'enhance', state: 'succeeded', result: { source_take_id: 7 } }),
      makeJob({ id: 5, kind: 'enhance', state: 'succeeded', result: { source_take_id: 11 } }),
    ];
    expect(sourcesOf(jobs, [1, 2, 3, 4])).toEqual([7, 9]);
  });
});

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  app.takes = [makeTake({ id: 7, name: 'Verse' }), makeTake({ id: 8, name: 'Chorus' })];
  return mockBackend({
    list_enhance_presets: () => presets,
    list_isolation_models: () => ({ dir: '/m', models: [{ name: 'bs_roformer', checkpoint: '/m/separation/bs_roformer.ckpt', config: '/m/separation/bs_roformer.yaml', stems: ['vocals'], task: 'vocals' }, { name: 'dereverb', checkpoint: '/m/separation/dereverb.ckpt', config: '/m/separation/dereverb.yaml', stems: ['noreverb'], task: 'de_reverb' }] }),
    ...extra,
  });
}

describe('Clean page', () => {
  it('queues a batch with the chosen isolation and preset', async () => {
    const be = backend({ submit_cleaning: () => [41, 42] });
    render(Clean);
    await fireEvent.change(screen.getByTestId('clean-take-picker'), { target: { value: '7' } });
    cleaner.addInputs([{ file: '/audio/mix.flac' }]);
    await waitFor(() => expect(screen.getAllByTestId('clean-input')).toHaveLength(2));
    await waitFor(() => expect(screen.getByTestId('clean-submit')).toBeEnabled());
    expect(screen.getByTestId('clean-isolation')).toHaveTextContent('Rough preview (no model)');
    // A de-reverb model does not isolate vocals from a mix: it is not offered.
    await waitFor(() => expect(screen.getByTestId('clean-isolation')).toHaveTextContent('bs_roformer'));
    expect(screen.getByTestId('clean-isolation')).not.toHaveTextContent('dereverb');
    await fireEvent.change(screen.getByTestId('clean-isolation'), { target: { value: 'model:bs_roformer' } });
    await fireEvent.click(screen.getByTestId('clean-preset-training'));
    await fireEvent.click(screen.getByTestId('clean-submit'));
    await waitFor(() => expect(be.argsOf('submit_cleaning')).toHaveLength(1));
    expect(be.argsOf('submit_cleaning')[0]).toEqual({
      inputs: [{ take: 7 }, { file: '/audio/mix.flac' }],
      isolation: { model: 'bs_roformer' },
      enhance: training,
    });
    expect(cleaner.jobIds).toEqual([41, 42]);
  });

  it("counts the jobs of a batch in the language's plural forms", async () => {
    backend();
    cleaner.addInputs([{ take: 7 }]);
    render(Clean);
    const submit = screen.getByTestId('clean-submit');
    expect(submit.textContent?.trim()).toBe('Clean');
    cleaner.addInputs([{ take: 8 }]);
    await waitFor(() => expect(submit.textContent?.trim()).toBe('Clean (2 jobs)'));
    i18n.choose('ru');
    await waitFor(() => expect(submit.textContent?.trim()).toBe('Очистить (2 задачи)'));
    cleaner.addInputs([{ file: '/a/3.wav' }, { file: '/a/4.wav' }, { file: '/a/5.wav' }]);
    await waitFor(() => expect(submit.textContent?.trim()).toBe('Очистить (5 задач)'));
  });

  it('switches to custom steps from the preset when a step is changed, and says a rough preview is rough', async () => {
    const be = backend({ submit_cleaning: () => [5] });
    cleaner.addInputs([{ take: 8 }]);
    render(Clean);
    await waitFor(() => expect(screen.getByTestId('clean-step-trim')).not.toBeChecked());
    await fireEvent.click(screen.getByTestId('clean-step-trim'));
    expect(screen.getByTestId('clean-preset-custom')).toBeChecked();
    await fireEvent.change(screen.getByTestId('clean-isolation'), { target: { value: 'rough' } });
    expect(screen.getByTestId('clean-rough-note')).toHaveTextContent('rough preview without a model');
    // A RoFormer is installed: the note points to it, not to where one would go.
    expect(screen.getByTestId('clean-rough-note')).toHaveTextContent('Choose a RoFormer above for one.');
    expect(screen.getByTestId('clean-rough-note')).not.toHaveTextContent('Put a RoFormer');
    await fireEvent.click(screen.getByTestId('clean-submit'));
    await waitFor(() => expect(be.argsOf('submit_cleaning')).toHaveLength(1));
    expect(be.argsOf('submit_cleaning')[0]).toEqual({ inputs: [{ take: 8 }], isolation: 'rough', enhance: { ...natural, trim: training.trim } });
  });

  it('previews 10 s from the given start and plays the cleaned excerpt', async () => {
    installFakeAudio();
    const info = { start_secs: 3, secs: 10, input_secs: 30, rough_preview: false, model: null, notes: ['a note'] };
    const be = backend({ preview_cleaning: () => info, get_preview_audio: (a) => new Uint8Array([a.part === 'cleaned' ? 20 : 40]) });
    cleaner.addInputs([{ take: 7 }]);
    render(Clean);
    await waitFor(() => expect(screen.getByTestId('clean-preview-run')).toBeEnabled());
    await fireEvent.input(screen.getByTestId('clean-preview-start'), { target: { value: '3' } });
    await fireEvent.click(screen.getByTestId('clean-preview-run'));
    await waitFor(() => expect(be.argsOf('preview_cleaning')).toHaveLength(1));
    expect(be.argsOf('preview_cleaning')[0]).toEqual({
      request: { input: { take: 7 }, start_secs: 3, secs: 10, isolation: null, enhance: natural },
    });
    expect(await screen.findByTestId('clean-preview-info')).toHaveTextContent('a note');
    const ab = await screen.findByTestId('clean-preview-ab');
    await waitFor(() => expect(ab.dataset.state).toBe('playing'));
    expect(ab.dataset.active).toBe('cleaned');
    expect(be.argsOf('get_preview_audio').map((a) => a.part)).toEqual(['original', 'cleaned']);
    // Switching to the original moves gains only: no source is restarted.
    const starts = ab.dataset.starts;
    await fireEvent.click(screen.getAllByTestId('clean-preview-ab-slot')[0]);
    expect(ab.dataset.active).toBe('original');
    expect(ab.dataset.starts).toBe(starts);
    expect(FakeAudioContext.last?.sources).toHaveLength(2);
  });

  it('lets one A/B player sound at a time: starting another pauses it', async () => {
    installFakeAudio();
    const sources = (tag: string) => [
      { key: 'original', label: 'Original', load: async () => new Uint8Array([1]).buffer },
      { key: tag, label: tag, load: async () => new Uint8Array([2]).buffer },
    ];
    render(CleanAb, { sources: sources('first'), testid: 'first-ab' });
    render(CleanAb, { sources: sources('second'), testid: 'second-ab' });
    const [first, second] = [screen.getByTestId('first-ab'), screen.getByTestId('second-ab')];
    await fireEvent.click(screen.getByTestId('first-ab-play'));
    await waitFor(() => expect(first.dataset.state).toBe('playing'));
    await fireEvent.click(screen.getByTestId('second-ab-play'));
    await waitFor(() => expect(second.dataset.state).toBe('playing'));
    expect(first.dataset.state).toBe('paused');
    expect(Number(first.dataset.position)).toBeGreaterThanOrEqual(0);
  });

  it('lists the results under their source, and audio dropped on the page becomes inputs', async () => {
    const derived = [{ take: makeTake({ id: 20, name: 'Verse (enhanced)' }), link: { take_id: 20, source_take_id: 7, operation: 'enhance', params: {}, job_id: 41, created_at: '' } }];
    backend({ list_derived_takes: (a) => (a.sourceTakeId === 7 ? derived : []) });
    app.jobs = [makeJob({ id: 41, kind: 'enhance', state: 'succeeded', result: { source_take_id: 7, takes: [] } })];
    cleaner.jobIds = [41];
    app.page = 'clean';
    render(Clean);
    const source = await screen.findByTestId('clean-source');
    expect(source.dataset.sourceName).toBe('Verse');
    expect(await screen.findByTestId('clean-result')).toHaveAttribute('data-operation', 'enhance');
    expect(screen.getByTestId('job-row')).toHaveAttribute('data-job-state', 'succeeded');
    await studio.routeDrop(['/a/one.wav']);
    expect(cleaner.inputs).toEqual([{ file: '/a/one.wav' }]);
  });
});
