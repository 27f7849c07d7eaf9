import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Convert from '../src/pages/Convert.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import { defaults } from '../src/lib/defaults.svelte';
import { savedVoiceParams } from '../src/lib/savedParams.svelte';
import {
  BACKEND_DEFAULTS,
  FakeAudioContext,
  assetList,
  essentialAssets,
  installFakeAudio,
  makeConversion,
  makeAsset,
  makeJob,
  makeModel,
  makeTake,
  mockBackend,
} from './helpers';
import type { AssetStatus } from '../src/lib/api';

const models = [
  makeModel({ id: 1, name: 'Ada', index_sha256: null }),
  makeModel({ id: 2, name: 'Bo', index_sha256: '12'.repeat(32), metadata: { speakers: 4 } }),
];

function backend(extra: Record<string, (a: any) => unknown> = {}, rmvpe = true) {
  app.takes = [makeTake({ id: 7, name: 'Verse', sha256: 'aa'.repeat(32) }), makeTake({ id: 8, name: 'Chorus' })];
  return mockBackend({
    list_models: () => models,
    list_assets: () => assetList(essentialAssets(true, rmvpe)),
    list_conversions: () => [],
    ...extra,
  });
}

/** What the app holds in memory is gone; localStorage stays. */
function restart() {
  studio.reset();
  defaults.reset();
}

async function chooseModel(name: string) {
  const row = (await screen.findAllByTestId('convert-model')).find((r) => r.dataset.modelName === name)!;
  await fireEvent.click(within(row).getByRole('checkbox'));
}

describe('Convert page', () => {
  it('queues one job per input and model with the parameters set', async () => {
    const be = backend({ submit_conversions: () => [31, 32, 33, 34] });
    render(Convert);
    await fireEvent.change(screen.getByTestId('convert-take-picker'), { target: { value: '7' } });
    studio.addInputs([{ file: '/audio/song.flac' }]);
    await waitFor(() => expect(screen.getAllByTestId('convert-input')).toHaveLength(2));
    expect(screen.getAllByTestId('convert-input').map((i) => i.dataset.label)).toEqual(['Verse', 'song.flac']);
    expect(screen.getByTestId('convert-submit')).toBeDisabled();
    await chooseModel('Ada');
    await chooseModel('Bo');
    // The controls offer exactly the backend's ranges.
    const ranges = BACKEND_DEFAULTS.get_parameter_ranges.voice;
    expect(screen.getByTestId('param-transpose')).toHaveAttribute('min', String(ranges.transpose.min));
    expect(screen.getByTestId('param-transpose')).toHaveAttribute('max', String(ranges.transpose.max));
    expect(screen.getByTestId('param-protect')).toHaveAttribute('max', String(ranges.protect.max));
    await fireEvent.input(screen.getByTestId('param-transpose'), { target: { value: '-5' } });
    await fireEvent.change(screen.getByTestId('param-f0-method'), { target: { value: 'yin' } });
    await fireEvent.input(screen.getByTestId('param-protect'), { target: { value: '0.2' } });
    await fireEvent.change(screen.getByTestId('param-format'), { target: { value: 'flac' } });
    await fireEvent.input(screen.getByTestId('param-out-dir'), { target: { value: ' /out ' } });
    expect(screen.getByTestId('convert-submit')).toHaveTextContent('4 jobs');
    await fireEvent.click(screen.getByTestId('convert-submit'));
    await waitFor(() => expect(be.argsOf('submit_conversions')).toHaveLength(1));
    expect(be.argsOf('submit_conversions')[0]).toEqual({
      inputs: [{ take: 7 }, { file: '/audio/song.flac' }],
      modelIds: [1, 2],
      options: { ...BACKEND_DEFAULTS.get_conversion_defaults, transpose: -5, f0_method: 'yin', protect: 0.2 },
      format: 'flac',
      outDir: '/out',
      effects: null,
    });
    // Queued jobs are listed at once, before any update arrives.
    expect(await screen.findAllByTestId('conversion-job')).toHaveLength(4);
  });

  it('brings the newest result into sight when the conversions are queued', async () => {
    backend({ submit_conversions: () => [51, 52] });
    const scrollIntoView = vi.fn();
    Element.prototype.scrollIntoView = scrollIntoView;
    try {
      render(Convert);
      studio.addInputs([{ take: 7 }]);
      await chooseModel('Ada');
      await chooseModel('Bo');
      await fireEvent.click(screen.getByTestId('convert-submit'));
      await waitFor(() => expect(scrollIntoView).toHaveBeenCalledTimes(1));
      expect(scrollIntoView).toHaveBeenCalledWith({ block: 'nearest' });
      expect((scrollIntoView.mock.contexts[0] as HTMLElement).dataset.jobId).toBe('52');
    } finally {
      delete (Element.prototype as Partial<Element>).scrollIntoView;
    }
  });

  it('disables RMVPE with a hint when rmvpe.pt is missing, and uses pm instead', async () => {
    backend({}, false);
    render(Convert);
    expect(await screen.findByTestId('rmvpe-missing')).toHaveTextContent('rmvpe.pt');
    const select = screen.getByTestId('param-f0-method') as HTMLSelectElement;
    expect((select.querySelector('option[value="rmvpe"]') as HTMLOptionElement).disabled).toBe(true);
    await waitFor(() => expect(select.value).toBe('pm'));
    expect(studio.options?.f0_method).toBe('pm');
  });

  it("offers the download of a chosen voice's embedder when it is missing, and shows its progress", async () => {
    const spinVoice = makeModel({
      id: 3,
      name: 'Cy',
      metadata: {
        embedder: 'spin',
        embedder_files: ['embedders/spin/pytorch_model.bin', 'embedders/spin/config.json'],
      },
    });
    const spinAsset = (state: string, config = false) =>
      makeAsset({
        name: config ? 'embedder-spin-config' : 'embedder-spin',
        role: 'content-features',
        description: 'spin embedder, as Applio ships it.',
        path: config ? 'embedders/spin/config.json' : 'embedders/spin/pytorch_model.bin',
        size_bytes: null,
        sha256: null,
        essential: false,
        state,
      } as Partial<AssetStatus>);
    const downloads: string[][] = [];
    backend({
      list_models: () => [...models, spinVoice],
      list_assets: () => assetList([...essentialAssets(true, true), spinAsset('missing'), spinAsset('present', true)]),
      download_assets: ({ names }: { names: string[] }) => {
        downloads.push(names);
        return names.map((name, i) => makeJob({ id: 90 + i, kind: 'download', state: 'queued', params: JSON.stringify({ asset: name }) }));
      },
    });
    render(Convert);
    await chooseModel('Ada');
    expect(screen.queryByTestId('embedder-missing')).toBeNull();
    await chooseModel('Cy');
    const offers = await screen.findAllByTestId('missing-asset');
    // Only the weights are missing; the config is there.
    expect(offers.map((o) => o.dataset.name)).toEqual(['embedder-spin']);
    expect(offers[0]).toHaveTextContent("The voice Cy, trained on the spin embedder's features, needs spin");
    expect(offers[0]).toHaveTextContent('embedders/spin/pytorch_model.bin');
    await fireEvent.click(within(offers[0]).getByTestId('missing-asset-download'));
    expect(downloads).toEqual([['embedder-spin']]);
  });

  it('enables the index rate only for a model with an index, and the speaker for multi-speaker ones', async () => {
    backend();
    render(Convert);
    await chooseModel('Ada');
    expect(screen.getByTestId('param-index-rate')).toBeDisabled();
    expect(screen.getByTestId('convert-params')).toHaveTextContent('has no index');
    expect(screen.queryByTestId('param-speaker')).toBeNull();
    await chooseModel('Bo');
    expect(screen.getByTestId('param-index-rate')).toBeEnabled();
    expect(screen.getByTestId('param-speaker')).toHaveAttribute('max', '3');
    // The backend's defaults come back on reset.
    await fireEvent.input(screen.getByTestId('param-rms-mix'), { target: { value: '1' } });
    expect(studio.options?.rms_mix_rate).toBe(1);
    await fireEvent.click(screen.getByTestId('params-reset'));
    expect(studio.options).toEqual(BACKEND_DEFAULTS.get_conversion_defaults);
  });

  it('sets autotune (a key and its strength) and the formant shift, and resets them to off', async () => {
    backend();
    render(Convert);
    const autotune = (await screen.findByTestId('param-autotune')) as HTMLSelectElement;
    expect(autotune.value).toBe('off');
    expect(screen.queryByTestId('param-autotune-strength')).toBeNull();
    await fireEvent.change(autotune, { target: { value: 'minor-9' } });
    expect(studio.options?.autotune).toEqual({ scale: { kind: 'minor', tonic: 9 }, strength: 1 });
    await fireEvent.input(screen.getByTestId('param-autotune-strength'), { target: { value: '0.5' } });
    await fireEvent.change(autotune, { target: { value: 'chromatic' } });
    expect(studio.options?.autotune).toEqual({ scale: { kind: 'chromatic' }, strength: 0.5 });
    await fireEvent.input(screen.getByTestId('param-formant-shift'), { target: { value: '-1.5' } });
    expect(studio.options?.formant_shift).toBe(-1.5);
    await fireEvent.click(screen.getByTestId('params-reset'));
    expect(studio.options?.autotune).toBeNull();
    expect(studio.options?.formant_shift).toBe(0);
  });

  it('follows queued jobs live: progress, the error message, then play and compare the results', async () => {
    installFakeAudio();
    const be = backend({ submit_conversions: () => [41, 42, 43], get_conversion_audio: () => [50, 1, 2] });
    render(Convert);
    studio.addInputs([{ take: 7 }]);
    await chooseModel('Ada');
    await chooseModel('Bo');
    await fireEvent.click(screen.getByTestId('convert-submit'));
    const rows = await screen.findAllByTestId('conversion-job');
    expect(rows.map((r) => r.dataset.jobId)).toEqual(['43', '42', '41']);
    const row = (id: number) => screen.getAllByTestId('conversion-job').find((r) => r.dataset.jobId === String(id))!;

    const params = (model: number) => ({ input: { take: 7 }, model_id: model, options: {}, format: 'wav16', out_dir: null });
    app.upsertJob(makeJob({ id: 41, kind: 'convert', state: 'running', progress: 0.4, message: 'Verse with Ada', params: params(1) }));
    await waitFor(() => expect(row(41)).toHaveAttribute('data-state', 'running'));
    expect(row(41)).toHaveTextContent('Verse');
    expect(row(41)).toHaveTextContent('Ada');

    app.upsertJob(makeJob({ id: 43, kind: 'convert', state: 'failed', error: 'no HuBERT in /data/models', params: params(2) }));
    expect(await within(row(43)).findByTestId('conversion-error')).toHaveTextContent('no HuBERT in /data/models');

    const sha = 'aa'.repeat(32);
    const done = (id: number, convId: number, model: number, name: string) =>
      makeJob({
        id,
        kind: 'convert',
        state: 'succeeded',
        progress: 1,
        params: params(model),
        result: {
          conversion: makeConversion({ id: convId, model_id: model, model_name: name, input_sha256: sha, job_id: id }),
          output_path: `/store/${convId}.wav`,
          seconds: 1.5,
          analysis_cache: convId === 502 ? 'memory' : 'computed',
        },
      });
    app.upsertJob(done(41, 501, 1, 'Ada'));
    app.upsertJob(done(42, 502, 2, 'Bo'));
    await waitFor(() => expect(row(42)).toHaveAttribute('data-state', 'succeeded'));
    expect(row(42)).toHaveTextContent('analysis reused');
    // No output folder: the stored file's hashed path is not shown; Export… takes it out.
    expect(row(42)).not.toHaveTextContent('/store/502.wav');
    expect(within(row(42)).queryByTestId('conversion-output-path')).toBeNull();

    await fireEvent.click(within(row(42)).getByTestId('conversion-play'));
    await waitFor(() => expect(app.playback.status).toBe('playing'));
    expect(be.argsOf('get_conversion_audio')).toEqual([{ id: 502 }]);
    expect(app.playback.conversionId).toBe(502);
    expect(FakeAudioContext.last!.sources.at(-1).started).toBe(true);

    await fireEvent.click(within(row(41)).getByTestId('conversion-compare'));
    expect(app.page).toBe('compare');
    expect(studio.compareInput).toBe(sha);
    expect([...studio.compareIds].sort()).toEqual([501, 502]);
  });

  it('keeps the parameters across a restart: the saved ones come back over the defaults', async () => {
    backend();
    const first = render(Convert);
    await fireEvent.input(await screen.findByTestId('param-transpose'), { target: { value: '7' } });
    await fireEvent.change(screen.getByTestId('param-f0-method'), { target: { value: 'fcpe' } });
    await fireEvent.change(screen.getByTestId('param-autotune'), { target: { value: 'major-2' } });
    first.unmount();
    restart();
    render(Convert);
    await waitFor(() => expect(screen.getByTestId('param-transpose')).toHaveValue('7'));
    expect(studio.options).toEqual({
      ...BACKEND_DEFAULTS.get_conversion_defaults,
      transpose: 7,
      f0_method: 'fcpe',
      autotune: { scale: { kind: 'major', tonic: 2 }, strength: 1 },
    });
  });

  it('starts from the defaults when the saved parameters are corrupt, and keeps only the saved fields of the right type', async () => {
    backend();
    localStorage.setItem(savedVoiceParams.key, '{"transpose": 3,');
    const first = render(Convert);
    await screen.findByTestId('convert-params');
    expect(studio.options).toEqual(BACKEND_DEFAULTS.get_conversion_defaults);
    first.unmount();

    for (const saved of ['[1, 2]', '"rmvpe"', 'null']) {
      localStorage.setItem(savedVoiceParams.key, saved);
      restart();
      expect(await studio.currentOptions()).toEqual(BACKEND_DEFAULTS.get_conversion_defaults);
    }

    localStorage.setItem(
      savedVoiceParams.key,
      JSON.stringify({ transpose: 'high', f0_method: 'banana', protect: 0.2, autotune: { scale: { kind: 'major', tonic: 14 }, strength: 1 } }),
    );
    restart();
    expect(await studio.currentOptions()).toEqual({ ...BACKEND_DEFAULTS.get_conversion_defaults, protect: 0.2 });
  });

  it('exports a result without an output folder by name, and shows one copied to an output folder in its folder', async () => {
    const be = backend({
      submit_conversions: () => [51, 52],
      get_export_name: () => 'Verse (Ada, +3 st).wav',
      'plugin:dialog|save': (a) => `/home/me/${a.options.defaultPath.replace('.wav', '.mp3')}`,
      export_library_item: (a) => a.path,
      reveal_file: () => null,
    });
    render(Convert);
    studio.addInputs([{ take: 7 }]);
    await chooseModel('Ada');
    await fireEvent.click(screen.getByTestId('convert-submit'));
    await screen.findAllByTestId('conversion-job');
    const result = (id: number, convId: number, outDir: string | null) =>
      makeJob({
        id,
        kind: 'convert',
        state: 'succeeded',
        progress: 1,
        params: { input: { take: 7 }, model_id: 1, options: {}, format: 'wav16', out_dir: outDir },
        result: {
          conversion: makeConversion({ id: convId, model_name: 'Ada', job_id: id }),
          output_path: outDir ? `${outDir}/Verse (Ada).wav` : `/store/${convId}.wav`,
          seconds: 1,
          analysis_cache: 'computed',
        },
      });
    app.upsertJob(result(51, 601, null));
    app.upsertJob(result(52, 602, '/home/me/out'));
    const row = (id: number) => screen.getAllByTestId('conversion-job').find((r) => r.dataset.jobId === String(id))!;
    await waitFor(() => expect(row(51)).toHaveAttribute('data-state', 'succeeded'));
    expect(within(row(51)).queryByTestId('conversion-reveal')).toBeNull();

    await fireEvent.click(within(row(51)).getByTestId('conversion-job-export'));
    await waitFor(() => expect(be.argsOf('export_library_item')).toHaveLength(1));
    expect(be.argsOf('get_export_name')).toEqual([{ item: { kind: 'conversion', id: 601 } }]);
    expect(be.argsOf('export_library_item')[0]).toEqual({
      item: { kind: 'conversion', id: 601 },
      path: '/home/me/Verse (Ada, +3 st).mp3',
    });
    await waitFor(() => expect(app.notices.map((n) => n.text)).toContain('Exported to /home/me/Verse (Ada, +3 st).mp3'));

    await waitFor(() => expect(row(52)).toHaveAttribute('data-state', 'succeeded'));
    expect(within(row(52)).getByTestId('conversion-output-path')).toHaveTextContent('/home/me/out/Verse (Ada).wav');
    await fireEvent.click(within(row(52)).getByTestId('conversion-reveal'));
    await waitFor(() => expect(be.argsOf('reveal_file')).toEqual([{ path: '/home/me/out/Verse (Ada).wav' }]));
  });

  it("lists the earlier conversions after a restart, each playable, exportable and deletable, without this window's jobs twice", async () => {
    installFakeAudio();
    const earlier = [
      makeConversion({ id: 701, job_id: 61, input_take_id: 7, model_name: 'Ada', params: { transpose: 3, f0_method: 'rmvpe' } }),
      makeConversion({ id: 702, job_id: 5, input_take_id: null, input_path: '/audio/song.flac', model_name: 'Bo' }),
      ...Array.from({ length: 30 }, (_, i) => makeConversion({ id: 800 + i, job_id: 100 + i })),
    ];
    const be = backend({
      list_conversions: () => earlier,
      submit_conversions: () => [61],
      get_conversion_audio: () => [50, 1, 2],
      get_export_name: () => 'song (Bo).wav',
      'plugin:dialog|save': () => null,
      delete_conversion: () => null,
    });
    render(Convert);
    const recent = await screen.findByTestId('convert-recent');
    const rows = () => within(recent).getAllByTestId('conversion-row');
    expect(be.argsOf('list_conversions')).toEqual([{ inputSha256: null }]);
    expect(rows()).toHaveLength(20);
    expect(rows()[0]).toHaveTextContent('Verse → Ada');
    expect(rows()[0]).toHaveTextContent('+3 st · rmvpe');
    expect(rows()[1]).toHaveTextContent('song.flac → Bo');

    await fireEvent.click(within(rows()[1]).getByTestId('conversion-row-play'));
    await waitFor(() => expect(app.playback.conversionId).toBe(702));
    await fireEvent.click(within(rows()[1]).getByTestId('conversion-export'));
    await waitFor(() => expect(be.argsOf('plugin:dialog|save')).toHaveLength(1));
    await fireEvent.click(within(rows()[1]).getByTestId('conversion-delete'));
    await fireEvent.click(within(rows()[1]).getByTestId('conversion-delete-confirm'));
    await waitFor(() => expect(be.argsOf('delete_conversion')).toEqual([{ id: 702 }]));
    await waitFor(() => expect(rows()[1]).not.toHaveTextContent('song.flac'));

    // A job of this window shows its result above, not again among the earlier ones.
    studio.addInputs([{ take: 7 }]);
    await chooseModel('Ada');
    await fireEvent.click(screen.getByTestId('convert-submit'));
    await screen.findAllByTestId('conversion-job');
    await waitFor(() => expect(rows()[0]).not.toHaveTextContent('Verse → Ada'));
  });
});
