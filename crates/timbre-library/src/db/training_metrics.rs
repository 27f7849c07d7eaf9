//! The losses of a training as it runs: one row every few steps (`train::job`), for the
//! Train page's curves and `timbre train show`.

use anyhow::Result;
use rusqlite::{Connection, params};
use serde::Serialize;

pub(super) const CREATE: &str = "
CREATE TABLE training_metrics (
    training_id INTEGER NOT NULL REFERENCES trainings(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    step INTEGER NOT NULL,
    g_total REAL NOT NULL,
    d_total REAL NOT NULL,
    mel REAL NOT NULL,
    kl REAL NOT NULL,
    fm REAL NOT NULL,
    adversarial REAL NOT NULL,
    grad_norm_g REAL NOT NULL,
    grad_norm_d REAL NOT NULL,
    lr REAL NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (training_id, step)
);";

/// The losses of one recorded step and the gradients' norms (what `timbre_nn`'s trainer
/// reports; `timbre_core::train` converts, so that the library needs no libtorch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ts_rs::TS)]
pub struct StepLosses {
    /// Generator loss in all: `adversarial + fm + mel + kl`.
    pub g_total: f64,
    /// Discriminator loss in all.
    pub d_total: f64,
    /// Mel-spectrogram L1 loss, already weighted by `c_mel`.
    pub mel: f64,
    /// KL divergence loss, already weighted by `c_kl`.
    pub kl: f64,
    /// Feature-matching loss.
    pub fm: f64,
    /// The generator's adversarial loss.
    pub adversarial: f64,
    /// Norm of the generator's gradients.
    pub grad_norm_g: f64,
    /// Norm of the discriminator's gradients.
    pub grad_norm_d: f64,
}

/// One recorded training step: a row of `training_metrics`.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct TrainingMetric {
    /// The epoch the step belongs to (1 for the first).
    pub epoch: i64,
    /// Optimizer steps taken in all, this one included; unique within a training.
    pub step: i64,
    /// The step's losses and gradient norms.
    #[serde(flatten)]
    pub losses: StepLosses,
    /// Generator learning rate at the step.
    pub lr: f64,
    /// When it was recorded: UTC, RFC 3339.
    pub at: String,
}

/// Records a step (a step recorded again, after a resume, replaces the first record).
pub fn insert(conn: &Connection, training_id: i64, m: &TrainingMetric) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO training_metrics (training_id, epoch, step, g_total, d_total,
            mel, kl, fm, adversarial, grad_norm_g, grad_norm_d, lr, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        training_id,
        m.epoch,
        m.step,
        m.losses.g_total,
        m.losses.d_total,
        m.losses.mel,
        m.losses.kl,
        m.losses.fm,
        m.losses.adversarial,
        m.losses.grad_norm_g,
        m.losses.grad_norm_d,
        m.lr,
        m.at
    ])?;
    Ok(())
}

/// The recorded steps of training `training_id`, in step order.
pub fn list(conn: &Connection, training_id: i64) -> Result<Vec<TrainingMetric>> {
    let mut stmt = conn.prepare(
        "SELECT epoch, step, g_total, d_total, mel, kl, fm, adversarial, grad_norm_g,
            grad_norm_d, lr, at FROM training_metrics WHERE training_id = ?1 ORDER BY step",
    )?;
    let rows = stmt.query_map([training_id], |r| {
        Ok(TrainingMetric {
            epoch: r.get(0)?,
            step: r.get(1)?,
            losses: StepLosses {
                g_total: r.get(2)?,
                d_total: r.get(3)?,
                mel: r.get(4)?,
                kl: r.get(5)?,
                fm: r.get(6)?,
                adversarial: r.get(7)?,
                grad_norm_g: r.get(8)?,
                grad_norm_d: r.get(9)?,
            },
            lr: r.get(10)?,
            at: r.get(11)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Forgets the steps after `step`: a run resumed from a checkpoint trains them again.
pub fn delete_after(conn: &Connection, training_id: i64, step: i64) -> Result<()> {
    conn.execute(
        "DELETE FROM training_metrics WHERE training_id = ?1 AND step > ?2",
        params![training_id, step],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(epoch: i64, step: i64, mel: f64) -> TrainingMetric {
        TrainingMetric {
            epoch,
            step,
            losses: StepLosses {
                g_total: 1.0,
                d_total: 2.0,
                mel,
                kl: 0.5,
                fm: 0.25,
                adversarial: 3.0,
                grad_norm_g: 10.0,
                grad_norm_d: 20.0,
            },
            lr: 1e-4,
            at: crate::db::now(),
        }
    }

    #[test]
    fn steps_are_listed_in_order_replaced_when_redone_and_forgotten_after_a_resume() {
        let conn = crate::db::open_in_memory();
        let training = crate::db::trainings::sample(&conn);
        for (epoch, step) in [(1, 20), (1, 10), (2, 30)] {
            insert(&conn, training.id, &metric(epoch, step, 40.0)).unwrap();
        }
        insert(&conn, training.id, &metric(1, 20, 35.0)).unwrap();
        let steps: Vec<(i64, f64)> = list(&conn, training.id)
            .unwrap()
            .iter()
            .map(|m| (m.step, m.losses.mel))
            .collect();
        assert_eq!(steps, [(10, 40.0), (20, 35.0), (30, 40.0)]);
        delete_after(&conn, training.id, 20).unwrap();
        assert_eq!(list(&conn, training.id).unwrap().len(), 2);
    }
}
