//! What the checkpoint judge (`timbre_core::train::judge`) found of each saved checkpoint of a
//! training: one row per checkpoint step, for the Train page's score chart, the recommended
//! checkpoint and `timbre train show`.

use anyhow::Result;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE checkpoint_scores (
    training_id INTEGER NOT NULL REFERENCES trainings(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    step INTEGER NOT NULL,
    similarity REAL,
    similarity_ceiling REAL,
    source_similarity REAL,
    pitch_rmse_cents REAL,
    voicing_agreement REAL,
    mel_distance REAL NOT NULL,
    train_mel_distance REAL NOT NULL,
    artefacts_db REAL,
    sample TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (training_id, step)
);";

/// The scores of one checkpoint, each on the held-out set unless said otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct CheckpointScore {
    /// The epoch the checkpoint was saved after.
    pub epoch: i64,
    /// Its step (the `G_<step>.pth` it names).
    pub step: i64,
    /// Cosine (-1..1, about 0.6 to 0.95 for speech) between the speaker embedding of the
    /// converted held-out speech and the dataset's mean embedding (0 when the conversion holds
    /// no speech at all); None without the speaker encoder's weights.
    pub similarity: Option<f64>,
    /// The same cosine for the held-out speech itself: the most `similarity` can reach.
    pub similarity_ceiling: Option<f64>,
    /// The cosine for the takes of another speaker the training names as sources, converted;
    /// None when it names none.
    pub source_similarity: Option<f64>,
    /// Root mean square of the converted speech's pitch against the held-out input's, in
    /// cents, over frames voiced in both; None for a model without pitch.
    pub pitch_rmse_cents: Option<f64>,
    /// Share of frames (0..1) whose voicing the conversion keeps; None for a model without
    /// pitch.
    pub voicing_agreement: Option<f64>,
    /// Multi-resolution log-mel distance between the held-out audio and its reconstruction by
    /// the checkpoint (0 = identical; about 0.3 to 1.5 in practice).
    pub mel_distance: f64,
    /// The same distance on as much training audio: the gap `mel_distance - this` widening
    /// while this falls is overtraining.
    pub train_mel_distance: f64,
    /// Inharmonic energy of the conversion less the held-out input's own, in dB: above 0 is
    /// buzz the real voice does not have; None without voiced frames.
    pub artefacts_db: Option<f64>,
    /// The checkpoint's rendering of the first held-out piece, a WAV to listen to.
    pub sample: Option<String>,
    /// When it was scored: UTC, RFC 3339.
    pub at: String,
}

/// Records a checkpoint's scores (scored again, after a resume, it replaces the first record).
pub fn insert(conn: &Connection, training_id: i64, s: &CheckpointScore) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO checkpoint_scores (training_id, epoch, step, similarity,
            similarity_ceiling, source_similarity, pitch_rmse_cents, voicing_agreement,
            mel_distance, train_mel_distance, artefacts_db, sample, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        training_id,
        s.epoch,
        s.step,
        s.similarity,
        s.similarity_ceiling,
        s.source_similarity,
        s.pitch_rmse_cents,
        s.voicing_agreement,
        s.mel_distance,
        s.train_mel_distance,
        s.artefacts_db,
        s.sample,
        s.at
    ])?;
    Ok(())
}

/// The scored checkpoints of training `training_id`, in step order.
pub fn list(conn: &Connection, training_id: i64) -> Result<Vec<CheckpointScore>> {
    let mut stmt = conn.prepare(
        "SELECT epoch, step, similarity, similarity_ceiling, source_similarity,
            pitch_rmse_cents, voicing_agreement, mel_distance, train_mel_distance,
            artefacts_db, sample, at
         FROM checkpoint_scores WHERE training_id = ?1 ORDER BY step",
    )?;
    let rows = stmt.query_map([training_id], |r| {
        Ok(CheckpointScore {
            epoch: r.get(0)?,
            step: r.get(1)?,
            similarity: r.get(2)?,
            similarity_ceiling: r.get(3)?,
            source_similarity: r.get(4)?,
            pitch_rmse_cents: r.get(5)?,
            voicing_agreement: r.get(6)?,
            mel_distance: r.get(7)?,
            train_mel_distance: r.get(8)?,
            artefacts_db: r.get(9)?,
            sample: r.get(10)?,
            at: r.get(11)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Forgets the checkpoints after `step`: a run resumed from an earlier one saves them again.
/// Gives the sample files of the rows removed, for the caller to delete.
pub fn delete_after(conn: &Connection, training_id: i64, step: i64) -> Result<Vec<String>> {
    let samples = conn
        .prepare(
            "SELECT sample FROM checkpoint_scores
             WHERE training_id = ?1 AND step > ?2 AND sample IS NOT NULL",
        )?
        .query_map(params![training_id, step], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    conn.execute(
        "DELETE FROM checkpoint_scores WHERE training_id = ?1 AND step > ?2",
        params![training_id, step],
    )?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(step: i64, similarity: Option<f64>) -> CheckpointScore {
        CheckpointScore {
            epoch: step / 10,
            step,
            similarity,
            similarity_ceiling: Some(0.9),
            source_similarity: None,
            pitch_rmse_cents: Some(30.0),
            voicing_agreement: Some(0.95),
            mel_distance: 0.8,
            train_mel_distance: 0.7,
            artefacts_db: Some(1.5),
            sample: Some(format!("judge/{step}.wav")),
            at: crate::db::now(),
        }
    }

    #[test]
    fn scores_are_listed_in_order_replaced_when_redone_and_forgotten_after_a_resume() {
        let conn = crate::db::open_in_memory();
        let training = crate::db::trainings::sample(&conn);
        for step in [30, 10, 20] {
            insert(&conn, training.id, &score(step, Some(0.5))).unwrap();
        }
        insert(&conn, training.id, &score(20, None)).unwrap();
        let listed = list(&conn, training.id).unwrap();
        let steps: Vec<i64> = listed.iter().map(|s| s.step).collect();
        assert_eq!(steps, [10, 20, 30]);
        assert_eq!(listed[1], score(20, None).with_at(&listed[1].at));
        assert_eq!(
            delete_after(&conn, training.id, 10).unwrap(),
            ["judge/20.wav", "judge/30.wav"]
        );
        assert_eq!(list(&conn, training.id).unwrap().len(), 1);
    }

    impl CheckpointScore {
        fn with_at(self, at: &str) -> Self {
            Self {
                at: at.into(),
                ..self
            }
        }
    }
}
