// The checkpoint judge on the Train page: what each score means, the weighted score of a
// checkpoint (the backend's `recommend::weighted`, crates/timbre-core/src/train/judge/
// recommend.rs, for the table; the recommendation itself is always the backend's), the charts'
// series, a text equivalent of them, the weights form and the judge's notes among a job's events.
import { jsonObject } from './api';
import type { CheckpointScore, JobEvent, JudgeWeights, Recommendation, TrainingRow } from './api';
import type { Point } from './lineChart';
import { fixed as fixedLocale, t, type MessageKey } from './i18n.svelte';

export type WeightKey = keyof JudgeWeights;

/** The weights, in the order the form shows them, with what each counts (message keys: call
 * `t` where they are shown). */
export const WEIGHTS: readonly { key: WeightKey; label: MessageKey; help: MessageKey }[] = [
  { key: 'similarity', label: 'train.weight_similarity', help: 'train.weight_similarity_help' },
  { key: 'pitch', label: 'train.weight_pitch', help: 'train.weight_pitch_help' },
  { key: 'voicing', label: 'train.weight_voicing', help: 'train.weight_voicing_help' },
  { key: 'reconstruction', label: 'train.weight_reconstruction', help: 'train.weight_reconstruction_help' },
  { key: 'artefacts', label: 'train.weight_artefacts', help: 'train.weight_artefacts_help' },
];

/** How the recommendation is made, in one line (a message key). */
export const RECOMMENDATION_RULE: MessageKey = 'train.weights_rule';

/** What each score is, for the table's headers, the charts and "What the scores mean" (message
 * keys). */
export const SCORE_MEANINGS = {
  similarity: 'train.meaning_similarity',
  ceiling: 'train.meaning_ceiling',
  pitch: 'train.meaning_pitch',
  voicing: 'train.meaning_voicing',
  mel: 'train.meaning_mel',
  trainMel: 'train.meaning_train_mel',
  artefacts: 'train.meaning_artefacts',
  score: 'train.meaning_score',
} as const satisfies Record<string, MessageKey>;

/** Two meanings shown as one text ("what similarity is. What its ceiling is."). */
export function meanings(...keys: MessageKey[]): string {
  return keys.map((key) => t(key)).join(' ');
}

/** The scores with one put in (replacing the one of its step), in step order. */
export function upsertScore(scores: CheckpointScore[], added: CheckpointScore): CheckpointScore[] {
  return [...scores.filter((s) => s.step !== added.step), added].sort((a, b) => a.step - b.step);
}

/** The newest scored checkpoint. */
export function latestScore(scores: readonly CheckpointScore[]): CheckpointScore | null {
  return scores.reduce<CheckpointScore | null>((latest, s) => (latest === null || s.step > latest.step ? s : latest), null);
}

export interface JudgeChart {
  key: string;
  title: string;
  help: string;
  series: { key: string; label: string; color: string; points: Point[] }[];
}

function points(scores: readonly CheckpointScore[], value: (s: CheckpointScore) => number | null): Point[] {
  return scores
    .map((s) => ({ x: s.step, y: value(s) }))
    .filter((p): p is Point => p.y !== null && Number.isFinite(p.y))
    .sort((a, b) => a.x - b.x);
}

/** The small charts of the scores by step, in the UI's language (call it where they are shown,
 * in a `$derived`); a chart none of whose series has a point is left out. */
export function judgeCharts(scores: readonly CheckpointScore[]): JudgeChart[] {
  const charts: JudgeChart[] = [
    {
      key: 'similarity',
      title: t('train.chart_title_similarity'),
      help: meanings(SCORE_MEANINGS.similarity, SCORE_MEANINGS.ceiling),
      series: [
        { key: 'similarity', label: t('train.series_similarity'), color: '#56c28a', points: points(scores, (s) => s.similarity) },
        { key: 'ceiling', label: t('train.series_ceiling'), color: '#8a94a6', points: points(scores, (s) => s.similarity_ceiling) },
        { key: 'source', label: t('train.series_source'), color: '#c78bea', points: points(scores, (s) => s.source_similarity) },
      ],
    },
    {
      key: 'mel',
      title: t('train.chart_title_mel'),
      help: meanings(SCORE_MEANINGS.mel, SCORE_MEANINGS.trainMel),
      series: [
        { key: 'held_out', label: t('train.series_held_out'), color: '#f2a33a', points: points(scores, (s) => s.mel_distance) },
        { key: 'training', label: t('train.series_training'), color: '#6aa7ec', points: points(scores, (s) => s.train_mel_distance) },
      ],
    },
    {
      key: 'pitch',
      title: t('train.chart_title_pitch'),
      help: t(SCORE_MEANINGS.pitch),
      series: [{ key: 'pitch', label: t('train.series_pitch'), color: '#e8c547', points: points(scores, (s) => s.pitch_rmse_cents) }],
    },
    {
      key: 'artefacts',
      title: t('train.chart_title_artefacts'),
      help: t(SCORE_MEANINGS.artefacts),
      series: [{ key: 'artefacts', label: t('train.series_artefacts'), color: '#e86a6a', points: points(scores, (s) => s.artefacts_db) }],
    },
  ];
  return charts
    .map((c) => ({ ...c, series: c.series.filter((s) => s.points.length > 0) }))
    .filter((c) => c.series.length > 0);
}

/** `v` with `digits` decimals in the UI's language, never "-0.000". */
const fixed = (v: number, digits: number) => fixedLocale(Math.abs(v) < 0.5 * 10 ** -digits ? 0 : v, digits);

/** First → latest of one score, with the best when it is neither ("0.61 → 0.80, best 0.85 at step 30"). */
function trend(
  scores: readonly CheckpointScore[],
  value: (s: CheckpointScore) => number | null,
  digits: number,
  better: 'higher' | 'lower',
): string | null {
  const known = scores.filter((s) => value(s) !== null && Number.isFinite(value(s)));
  if (known.length === 0) return null;
  const v = (s: CheckpointScore) => value(s) as number;
  const first = known[0];
  const last = known[known.length - 1];
  if (known.length === 1) return fixed(v(first), digits);
  const best = known.reduce((b, s) => ((better === 'higher' ? v(s) > v(b) : v(s) < v(b)) ? s : b));
  const change = { first: fixed(v(first), digits), last: fixed(v(last), digits) };
  if (best !== first && best !== last) return t('train.trend_best', { ...change, best: fixed(v(best), digits), step: String(best.step) });
  return `${change.first} → ${change.last}`;
}

/** The charts in words: one line per score, first to latest checkpoint. */
export function judgeSummary(scores: readonly CheckpointScore[], recommendation: Recommendation | null): string[] {
  if (scores.length === 0) return [];
  const sorted = [...scores].sort((a, b) => a.step - b.step);
  const lines: string[] = [];
  const scored = t('train.summary_scored', {
    count: sorted.length,
    first: String(sorted[0].step),
    last: String(sorted[sorted.length - 1].step),
  });
  if (recommendation) {
    lines.push(
      t('train.summary_recommended', {
        scored,
        step: String(recommendation.step),
        epoch: String(recommendation.epoch),
        score: fixed(recommendation.score, 3),
        since: recommendation.saves_since,
      }),
    );
  } else {
    lines.push(scored);
  }
  const similarity = trend(sorted, (s) => s.similarity, 3, 'higher');
  if (similarity) {
    const ceiling = latestScore(sorted)?.similarity_ceiling;
    lines.push(
      ceiling == null
        ? t('train.summary_similarity', { trend: similarity })
        : t('train.summary_similarity_ceiling', { trend: similarity, ceiling: fixed(ceiling, 3) }),
    );
  }
  const held = trend(sorted, (s) => s.mel_distance, 3, 'lower');
  const train = trend(sorted, (s) => s.train_mel_distance, 3, 'lower');
  if (held && train) {
    const gapOf = (s: CheckpointScore) => s.mel_distance - s.train_mel_distance;
    const first = gapOf(sorted[0]);
    const last = gapOf(sorted[sorted.length - 1]);
    const widening = sorted.length > 1 && last > first + 0.02 ? 'yes' : 'no';
    const gap = sorted.length > 1 ? `${fixed(first, 3)} → ${fixed(last, 3)}` : fixed(last, 3);
    lines.push(t('train.summary_mel', { held, train, gap, widening }));
  }
  const pitch = trend(sorted, (s) => s.pitch_rmse_cents, 0, 'lower');
  const voicing = trend(sorted, (s) => (s.voicing_agreement === null ? null : s.voicing_agreement * 100), 0, 'higher');
  if (pitch) lines.push(voicing ? t('train.summary_pitch_voicing', { pitch, voicing }) : t('train.summary_pitch', { pitch }));
  const artefacts = trend(sorted, (s) => s.artefacts_db, 1, 'lower');
  if (artefacts) lines.push(t('train.summary_artefacts', { artefacts }));
  return lines;
}

/** The judge's notes among a training job's events: why it is off, what it cannot score, what failed. */
export interface JudgeNote {
  kind: 'judge_off' | 'judge_note' | 'judge_failed';
  message: string;
}

/** What a note says when its event carries no message. */
const NOTE_KINDS: Record<JudgeNote['kind'], MessageKey> = {
  judge_off: 'train.note_judge_off',
  judge_note: 'train.note_judge_note',
  judge_failed: 'train.note_judge_failed',
};

export function judgeNotes(events: readonly JobEvent[]): JudgeNote[] {
  return events.flatMap((e) => {
    if (e.kind !== 'judge_off' && e.kind !== 'judge_note' && e.kind !== 'judge_failed') return [];
    const message = jsonObject(e.data).message;
    return [{ kind: e.kind, message: typeof message === 'string' ? message : t(NOTE_KINDS[e.kind]) }];
  });
}

/** What the panel says while no checkpoint is scored. */
export function judgeEmptyText(run: TrainingRow, notes: readonly JudgeNote[]): string {
  const off = [...notes].reverse().find((n) => n.kind === 'judge_off');
  if (off) return off.message.charAt(0).toUpperCase() + off.message.slice(1);
  if (run.status === 'queued' || run.status === 'running') return t('train.judge_empty_active');
  return t('train.judge_empty_done');
}

/** The weights form: each field's text as typed. */
export type WeightsForm = Record<WeightKey, number | null>;

export function weightsForm(weights: JudgeWeights): WeightsForm {
  return { ...weights };
}

/** Why the weights cannot be saved, or null. */
export function weightsProblem(form: WeightsForm): string | null {
  for (const { key, label } of WEIGHTS) {
    const v = form[key];
    if (v === null || !Number.isFinite(v) || v < 0 || v > 10) return t('train.weights_problem_range', { label: t(label) });
  }
  if (WEIGHTS.every(({ key }) => form[key] === 0)) return t('train.weights_problem_zero');
  return null;
}

/** The JSON the `judge_weights` setting is set to; call once `weightsProblem` is null. */
export function weightsJson(form: WeightsForm): string {
  const problem = weightsProblem(form);
  if (problem) throw new Error(problem);
  return JSON.stringify(Object.fromEntries(WEIGHTS.map(({ key }) => [key, form[key]])));
}

export function sameWeights(form: WeightsForm, weights: JudgeWeights): boolean {
  return WEIGHTS.every(({ key }) => form[key] === weights[key]);
}
