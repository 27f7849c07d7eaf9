//! The `jobs` table, the queue: one row per job (its kind, lane, state, JSON parameters and
//! result, progress, retries and error), with its migrations. A worker claims a due queued job
//! atomically; recovering the jobs of a dead worker is in `recovery`.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::error::ErrorKind;

pub(super) const CREATE: &str = "
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    lane TEXT NOT NULL CHECK (lane IN ('gpu', 'light')),
    state TEXT NOT NULL CHECK (state IN
        ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
    params TEXT NOT NULL,
    result TEXT,
    progress REAL NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    max_retries INTEGER NOT NULL,
    batch_scale REAL NOT NULL DEFAULT 1.0,
    error TEXT,
    worker TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    not_before TEXT,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT
);
CREATE INDEX jobs_state ON jobs(state, lane);";

/// `crashes`: how many processes died while running the job. `recovered`: put back in the
/// queue after such a death and waiting for the user to resume or drop it.
pub(super) const ADD_CRASH_RECOVERY: &str = "
ALTER TABLE jobs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0;";

/// The kind of a failed attempt's error (`ErrorKind`, snake_case), so the app can say what to
/// do about it.
pub(super) const ADD_ERROR_KIND: &str = "
ALTER TABLE jobs ADD COLUMN error_kind TEXT;";

mod recovery;

pub use recovery::{
    MAX_CRASHES, Recovered, drop_waiting, recover_from_dead_worker, resume,
    running_under_dead_workers, waiting_after_crash,
};

/// Where a job is in its life, stored in `jobs.state` by its snake_case name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker to claim it (also between retries, until `not_before`).
    Queued,
    /// Claimed by a worker, which is running it.
    Running,
    /// Ended with a result.
    Succeeded,
    /// Ended with an error, after any retries.
    Failed,
    /// Cancelled by the user before or while it ran.
    Cancelled,
    /// Cut off when the process running it died, and not resumable.
    Interrupted,
}

impl JobState {
    /// Its name as stored in `jobs.state`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => JobState::Interrupted,
        }
    }
}

/// GPU-heavy kinds run one at a time; light ones in parallel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "JobLane")]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// GPU-heavy work, one job at a time.
    Gpu,
    /// Work that runs in parallel, on `light_workers` workers.
    Light,
}

impl Lane {
    /// Its name as stored in `jobs.lane`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Gpu => "gpu",
            Lane::Light => "light",
        }
    }
}

/// Every kind of job, stored in `jobs.kind` by its snake_case name. Each has one handler
/// ([`crate::jobs::JobHandler`]), and its own params and result types in timbre-core.
#[derive(
    Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Voice conversion of a take or a file with a voice model.
    Convert,
    /// A song cover: vocals separated, converted and mixed back with the instrumental.
    Cover,
    /// Separating vocals or the instrumental of a take into derived takes.
    Isolate,
    /// Speech enhancement of a take into a derived take.
    Enhance,
    /// Training a voice model.
    Train,
    /// Preparing a training dataset.
    Dataset,
    /// Bringing audio files into the library as takes.
    Import,
    /// Importing voice models from a `.pth`, a `.zip`, a folder or a link.
    VoiceImport,
    /// Downloading one asset of the catalogue.
    Download,
    /// Finding the smallest live block this machine keeps up with for a voice.
    LiveTune,
    /// Downloading and unpacking the CUDA runtime a package leaves out.
    RuntimeInstall,
    /// Installing a newer release of the app from the signed update feed (the tar.gz form).
    UpdateInstall,
}

impl JobKind {
    /// Every kind, in declaration order.
    pub const ALL: [JobKind; 12] = [
        JobKind::Convert,
        JobKind::Cover,
        JobKind::Isolate,
        JobKind::Enhance,
        JobKind::Train,
        JobKind::Dataset,
        JobKind::Import,
        JobKind::VoiceImport,
        JobKind::Download,
        JobKind::LiveTune,
        JobKind::RuntimeInstall,
        JobKind::UpdateInstall,
    ];

    /// Its snake_case name, as stored in `jobs.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Convert => "convert",
            JobKind::Cover => "cover",
            JobKind::Isolate => "isolate",
            JobKind::Enhance => "enhance",
            JobKind::Train => "train",
            JobKind::Dataset => "dataset",
            JobKind::Import => "import",
            JobKind::VoiceImport => "voice_import",
            JobKind::Download => "download",
            JobKind::LiveTune => "live_tune",
            JobKind::RuntimeInstall => "runtime_install",
            JobKind::UpdateInstall => "update_install",
        }
    }

    /// The kind named `name` (snake_case); None for a kind this build does not know.
    pub fn parse(name: &str) -> Option<JobKind> {
        JobKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One job: a row of `jobs`.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct Job {
    /// Row id in `jobs`.
    pub id: i64,
    /// What the job does.
    pub kind: JobKind,
    /// Which lane's workers run it.
    pub lane: Lane,
    /// Where it is in its life.
    pub state: JobState,
    /// The kind's parameters as JSON (its request type in timbre-core); null if unreadable.
    pub params: serde_json::Value,
    /// The kind's result as JSON once it succeeded; None otherwise.
    pub result: Option<serde_json::Value>,
    /// Fraction done, 0.0 to 1.0; reset when claimed, 1.0 on success.
    pub progress: f64,
    /// The latest progress message; empty until the job reports one.
    pub message: String,
    /// How many failed attempts have been retried so far; 0 again after a manual retry.
    pub attempts: u32,
    /// How many times a transient or out-of-memory failure is retried (the setting when queued).
    pub max_retries: u32,
    /// Batch-size factor for jobs that batch: 1.0, halved after each out-of-memory retry.
    pub batch_scale: f64,
    /// Message of the last failed attempt's error; None when none failed, cleared when claimed.
    pub error: Option<String>,
    /// What kind of error `error` is (the last failed attempt's).
    pub error_kind: Option<ErrorKind>,
    /// Process id (`Library::process_id`) of the process running it; None unless running.
    pub worker: Option<String>,
    /// The user asked to cancel it while it ran; the worker stops at its next progress report.
    pub cancel_requested: bool,
    /// How many processes died while running it; at `MAX_CRASHES` it fails.
    pub crashes: u32,
    /// Re-queued after the process running it died; workers leave it until it is resumed.
    pub recovered: bool,
    /// When it was queued: UTC, RFC 3339.
    pub created_at: String,
    /// When a worker last claimed it (UTC, RFC 3339); None before.
    pub started_at: Option<String>,
    /// When it ended (UTC, RFC 3339); None while queued or running.
    pub finished_at: Option<String>,
}

const SELECT: &str = "SELECT id, kind, lane, state, params, result, progress, message, attempts,
    max_retries, batch_scale, error, worker, cancel_requested, created_at, started_at, finished_at,
    crashes, recovered, error_kind
    FROM jobs";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Job> {
    let json = |i: usize| -> rusqlite::Result<Option<serde_json::Value>> {
        let text: Option<String> = r.get(i)?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    };
    let lane: String = r.get(2)?;
    let state: String = r.get(3)?;
    let kind: String = r.get(1)?;
    // A kind this build does not know (a newer app's job): an error that names it.
    let kind = JobKind::parse(&kind).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown job kind {kind:?}").into(),
        )
    })?;
    Ok(Job {
        id: r.get(0)?,
        kind,
        lane: if lane == "gpu" {
            Lane::Gpu
        } else {
            Lane::Light
        },
        state: JobState::parse(&state),
        params: json(4)?.unwrap_or_default(),
        result: json(5)?,
        progress: r.get(6)?,
        message: r.get(7)?,
        attempts: r.get(8)?,
        max_retries: r.get(9)?,
        batch_scale: r.get(10)?,
        error: r.get(11)?,
        error_kind: r
            .get::<_, Option<String>>(19)?
            .and_then(|kind| serde_json::from_value(serde_json::Value::String(kind)).ok()),
        worker: r.get(12)?,
        cancel_requested: r.get(13)?,
        created_at: r.get(14)?,
        started_at: r.get(15)?,
        finished_at: r.get(16)?,
        crashes: r.get(17)?,
        recovered: r.get(18)?,
    })
}

/// Queues a job of `kind` on `lane` with `params`; its row id.
pub fn insert(
    conn: &Connection,
    kind: JobKind,
    lane: Lane,
    params: &serde_json::Value,
    max_retries: u32,
) -> Result<i64> {
    conn.execute(
        "INSERT INTO jobs (kind, lane, state, params, max_retries, created_at)
         VALUES (?1, ?2, 'queued', ?3, ?4, ?5)",
        params![
            kind.as_str(),
            lane.as_str(),
            params.to_string(),
            max_retries,
            super::now()
        ],
    )
    .with_context(|| format!("queueing a {kind} job"))?;
    Ok(conn.last_insert_rowid())
}

/// The job with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Job>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?)
}

/// The job with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Job> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("job {id} does not exist")))
}

/// The oldest queued or running job of `kind` whose parameter `key` is `value`.
pub fn unfinished_with_param(
    conn: &Connection,
    kind: JobKind,
    key: &str,
    value: &str,
) -> Result<Option<Job>> {
    Ok(conn
        .query_row(
            &format!(
                "{SELECT} WHERE kind = ?1 AND state IN ('queued', 'running')
                 AND json_extract(params, '$.' || ?2) = ?3 ORDER BY id LIMIT 1"
            ),
            [kind.as_str(), key, value],
            row,
        )
        .optional()?)
}

/// The newest `limit` jobs, newest first.
pub fn list(conn: &Connection, limit: u32) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY id DESC LIMIT ?1"))?;
    Ok(stmt
        .query_map([limit], row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Which queued job a worker takes.
#[derive(Debug, Clone, Copy)]
pub enum Claim<'a> {
    /// The oldest due job of a lane, or of any lane; not the recovered ones.
    Next(Option<Lane>),
    /// The oldest due job, recovered ones included: the user asked to run the queue.
    Any,
    /// The oldest due job of a lane among `kinds` (`only`), or among every other kind.
    Kinds {
        /// The lane to take from.
        lane: Lane,
        /// The kinds that `only` is about.
        kinds: &'a [JobKind],
        /// True: take only a job of `kinds`; false: only a job of any other kind.
        only: bool,
    },
    /// That job, if it is queued and due.
    Id(i64),
}

/// Atomically moves one due queued job to running for this worker.
pub fn claim(conn: &Connection, which: Claim, worker: &str) -> Result<Option<Job>> {
    let with_recovered = matches!(which, Claim::Any | Claim::Id(_));
    let (lane, id, kinds, only) = match which {
        Claim::Next(lane) => (lane.map(Lane::as_str), None, None, false),
        Claim::Any => (None, None, None, false),
        Claim::Kinds { lane, kinds, only } => (
            Some(lane.as_str()),
            None,
            Some(serde_json::to_string(kinds)?),
            only,
        ),
        Claim::Id(id) => (None, Some(id), None, false),
    };
    let now = super::now();
    let id: Option<i64> = conn
        .query_row(
            "UPDATE jobs SET state = 'running', worker = ?3, started_at = ?4,
                 progress = 0, message = '', error = NULL, error_kind = NULL, recovered = 0
             WHERE id = (SELECT id FROM jobs WHERE state = 'queued'
                         AND (?1 IS NULL OR lane = ?1) AND (?2 IS NULL OR id = ?2)
                         AND (?5 IS NULL OR (kind IN (SELECT value FROM json_each(?5))) = ?6)
                         AND (?7 OR NOT recovered)
                         AND (not_before IS NULL OR not_before <= ?4) ORDER BY id LIMIT 1)
             RETURNING id",
            params![lane, id, worker, now, kinds, only, with_recovered],
            |r| r.get(0),
        )
        .optional()?;
    id.map(|id| require(conn, id)).transpose()
}

/// The earliest time a queued job becomes due, if any job is queued.
pub fn next_due(conn: &Connection) -> Result<Option<String>> {
    Ok(conn.query_row(
        "SELECT MIN(COALESCE(not_before, '')) FROM jobs WHERE state = 'queued'",
        [],
        |r| r.get(0),
    )?)
}

/// Whether the user asked to cancel job `id`.
pub fn cancel_requested(conn: &Connection, id: i64) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT cancel_requested FROM jobs WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?)
}

/// Records progress and says whether cancellation was asked for meanwhile.
pub fn set_progress(conn: &Connection, id: i64, progress: f64, message: &str) -> Result<bool> {
    Ok(conn.query_row(
        "UPDATE jobs SET progress = ?2, message = ?3 WHERE id = ?1 RETURNING cancel_requested",
        params![id, progress.clamp(0.0, 1.0), message],
        |r| r.get(0),
    )?)
}

/// The error of a failed attempt: its message and kind.
#[derive(Debug, Clone, Copy)]
pub struct Failed<'a> {
    /// The error's message, as shown to the user.
    pub message: &'a str,
    /// What kind of error it is.
    pub kind: ErrorKind,
}

fn kind_name(kind: ErrorKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "internal".into(),
    }
}

/// Ends job `id` in `state` with its result or error, releasing it from its worker; success sets
/// progress to 1.0.
pub fn finish(
    conn: &Connection,
    id: i64,
    state: JobState,
    result: Option<&serde_json::Value>,
    error: Option<Failed>,
) -> Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?2, result = ?3, error = ?4, error_kind = ?5, finished_at = ?6,
             worker = NULL, progress = CASE WHEN ?2 = 'succeeded' THEN 1.0 ELSE progress END
         WHERE id = ?1",
        params![
            id,
            state.as_str(),
            result.map(|r| r.to_string()),
            error.map(|e| e.message),
            error.map(|e| kind_name(e.kind)),
            super::now()
        ],
    )?;
    Ok(())
}

/// Puts a failed attempt back in the queue, due at `not_before`.
pub fn requeue_after_failure(
    conn: &Connection,
    id: i64,
    error: Failed,
    not_before: &str,
    batch_scale: f64,
) -> Result<()> {
    conn.execute(
        "UPDATE jobs SET state = 'queued', attempts = attempts + 1, error = ?2, error_kind = ?3,
             not_before = ?4, batch_scale = ?5, worker = NULL
         WHERE id = ?1",
        params![
            id,
            error.message,
            kind_name(error.kind),
            not_before,
            batch_scale
        ],
    )?;
    Ok(())
}

/// Queued jobs are cancelled at once; running ones are flagged for their worker to stop.
pub fn request_cancel(conn: &Connection, id: i64) -> Result<Job> {
    let job = require(conn, id)?;
    match job.state {
        JobState::Queued => finish(conn, id, JobState::Cancelled, None, None)?,
        JobState::Running => {
            conn.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?1", [id])?;
        }
        state => {
            return Err(crate::error::invalid_input(format!(
                "job {id} is already {} and cannot be cancelled",
                state.as_str()
            )));
        }
    }
    require(conn, id)
}

/// Queues a failed, cancelled or interrupted job again with its attempts, error and batch scale
/// reset; other states are refused.
pub fn retry(conn: &Connection, id: i64) -> Result<Job> {
    let job = require(conn, id)?;
    if !matches!(
        job.state,
        JobState::Failed | JobState::Cancelled | JobState::Interrupted
    ) {
        return Err(crate::error::invalid_input(format!(
            "job {id} is {}; only failed, cancelled or interrupted jobs can be retried",
            job.state.as_str()
        )));
    }
    conn.execute(
        "UPDATE jobs SET state = 'queued', attempts = 0, error = NULL, error_kind = NULL,
             not_before = NULL,
             cancel_requested = 0, finished_at = NULL, batch_scale = 1.0
         WHERE id = ?1",
        [id],
    )?;
    require(conn, id)
}

/// The worker (process) ids that have a job running.
pub fn running_workers(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT DISTINCT worker FROM jobs WHERE state = 'running' AND worker IS NOT NULL",
    )?;
    Ok(stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_are_stored_by_their_serde_names_and_an_unknown_one_is_named() {
        for kind in JobKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
            assert_eq!(JobKind::parse(kind.as_str()), Some(kind));
        }
        let conn = crate::db::open_in_memory();
        let id = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        conn.execute("UPDATE jobs SET kind = 'transcribe' WHERE id = ?1", [id])
            .unwrap();
        let err = format!("{:#}", get(&conn, id).unwrap_err());
        assert!(err.contains("unknown job kind \"transcribe\""), "{err}");
    }

    #[test]
    fn claim_runs_oldest_due_job_of_the_lane_once() {
        let conn = crate::db::open_in_memory();
        let a = insert(&conn, JobKind::Import, Lane::Light, &json!({"n": 1}), 3).unwrap();
        insert(&conn, JobKind::Train, Lane::Gpu, &json!({}), 3).unwrap();
        let claimed = claim(&conn, Claim::Next(Some(Lane::Light)), "w1")
            .unwrap()
            .unwrap();
        assert_eq!((claimed.id, claimed.state), (a, JobState::Running));
        assert_eq!(claimed.params, json!({"n": 1}));
        assert!(
            claim(&conn, Claim::Next(Some(Lane::Light)), "w2")
                .unwrap()
                .is_none()
        );
        let gpu = claim(&conn, Claim::Next(None), "w3").unwrap().unwrap();
        assert_eq!(gpu.lane, Lane::Gpu);
    }

    #[test]
    fn claim_by_kinds_takes_the_listed_kinds_or_every_other() {
        let conn = crate::db::open_in_memory();
        let train = insert(&conn, JobKind::Train, Lane::Gpu, &json!({}), 3).unwrap();
        let dataset = insert(&conn, JobKind::Dataset, Lane::Gpu, &json!({}), 3).unwrap();
        insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        let kinds = &[JobKind::Dataset][..];
        let only = |only| Claim::Kinds {
            lane: Lane::Gpu,
            kinds,
            only,
        };
        assert_eq!(claim(&conn, only(true), "x").unwrap().unwrap().id, dataset);
        assert!(claim(&conn, only(true), "x").unwrap().is_none());
        assert_eq!(claim(&conn, only(false), "m").unwrap().unwrap().id, train);
        assert!(claim(&conn, only(false), "m").unwrap().is_none());
    }

    #[test]
    fn claim_by_id_takes_only_that_queued_job() {
        let conn = crate::db::open_in_memory();
        insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        let b = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        assert_eq!(claim(&conn, Claim::Id(b), "w").unwrap().unwrap().id, b);
        assert!(claim(&conn, Claim::Id(b), "w").unwrap().is_none());
        assert_eq!(next_due(&conn).unwrap().as_deref(), Some(""));
    }

    #[test]
    fn cancel_queued_is_immediate_running_is_flagged_finished_is_refused() {
        let conn = crate::db::open_in_memory();
        let q = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        assert_eq!(request_cancel(&conn, q).unwrap().state, JobState::Cancelled);
        assert!(request_cancel(&conn, q).is_err());
        let r = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        claim(&conn, Claim::Next(Some(Lane::Light)), "w").unwrap();
        assert!(request_cancel(&conn, r).unwrap().cancel_requested);
        assert!(set_progress(&conn, r, 0.5, "half").unwrap());
    }

    #[test]
    fn retry_only_from_a_final_unsuccessful_state() {
        let conn = crate::db::open_in_memory();
        let id = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        assert!(retry(&conn, id).is_err());
        claim(&conn, Claim::Next(Some(Lane::Light)), "w").unwrap();
        let boom = Failed {
            message: "boom",
            kind: ErrorKind::Audio,
        };
        finish(&conn, id, JobState::Failed, None, Some(boom)).unwrap();
        let failed = require(&conn, id).unwrap();
        assert_eq!(
            (failed.error.as_deref(), failed.error_kind),
            (Some("boom"), Some(ErrorKind::Audio))
        );
        let job = retry(&conn, id).unwrap();
        assert_eq!(
            (job.state, job.error, job.error_kind),
            (JobState::Queued, None, None)
        );
    }

    #[test]
    fn requeued_job_waits_for_its_backoff() {
        let conn = crate::db::open_in_memory();
        let id = insert(&conn, JobKind::Import, Lane::Light, &json!({}), 3).unwrap();
        claim(&conn, Claim::Next(Some(Lane::Light)), "w").unwrap();
        let busy = Failed {
            message: "busy",
            kind: ErrorKind::Busy,
        };
        requeue_after_failure(&conn, id, busy, "9999-01-01T00:00:00Z", 0.5).unwrap();
        assert!(
            claim(&conn, Claim::Next(Some(Lane::Light)), "w")
                .unwrap()
                .is_none()
        );
        let job = require(&conn, id).unwrap();
        assert_eq!((job.attempts, job.batch_scale), (1, 0.5));
    }
}
