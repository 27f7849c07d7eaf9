//! The recommended checkpoint: each score turned into a goodness from 0 (bad) to 1 (as good as
//! it gets), averaged with the user's weights (`Settings::judge_weights`) over the scores a
//! checkpoint has; the checkpoint with the highest average is recommended, the earliest of
//! equals (fewer epochs, less overtrained). The goodness of each:
//!
//! - similarity: the similarity over its ceiling (the held-out speech's own), 0..1, averaged
//!   with the source takes' similarity over the same ceiling when the training names some;
//! - pitch: `1 / (1 + rmse / 100 cents)`: a semitone off on average halves it;
//! - voicing: the agreement itself;
//! - reconstruction: `exp(-mel distance)`;
//! - artefacts: `1 / (1 + max(0, dB) / 3)`: 3 dB more inharmonic energy than the real voice
//!   halves it; less than the real voice counts as none.

use serde::Serialize;

use crate::db::checkpoint_scores::CheckpointScore;
use crate::settings::JudgeWeights;

/// The checkpoint the judge recommends, and why.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct Recommendation {
    /// Its step (`G_<step>.pth`).
    pub step: i64,
    /// The epoch it was saved after.
    pub epoch: i64,
    /// Its weighted score, 0..1.
    pub score: f64,
    /// Scored checkpoints saved after it, none of them better.
    pub saves_since: usize,
    /// The weights the score was made with.
    pub weights: JudgeWeights,
}

/// The weighted goodness (0..1) of one checkpoint's scores; the weights of scores it lacks
/// (no speaker encoder, a model without pitch) are left out of the average.
pub fn weighted(score: &CheckpointScore, weights: &JudgeWeights) -> f64 {
    let similarity = score.similarity_ceiling.and_then(|ceiling| {
        let ratios: Vec<f64> = [score.similarity, score.source_similarity]
            .into_iter()
            .flatten()
            .map(|s| (s / ceiling.max(1e-6)).clamp(0.0, 1.0))
            .collect();
        (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64)
    });
    let parts = [
        (weights.similarity, similarity),
        (
            weights.pitch,
            score
                .pitch_rmse_cents
                .map(|cents| 1.0 / (1.0 + cents / 100.0)),
        ),
        (weights.voicing, score.voicing_agreement),
        (weights.reconstruction, Some((-score.mel_distance).exp())),
        (
            weights.artefacts,
            score.artefacts_db.map(|db| 1.0 / (1.0 + db.max(0.0) / 3.0)),
        ),
    ];
    let (mut sum, mut total) = (0.0, 0.0);
    for (weight, goodness) in parts {
        if let Some(goodness) = goodness {
            sum += weight * goodness;
            total += weight;
        }
    }
    if total == 0.0 { 0.0 } else { sum / total }
}

/// The best of `scores` (in step order) by [`weighted`]; None when there are none.
pub fn recommend(scores: &[CheckpointScore], weights: &JudgeWeights) -> Option<Recommendation> {
    let mut best: Option<(usize, f64)> = None;
    for (i, score) in scores.iter().enumerate() {
        let value = weighted(score, weights);
        if best.is_none_or(|(_, best)| value > best) {
            best = Some((i, value));
        }
    }
    best.map(|(i, value)| Recommendation {
        step: scores[i].step,
        epoch: scores[i].epoch,
        score: value,
        saves_since: scores.len() - i - 1,
        weights: *weights,
    })
}

/// The recommendation, when a training that stops after `patience` saves without a better
/// checkpoint should stop now.
pub fn converged(
    scores: &[CheckpointScore],
    weights: &JudgeWeights,
    patience: i64,
) -> Option<Recommendation> {
    recommend(scores, weights).filter(|best| best.saves_since as i64 >= patience.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONLY_SIMILARITY: JudgeWeights = JudgeWeights {
        similarity: 1.0,
        pitch: 0.0,
        voicing: 0.0,
        reconstruction: 0.0,
        artefacts: 0.0,
    };

    fn score(step: i64, similarity: f64, mel: f64, artefacts: f64) -> CheckpointScore {
        CheckpointScore {
            epoch: step,
            step,
            similarity: Some(similarity),
            similarity_ceiling: Some(0.9),
            source_similarity: None,
            pitch_rmse_cents: Some(50.0),
            voicing_agreement: Some(0.9),
            mel_distance: mel,
            train_mel_distance: mel,
            artefacts_db: Some(artefacts),
            sample: None,
            at: String::new(),
        }
    }

    #[test]
    fn the_recommendation_follows_the_weighted_score() {
        let scores = [
            score(10, 0.60, 1.0, 0.0),
            score(20, 0.80, 0.9, 0.0),
            score(30, 0.85, 0.3, 6.0),
            score(40, 0.70, 1.2, 0.0),
        ];
        let weights = JudgeWeights::default();
        let by_hand = |s: &CheckpointScore| {
            let parts = [
                (4.0, (s.similarity.unwrap() / 0.9).min(1.0)),
                (2.0, 1.0 / 1.5),
                (1.0, 0.9),
                (2.0, (-s.mel_distance).exp()),
                (1.0, 1.0 / (1.0 + s.artefacts_db.unwrap() / 3.0)),
            ];
            parts.iter().map(|(w, g)| w * g).sum::<f64>() / 10.0
        };
        for s in &scores {
            assert!((weighted(s, &weights) - by_hand(s)).abs() < 1e-12);
        }
        let best = recommend(&scores, &weights).unwrap();
        assert_eq!((best.step, best.saves_since), (30, 1));
        // Buzz weighing most moves the recommendation off the buzzing checkpoint.
        let against_buzz = JudgeWeights {
            artefacts: 10.0,
            ..weights
        };
        assert_eq!(recommend(&scores, &against_buzz).unwrap().step, 20);
        // Only reconstruction counting: the lowest mel distance.
        let reconstruction = JudgeWeights {
            similarity: 0.0,
            reconstruction: 1.0,
            ..ONLY_SIMILARITY
        };
        assert_eq!(recommend(&scores, &reconstruction).unwrap().step, 30);
        assert!(recommend(&[], &weights).is_none());
        // Another speaker's takes converted count as much as the held-out speech.
        let mut with_source = score(10, 0.9, 1.0, 0.0);
        with_source.source_similarity = Some(0.45);
        assert!((weighted(&with_source, &ONLY_SIMILARITY) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn equals_recommend_the_earliest_and_missing_scores_leave_their_weight_out() {
        let scores = [score(10, 0.8, 0.7, 0.0), score(20, 0.8, 0.7, 0.0)];
        assert_eq!(
            recommend(&scores, &JudgeWeights::default()).unwrap().step,
            10
        );
        let mut no_encoder = score(10, 0.8, 0.7, 0.0);
        no_encoder.similarity = None;
        assert_eq!(weighted(&no_encoder, &ONLY_SIMILARITY), 0.0);
        let without = weighted(&no_encoder, &JudgeWeights::default());
        let expected = (2.0 / 1.5 + 0.9 + 2.0 * (-0.7f64).exp() + 1.0) / 6.0;
        assert!((without - expected).abs() < 1e-12);
    }

    #[test]
    fn an_overtraining_run_keeps_the_checkpoint_before_the_gap_widens() {
        // The shape of overtraining: the training mel distance keeps falling while the
        // held-out one turns back up after step 30, and similarity and buzz follow it.
        let held_out = [1.20, 0.90, 0.70, 0.75, 0.85, 1.00];
        let trained = [1.15, 0.85, 0.62, 0.50, 0.40, 0.30];
        let similarity = [0.60, 0.72, 0.80, 0.79, 0.76, 0.72];
        let buzz = [2.0, 1.0, 0.5, 0.8, 1.5, 2.5];
        let scores: Vec<CheckpointScore> = (0..6)
            .map(|i| CheckpointScore {
                train_mel_distance: trained[i],
                ..score(10 * (i as i64 + 1), similarity[i], held_out[i], buzz[i])
            })
            .collect();
        let gaps: Vec<f64> = scores
            .iter()
            .map(|s| s.mel_distance - s.train_mel_distance)
            .collect();
        assert!(gaps[2..].windows(2).all(|w| w[1] > w[0]), "{gaps:?}");
        let weights = JudgeWeights::default();
        let best = recommend(&scores, &weights).unwrap();
        assert_eq!((best.step, best.saves_since), (30, 3));
        assert!(converged(&scores[..4], &weights, 2).is_none());
        assert!(converged(&scores[..5], &weights, 2).is_some());
    }

    #[test]
    fn patience_counts_the_saves_after_the_best() {
        let weights = JudgeWeights::default();
        let mut scores = vec![score(10, 0.6, 1.0, 0.0), score(20, 0.8, 0.8, 0.0)];
        assert!(converged(&scores, &weights, 2).is_none());
        scores.push(score(30, 0.7, 0.9, 0.0));
        assert!(converged(&scores, &weights, 2).is_none());
        assert!(converged(&scores, &weights, 1).is_some());
        scores.push(score(40, 0.75, 0.85, 0.0));
        assert!(converged(&scores, &weights, 2).is_some());
    }
}
