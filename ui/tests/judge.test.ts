import { describe, expect, it } from 'vitest';
import {
  judgeCharts,
  judgeEmptyText,
  judgeNotes,
  judgeSummary,
  latestScore,
  upsertScore,
  weightsJson,
  weightsProblem,
} from '../src/lib/judge';
import { heldOutText } from '../src/lib/train';
import type { CheckpointScore, DatasetReport, JobEvent, JudgeWeights, TrainingRow } from '../src/lib/api';

/** The Rust tests' `score` (crates/timbre-core/src/train/judge/recommend.rs). */
function score(step: number, similarity: number, mel: number, artefacts: number, over: Partial<CheckpointScore> = {}): CheckpointScore {
  return {
    epoch: step,
    step,
    similarity,
    similarity_ceiling: 0.9,
    source_similarity: null,
    pitch_rmse_cents: 50,
    voicing_agreement: 0.9,
    mel_distance: mel,
    train_mel_distance: mel,
    artefacts_db: artefacts,
    sample: null,
    at: '',
    ...over,
  };
}

const WEIGHTS: JudgeWeights = { similarity: 4, pitch: 2, voicing: 1, reconstruction: 2, artefacts: 1 };

function event(id: number, kind: string, data: JobEvent['data'], level: JobEvent['level'] = 'warn'): JobEvent {
  return { id, job_id: 70, at: '', level, kind, data };
}

describe('scores by step', () => {
  it('puts a score in by its step and finds the latest', () => {
    const scores = [score(20, 0.8, 0.9, 0), score(10, 0.6, 1, 0)].sort((a, b) => a.step - b.step);
    const replaced = upsertScore(scores, score(20, 0.85, 0.8, 0));
    expect(replaced.map((s) => [s.step, s.similarity])).toEqual([[10, 0.6], [20, 0.85]]);
    expect(upsertScore(replaced, score(15, 0.7, 1, 0)).map((s) => s.step)).toEqual([10, 15, 20]);
    expect(latestScore(replaced)?.step).toBe(20);
    expect(latestScore([])).toBeNull();
  });

  it('charts what was scored, leaving out what was not', () => {
    const scores = [score(10, 0.6, 1.0, 0.5, { train_mel_distance: 0.9 }), score(20, 0.8, 0.9, 0.2, { train_mel_distance: 0.6 })];
    const charts = judgeCharts(scores);
    expect(charts.map((c) => [c.key, c.series.map((s) => s.key)])).toEqual([
      ['similarity', ['similarity', 'ceiling']],
      ['mel', ['held_out', 'training']],
      ['pitch', ['pitch']],
      ['artefacts', ['artefacts']],
    ]);
    expect(charts[1].series[1].points).toEqual([{ x: 10, y: 0.9 }, { x: 20, y: 0.6 }]);
    // No speaker encoder, no pitch: only the mel distances and the artefacts.
    const bare = scores.map((s) => ({ ...s, similarity: null, similarity_ceiling: null, pitch_rmse_cents: null }));
    expect(judgeCharts(bare).map((c) => c.key)).toEqual(['mel', 'artefacts']);
  });

  it('says the charts in words: first to latest, the best between, the gap widening', () => {
    const scores = [
      score(10, 0.6, 1.0, 2, { train_mel_distance: 0.95, pitch_rmse_cents: 80 }),
      score(20, 0.85, 0.8, 1, { train_mel_distance: 0.7, pitch_rmse_cents: 40 }),
      score(30, 0.8, 0.9, 0.5, { train_mel_distance: 0.5, pitch_rmse_cents: 45, voicing_agreement: 0.95 }),
    ];
    const recommendation = { step: 20, epoch: 20, score: 0.81234, saves_since: 1, weights: WEIGHTS };
    expect(judgeSummary(scores, recommendation)).toEqual([
      '3 checkpoints scored, steps 10 to 30. Recommended: step 20 (epoch 20), score 0.812, 1 save without a better one since.',
      'Speaker similarity: 0.600 → 0.800, best 0.850 at step 20 (ceiling 0.900).',
      'Mel distance on held-out speech: 1.000 → 0.900, best 0.800 at step 20; on training audio: 0.950 → 0.500; gap 0.050 → 0.400 (widening: a sign of overtraining).',
      'Pitch RMSE (cents): 80 → 45, best 40 at step 20; voicing agreement (%): 90 → 95.',
      'Artefacts (dB above the real voice): 2.0 → 0.5.',
    ]);
    const one = judgeSummary([score(10, 0.7, 0.8, 0)], { ...recommendation, step: 10, epoch: 10, saves_since: 0 });
    expect(one[0]).toBe('1 checkpoint scored, step 10. Recommended: step 10 (epoch 10), score 0.812, the latest.');
    expect(one[2]).toBe('Mel distance on held-out speech: 0.800; on training audio: 0.800; gap 0.000.');
    expect(judgeSummary([], null)).toEqual([]);
  });
});

describe('the judge\'s notes', () => {
  const run = { status: 'running' } as TrainingRow;

  it('reads the judge\'s events among a job\'s and says why nothing is scored', () => {
    const off = 'no held-out speech in this dataset (too small, or prepared before held-out sets): checkpoints are not scored; prepare the dataset again';
    const events = [
      event(1, 'stage', { message: 'training' }, 'info'),
      event(2, 'judge_note', { message: 'no speaker encoder: similarity is not scored' }, 'info'),
      event(3, 'judge_failed', { step: 40, message: 'checkpoint of step 40: out of memory' }),
      event(4, 'judge_off', { message: off }),
    ];
    const notes = judgeNotes(events);
    expect(notes.map((n) => n.kind)).toEqual(['judge_note', 'judge_failed', 'judge_off']);
    expect(notes[1].message).toBe('checkpoint of step 40: out of memory');
    expect(judgeEmptyText(run, notes)).toBe(
      'No held-out speech in this dataset (too small, or prepared before held-out sets): checkpoints are not scored; prepare the dataset again',
    );
    expect(judgeEmptyText(run, notes.slice(0, 2))).toBe('Scores appear after the first checkpoint is saved.');
    expect(judgeEmptyText({ status: 'done' } as TrainingRow, [])).toBe('No checkpoint of this run was scored.');
    expect(judgeNotes([event(5, 'judge_off', 'not json')])[0].message).toBe('judge off');
  });
});

describe('the weights form', () => {
  it('takes 0 to 10 each, not all 0, and sends the setting\'s JSON', () => {
    expect(weightsProblem({ ...WEIGHTS })).toBeNull();
    expect(weightsProblem({ ...WEIGHTS, pitch: 11 })).toMatch(/^Pitch: a weight from 0 to 10/);
    expect(weightsProblem({ ...WEIGHTS, voicing: -1 })).toMatch(/Voicing/);
    expect(weightsProblem({ ...WEIGHTS, artefacts: null })).toMatch(/Artefacts/);
    expect(weightsProblem({ similarity: 0, pitch: 0, voicing: 0, reconstruction: 0, artefacts: 0 })).toMatch(/above 0/);
    expect(JSON.parse(weightsJson({ ...WEIGHTS, similarity: 7.5 }))).toEqual({ ...WEIGHTS, similarity: 7.5 });
    expect(() => weightsJson({ ...WEIGHTS, pitch: null })).toThrow(/Pitch/);
  });
});

describe('the held-out set', () => {
  const report = (held_out: DatasetReport['held_out']) => ({ held_out }) as DatasetReport;

  it('says what a dataset holds out for judging, and when it holds none', () => {
    expect(heldOutText(report({ pieces: 6, seconds: 20.44, sources: ['Verse'], whole_sources: false }))).toBe(
      'Held out for judging: 6 pieces, 20.4 s (from the end of Verse)',
    );
    expect(heldOutText(report({ pieces: 9, seconds: 31, sources: ['c.wav', 'd.wav'], whole_sources: true }))).toBe(
      'Held out for judging: 9 pieces, 31.0 s (from c.wav, d.wav)',
    );
    const none = 'No held-out set (dataset too small or prepared before held-out sets)';
    expect(heldOutText(report({ pieces: 0, seconds: 0, sources: [], whole_sources: false }))).toBe(none);
    // A report stored before held-out sets existed has no field at all.
    expect(heldOutText({} as DatasetReport)).toBe(none);
  });
});
