// Voice models, conversions and the Convert/Compare selections (Svelte 5 runes), kept here so
// they survive switching pages and so a drop anywhere can feed them.
import * as api from './api';
import type {
  Conversion,
  AudioInput,
  ConvertOptions,
  EffectChain,
  OutputFormat,
  VoiceImportReport,
  VoiceModel,
} from './api';
import { chainToSend } from './effects';
import { app } from './stores.svelte';
import { planDrop } from './dropRouting';
import { cleaner } from './cleaner.svelte';
import { trainer } from './trainer.svelte';
import { coverer } from './coverer.svelte';
import { basename } from './format';
import { t } from './i18n.svelte';
import { defaults } from './defaults.svelte';
import { assets } from './assets.svelte';
import { savedVoiceParams } from './savedParams.svelte';

export function sameInput(a: AudioInput, b: AudioInput): boolean {
  return 'take' in a ? 'take' in b && a.take === b.take : 'file' in b && a.file === b.file;
}

/** The number of speakers a model file declares (1 when it says nothing). */
export function speakersOf(model: VoiceModel): number {
  const n = Number(api.jsonObject(model.metadata).speakers);
  return Number.isFinite(n) && n > 1 ? n : 1;
}

class StudioState {
  models = $state<VoiceModel[]>([]);
  modelsLoaded = $state(false);
  conversions = $state<Conversion[]>([]);

  inputs = $state<AudioInput[]>([]);
  modelIds = $state<number[]>([]);
  /** The Convert and Cover pages' parameters: null until the backend's defaults are loaded. */
  options = $state<ConvertOptions | null>(null);
  format = $state<OutputFormat>('wav16');
  outDir = $state('');
  /** The effects run over each converted take before it is encoded; empty for none. */
  effects = $state<EffectChain>({ effects: [] });
  /** Convert jobs queued from this window, oldest first. */
  convertJobIds = $state<number[]>([]);

  /** The Compare page's input (content hash) and the conversions chosen for it. */
  compareInput = $state<string | null>(null);
  compareIds = $state<number[]>([]);

  constructor() {
    savedVoiceParams.follow(() => this.options);
  }

  /** Voice imports queued or running. */
  get importingVoices(): number {
    return app.jobs.filter((j) => j.kind === 'voice_import' && (j.state === 'queued' || j.state === 'running')).length;
  }

  /** Whether rmvpe.pt, where conversion looks for it, is usable; null until known. */
  get rmvpePresent(): boolean | null {
    return assets.usableAt('rmvpe.pt');
  }

  /** Whether FCPE's weights, where the catalogue puts them, are usable; null until known. */
  get fcpePresent(): boolean | null {
    return assets.usableAt('fcpe/fcpe_c_v001.pt');
  }

  /** Whether CREPE's weights (`full` or `tiny`), where the catalogue puts them, are usable. */
  crepePresent(capacity: 'full' | 'tiny'): boolean | null {
    return assets.usableAt(`crepe/${capacity}.pth`);
  }

  /** Whether SwiftF0's model, where the catalogue puts it, is usable; null until known. */
  get swiftF0Present(): boolean | null {
    return assets.usableAt('swift-f0/model.onnx');
  }

  /** Whether PESTO's checkpoint, where the catalogue puts it, is usable; null until known. */
  get pestoPresent(): boolean | null {
    return assets.usableAt('pesto/mir-1k_g7.ckpt');
  }

  /** The options; unless set already, those saved at the last change over the backend's defaults. */
  async currentOptions(): Promise<ConvertOptions> {
    this.options ??= savedVoiceParams.restore((await defaults.load()).conversion);
    return this.options;
  }

  /** Sets the options for the form, telling the user when the defaults cannot be loaded. */
  async loadOptions(): Promise<void> {
    try {
      await this.currentOptions();
    } catch (err) {
      app.reportError(err, t('convert.error_load_defaults'));
    }
  }

  modelName(id: number | null): string {
    if (id === null) return '';
    return this.models.find((m) => m.id === id)?.name ?? t('convert.model_fallback', { id: String(id) });
  }

  inputLabel(input: AudioInput): string {
    if ('file' in input) return basename(input.file);
    return app.takes.find((take) => take.id === input.take)?.name ?? t('convert.take_fallback', { id: String(input.take) });
  }

  async refreshModels(): Promise<void> {
    try {
      this.models = await api.listModels();
      this.modelsLoaded = true;
      const known = new Set(this.models.map((m) => m.id));
      this.modelIds = this.modelIds.filter((id) => known.has(id));
    } catch (err) {
      app.reportError(err, t('convert.error_load_models'));
    }
  }

  async refreshConversions(): Promise<void> {
    try {
      this.conversions = await api.listConversions(null);
    } catch (err) {
      app.reportError(err, t('convert.error_load_conversions'));
    }
  }

  /**
   * Imports the voices of a .pth, a .zip, a folder or a link as a job, with `index` for a source
   * of one voice; the models appear when it succeeds. Resolves to the job's id, null when refused.
   */
  async importVoice(source: string, index: string | null = null): Promise<number | null> {
    try {
      const jobId = await api.importVoice(source, index);
      app.watchJob(jobId, t('convert.importing_voices', { name: basename(source) }), (job) => {
        if (job.state !== 'succeeded') return;
        void this.refreshModels();
        // A voice the models folder's HuBERT cannot feed: said now, not at its first conversion.
        for (const warning of api.jobJson<VoiceImportReport>(job.result)?.warnings ?? []) app.notify(warning, 'warning');
      });
      return jobId;
    } catch (err) {
      app.reportError(err, t('convert.error_import', { name: basename(source) }));
      return null;
    }
  }

  upsertModel(model: VoiceModel) {
    const i = this.models.findIndex((m) => m.id === model.id);
    if (i >= 0) this.models[i] = model;
    else this.models.unshift(model);
  }

  removeModel(id: number) {
    this.models = this.models.filter((m) => m.id !== id);
    this.modelIds = this.modelIds.filter((m) => m !== id);
  }

  addInputs(inputs: AudioInput[]) {
    for (const input of inputs) if (!this.inputs.some((i) => sameInput(i, input))) this.inputs.push(input);
  }

  removeInput(input: AudioInput) {
    this.inputs = this.inputs.filter((i) => !sameInput(i, input));
  }

  toggleModel(id: number) {
    this.modelIds = this.modelIds.includes(id) ? this.modelIds.filter((m) => m !== id) : [...this.modelIds, id];
  }

  /** Queues a conversion of every input with every chosen model; returns the job ids. */
  async convert(inputs: AudioInput[] = this.inputs, modelIds: number[] = this.modelIds): Promise<number[]> {
    try {
      // The Compare page queues conversions without the Convert page's form having opened.
      const options = { ...(await this.currentOptions()) };
      const outDir = this.outDir.trim() || null;
      const effects = chainToSend($state.snapshot(this.effects));
      const ids = await api.submitConversions(inputs, modelIds, options, this.format, outDir, effects);
      this.convertJobIds.push(...ids);
      return ids;
    } catch (err) {
      app.reportError(err, t('convert.error_queue'));
      return [];
    }
  }

  /** Opens the Convert page with only this model chosen (e.g. one just trained). */
  async openConvert(modelId: number) {
    if (!this.models.some((m) => m.id === modelId)) await this.refreshModels();
    this.modelIds = [modelId];
    app.page = 'convert';
  }

  openCompare(inputSha256: string, conversionIds: number[]) {
    this.compareInput = inputSha256;
    this.compareIds = conversionIds;
    app.page = 'compare';
  }

  /** A drop anywhere: .pth (+ .index), .zip and folders are imported as voices; audio is imported, or on Convert, Clean and Train becomes inputs. */
  async routeDrop(paths: string[]): Promise<void> {
    const plan = planDrop(paths);
    if (plan.strayIndexes.length > 0) {
      app.notify(
        t('convert.stray_index', { names: plan.strayIndexes.map((p) => basename(p)).join(', ') }),
        'error',
      );
    }
    if (plan.audio.length > 0) {
      if (app.page === 'convert') {
        this.addInputs(plan.audio.map((file) => ({ file })));
        app.notify(t('convert.added_to_convert', { count: plan.audio.length }), 'info');
      } else if (app.page === 'clean') {
        cleaner.addInputs(plan.audio.map((file) => ({ file })));
        app.notify(t('convert.added_to_clean', { count: plan.audio.length }), 'info');
      } else if (app.page === 'cover') {
        coverer.addSongs(plan.audio.map((file) => ({ file })));
        app.notify(t('convert.added_to_cover', { count: plan.audio.length }), 'info');
      } else if (app.page === 'train') {
        trainer.addInputs(plan.audio.map((file) => ({ file })));
        app.notify(t('convert.added_to_dataset', { count: plan.audio.length }), 'info');
      } else {
        void app.importPaths(plan.audio);
      }
    }
    await Promise.all(plan.voices.map((v) => this.importVoice(v.source, v.index)));
  }

  /** Back to a blank state (tests). */
  reset() {
    this.models = [];
    this.modelsLoaded = false;
    this.conversions = [];
    this.inputs = [];
    this.modelIds = [];
    this.options = null;
    this.format = 'wav16';
    this.outDir = '';
    this.effects = { effects: [] };
    this.convertJobIds = [];
    this.compareInput = null;
    this.compareIds = [];
  }
}

export const studio = new StudioState();
