// The checkpoint judge on the Train page: what each score means, the weighted score of a
// checkpoint (the backend's `recommend::weighted`, crates/timbre-core/src/train/judge/
// recommend.rs, for the table; the recommendation itself is always the backend's), the charts'
// series, a text equivalent of them, the weights form and the judge's notes among a job's events.
import { jsonObject } from './api';
import type { CheckpointScore, JobEvent, JudgeWeights, Recommendation, TrainingRow } from './api';
import type { Point } from './lineChart';

export type WeightKey = keyof JudgeWeights;

/** The weights, in the order the form shows them, with what each counts. */
export const WEIGHTS: readonly { key: WeightKey; label: string; help: string }[] = [
  { key: 'similarity', label: 'Speaker similarity', help: 'Sounds like the voice: similarity over its ceiling.' },
  { key: 'pitch', label: 'Pitch', help: 'Follows the sung or spoken pitch: 1 / (1 + RMSE / 100 cents).' },
  { key: 'voicing', label: 'Voicing', help: 'Voiced where the input is, silent where it is not: the agreement.' },
  { key: 'reconstruction', label: 'Reconstruction', help: 'Close to the real held-out audio: e^(−mel distance).' },
  { key: 'artefacts', label: 'Artefacts', help: 'Free of buzz: 1 / (1 + dB above the real voice / 3).' },
];

/** How the recommendation is made, in one line. */
export const RECOMMENDATION_RULE =
  'Each score becomes a goodness from 0 to 1, averaged with these weights over the scores a checkpoint has; ' +
  'the checkpoint with the highest average is recommended (the earliest of equals, being less overtrained).';

/** What each score is, for the table's headers, the charts and "What the scores mean". */
export const SCORE_MEANINGS = {
  similarity:
    'Speaker similarity: cosine between the voice embedding of the converted held-out speech and the dataset’s mean ' +
    'embedding (−1 to 1; about 0.6 to 0.95 for speech). Higher is better.',
  ceiling:
    'Similarity ceiling: the same cosine for the real held-out speech, the most the conversion can reach.',
  pitch:
    'Pitch RMSE: how far the converted pitch is from the input’s, in cents (100 = a semitone), over frames voiced in ' +
    'both. Lower is better.',
  voicing: 'Voicing agreement: the share of frames whose voiced or unvoiced state the conversion keeps. Higher is better.',
  mel:
    'Mel distance (held out): log-mel distance between the real held-out audio and the checkpoint’s reconstruction ' +
    '(0 = identical; about 0.3 to 1.5). Lower is better.',
  trainMel:
    'Mel distance (training): the same on as much training audio. When it keeps falling while the held-out one rises, ' +
    'the gap widening, the model is overtraining.',
  artefacts:
    'Artefacts: inharmonic energy of the conversion less the real voice’s, in dB. Above 0 is buzz the real voice ' +
    'does not have. Lower is better.',
  score: 'Weighted score: the goodness of each score averaged with the weights below (0 to 1). Higher is better.',
} as const;

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

/** The small charts of the scores by step; a chart none of whose series has a point is left out. */
export function judgeCharts(scores: readonly CheckpointScore[]): JudgeChart[] {
  const charts: JudgeChart[] = [
    {
      key: 'similarity',
      title: 'Speaker similarity',
      help: `${SCORE_MEANINGS.similarity} ${SCORE_MEANINGS.ceiling}`,
      series: [
        { key: 'similarity', label: 'Similarity', color: '#56c28a', points: points(scores, (s) => s.similarity) },
        { key: 'ceiling', label: 'Ceiling', color: '#8a94a6', points: points(scores, (s) => s.similarity_ceiling) },
        { key: 'source', label: 'Other speaker', color: '#c78bea', points: points(scores, (s) => s.source_similarity) },
      ],
    },
    {
      key: 'mel',
      title: 'Mel distance',
      help: `${SCORE_MEANINGS.mel} ${SCORE_MEANINGS.trainMel}`,
      series: [
        { key: 'held_out', label: 'Held out', color: '#f2a33a', points: points(scores, (s) => s.mel_distance) },
        { key: 'training', label: 'Training', color: '#6aa7ec', points: points(scores, (s) => s.train_mel_distance) },
      ],
    },
    {
      key: 'pitch',
      title: 'Pitch RMSE (cents)',
      help: SCORE_MEANINGS.pitch,
      series: [{ key: 'pitch', label: 'Pitch RMSE', color: '#e8c547', points: points(scores, (s) => s.pitch_rmse_cents) }],
    },
    {
      key: 'artefacts',
      title: 'Artefacts (dB)',
      help: SCORE_MEANINGS.artefacts,
      series: [{ key: 'artefacts', label: 'Artefacts', color: '#e86a6a', points: points(scores, (s) => s.artefacts_db) }],
    },
  ];
  return charts
    .map((c) => ({ ...c, series: c.series.filter((s) => s.points.length > 0) }))
    .filter((c) => c.series.length > 0);
}

const fixed = (v: number, digits: number) => (Math.abs(v) < 0.5 * 10 ** -digits ? 0 : v).toFixed(digits);

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
  const bestText = best !== first && best !== last ? `, best ${fixed(v(best), digits)} at step ${best.step}` : '';
  return `${fixed(v(first), digits)} → ${fixed(v(last), digits)}${bestText}`;
}

/** The charts in words: one line per score, first to latest checkpoint. */
export function judgeSummary(scores: readonly CheckpointScore[], recommendation: Recommendation | null): string[] {
  if (scores.length === 0) return [];
  const sorted = [...scores].sort((a, b) => a.step - b.step);
  const lines: string[] = [];
  const span = sorted.length === 1 ? `step ${sorted[0].step}` : `steps ${sorted[0].step} to ${sorted[sorted.length - 1].step}`;
  const count = sorted.length === 1 ? '1 checkpoint' : `${sorted.length} checkpoints`;
  if (recommendation) {
    const since =
      recommendation.saves_since === 0
        ? 'the latest'
        : `${recommendation.saves_since} ${recommendation.saves_since === 1 ? 'save' : 'saves'} without a better one since`;
    lines.push(`${count} scored, ${span}. Recommended: step ${recommendation.step} (epoch ${recommendation.epoch}), score ${fixed(recommendation.score, 3)}, ${since}.`);
  } else {
    lines.push(`${count} scored, ${span}.`);
  }
  const similarity = trend(sorted, (s) => s.similarity, 3, 'higher');
  if (similarity) {
    const ceiling = latestScore(sorted)?.similarity_ceiling;
    lines.push(`Speaker similarity: ${similarity}${ceiling == null ? '' : ` (ceiling ${fixed(ceiling, 3)})`}.`);
  }
  const held = trend(sorted, (s) => s.mel_distance, 3, 'lower');
  const train = trend(sorted, (s) => s.train_mel_distance, 3, 'lower');
  if (held && train) {
    const gap = (s: CheckpointScore) => s.mel_distance - s.train_mel_distance;
    const first = gap(sorted[0]);
    const last = gap(sorted[sorted.length - 1]);
    const widening = sorted.length > 1 && last > first + 0.02 ? ' (widening: a sign of overtraining)' : '';
    const gapText = sorted.length > 1 ? `${fixed(first, 3)} → ${fixed(last, 3)}` : fixed(last, 3);
    lines.push(`Mel distance on held-out speech: ${held}; on training audio: ${train}; gap ${gapText}${widening}.`);
  }
  const pitch = trend(sorted, (s) => s.pitch_rmse_cents, 0, 'lower');
  const voicing = trend(sorted, (s) => (s.voicing_agreement === null ? null : s.voicing_agreement * 100), 0, 'higher');
  if (pitch) lines.push(`Pitch RMSE (cents): ${pitch}${voicing ? `; voicing agreement (%): ${voicing}` : ''}.`);
  const artefacts = trend(sorted, (s) => s.artefacts_db, 1, 'lower');
  if (artefacts) lines.push(`Artefacts (dB above the real voice): ${artefacts}.`);
  return lines;
}

/** The judge's notes among a training job's events: why it is off, what it cannot score, what failed. */
export interface JudgeNote {
  kind: 'judge_off' | 'judge_note' | 'judge_failed';
  message: string;
}

export function judgeNotes(events: readonly JobEvent[]): JudgeNote[] {
  return events.flatMap((e) => {
    if (e.kind !== 'judge_off' && e.kind !== 'judge_note' && e.kind !== 'judge_failed') return [];
    const message = jsonObject(e.data).message;
    return [{ kind: e.kind, message: typeof message === 'string' ? message : e.kind.replace('_', ' ') }];
  });
}

/** What the panel says while no checkpoint is scored. */
export function judgeEmptyText(run: TrainingRow, notes: readonly JudgeNote[]): string {
  const off = [...notes].reverse().find((n) => n.kind === 'judge_off');
  if (off) return off.message.charAt(0).toUpperCase() + off.message.slice(1);
  if (run.status === 'queued' || run.status === 'running') return 'Scores appear after the first checkpoint is saved.';
  return 'No checkpoint of this run was scored.';
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
    if (v === null || !Number.isFinite(v) || v < 0 || v > 10) return `${label}: a weight from 0 to 10.`;
  }
  if (WEIGHTS.every(({ key }) => form[key] === 0)) return 'At least one weight must be above 0.';
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
