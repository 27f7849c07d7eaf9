// The Cover page's choices turned into what the backend takes, and its jobs and results read
// back: the stages of a job, the stems and covers of a song, the covers' conversions to compare.
import { jobJson, type Conversion, type ConvertOptions, type CoverResult, type CoverSettings, type DerivedResult, type EffectChain, type IsolationMethod, type Job, type OutputFormat, type Stage, type StageStatus } from './api';
import { t, type MessageKey } from './i18n.svelte';

/** The separation: the rough weight-free isolation, or a RoFormer of the models folder. */
export type Separation = { kind: 'rough' } | { kind: 'model'; name: string };

export interface CoverForm {
  /** The voice; null: the original vocals pass through (the remix alone). */
  modelId: number | null;
  separation: Separation;
  /** A second separation model over the vocals (de-reverb, karaoke). */
  secondPass: string | null;
  vocalGainDb: number;
  instrumentalGainDb: number;
  matchLoudness: boolean;
  format: OutputFormat;
  /** Effects over the converted vocals before the remix (a preset's chain). */
  effects: EffectChain | null;
}

/** The request's settings, with the Convert page's conversion parameters. */
export function coverSettings(form: CoverForm, options: ConvertOptions): CoverSettings {
  const separation: IsolationMethod = form.separation.kind === 'rough' ? 'rough' : { model: form.separation.name };
  return {
    model_id: form.modelId,
    options,
    separation,
    second_pass: form.secondPass,
    vocal_gain_db: form.vocalGainDb,
    instrumental_gain_db: form.instrumentalGainDb,
    match_loudness: form.matchLoudness,
    format: form.format,
    effects: form.effects,
  };
}

/** Each stage with the message key of its name. */
export const STAGES: readonly { stage: Stage; label: MessageKey }[] = [
  { stage: 'isolate', label: 'cover.stage_isolate' },
  { stage: 'second_pass', label: 'cover.stage_second_pass' },
  { stage: 'convert', label: 'cover.stage_convert' },
  { stage: 'effects', label: 'cover.stage_effects' },
  { stage: 'remix', label: 'cover.stage_remix' },
];

export type StageState = 'waiting' | 'running' | StageStatus;

/** The message key of what a stage's state reads as. */
export const STAGE_STATE_LABELS: Record<StageState, MessageKey> = {
  waiting: 'cover.stage_waiting',
  running: 'cover.stage_running',
  ran: 'cover.stage_ran',
  cached: 'cover.stage_cached',
  skipped: 'cover.stage_skipped',
};

export interface StageRow {
  stage: Stage;
  /** A message key: shown through `t`. */
  label: MessageKey;
  state: StageState;
}

/** `params` of a cover job (the fields the UI reads). */
export interface CoverJobParams {
  song: { take: number } | { file: string };
  model_id: number | null;
}

/**
 * Each stage of a cover job: from its result once it succeeded, else from its progress
 * message (`<song>: <stage>: …`): the stages before the one running are done.
 */
export function stageRows(job: Job): StageRow[] {
  const result = job.state === 'succeeded' ? jobJson<CoverResult>(job.result) : null;
  if (result) {
    return STAGES.map(({ stage, label }) => ({
      stage,
      label,
      state: result.stages.find((s) => s.stage === stage)?.status ?? 'waiting',
    }));
  }
  const running = STAGES.findIndex(({ stage }) => job.message.includes(`: ${stage}: `));
  return STAGES.map(({ stage, label }, i) => ({
    stage,
    label,
    state: job.state !== 'running' || running < 0 || i > running ? 'waiting' : i === running ? 'running' : 'ran',
  }));
}

export interface SongCovers {
  /** Vocals, instrumental, the second pass's and the converted vocals, oldest first. */
  stems: DerivedResult[];
  /** The covers, newest first. */
  covers: DerivedResult[];
}

export function coversOfSong(derived: DerivedResult[]): SongCovers {
  return {
    stems: derived.filter((d) => d.link.operation !== 'cover'),
    covers: derived.filter((d) => d.link.operation === 'cover').reverse(),
  };
}

/** The voice that sings a cover; null: the original vocals. */
export function coverVoiceName(cover: DerivedResult): string | null {
  const params = cover.link.params;
  const voice = params && typeof params === 'object' && !Array.isArray(params) ? params.voice : null;
  return typeof voice === 'string' ? voice : null;
}

/** Who sings a cover: its voice, or the original vocals (in the UI's language). */
export function coverVoice(cover: DerivedResult): string {
  return coverVoiceName(cover) ?? t('cover.original_vocals');
}

const STEM_LABELS: Record<string, MessageKey> = {
  isolate_vocals: 'cover.stem_vocals',
  isolate_instrumental: 'cover.stem_instrumental',
  cover_lead_vocals: 'cover.stem_lead_vocals',
  cover_backing_vocals: 'cover.stem_other_vocals',
  cover_converted_vocals: 'cover.stem_converted_vocals',
  cover: 'cover.stem_cover',
};

export function stemLabel(operation: string): string {
  const key = STEM_LABELS[operation];
  return key ? t(key) : operation;
}

/** The conversions that are the song's covers (each with a voice), newest of each voice first. */
export function coverConversions(conversions: Conversion[], songTakeId: number, covers: DerivedResult[]): Conversion[] {
  const shas = new Set(covers.map((c) => c.take.sha256));
  const seen = new Set<number | null>();
  return conversions
    .filter((c) => c.input_take_id === songTakeId && shas.has(c.sha256))
    .sort((a, b) => b.created_at.localeCompare(a.created_at))
    .filter((c) => (seen.has(c.model_id) ? false : (seen.add(c.model_id), true)));
}

/** The songs of cover jobs (their take ids once they ran), newest first, each once. */
export function songsOf(jobs: Job[], jobIds: number[]): number[] {
  const songs: number[] = [];
  for (const id of [...jobIds].reverse()) {
    const job = jobs.find((j) => j.id === id);
    const result = job?.state === 'succeeded' ? jobJson<CoverResult>(job.result) : null;
    if (result && !songs.includes(result.song_take_id)) songs.push(result.song_take_id);
  }
  return songs;
}
