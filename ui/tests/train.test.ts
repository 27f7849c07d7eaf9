import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Train from '../src/pages/Train.svelte';
import DropOverlay from '../src/components/DropOverlay.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import { trainer } from '../src/lib/trainer.svelte';
import { i18n } from '../src/lib/i18n.svelte';
import {
  defaultPrepareForm,
  trainingForm,
  lossPoints,
  prepareParams,
  prepareProblem,
  preparingJob,
  profileBreakdown,
  runProfile,
  reportWarnings,
  jobSecsLeft,
  missingPretrained,
  pretrainedPaths,
  runProgress,
  trainingProblem,
  trainingRequest,
} from '../src/lib/train';
import type {
  AssetStatus,
  CheckpointScore,
  DatasetReport,
  DatasetRow,
  DeviceReport,
  JudgeReport,
  JudgeWeights,
  Recommendation,
  TrainingMetric,
  TrainingRow,
} from '../src/lib/api';
import {
  BACKEND_DEFAULTS,
  assetList,
  installFakeAudio,
  makeAsset,
  makeJob,
  makeModel,
  makeTake,
  makeVoice,
  mockBackend,
} from './helpers';

function makeDataset(over: Partial<DatasetRow> = {}): DatasetRow {
  return {
    id: 3,
    name: 'Alto spoken',
    voice_id: null,
    status: 'ready',
    sample_rate: 40000,
    version: 'v2',
    f0_method: 'rmvpe',
    take_count: 2,
    params: {},
    piece_count: 42,
    total_secs: 150.5,
    report: null,
    created_at: '2026-11-20T10:00:00Z',
    updated_at: null,
    ...over,
  };
}

function makeRun(over: Partial<TrainingRow> = {}): TrainingRow {
  return {
    id: 9,
    name: 'Alto v1',
    dataset_id: 3,
    status: 'running',
    epoch: 20,
    epochs: 200,
    global_step: 840,
    params: {},
    batch_size: 8,
    precision: 'fp16',
    device: 'cuda:0 NVIDIA H100',
    model_id: null,
    job_id: 70,
    error: null,
    profile: null,
    created_at: '2026-11-20T11:00:00Z',
    updated_at: '2026-11-20T11:30:00Z',
    ...over,
  };
}

/** The catalogue's base models of a v2 40 kHz model with pitch, each in `state`. */
function pretrainedAssets(state: AssetStatus['state']): AssetStatus[] {
  return [
    { network: 'G', role: 'generator', size_bytes: 72_959_000 },
    { network: 'D', role: 'discriminator', size_bytes: 142_875_000 },
  ].map(({ network, role, size_bytes }) =>
    makeAsset({
      name: `pretrained-v2-f0${network}40k`,
      role: `pretrained-${role}`,
      description: `RVC's pretrained v2 40k ${role} with pitch, for fine-tuning instead of training from scratch.`,
      path: `pretrained_v2/f0${network}40k.pth`,
      size_bytes,
      needed_for: ['train (v2 40k, with pitch)'],
      essential: false,
      state,
    }),
  );
}

function metric(step: number, g: number): TrainingMetric {
  return { epoch: 1, step, g_total: g, d_total: 3.5, mel: g / 2, kl: 1.5, fm: 6, adversarial: 2, grad_norm_g: 10, grad_norm_d: 5, lr: 1e-4, at: '' };
}

describe('form → request', () => {
  it('maps the prepare form onto PrepareRequest', () => {
    const form = { ...defaultPrepareForm(), name: '  Alto  ', voiceId: 2, inputs: [{ take: 7 }, { file: '/a/b.wav' }] };
    expect(prepareParams(form)).toEqual({
      name: 'Alto',
      voice_id: 2,
      inputs: [{ take: 7 }, { file: '/a/b.wav' }],
      sample_rate: 40000,
      version: 'v2',
      f0_method: 'rmvpe',
      embedder: 'contentvec',
      isolate: null,
      enhance: 'training',
    });
    const other = prepareParams({ ...form, pitch: 'none', isolation: { kind: 'model', name: 'bs_roformer' }, enhance: 'none', sampleRate: 48000, version: 'v1', embedder: 'chinese-hubert-base' });
    expect(other).toMatchObject({ f0_method: null, isolate: { model: 'bs_roformer' }, enhance: null, sample_rate: 48000, version: 'v1', embedder: 'chinese-hubert-base' });
    expect(prepareParams({ ...form, isolation: { kind: 'rough' } }).isolate).toBe('rough');
    expect(prepareProblem(defaultPrepareForm())).toMatch(/Name/);
    expect(prepareProblem({ ...defaultPrepareForm(), name: 'x' })).toMatch(/take or file/);
    expect(prepareProblem(form)).toBeNull();
  });

  it('maps the training settings onto the request: auto batch, preview every = save every', () => {
    const { epochs, save_every, keep_checkpoints } = BACKEND_DEFAULTS.get_training_defaults;
    expect(trainingRequest(trainingForm(BACKEND_DEFAULTS.get_training_defaults, ' Alto '), 3)).toEqual({
      dataset_id: 3,
      name: 'Alto',
      epochs,
      save_every,
      keep_checkpoints,
      batch_size: null,
      pretrained: 'auto',
      preview_every: save_every,
      patience_saves: null,
      judge_sources: [],
      devices: [],
    });
    const custom = { ...trainingForm(BACKEND_DEFAULTS.get_training_defaults, 'A'), saveEvery: 5, batchSize: 12, previewEvery: 20, pretrained: 'none' as const };
    expect(trainingRequest(custom, 1)).toMatchObject({ save_every: 5, batch_size: 12, preview_every: 20, pretrained: 'none' });
    // Stopping early: after 3 saves without a better checkpoint unless told otherwise; null when off.
    expect(trainingRequest({ ...custom, stopEarly: true }, 1).patience_saves).toBe(3);
    expect(trainingRequest({ ...custom, stopEarly: true, patience: 5 }, 1).patience_saves).toBe(5);
    expect(trainingRequest({ ...custom, stopEarly: false, patience: 5 }, 1).patience_saves).toBeNull();
  });

  it('says what is wrong with the settings', () => {
    const ok = trainingForm(BACKEND_DEFAULTS.get_training_defaults, 'A');
    expect(trainingProblem(trainingForm(null, 'A'))).toMatch(/Epochs/);
    expect(trainingProblem(ok)).toBeNull();
    expect(trainingProblem({ ...ok, name: ' ' })).toMatch(/Name/);
    expect(trainingProblem({ ...ok, epochs: null })).toMatch(/Epochs/);
    expect(trainingProblem({ ...ok, epochs: 2.5 })).toMatch(/Epochs/);
    expect(trainingProblem({ ...ok, saveEvery: 0 })).toMatch(/Save every/);
    expect(trainingProblem({ ...ok, keepCheckpoints: 0 })).toMatch(/checkpoint/);
    expect(trainingProblem({ ...ok, batchSize: 0 })).toMatch(/Batch/);
    expect(trainingProblem({ ...ok, previewEvery: -1 })).toMatch(/Preview/);
    expect(trainingProblem({ ...ok, stopEarly: true, patience: 0 })).toMatch(/saves/);
    expect(trainingProblem({ ...ok, stopEarly: true, patience: null })).toMatch(/saves/);
    expect(trainingProblem({ ...ok, stopEarly: false, patience: null })).toBeNull();
    expect(() => trainingRequest({ ...ok, epochs: null }, 1)).toThrow(/Epochs/);
  });
});

describe('run reports', () => {
  it('splits the profile into the trainer and the data threads', () => {
    const b = profileBreakdown({
      load_s: 30, assemble_s: 10, waited_s: 25, step_s: 65, to_device_s: 10, batches: 200, starved: true, gpu_percent: 41.5,
    });
    expect(b.trainer.map((s) => [s.key, s.share])).toEqual([['step', 0.65], ['to_device', 0.1], ['waited', 0.25]]);
    expect(b.data.map((s) => [s.key, s.share])).toEqual([['load', 0.75], ['assemble', 0.25]]);
    expect(b.waitedShare).toBe(0.25);
    expect(b.msPerBatch).toBe(500);
    expect(b.starved).toBe(true);
    expect(b.gpuPercent).toBe(41.5);
  });

  it('sums the per-epoch profiles the trainer stores, starved as the latest epoch', () => {
    const epoch = (n: number, starved: boolean, gpu_percent: number | null, seconds = 40) => ({
      epoch: n, batch_size: 8, batches: 50, seconds, step_secs: 30, to_device_secs: 1, load_secs: 12, assemble_secs: 2,
      waited_secs: 5, starved, gpu_percent, all_reduce_secs: null as number | null,
    });
    expect(runProfile([epoch(1, true, 20, 10), epoch(2, false, 70, 30)])).toEqual({
      load_s: 24, assemble_s: 4, waited_s: 10, step_s: 60, to_device_s: 2, batches: 100, starved: false, gpu_percent: 57.5,
      all_reduce_s: null,
    });
    // A data-parallel run's all-reduce, from the epochs that have it.
    expect(runProfile([{ ...epoch(1, false, null), all_reduce_secs: 3 }, epoch(2, false, null)])?.all_reduce_s).toBe(3);
    expect(runProfile([epoch(1, false, null)])?.gpu_percent).toBeNull();
    expect(runProfile([])).toBeNull();
    expect(runProfile(null)).toBeNull();
  });

  it("shows a data-parallel run's averaging of gradients within its steps", () => {
    const b = profileBreakdown({
      load_s: 30, assemble_s: 10, waited_s: 25, step_s: 65, to_device_s: 10, batches: 200, starved: false, all_reduce_s: 15,
    });
    expect(b.trainer.map((s) => [s.key, s.share])).toEqual([['step', 0.5], ['all_reduce', 0.15], ['to_device', 0.1], ['waited', 0.25]]);
    expect(b.trainer[1].label).toBe('Averaging gradients between GPUs');
    expect(b.waitedShare).toBe(0.25);
    expect(b.msPerBatch).toBe(500);
  });

  it('copes with a run that has not stepped yet', () => {
    const b = profileBreakdown({ load_s: 0, assemble_s: 0, waited_s: 0, step_s: 0, batches: 0, starved: false });
    expect(b.trainer.every((s) => s.share === 0)).toBe(true);
    expect(b.msPerBatch).toBeNull();
    expect(profileBreakdown({ load_s: NaN, assemble_s: 1, waited_s: -1, step_s: 2, batches: 1, starved: false }).data[1].share).toBe(1);
  });

  it('gives progress through the epochs, losses in step order and severe warnings', () => {
    expect(runProgress(makeRun({ epoch: 50, epochs: 200 }))).toBe(0.25);
    expect(runProgress(makeRun({ status: 'done', epoch: 199 }))).toBe(1);
    expect(runProgress(makeRun({ epochs: 0 }))).toBe(0);
    // While its job runs, the job's progress: it moves at every step.
    expect(runProgress(makeRun({ epoch: 0, epochs: 3 }), makeJob({ state: 'running', progress: 0.12 }))).toBe(0.12);
    expect(runProgress(makeRun({ epoch: 1, epochs: 4, status: 'stopped' }), makeJob({ state: 'cancelled', progress: 0.3 }))).toBe(0.25);
    expect(lossPoints([metric(20, 30), metric(10, 40), { ...metric(30, 0), g_total: NaN }], 'g_total')).toEqual([
      { x: 10, y: 40 },
      { x: 20, y: 30 },
    ]);
    const report = { warnings: [{ kind: 'too_little_audio', message: 'Only 40 s' }, { kind: 'clipped', message: '2% clipped' }] };
    expect(reportWarnings(report as any).map((w) => w.severe)).toEqual([true, false]);
    expect(reportWarnings(null)).toEqual([]);
  });

  it('estimates the time a running job has left from its pace since it started', () => {
    const now = Date.parse('2026-11-20T11:10:00Z');
    const running = makeJob({ state: 'running', started_at: '2026-11-20T11:00:00Z', progress: 0.25 });
    expect(jobSecsLeft(running, now)).toBe(1800);
    expect(jobSecsLeft({ ...running, progress: 0 }, now)).toBeNull();
    expect(jobSecsLeft({ ...running, started_at: null }, now)).toBeNull();
    expect(jobSecsLeft({ ...running, state: 'succeeded' }, now)).toBeNull();
  });

  it('names the base models Auto looks for as the backend does, and which of them the catalogue says are missing', () => {
    expect(pretrainedPaths(makeDataset())).toEqual(['pretrained_v2/f0G40k.pth', 'pretrained_v2/f0D40k.pth']);
    expect(pretrainedPaths(makeDataset({ version: 'v1', sample_rate: 32000, f0_method: null }))).toEqual([
      'pretrained/G32k.pth',
      'pretrained/D32k.pth',
    ]);
    expect(pretrainedPaths(makeDataset({ sample_rate: 48000, f0_method: 'pm' }))?.[1]).toBe('pretrained_v2/f0D48k.pth');
    expect(pretrainedPaths(makeDataset({ sample_rate: null }))).toBeNull();
    const [generator, discriminator] = pretrainedAssets('verified');
    const paths = ['pretrained_v2/f0G40k.pth', 'pretrained_v2/f0D40k.pth'];
    expect(missingPretrained(paths, [generator, discriminator])).toEqual({ assets: [], unlisted: [] });
    expect(missingPretrained(paths, [generator, { ...discriminator, state: 'corrupt', problem: 'sha256 differs' }]).assets.map((a) => a.name))
      .toEqual(['pretrained-v2-f0D40k']);
    expect(missingPretrained(paths, [{ ...generator, state: 'partial', bytes: 10 }])).toEqual({
      assets: [{ ...generator, state: 'partial', bytes: 10 }],
      unlisted: ['pretrained_v2/f0D40k.pth'],
    });
  });

  it('finds the job preparing a dataset by its name', () => {
    const jobs = [
      makeJob({ id: 1, kind: 'dataset', state: 'running', params: { name: 'Alto' } }),
      makeJob({ id: 2, kind: 'dataset', state: 'queued', params: { name: 'Alto' } }),
      makeJob({ id: 3, kind: 'dataset', state: 'succeeded', params: { name: 'Alto' } }),
      makeJob({ id: 4, kind: 'convert', state: 'running', params: { name: 'Alto' } }),
    ];
    expect(preparingJob(jobs, 'Alto')?.id).toBe(2);
    expect(preparingJob(jobs.slice(2), 'Alto')).toBeUndefined();
    expect(preparingJob(jobs, 'Bass')).toBeUndefined();
  });
});

function deviceReport(over: Partial<DeviceReport> = {}): DeviceReport {
  return {
    available: ['cpu', 'cuda:0', 'cuda:1'],
    device: '',
    extraction_device: '',
    main: 'cuda:0',
    extraction: 'cuda:0',
    problem: null,
    ...over,
  };
}

/** `Settings::judge_weights`' default, as the backend reports it. */
const WEIGHTS: JudgeWeights = { similarity: 4, pitch: 2, voicing: 1, reconstruction: 2, artefacts: 1 };

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  app.takes = [makeTake({ id: 7, name: 'Verse', voice_id: 2 }), makeTake({ id: 8, name: 'Chorus', voice_id: 2 })];
  app.voices = [makeVoice({ id: 2, name: 'Alto' })];
  return mockBackend({
    list_isolation_models: () => ({ dir: '/m', models: [{ name: 'bs_roformer', checkpoint: '', config: '', stems: ['vocals'], task: 'vocals' }] }),
    list_datasets: () => [],
    list_trainings: () => [],
    list_training_metrics: () => [],
    list_training_previews: () => [],
    get_judge_report: () => ({ scores: [], weighted: [], recommendation: null, weights: WEIGHTS, default_weights: WEIGHTS }),
    list_job_events: () => [],
    get_settings: () => ({ settings: { judge_weights: { ...WEIGHTS } }, data_dir: '/d', models_dir: '/m' }),
    list_models: () => [],
    list_assets: () => assetList(pretrainedAssets('verified')),
    get_device_report: () => deviceReport(),
    get_resource_snapshot: () => ({
      cpu_percent: 35,
      ram_used_bytes: 6 * 1024 ** 3,
      ram_total_bytes: 16 * 1024 ** 3,
      gpus: [{ name: 'NVIDIA H100', memory_used_bytes: 70 * 1024 ** 3, memory_total_bytes: 80 * 1024 ** 3, utilization_percent: 97, temperature_c: 61 }],
    }),
    ...extra,
  });
}

describe('Train page', () => {
  it('prepares a dataset from a voice\'s takes and a dropped file, and shows the job', async () => {
    const be = backend({ prepare_dataset: () => makeJob({ id: 50, kind: 'dataset', state: 'queued' }) });
    app.page = 'train';
    render(Train);
    await fireEvent.change(screen.getByTestId('dataset-voice'), { target: { value: '2' } });
    expect(screen.getByTestId('dataset-name')).toHaveValue('Alto');
    await fireEvent.click(screen.getByTestId('dataset-add-voice-takes'));
    app.dragging = true;
    render(DropOverlay);
    expect(screen.getByTestId('drop-overlay')).toHaveTextContent('Drop audio files to add to the dataset');
    await studio.routeDrop(['/audio/extra.flac']);
    await waitFor(() => expect(screen.getAllByTestId('dataset-input')).toHaveLength(3));
    await fireEvent.change(screen.getByTestId('dataset-isolation'), { target: { value: 'model:bs_roformer' } });
    await fireEvent.change(screen.getByTestId('dataset-pitch'), { target: { value: 'pm' } });
    await fireEvent.change(screen.getByTestId('dataset-embedder'), { target: { value: 'spin' } });
    await fireEvent.click(screen.getByTestId('dataset-submit'));
    await waitFor(() => expect(be.argsOf('prepare_dataset')).toHaveLength(1));
    expect(be.argsOf('prepare_dataset')[0]).toEqual({
      params: {
        name: 'Alto',
        voice_id: 2,
        inputs: [{ take: 7 }, { take: 8 }, { file: '/audio/extra.flac' }],
        sample_rate: 40000,
        version: 'v2',
        f0_method: 'pm',
        embedder: 'spin',
        isolate: { model: 'bs_roformer' },
        enhance: 'training',
      },
    });
    expect(await screen.findByTestId('job-row')).toHaveAttribute('data-job-id', '50');
    expect(trainer.prepare.inputs).toEqual([]);
  });

  it('fills the settings with what get_training_defaults answers, once', async () => {
    const be = backend({ get_training_defaults: () => ({ epochs: 77, save_every: 7, keep_checkpoints: 2 }) });
    const view = render(Train);
    await waitFor(() => expect(screen.getByTestId('training-epochs')).toHaveValue(77));
    expect(screen.getByTestId('training-save-every')).toHaveValue(7);
    expect(screen.getByTestId('training-keep')).toHaveValue(2);
    // A field the user emptied stays empty when the page opens again; the defaults are not asked again.
    await fireEvent.input(screen.getByTestId('training-epochs'), { target: { value: '' } });
    view.unmount();
    render(Train);
    await waitFor(() => expect(be.argsOf('list_datasets')).toHaveLength(2));
    expect(screen.getByTestId('training-epochs')).toHaveValue(null);
    expect(be.argsOf('get_training_defaults')).toHaveLength(1);
  });

  it("sums a dataset's report up as the input and what the slicer kept, never the overlapping pieces", async () => {
    // 3.7 s pieces overlap by 0.3 s, so the audio in the pieces can exceed the input.
    const report: DatasetReport = {
      files: [], input_seconds: 77.2, sliced_seconds: 65, kept_seconds: 82.3, pieces: 24, filtered: 0, silent_pieces: 0,
      clipping_ratio: 0, silence_ratio: 0.16, snr_db: null, speech_band_ratio: null, pitch: null, warnings: [],
      held_out: { pieces: 0, seconds: 0, sources: [], whole_sources: false },
    };
    backend({ list_datasets: () => [makeDataset({ report })] });
    render(Train);
    const facts = await screen.findByTestId('dataset-facts');
    expect(facts).toHaveTextContent('1:17.2 in, 1:05.0 kept once silences are cut');
    expect(facts).not.toHaveTextContent('1:22.3');
    expect(screen.getByTestId('dataset-held-out')).toHaveTextContent(
      'No held-out set (dataset too small or prepared before held-out sets)',
    );
  });

  it('lists datasets with their warnings and starts a run on the chosen ready one', async () => {
    const report: DatasetReport = {
      files: [], input_seconds: 50, sliced_seconds: 45, kept_seconds: 40, pieces: 12, filtered: 0, silent_pieces: 0,
      clipping_ratio: 0.02, silence_ratio: 0.1, snr_db: 12, speech_band_ratio: 0.9, pitch: null,
      warnings: [{ kind: 'too_little_audio', message: 'Only 40 s of audio: aim for 10 minutes' }, { kind: 'noisy', message: 'Noisy: SNR 12 dB' }],
      held_out: { pieces: 6, seconds: 20.4, sources: ['Verse'], whole_sources: false },
    };
    const started = makeRun({ id: 11, status: 'queued', epoch: 0, global_step: 0, name: 'Alto spoken' });
    const be = backend({
      list_datasets: () => [makeDataset({ id: 4, name: 'Preparing one', status: 'preparing' }), makeDataset({ report })],
      start_training: () => started,
    });
    app.jobs = [makeJob({ id: 60, kind: 'dataset', state: 'running', progress: 0.42, message: 'features 5/12', params: { name: 'Preparing one' } })];
    render(Train);
    const rows = await screen.findAllByTestId('dataset-row');
    expect(rows).toHaveLength(2);
    const warnings = within(rows[1]).getAllByTestId('dataset-warning');
    expect(warnings.map((w) => w.dataset.kind)).toEqual(['too_little_audio', 'noisy']);
    expect(warnings[0]).toHaveClass('severe');
    expect(within(rows[1]).getByTestId('dataset-held-out')).toHaveTextContent(
      'Held out for judging: 6 pieces, 20.4 s (from the end of Verse)',
    );
    expect(within(rows[0]).getByRole('radio')).toBeDisabled();
    expect(within(rows[0]).getByTestId('dataset-progress')).toHaveTextContent('42% features 5/12');
    // The ready dataset is chosen, and the model is named after it.
    await waitFor(() => expect(screen.getByTestId('training-dataset')).toHaveTextContent('Alto spoken'));
    expect(screen.getByTestId('training-name')).toHaveValue('Alto spoken');
    await fireEvent.input(screen.getByTestId('training-epochs'), { target: { value: '50' } });
    await fireEvent.input(screen.getByTestId('training-batch'), { target: { value: '6' } });
    await fireEvent.click(screen.getByTestId('training-start'));
    await waitFor(() => expect(be.argsOf('start_training')).toHaveLength(1));
    expect(be.argsOf('start_training')[0]).toEqual({
      request: {
        dataset_id: 3,
        name: 'Alto spoken',
        epochs: 50,
        save_every: BACKEND_DEFAULTS.get_training_defaults.save_every,
        keep_checkpoints: BACKEND_DEFAULTS.get_training_defaults.keep_checkpoints,
        batch_size: 6,
        pretrained: 'auto',
        preview_every: BACKEND_DEFAULTS.get_training_defaults.save_every,
        patience_saves: null,
        judge_sources: [],
        devices: [],
      },
    });
    const run = await screen.findByTestId('training-run');
    expect(run).toHaveAttribute('data-status', 'queued');
    expect(trainer.runId).toBe(11);
  });

  it('shows a run\'s progress, losses, profile and previews; stops it', async () => {
    installFakeAudio();
    const profile = [
      { epoch: 1, batch_size: 8, batches: 100, seconds: 140, step_secs: 60, to_device_secs: 0, load_secs: 30,
        assemble_secs: 10, waited_secs: 40, starved: true, gpu_percent: 33, all_reduce_secs: null },
    ];
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun({ profile })],
      list_training_metrics: () => [metric(10, 40), metric(20, 30)],
      list_training_previews: () => [
        { id: 2, training_id: 9, epoch: 20, step: 840, path: '/p/20.wav', created_at: '' },
        { id: 1, training_id: 9, epoch: 10, step: 420, path: '/p/10.wav', created_at: '' },
      ],
      get_training_preview_audio: (a) => new Uint8Array([a.previewId * 10]),
      stop_training: (a) => makeRun({ id: a.trainingId, status: 'stopped', profile }),
    });
    render(Train);
    const run = await screen.findByTestId('training-run');
    expect(within(run).getByTestId('training-run-epoch')).toHaveTextContent('epoch 20/200');
    expect(run).toHaveTextContent('cuda:0 NVIDIA H100 · fp16');
    expect(run).toHaveTextContent('batch 8');
    const chart = await screen.findByTestId('loss-chart');
    await waitFor(() => expect(chart.querySelectorAll('path')).toHaveLength(5));
    expect(screen.getByTestId('training-starved')).toHaveTextContent('GPU starved');
    const segments = screen.getAllByTestId('training-profile-segment');
    expect(segments.map((s) => [s.dataset.key, s.dataset.share])).toEqual([
      ['step', '0.6000'], ['waited', '0.4000'], ['load', '0.7500'], ['assemble', '0.2500'],
    ]);
    expect(screen.getByTestId('training-profile-gpu')).toHaveTextContent('GPU busy 33%');
    const gpuUtil = await within(screen.getByTestId('train-resources')).findByTestId('resource-chart-gpu-0-util');
    expect(gpuUtil).toHaveTextContent('97%');
    expect(screen.getByTestId('resource-chart-gpu-0-mem')).toHaveTextContent('70.0 GiB / 80.0 GiB');
    // Previews in epoch order; A/B defaults to the first and the latest epoch.
    const previews = screen.getAllByTestId('training-preview');
    expect(previews.map((p) => p.dataset.epoch)).toEqual(['10', '20']);
    const ab = screen.getByTestId('training-preview-ab');
    expect(within(ab).getAllByTestId('training-preview-ab-slot').map((s) => s.textContent)).toEqual(['Epoch 10', 'Epoch 20']);
    await fireEvent.click(screen.getByTestId('training-preview-ab-play'));
    await waitFor(() => expect(screen.getByTestId('training-preview-ab').dataset.state).toBe('playing'));
    expect(be.argsOf('get_training_preview_audio').map((a) => a.previewId)).toEqual([1, 2]);
    await fireEvent.click(within(run).getByTestId('training-run-stop'));
    await waitFor(() => expect(screen.getByTestId('training-run')).toHaveAttribute('data-status', 'stopped'));
    expect(be.argsOf('stop_training')).toEqual([{ trainingId: 9 }]);
    expect(screen.getByTestId('training-run-resume')).toBeEnabled();
  });

  it('says Stopping, and what it waits for, from the moment Stop is pressed until the run has stopped', async () => {
    let status: TrainingRow['status'] = 'running';
    let answerStop: (row: TrainingRow) => void = () => {};
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun({ status })],
      stop_training: () => new Promise<TrainingRow>((resolve) => (answerStop = resolve)),
    });
    const job = makeJob({ id: 70, kind: 'train', state: 'running', progress: 0.3, message: 'epoch 61/200 · step 2562 · mel loss 21.40' });
    app.jobs = [job];
    render(Train);
    const run = await screen.findByTestId('training-run');
    await fireEvent.click(within(run).getByTestId('training-run-stop'));
    // Before the backend answers.
    expect(within(run).getByTestId('training-run-stop')).toHaveTextContent('Stopping…');
    expect(within(run).getByTestId('training-run-stop')).toBeDisabled();
    expect(within(run).getByTestId('training-run-status')).toHaveTextContent('stopping');
    expect(within(run).getByTestId('training-run-stopping')).toHaveTextContent(
      'waiting for the current step to finish and a checkpoint to be saved',
    );
    // The backend asks the job to stop; the run runs until its step ends.
    answerStop(makeRun({ status: 'running' }));
    app.upsertJob({ ...job, cancel_requested: true, progress: 0.31, message: 'epoch 61/200 · step 2563 · mel loss 21.38' });
    await waitFor(() => expect(within(run).getByTestId('training-run-report')).toHaveTextContent('step 2563'));
    expect(within(run).getByTestId('training-run-stop')).toHaveTextContent('Stopping…');
    expect(trainer.stopAsked).toEqual([9]);

    status = 'stopped';
    app.upsertJob({ ...job, cancel_requested: true, state: 'cancelled', progress: 0.31 });
    await waitFor(() => expect(screen.getByTestId('training-run')).toHaveAttribute('data-status', 'stopped'));
    expect(screen.queryByTestId('training-run-stopping')).toBeNull();
    expect(screen.queryByTestId('training-run-stop')).toBeNull();
    expect(screen.getByTestId('training-run-status')).toHaveTextContent('stopped');
    expect(screen.getByTestId('training-run-resume')).toBeEnabled();
    expect(trainer.stopAsked).toEqual([]);
    expect(be.argsOf('stop_training')).toEqual([{ trainingId: 9 }]);
  });

  it('says Stopping for a run stopped elsewhere, and Stop again when stopping fails', async () => {
    backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun(), makeRun({ id: 10, job_id: 71 })],
      stop_training: () => {
        throw 'training 10 is stopped: there is nothing to stop';
      },
    });
    app.jobs = [makeJob({ id: 70, kind: 'train', state: 'running', cancel_requested: true })];
    render(Train);
    const [stoppedElsewhere, other] = await screen.findAllByTestId('training-run');
    expect(within(stoppedElsewhere).getByTestId('training-run-stop')).toHaveTextContent('Stopping…');
    await fireEvent.click(within(other).getByTestId('training-run-stop'));
    await waitFor(() => expect(app.notices.map((n) => n.text)).toContain('Could not stop the training: training 10 is stopped: there is nothing to stop'));
    expect(within(other).getByTestId('training-run-stop')).toHaveTextContent(/^Stop$/);
    expect(within(other).getByTestId('training-run-stop')).toBeEnabled();
    expect(within(other).queryByTestId('training-run-stopping')).toBeNull();
  });

  it('follows the selected run\'s losses and previews as notifications, fetching them once', async () => {
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun()],
      list_training_metrics: () => [metric(10, 40), metric(20, 30)],
      list_training_previews: () => [{ id: 1, training_id: 9, epoch: 10, step: 420, path: '/p/10.wav', created_at: '' }],
    });
    render(Train);
    await waitFor(() => expect(screen.getAllByTestId('training-preview')).toHaveLength(1));
    await waitFor(() => expect(trainer.metrics.map((m) => m.step)).toEqual([10, 20]));

    app.handleEvent({ type: 'training_metric', training_id: 9, metric: metric(30, 20) });
    app.handleEvent({ type: 'training_metric', training_id: 4, metric: metric(40, 10) });
    app.handleEvent({
      type: 'training_preview',
      preview: { id: 2, training_id: 9, epoch: 20, step: 840, path: '/p/20.wav', created_at: '' },
    });
    expect(trainer.metrics.map((m) => m.step)).toEqual([10, 20, 30]);
    await waitFor(() => expect(screen.getAllByTestId('training-preview').map((p) => p.dataset.epoch)).toEqual(['10', '20']));

    // A session that restarts from its checkpoint forgets what came after it.
    app.handleEvent({ type: 'training_rewound', training_id: 9, epoch: 10, step: 20 });
    expect(trainer.metrics.map((m) => m.step)).toEqual([10, 20]);
    await waitFor(() => expect(screen.getAllByTestId('training-preview')).toHaveLength(1));

    // The run's progress refreshes its row, not its losses.
    const runsBefore = be.argsOf('list_trainings').length;
    app.upsertJob(makeJob({ id: 70, kind: 'train', state: 'running', progress: 0.2 }));
    await waitFor(() => expect(be.argsOf('list_trainings').length).toBeGreaterThan(runsBefore));
    expect(be.argsOf('list_training_metrics')).toHaveLength(1);
    expect(be.argsOf('list_training_previews')).toHaveLength(1);
  });

  it('shows what the run\'s job reports at each step, as the Jobs page does, before the row\'s numbers move', async () => {
    backend({ list_datasets: () => [makeDataset()], list_trainings: () => [makeRun({ epoch: 0, epochs: 3, global_step: 0 })] });
    const tenMinutesAgo = new Date(Date.now() - 600_000).toISOString();
    app.jobs = [makeJob({ id: 70, kind: 'train', state: 'running', progress: 0.25, started_at: tenMinutesAgo,
      message: 'epoch 1/3 · step 7 · mel loss 104.52' })];
    render(Train);
    const run = await screen.findByTestId('training-run');
    expect(within(run).getByTestId('training-run-report')).toHaveTextContent('epoch 1/3 · step 7 · mel loss 104.52');
    expect(within(run).getByTestId('training-run-percent')).toHaveTextContent('25%');
    // Ten minutes for a quarter: about thirty to go.
    expect(within(run).getByTestId('training-run-left')).toHaveTextContent(/^30 min \d+ s left$/);
    expect(within(run).queryByTestId('training-run-epoch')).toBeNull();

    // A job that has not stepped yet has no estimate.
    app.upsertJob({ ...app.jobs[0], progress: 0, message: '' });
    await waitFor(() => expect(within(run).getByTestId('training-run-report')).toHaveTextContent('Waiting for the first step'));
    expect(within(run).queryByTestId('training-run-left')).toBeNull();

    // Once the job no longer runs, the row's own numbers.
    app.upsertJob({ ...app.jobs[0], state: 'interrupted' });
    await waitFor(() => expect(within(run).getByTestId('training-run-epoch')).toHaveTextContent('epoch 0/3'));
    expect(within(run).queryByTestId('training-run-report')).toBeNull();
  });

  it('says a running run\'s losses come with its first logged step, until they do', async () => {
    backend({ list_datasets: () => [makeDataset()], list_trainings: () => [makeRun({ epoch: 0, epochs: 3, global_step: 0 })] });
    app.jobs = [makeJob({ id: 70, kind: 'train', state: 'running', progress: 0.02, message: 'epoch 1/3 · step 7 · mel loss 104.52' })];
    render(Train);
    const chart = await within(await screen.findByTestId('train-losses')).findByTestId('loss-chart');
    await waitFor(() => expect(chart).toHaveTextContent('Losses appear after the first logged step'));
    expect(chart).not.toHaveTextContent('No losses logged yet');
    app.handleEvent({ type: 'training_metric', training_id: 9, metric: metric(10, 40) });
    await waitFor(() => expect(chart.querySelectorAll('path')).toHaveLength(5));
    expect(chart).not.toHaveTextContent('Losses appear');
  });

  it('shows a failed run\'s error, and opens Convert with a finished run\'s model', async () => {
    backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [
        makeRun({ id: 12, status: 'done', epoch: 200, model_id: 5 }),
        makeRun({ id: 13, status: 'failed', error: 'CUDA out of memory', global_step: 0 }),
      ],
      list_models: () => [makeModel({ id: 5, name: 'Alto v1' })],
    });
    render(Train);
    const runs = await screen.findAllByTestId('training-run');
    expect(within(runs[1]).getByTestId('training-run-error')).toHaveTextContent('CUDA out of memory');
    expect(within(runs[1]).queryByTestId('training-run-export')).toBeNull();
    await waitFor(() => expect(within(runs[0]).getByTestId('training-run-model')).toHaveTextContent('Alto v1'));
    await fireEvent.click(within(runs[0]).getByTestId('training-run-convert'));
    await waitFor(() => expect(app.page).toBe('convert'));
    expect(studio.modelIds).toEqual([5]);
  });

  it('refreshes the runs when their job reports progress', async () => {
    // A batch too large for the GPU is halved while the run goes on.
    let batchSize = 8;
    const be = backend({ list_trainings: () => [makeRun({ batch_size: batchSize })] });
    render(Train);
    const run = await screen.findByTestId('training-run');
    expect(run).toHaveTextContent('batch 8');
    const before = be.argsOf('list_trainings').length;
    batchSize = 4;
    app.upsertJob(makeJob({ id: 70, kind: 'train', state: 'running', progress: 0.105 }));
    await waitFor(() => expect(screen.getByTestId('training-run')).toHaveTextContent('batch 4'));
    expect(be.argsOf('list_trainings').length).toBeGreaterThan(before);
  });
});

describe('Pretrained base models', () => {
  it('says before Start that Auto would train from scratch without them, and downloads them', async () => {
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_assets: () => assetList(pretrainedAssets('missing')),
      download_assets: (a: { names: string[] }) =>
        a.names.map((name, i) => makeJob({ id: 80 + i, kind: 'download', state: 'queued', params: { asset: name } })),
    });
    render(Train);
    const notice = await screen.findByTestId('pretrained-missing');
    expect(within(notice).getAllByTestId('pretrained-missing-file').map((f) => f.textContent)).toEqual([
      'pretrained_v2/f0G40k.pth',
      'pretrained_v2/f0D40k.pth',
    ]);
    expect(notice).toHaveTextContent(
      "Auto starts from RVC's pretrained model, but the models folder lacks pretrained_v2/f0G40k.pth and pretrained_v2/f0D40k.pth: without them this run trains from scratch",
    );
    expect(screen.getByTestId('pretrained-download')).toHaveTextContent('Download (216 MB)');
    await fireEvent.click(screen.getByTestId('pretrained-download'));
    await waitFor(() => expect(be.argsOf('download_assets')).toEqual([{ names: ['pretrained-v2-f0G40k', 'pretrained-v2-f0D40k'] }]));
    expect(await screen.findByTestId('pretrained-progress')).toHaveTextContent('Downloading: 0.0 MB of 216 MB');
    // From scratch on purpose: nothing to say.
    await fireEvent.change(screen.getByTestId('training-pretrained'), { target: { value: 'none' } });
    expect(screen.queryByTestId('pretrained-missing')).toBeNull();
  });

  it('offers the community bases of the catalogue, downloads the chosen one for the rate and asks for it', async () => {
    const base = (name: string, title: string, rate: number, network: 'g' | 'd', state: AssetStatus['state']) =>
      makeAsset({
        name: `base-${name}-${rate}k-${network}`,
        role: network === 'g' ? 'community-generator' : 'community-discriminator',
        description: `${title}, ${rate} kHz ${network === 'g' ? 'generator' : 'discriminator'}: a community training base.`,
        path: `pretrained_community/${name}/${rate}k/${network.toUpperCase()}.pth`,
        size_bytes: null,
        sha256: null,
        essential: false,
        state,
      });
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_assets: () =>
        assetList([
          ...pretrainedAssets('verified'),
          base('titan', 'TITAN by blaise-tk', 32, 'g', 'missing'),
          base('titan', 'TITAN by blaise-tk', 40, 'g', 'missing'),
          base('titan', 'TITAN by blaise-tk', 40, 'd', 'present'),
          base('rin-e3', 'RIN_E3 by MUSTAR', 40, 'g', 'present'),
        ]),
      download_assets: (a: { names: string[] }) =>
        a.names.map((name, i) => makeJob({ id: 80 + i, kind: 'download', state: 'queued', params: { asset: name } })),
      start_training: () => makeJob({ id: 90, kind: 'train', state: 'queued' }),
    });
    render(Train);
    const select = (await screen.findByTestId('training-pretrained')) as HTMLSelectElement;
    await waitFor(() => expect(select.querySelectorAll('optgroup option')).toHaveLength(2));
    expect([...select.querySelectorAll('optgroup option')].map((o) => o.textContent)).toEqual(['TITAN by blaise-tk', 'RIN_E3 by MUSTAR']);
    expect(screen.queryByTestId('pretrained-missing')).toBeNull();
    await fireEvent.change(select, { target: { value: 'base:titan' } });
    const notice = await screen.findByTestId('pretrained-missing');
    expect(within(notice).getAllByTestId('pretrained-missing-file').map((f) => f.textContent)).toEqual(['pretrained_community/titan/40k/G.pth']);
    expect(notice).toHaveTextContent('The titan base needs pretrained_community/titan/40k/G.pth in the models folder: download it to start this run.');
    await fireEvent.click(screen.getByTestId('pretrained-download'));
    await waitFor(() => expect(be.argsOf('download_assets')).toEqual([{ names: ['base-titan-40k-g'] }]));
    expect(trainingRequest({ ...trainer.settings, name: 'A' }, 1).pretrained).toEqual({ community: { name: 'titan' } });
  });

  it('names the files a catalogue without them cannot download, and says nothing when they are there', async () => {
    backend({
      list_datasets: () => [makeDataset({ id: 3, version: 'v1', sample_rate: 32000, f0_method: null }), makeDataset({ id: 4, name: 'Tenor' })],
    });
    render(Train);
    const unlisted = await screen.findByTestId('pretrained-unlisted');
    expect(within(unlisted).getAllByTestId('pretrained-unlisted-file').map((f) => f.textContent)).toEqual([
      'pretrained/G32k.pth',
      'pretrained/D32k.pth',
    ]);
    expect(unlisted).toHaveTextContent(
      "only if the models folder has pretrained/G32k.pth and pretrained/D32k.pth; the asset catalogue has no download for them.",
    );
    expect(screen.queryByTestId('pretrained-download')).toBeNull();
    trainer.selectDataset(4);
    await waitFor(() => expect(screen.queryByTestId('pretrained-missing')).toBeNull());
  });
});

describe('Devices on the Train page', () => {
  it('says in one line where training and preparation run, and leads to Settings to change it', async () => {
    backend({ get_device_report: () => deviceReport({ extraction_device: 'cuda:1', extraction: 'cuda:1' }) });
    app.page = 'train';
    render(Train);
    const summary = await screen.findByTestId('device-summary');
    await waitFor(() => expect(summary).toHaveTextContent('Trains on cuda:0, prepares datasets on cuda:1.'));
    expect(screen.queryByTestId('device-settings')).toBeNull();
    await fireEvent.click(screen.getByTestId('device-summary-settings'));
    expect(app.page).toBe('settings');
  });

  it('trains on the GPUs ticked together, and offers none to tick on a machine with one', async () => {
    const be = backend({
      list_datasets: () => [makeDataset()],
      get_device_report: () => deviceReport({ available: ['cpu', 'cuda:0', 'cuda:1', 'cuda:2'] }),
      start_training: () => makeRun({ id: 12, status: 'queued', epoch: 0, global_step: 0 }),
    });
    render(Train);
    const picker = await screen.findByTestId('training-devices');
    expect(picker).toHaveTextContent('Tick two or more to train on them together');
    const boxes = within(picker).getAllByTestId('training-device');
    expect(boxes.map((b) => (b as HTMLInputElement).value)).toEqual(['cuda:0', 'cuda:1', 'cuda:2']);
    await fireEvent.click(boxes[2]);
    await fireEvent.click(boxes[0]);
    await fireEvent.click(boxes[1]);
    await fireEvent.click(boxes[1]);
    await waitFor(() => expect(screen.getByTestId('training-dataset')).toHaveTextContent('Alto spoken'));
    await fireEvent.click(screen.getByTestId('training-start'));
    await waitFor(() => expect(be.argsOf('start_training')).toHaveLength(1));
    // In the report's order, whatever the order of the ticks.
    expect(be.argsOf('start_training')[0].request.devices).toEqual(['cuda:0', 'cuda:2']);
    expect(screen.getByTestId('device-summary')).toHaveTextContent('Trains on cuda:0, cuda:2.');
  });

  it('offers no GPUs to tick with fewer than two', async () => {
    backend({ list_datasets: () => [makeDataset()], get_device_report: () => deviceReport({ available: ['cpu', 'cuda:0'] }) });
    render(Train);
    await screen.findByTestId('device-summary');
    await waitFor(() => expect(screen.getByTestId('device-summary')).toHaveTextContent('cuda:0'));
    expect(screen.queryByTestId('training-devices')).toBeNull();
  });

  it('shows a missing device', async () => {
    backend({
      get_device_report: () =>
        deviceReport({ extraction_device: 'cuda:1', available: ['cpu', 'cuda:0'], main: null, extraction: null,
          problem: 'setting extraction_device: device `cuda:1` asked for, but libtorch sees 1 CUDA device(s)' }),
    });
    render(Train);
    expect(await screen.findByTestId('device-summary-problem')).toHaveTextContent('setting extraction_device');
  });
});

function judged(step: number, over: Partial<CheckpointScore> = {}): CheckpointScore {
  return {
    epoch: step / 42,
    step,
    similarity: 0.7,
    similarity_ceiling: 0.9,
    source_similarity: null,
    pitch_rmse_cents: 50,
    voicing_agreement: 0.9,
    mel_distance: 0.9,
    train_mel_distance: 0.8,
    artefacts_db: 1,
    sample: `/t/judge/${step}.wav`,
    at: '',
    ...over,
  };
}

/** A judge report as the backend makes one, the recommendation at `step`; `weighted` are the
 * scores' weighted scores, made up here (the page shows what it is given). */
function report(
  scores: CheckpointScore[],
  step: number,
  weighted = scores.map((s) => s.step / 10000),
  weights = WEIGHTS,
): JudgeReport {
  const i = scores.findIndex((s) => s.step === step);
  const recommendation: Recommendation = { step, epoch: scores[i].epoch, score: weighted[i], saves_since: scores.length - i - 1, weights };
  return { scores, weighted, recommendation, weights, default_weights: WEIGHTS };
}

describe('Checkpoint scores on the Train page', () => {
  it('charts, tables and recommends the scored checkpoints, and follows new scores and rewinds', async () => {
    let scores = [judged(420, { similarity: 0.6 }), judged(840, { similarity: 0.85, mel_distance: 0.7 }), judged(1260)];
    let recommended = 840;
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun()],
      get_judge_report: () => report(scores, recommended),
    });
    render(Train);
    const panel = await screen.findByTestId('train-judge');
    await waitFor(() => expect(within(panel).getAllByTestId('judge-row')).toHaveLength(3));
    expect(be.argsOf('get_judge_report')).toEqual([{ trainingId: 9 }]);
    const rows = within(panel).getAllByTestId('judge-row');
    expect(rows.map((r) => r.dataset.step)).toEqual(['420', '840', '1260']);
    expect(within(panel).getAllByTestId('judge-recommended')).toHaveLength(1);
    expect(within(rows[1]).getByTestId('judge-recommended')).toHaveTextContent('Recommended');
    expect(rows[1]).toHaveAttribute('data-recommended', 'true');
    expect(within(rows[1]).getByTestId('judge-row-score')).toHaveTextContent('0.084');
    expect(rows[1]).toHaveTextContent('0.850 / 0.900');
    expect(within(panel).getByTestId('judge-recommendation')).toHaveTextContent(/Recommended: step 840 \(epoch 20, score 0\.\d{3}, 1 later save no better\)/);
    // The charts, each with its series, and their text equivalent.
    expect(within(panel).getByTestId('judge-chart-similarity')).toHaveAttribute('data-series', 'similarity,ceiling');
    expect(within(panel).getByTestId('judge-chart-mel')).toHaveAttribute('data-series', 'held_out,training');
    expect(within(panel).getByTestId('judge-chart-pitch')).toHaveAttribute('data-points', '3');
    expect(within(panel).getByTestId('judge-chart-artefacts').querySelectorAll('path')).toHaveLength(1);
    expect(within(panel).getByTestId('judge-summary')).toHaveTextContent('Speaker similarity: 0.600 → 0.700, best 0.850 at step 840');
    // The losses chart is still the page's only loss chart.
    expect(screen.getAllByTestId('loss-chart')).toHaveLength(1);

    // A new checkpoint is shown at once; the report is asked again for the recommendation.
    scores = [...scores, judged(1680, { similarity: 0.88, mel_distance: 0.6 })];
    recommended = 1680;
    app.handleEvent({ type: 'checkpoint_scored', training_id: 9, score: scores[3] });
    app.handleEvent({ type: 'checkpoint_scored', training_id: 4, score: judged(99) });
    expect(trainer.judge.scores.map((s) => s.step)).toEqual([420, 840, 1260, 1680]);
    await waitFor(() => expect(within(panel).getByTestId('judge-recommendation')).toHaveAttribute('data-step', '1680'));
    expect(be.argsOf('get_judge_report')).toHaveLength(2);
    expect(within(panel).getAllByTestId('judge-row')[3]).toHaveAttribute('data-recommended', 'true');

    // A session restarting from step 840 forgets the later checkpoints.
    scores = scores.slice(0, 2);
    recommended = 840;
    app.handleEvent({ type: 'training_rewound', training_id: 9, epoch: 20, step: 840 });
    expect(trainer.judge.scores.map((s) => s.step)).toEqual([420, 840]);
    await waitFor(() => expect(within(panel).getByTestId('judge-recommendation')).toHaveAttribute('data-step', '840'));
    expect(within(panel).getAllByTestId('judge-row')).toHaveLength(2);
  });

  it('says scores come with the first checkpoint, or why there are none', async () => {
    const off = 'no held-out speech in this dataset (too small, or prepared before held-out sets): checkpoints are not scored; prepare the dataset again';
    let events: unknown[] = [];
    const be = backend({ list_datasets: () => [makeDataset()], list_trainings: () => [makeRun()], list_job_events: () => events });
    const view = render(Train);
    const empty = await screen.findByTestId('judge-empty');
    await waitFor(() => expect(be.argsOf('list_job_events')).toEqual([{ id: 70 }]));
    expect(empty).toHaveTextContent('Scores appear after the first checkpoint is saved.');
    view.unmount();
    trainer.reset();
    events = [{ id: 1, job_id: 70, at: '', level: 'warn', kind: 'judge_off', data: { message: off } }];
    render(Train);
    await waitFor(() => expect(screen.getByTestId('judge-empty')).toHaveTextContent(/^No held-out speech in this dataset .* prepare the dataset again$/));
  });

  it('plays the recommended checkpoint against the latest, switching without a restart', async () => {
    installFakeAudio();
    const scores = [judged(420), judged(840), judged(1260)];
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun()],
      get_judge_report: () => report(scores, 840),
      get_judge_sample_audio: (a) => new Uint8Array([a.step / 42]),
    });
    render(Train);
    const ab = await screen.findByTestId('judge-ab');
    expect(within(ab).getByTestId('judge-play-recommended')).toHaveTextContent('Play recommended');
    await fireEvent.click(within(ab).getByTestId('judge-play-latest'));
    await waitFor(() => expect(ab).toHaveAttribute('data-state', 'playing'));
    expect(be.argsOf('get_judge_sample_audio')).toEqual([{ trainingId: 9, step: 840 }, { trainingId: 9, step: 1260 }]);
    expect(ab).toHaveAttribute('data-active', 'latest-1260');
    expect(within(ab).getByTestId('judge-play-latest')).toHaveTextContent('Pause latest');
    await fireEvent.click(within(ab).getByTestId('judge-play-recommended'));
    expect(ab).toHaveAttribute('data-active', 'recommended-840');
    expect(ab).toHaveAttribute('data-state', 'playing');
    expect(ab).toHaveAttribute('data-starts', '1');
    await fireEvent.click(within(ab).getByTestId('judge-play-recommended'));
    expect(ab).toHaveAttribute('data-state', 'paused');
  });

  it('exports the recommended checkpoint and names the model made', async () => {
    const scores = [judged(420), judged(840)];
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun()],
      get_judge_report: () => report(scores, 420),
      export_training: (a) => makeModel({ id: 31, name: `Alto v1 (step ${a.step})` }),
    });
    render(Train);
    await fireEvent.click(await screen.findByTestId('judge-export'));
    await waitFor(() => expect(screen.getByTestId('judge-exported')).toHaveTextContent('Model “Alto v1 (step 420)” made of step 420'));
    expect(be.argsOf('export_training')).toEqual([{ trainingId: 9, step: 420 }]);
    expect(app.notices.map((n) => n.text)).toContain('Model "Alto v1 (step 420)" added to the Models page');
  });

  it('stores the weights and shows the recommendation they make', async () => {
    const scores = [judged(420, { similarity: 0.85, artefacts_db: 6 }), judged(840, { similarity: 0.8 })];
    let weights: JudgeWeights = { ...WEIGHTS };
    // Buzz counted, the second checkpoint is better; not counted, the first.
    const weightedNow = () => (weights.artefacts === 0 ? [0.9, 0.8] : [0.7, 0.8]);
    const be = backend({
      list_datasets: () => [makeDataset()],
      list_trainings: () => [makeRun()],
      get_judge_report: () => {
        const weighted = weightedNow();
        return report(scores, weighted[0] >= weighted[1] ? 420 : 840, weighted, weights);
      },
      set_setting: (a) => {
        const value = JSON.parse(a.value);
        if (Object.values(value).every((v) => v === 0)) throw { kind: 'invalid_input', message: 'judge_weights: at least one weight must be above 0' };
        weights = value;
        return { settings: { judge_weights: weights }, data_dir: '/d', models_dir: '/m' };
      },
    });
    render(Train);
    await waitFor(() => expect(screen.getByTestId('judge-recommendation')).toHaveAttribute('data-step', '840'));
    expect(screen.getByTestId('judge-weights-rule')).toHaveTextContent('the checkpoint with the highest average is recommended');
    expect(screen.getByTestId('judge-weight-similarity')).toHaveValue(4);
    expect(screen.getByTestId('judge-weights-save')).toBeDisabled();
    // Buzz not counted: the more similar, buzzing checkpoint.
    await fireEvent.input(screen.getByTestId('judge-weight-artefacts'), { target: { value: '0' } });
    await fireEvent.click(screen.getByTestId('judge-weights-save'));
    await waitFor(() => expect(screen.getByTestId('judge-recommendation')).toHaveAttribute('data-step', '420'));
    expect(be.argsOf('set_setting')).toEqual([{ key: 'judge_weights', value: JSON.stringify({ ...WEIGHTS, artefacts: 0 }) }]);
    expect(be.argsOf('get_judge_report')).toHaveLength(2);
    expect(screen.getByTestId('judge-weights-saved')).toBeInTheDocument();
    expect(within(screen.getAllByTestId('judge-row')[0]).getByTestId('judge-row-score')).toHaveTextContent('0.900');
    // What the form refuses is not sent.
    for (const key of ['similarity', 'pitch', 'voicing', 'reconstruction']) {
      await fireEvent.input(screen.getByTestId(`judge-weight-${key}`), { target: { value: '0' } });
    }
    expect(screen.getByTestId('judge-weights-error')).toHaveTextContent('At least one weight must be above 0.');
    expect(screen.getByTestId('judge-weights-save')).toBeDisabled();
  });

  it('starts a run that stops once it stops improving', async () => {
    const be = backend({ list_datasets: () => [makeDataset()], start_training: () => makeRun({ id: 11, status: 'queued' }) });
    render(Train);
    await waitFor(() => expect(screen.getByTestId('training-start')).toBeEnabled());
    expect(screen.getByTestId('training-patience')).toBeDisabled();
    expect(screen.getByTestId('training-patience')).toHaveValue(3);
    await fireEvent.click(screen.getByTestId('training-stop-early'));
    await fireEvent.input(screen.getByTestId('training-patience'), { target: { value: '4' } });
    await fireEvent.click(screen.getByTestId('training-start'));
    await waitFor(() => expect(be.argsOf('start_training')).toHaveLength(1));
    expect(be.argsOf('start_training')[0].request.patience_saves).toBe(4);
  });

  it('follows a change of language: plurals, scores in words, the charts\' labels and decimals', async () => {
    const scores = [judged(420, { similarity: 0.6 }), judged(840, { similarity: 0.85 })];
    backend({ list_datasets: () => [makeDataset()], list_trainings: () => [makeRun()], get_judge_report: () => report(scores, 840) });
    render(Train);
    const panel = await screen.findByTestId('train-judge');
    await waitFor(() => expect(within(panel).getAllByTestId('judge-row')).toHaveLength(2));
    expect(screen.getByTestId('dataset-row')).toHaveTextContent('42 pieces');
    i18n.choose('ru');
    await waitFor(() => expect(screen.getByTestId('dataset-row')).toHaveTextContent('42 фрагмента'));
    expect(within(panel).getByTestId('judge-summary')).toHaveTextContent('Оценено 2 чекпойнта, шаги 420–840.');
    expect(within(panel).getByTestId('judge-recommended')).toHaveTextContent('Рекомендуется');
    const similarity = within(within(panel).getByTestId('judge-chart-similarity')).getByRole('img');
    expect(similarity.getAttribute('aria-label')).toMatch(/^Сходство, Предел по шагам; последние значения на шаге 840: Сходство 0,85, Предел 0,9$/);
    // The charts point at their text equivalents: the summary and the table.
    const [summaryId, tableId] = similarity.getAttribute('aria-describedby')!.split(' ');
    expect(document.getElementById(summaryId)).toBe(within(panel).getByTestId('judge-summary'));
    expect(document.getElementById(tableId)).toBe(within(panel).getByTestId('judge-table'));
    i18n.choose('de');
    await waitFor(() => expect(within(panel).getAllByTestId('judge-row')[1]).toHaveTextContent('0,850 / 0,900'));
    expect(screen.getByRole('heading', { name: 'Datensätze' })).toBeInTheDocument();
  });

  it('names takes of another speaker for the judge to convert', async () => {
    const be = backend({
      list_datasets: () => [makeDataset()],
      start_training: () => makeRun({ id: 11, status: 'queued' }),
    });
    render(Train);
    await waitFor(() => expect(screen.getByTestId('training-start')).toBeEnabled());
    const picker = await screen.findByTestId('judge-source-take-picker');
    await waitFor(() => expect(picker).toBeEnabled());
    await fireEvent.change(picker, { target: { value: '7' } });
    expect(screen.getAllByTestId('judge-source')).toHaveLength(1);
    expect(screen.getByTestId('judge-source')).toHaveTextContent('Verse');
    await fireEvent.click(screen.getByTestId('training-start'));
    await waitFor(() => expect(be.argsOf('start_training')).toHaveLength(1));
    expect(be.argsOf('start_training')[0].request.judge_sources).toEqual([{ take: 7 }]);
  });
});
