//! Trainings: one RVC model trained on a prepared dataset by the `train` job
//! (`timbre_core::train::job`), its files under `<data dir>/trainings/<id>/`. The row holds the
//! request, where the run is (epoch, step, batch size, device) and, when done, the model it
//! put into the library.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(super) const CREATE: &str = "
CREATE TABLE trainings (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    dataset_id INTEGER REFERENCES datasets(id) ON DELETE SET NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'stopped', 'done', 'failed')),
    epoch INTEGER NOT NULL DEFAULT 0,
    epochs INTEGER NOT NULL,
    global_step INTEGER NOT NULL DEFAULT 0,
    batch_size INTEGER,
    precision TEXT,
    device TEXT,
    model_id INTEGER REFERENCES models(id) ON DELETE SET NULL,
    job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    error TEXT,
    profile TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);";

/// Status of a training whose job waits in the queue.
pub const QUEUED: &str = "queued";
/// Status while its job trains.
pub const RUNNING: &str = "running";
/// Status after the user stopped it; it can resume from its last checkpoint.
pub const STOPPED: &str = "stopped";
/// Status once it finished and put its model into the library.
pub const DONE: &str = "done";
/// Status after its job failed.
pub const FAILED: &str = "failed";

/// One model training: a row of `trainings`, its status squared with its job's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Training {
    /// Row id in `trainings`; also names its folder, `<data dir>/trainings/<id>/`.
    pub id: i64,
    /// Its name, which the model it makes takes too.
    pub name: String,
    /// None once the dataset was deleted.
    pub dataset_id: Option<i64>,
    /// The `TrainRequest` as the job runs it (defaults filled in).
    pub params: Value,
    /// One of [`QUEUED`], [`RUNNING`], [`STOPPED`], [`DONE`] or [`FAILED`].
    #[ts(type = r#""queued" | "running" | "stopped" | "done" | "failed""#)]
    pub status: String,
    /// Epochs finished and optimizer steps taken.
    pub epoch: i64,
    /// Epochs the training is to run in all.
    pub epochs: i64,
    /// Optimizer steps taken in all.
    pub global_step: i64,
    /// None until the job has chosen one (from the GPU's free memory).
    pub batch_size: Option<i64>,
    /// Precision it trains in (`fp32`, `fp16`, `bf16`); None until it first runs.
    pub precision: Option<String>,
    /// Device it trains on (`cpu`, `cuda:<index>`); None until it first runs.
    pub device: Option<String>,
    /// The model it put into the library once done; None before, or once that model is deleted.
    pub model_id: Option<i64>,
    /// The job of its latest run; None before one is queued, or once that job is deleted.
    pub job_id: Option<i64>,
    /// Why its last run failed; None unless it failed.
    pub error: Option<String>,
    /// Per epoch: the data producer's stage times and the step time (`train::job`).
    pub profile: Option<Value>,
    /// When it was created: UTC, RFC 3339.
    pub created_at: String,
    /// When the row last changed: UTC, RFC 3339.
    pub updated_at: String,
}

/// The status follows the job while it is queued or running: a process killed mid-run leaves
/// `running` here and re-queues the job; a job that ended without reaching this row (a crash
/// of the job system itself) says how it ended.
const SELECT: &str = "SELECT t.id, t.name, t.dataset_id, t.params,
    CASE
        WHEN j.state IN ('queued', 'running') THEN j.state
        WHEN t.status IN ('queued', 'running') AND j.state IS NOT NULL THEN
            CASE j.state WHEN 'succeeded' THEN 'done' WHEN 'cancelled' THEN 'stopped'
                ELSE 'failed' END
        ELSE t.status
    END,
    t.epoch, t.epochs, t.global_step, t.batch_size, t.precision, t.device, t.model_id,
    t.job_id, COALESCE(t.error, CASE WHEN j.state IN ('failed', 'interrupted') THEN j.error END),
    t.profile, t.created_at, t.updated_at
    FROM trainings t LEFT JOIN jobs j ON j.id = t.job_id";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Training> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str(&t).ok());
    Ok(Training {
        id: r.get(0)?,
        name: r.get(1)?,
        dataset_id: r.get(2)?,
        params: json(r.get(3)?).unwrap_or(Value::Null),
        status: r.get(4)?,
        epoch: r.get(5)?,
        epochs: r.get(6)?,
        global_step: r.get(7)?,
        batch_size: r.get(8)?,
        precision: r.get(9)?,
        device: r.get(10)?,
        model_id: r.get(11)?,
        job_id: r.get(12)?,
        error: r.get(13)?,
        profile: json(r.get(14)?),
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
    })
}

/// All trainings, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Training>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY t.id DESC"))?;
    Ok(stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?)
}

/// The training with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Training>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE t.id = ?1"), [id], row)
        .optional()?)
}

/// The training with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Training> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("no training {id}")))
}

/// A new training, queued.
pub fn insert(
    conn: &Connection,
    name: &str,
    dataset_id: i64,
    params: &Value,
    epochs: i64,
    batch_size: Option<i64>,
) -> Result<Training> {
    let now = super::now();
    conn.execute(
        "INSERT INTO trainings (name, dataset_id, params, status, epochs, batch_size,
            created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        params![
            name,
            dataset_id,
            params.to_string(),
            QUEUED,
            epochs,
            batch_size,
            now
        ],
    )
    .with_context(|| format!("creating training {name:?}"))?;
    require(conn, conn.last_insert_rowid())
}

/// A new run of the training queued as `job_id`.
pub fn set_queued(conn: &Connection, id: i64, job_id: i64) -> Result<Training> {
    conn.execute(
        "UPDATE trainings SET status = ?2, job_id = ?3, error = NULL, updated_at = ?4
         WHERE id = ?1",
        params![id, QUEUED, job_id, super::now()],
    )?;
    require(conn, id)
}

/// The job started running it on `device` in `precision`.
pub fn set_running(conn: &Connection, id: i64, device: &str, precision: &str) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET status = ?2, device = ?3, precision = ?4, error = NULL,
            updated_at = ?5 WHERE id = ?1",
        params![id, RUNNING, device, precision, super::now()],
    )?;
    Ok(())
}

/// `stopped` or `failed` (with its error).
pub fn set_ended(conn: &Connection, id: i64, status: &str, error: Option<&str>) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET status = ?2, error = ?3, updated_at = ?4 WHERE id = ?1",
        params![id, status, error, super::now()],
    )?;
    Ok(())
}

/// Marks the training done, with the model it put into the library.
pub fn set_done(conn: &Connection, id: i64, model_id: i64) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET status = ?2, model_id = ?3, error = NULL, updated_at = ?4
         WHERE id = ?1",
        params![id, DONE, model_id, super::now()],
    )?;
    Ok(())
}

/// Records how far the training is: epochs finished and optimizer steps taken.
pub fn set_position(conn: &Connection, id: i64, epoch: i64, global_step: i64) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET epoch = ?2, global_step = ?3, updated_at = ?4 WHERE id = ?1",
        params![id, epoch, global_step, super::now()],
    )?;
    Ok(())
}

/// Records the batch size the job chose.
pub fn set_batch_size(conn: &Connection, id: i64, batch_size: i64) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET batch_size = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, batch_size, super::now()],
    )?;
    Ok(())
}

/// Replaces the training's parameters (its request and plan), as a resume on other devices
/// does.
pub fn set_params(conn: &Connection, id: i64, params: &Value) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET params = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, params.to_string(), super::now()],
    )?;
    Ok(())
}

/// Records the per-epoch profile (stage and step times) as JSON.
pub fn set_profile(conn: &Connection, id: i64, profile: &Value) -> Result<()> {
    conn.execute(
        "UPDATE trainings SET profile = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, profile.to_string(), super::now()],
    )?;
    Ok(())
}

/// A queued three-epoch training "Alto" of a dataset "Set", for tests of its tables.
#[cfg(test)]
pub(crate) fn sample(conn: &Connection) -> Training {
    let dataset = crate::db::datasets::ensure(conn, "Set", None).unwrap();
    let params = serde_json::json!({"epochs": 3});
    insert(conn, "Alto", dataset.id, &params, 3, None).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::jobs::{self, Claim, JobKind, JobState, Lane};
    use serde_json::json;

    #[test]
    fn a_training_moves_through_its_states() {
        let conn = crate::db::open_in_memory();
        let t = sample(&conn);
        assert_eq!(
            (t.status.as_str(), t.epoch, t.batch_size),
            (QUEUED, 0, None)
        );
        assert_eq!(t.params, json!({"epochs": 3}));
        set_running(&conn, t.id, "cuda:0", "fp16").unwrap();
        set_batch_size(&conn, t.id, 8).unwrap();
        set_position(&conn, t.id, 2, 40).unwrap();
        set_profile(&conn, t.id, &json!([{"epoch": 1, "starved": false}])).unwrap();
        let running = require(&conn, t.id).unwrap();
        assert_eq!(running.status, RUNNING);
        assert_eq!((running.epoch, running.global_step), (2, 40));
        assert_eq!(running.batch_size, Some(8));
        assert_eq!(running.device.as_deref(), Some("cuda:0"));
        assert_eq!(running.profile.unwrap()[0]["epoch"], 1);

        set_ended(&conn, t.id, FAILED, Some("boom")).unwrap();
        assert_eq!(require(&conn, t.id).unwrap().error.as_deref(), Some("boom"));
        let model = crate::db::models::insert(&conn, &crate::db::models::sample("w")).unwrap();
        set_done(&conn, t.id, model).unwrap();
        let done = require(&conn, t.id).unwrap();
        assert_eq!((done.status.as_str(), done.model_id), (DONE, Some(model)));
        assert_eq!(done.error, None);
        assert_eq!(list(&conn).unwrap(), vec![done]);
        assert!(require(&conn, 99).is_err());
    }

    #[test]
    fn the_status_follows_the_job_while_it_is_queued_or_running() {
        let conn = crate::db::open_in_memory();
        let t = sample(&conn);
        let job = jobs::insert(&conn, JobKind::Train, Lane::Gpu, &json!({}), 3).unwrap();
        set_queued(&conn, t.id, job).unwrap();
        jobs::claim(&conn, Claim::Id(job), "w").unwrap();
        set_running(&conn, t.id, "cpu", "fp32").unwrap();
        // The process died; the job was re-queued.
        conn.execute("UPDATE jobs SET state = 'queued' WHERE id = ?1", [job])
            .unwrap();
        assert_eq!(require(&conn, t.id).unwrap().status, QUEUED);
        // The job failed without the training hearing of it.
        let crashed = jobs::Failed {
            message: "crashed",
            kind: crate::ErrorKind::Internal,
        };
        jobs::finish(&conn, job, JobState::Failed, None, Some(crashed)).unwrap();
        let failed = require(&conn, t.id).unwrap();
        assert_eq!(failed.status, FAILED);
        assert_eq!(failed.error.as_deref(), Some("crashed"));
        // Stopped by the training itself: its own status stands.
        set_ended(&conn, t.id, STOPPED, None).unwrap();
        assert_eq!(require(&conn, t.id).unwrap().status, STOPPED);
    }

    #[test]
    fn deleting_the_dataset_keeps_the_training() {
        let conn = crate::db::open_in_memory();
        let t = sample(&conn);
        crate::db::datasets::delete(&conn, t.dataset_id.unwrap()).unwrap();
        assert_eq!(require(&conn, t.id).unwrap().dataset_id, None);
    }
}
