// The Clean page's selections, batch and preview (Svelte 5 runes), kept here so they survive
// switching pages and so a drop on the page can add inputs.
import * as api from './api';
import type { AudioInput, EnhanceOptions, EnhancePresets, IsolationModels, PreviewInfo } from './api';
import { app } from './stores.svelte';
import { sameInput } from './studio.svelte';
import { basename } from './format';
import { t } from './i18n.svelte';
import { enhanceOptions, isolationMethod, type Enhancement, type Isolation } from './clean';

class CleanerState {
  inputs = $state<AudioInput[]>([]);
  isolation = $state<Isolation>({ kind: 'none' });
  enhancement = $state<Enhancement>('natural');
  presets = $state<EnhancePresets | null>(null);
  /** The custom steps; start from a preset's when it is chosen. */
  custom = $state<EnhanceOptions | null>(null);
  models = $state<IsolationModels | null>(null);
  /** Cleaning jobs queued from this window, oldest first. */
  jobIds = $state<number[]>([]);
  /** Where the preview starts, in seconds; null: the loudest 10 s. */
  previewStart = $state<number | null>(null);
  previewing = $state(false);
  preview = $state<PreviewInfo | null>(null);
  /** Bumped at each new preview, so its player reloads. */
  previewSerial = $state(0);

  get hasStep(): boolean {
    return this.isolation.kind !== 'none' || this.enhancement !== 'none';
  }

  inputLabel(input: AudioInput): string {
    if ('file' in input) return basename(input.file);
    return app.takes.find((take) => take.id === input.take)?.name ?? t('clean.take_fallback', { id: String(input.take) });
  }

  async load(): Promise<void> {
    try {
      const [presets, models] = await Promise.all([api.enhancePresets(), api.listIsolationModels()]);
      this.presets = presets;
      this.models = models;
      this.custom ??= { ...presets.natural };
      const chosen = this.isolation;
      if (chosen.kind === 'model' && !models.models.some((m) => m.name === chosen.name)) this.isolation = { kind: 'none' };
    } catch (err) {
      app.reportError(err, t('clean.error_options'));
    }
  }

  addInputs(inputs: AudioInput[]) {
    for (const input of inputs) if (!this.inputs.some((i) => sameInput(i, input))) this.inputs.push(input);
  }

  removeInput(input: AudioInput) {
    this.inputs = this.inputs.filter((i) => !sameInput(i, input));
  }

  /** Switches to custom steps, starting from the preset chosen until now. */
  customize() {
    if (this.enhancement !== 'custom' && this.enhancement !== 'none' && this.presets) {
      this.custom = { ...this.presets[this.enhancement] };
    }
    this.enhancement = 'custom';
  }

  private steps(): { isolation: api.IsolationMethod | null; enhance: EnhanceOptions | null } {
    const custom = this.custom ?? this.presets?.natural;
    if (this.enhancement === 'custom' && !custom) throw new Error('the enhancement presets are not loaded yet');
    return {
      isolation: isolationMethod(this.isolation),
      enhance: enhanceOptions(this.enhancement, this.presets, custom as EnhanceOptions),
    };
  }

  /** Queues the batch; returns the job ids. */
  async clean(): Promise<number[]> {
    try {
      const { isolation, enhance } = this.steps();
      const ids = await api.submitCleaning([...this.inputs], isolation, enhance);
      this.jobIds.push(...ids);
      return ids;
    } catch (err) {
      app.reportError(err, t('clean.error_queue'));
      return [];
    }
  }

  /** Cleans 10 s of `input` without storing it; the page then plays it. */
  async runPreview(input: AudioInput): Promise<PreviewInfo | null> {
    this.previewing = true;
    try {
      const { isolation, enhance } = this.steps();
      const info = await api.previewCleaning({ input, start_secs: this.previewStart, secs: 10, isolation, enhance });
      this.preview = info;
      this.previewSerial++;
      return info;
    } catch (err) {
      app.reportError(err, t('clean.error_preview'));
      return null;
    } finally {
      this.previewing = false;
    }
  }

  /** Back to a blank state (tests). */
  reset() {
    this.inputs = [];
    this.isolation = { kind: 'none' };
    this.enhancement = 'natural';
    this.presets = null;
    this.custom = null;
    this.models = null;
    this.jobIds = [];
    this.previewStart = null;
    this.previewing = false;
    this.preview = null;
    this.previewSerial = 0;
  }
}

export const cleaner = new CleanerState();
