// The Clean page's choices turned into what the backend takes, and its results grouped by source.
import { jobJson, type EnhanceResult, type IsolateResult, type EnhanceOptions, type EnhancePresets, type IsolationMethod, type Job, type SeparationModel, type VoiceTask } from './api';
import { t, type MessageKey } from './i18n.svelte';

export type StepKey = 'mono' | 'high_pass' | 'declick' | 'denoise' | 'trim' | 'loudness' | 'limit';

export interface Step {
  key: StepKey;
  /** Message keys: shown through `t`. */
  label: MessageKey;
  help: MessageKey;
}

/** The enhancement steps, in the order they run. */
export const STEPS: readonly Step[] = [
  { key: 'mono', label: 'clean.step_mono', help: 'clean.step_mono_help' },
  { key: 'high_pass', label: 'clean.step_high_pass', help: 'clean.step_high_pass_help' },
  { key: 'declick', label: 'clean.step_declick', help: 'clean.step_declick_help' },
  { key: 'denoise', label: 'clean.step_denoise', help: 'clean.step_denoise_help' },
  { key: 'trim', label: 'clean.step_trim', help: 'clean.step_trim_help' },
  { key: 'loudness', label: 'clean.step_loudness', help: 'clean.step_loudness_help' },
  { key: 'limit', label: 'clean.step_limit', help: 'clean.step_limit_help' },
];

/** What a step turned on uses when the preset it starts from leaves it off. */
const FALLBACK: EnhanceOptions = {
  mono: true,
  high_pass_hz: 80,
  declick: true,
  denoise_strength: 1,
  trim: { margin_secs: 0.2, max_pause_secs: 0.6, aggressiveness: 1 },
  loudness_lufs: -20,
  true_peak_ceiling_db: -1,
};

export type Enhancement = 'none' | 'training' | 'natural' | 'custom';

/** Isolation: none, the rough preview, or a separation model by name. */
export type Isolation = { kind: 'none' } | { kind: 'rough' } | { kind: 'model'; name: string };

export function stepOn(options: EnhanceOptions, key: StepKey): boolean {
  switch (key) {
    case 'mono':
      return options.mono;
    case 'high_pass':
      return options.high_pass_hz !== null;
    case 'declick':
      return options.declick;
    case 'denoise':
      return options.denoise_strength !== null;
    case 'trim':
      return options.trim !== null;
    case 'loudness':
      return options.loudness_lufs !== null;
    case 'limit':
      return options.true_peak_ceiling_db !== null;
  }
}

/** `options` with one step turned on (with `base`'s setting, else a sensible one) or off. */
export function withStep(options: EnhanceOptions, key: StepKey, on: boolean, base: EnhanceOptions): EnhanceOptions {
  const pick = <K extends keyof EnhanceOptions>(k: K): EnhanceOptions[K] => base[k] ?? FALLBACK[k];
  const next = { ...options };
  switch (key) {
    case 'mono':
      next.mono = on;
      break;
    case 'high_pass':
      next.high_pass_hz = on ? pick('high_pass_hz') : null;
      break;
    case 'declick':
      next.declick = on;
      break;
    case 'denoise':
      next.denoise_strength = on ? pick('denoise_strength') : null;
      break;
    case 'trim':
      next.trim = on ? { ...(pick('trim') as NonNullable<EnhanceOptions['trim']>) } : null;
      break;
    case 'loudness':
      next.loudness_lufs = on ? pick('loudness_lufs') : null;
      break;
    case 'limit':
      next.true_peak_ceiling_db = on ? pick('true_peak_ceiling_db') : null;
      break;
  }
  return next;
}

/** The enhancement options to send: null for none, a preset's own, or the custom ones. */
export function enhanceOptions(choice: Enhancement, presets: EnhancePresets | null, custom: EnhanceOptions): EnhanceOptions | null {
  if (choice === 'none') return null;
  if (choice === 'custom') return { ...custom };
  if (!presets) throw new Error('the enhancement presets are not loaded yet');
  return { ...presets[choice] };
}

/** The isolation method to send; null for none. */
/** The models that isolate vocals from a mix (a `vocals` stem): what isolation offers. */
export function vocalsModels(models: readonly SeparationModel[]): SeparationModel[] {
  return models.filter((m) => m.task === 'vocals');
}

/** Models whose stems hold a voice, by task in a fixed order: a second pass over vocals offers them. */
export function modelsByTask(models: readonly SeparationModel[]): { task: VoiceTask; models: SeparationModel[] }[] {
  const tasks: VoiceTask[] = ['vocals', 'lead_vocal', 'de_reverb'];
  return tasks
    .map((task) => ({ task, models: models.filter((m) => m.task === task) }))
    .filter((group) => group.models.length > 0);
}

/** The label of a model task's group. */
export function taskLabel(task: VoiceTask): string {
  const keys: Record<VoiceTask, MessageKey> = {
    vocals: 'clean.task_vocals',
    lead_vocal: 'clean.task_lead_vocal',
    de_reverb: 'clean.task_de_reverb',
  };
  return t(keys[task]);
}

export function isolationMethod(choice: Isolation): IsolationMethod | null {
  if (choice.kind === 'none') return null;
  if (choice.kind === 'rough') return 'rough';
  return { model: choice.name };
}

/** A short name for what made a derived take, in the UI's language. */
export function operationLabel(operation: string): string {
  switch (operation) {
    case 'enhance':
      return t('clean.op_enhance');
    case 'isolate_vocals':
      return t('clean.op_vocals');
    case 'isolate_instrumental':
      return t('clean.op_instrumental');
    default:
      return operation;
  }
}

/** The source takes of the succeeded cleaning jobs among `jobIds`, newest job first, once each. */
export function sourcesOf(jobs: Job[], jobIds: number[]): number[] {
  const sources: number[] = [];
  for (const id of [...jobIds].reverse()) {
    const job = jobs.find((j) => j.id === id);
    if (job?.state !== 'succeeded' || !job.result) continue;
    const source = jobJson<EnhanceResult | IsolateResult>(job.result)?.source_take_id;
    if (typeof source === 'number' && !sources.includes(source)) sources.push(source);
  }
  return sources;
}
