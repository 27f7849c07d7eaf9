//! The `job_events` table: what a job reported as it ran, one row per event (its time, level,
//! kind and JSON data), deleted with its job.

use anyhow::Result;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE job_events (
    id INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    level TEXT NOT NULL CHECK (level IN ('info', 'warn', 'error')),
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX job_events_job ON job_events(job_id, kind);";

/// How serious a job event is (`EventLevel` in TypeScript).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "EventLevel")]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Ordinary progress or information.
    Info,
    /// Something went wrong or is worth attention, but the job goes on.
    Warn,
    /// A failure.
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// One thing a job reported as it ran: a row of `job_events`.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct JobEvent {
    /// Row id in `job_events`; ids grow in the order the events were recorded.
    pub id: i64,
    /// The job that reported it (row id in `jobs`).
    pub job_id: i64,
    /// When it was recorded: UTC, RFC 3339.
    pub at: String,
    /// How serious it is.
    pub level: Level,
    /// What kind of event it is, e.g. `stage`, `retry`, `interrupted`, `alert`; filters `list`.
    pub kind: String,
    /// The event's details as JSON (the stored text as a JSON string if it does not parse).
    pub data: serde_json::Value,
}

/// Records an event of job `job_id`, stamped now.
pub fn insert(
    conn: &Connection,
    job_id: i64,
    level: Level,
    kind: &str,
    data: &serde_json::Value,
) -> Result<()> {
    conn.execute(
        "INSERT INTO job_events (job_id, at, level, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![job_id, super::now(), level.as_str(), kind, data.to_string()],
    )?;
    Ok(())
}

/// The events of job `job_id` in the order recorded, of one `kind` when given.
pub fn list(conn: &Connection, job_id: i64, kind: Option<&str>) -> Result<Vec<JobEvent>> {
    let mut stmt = conn.prepare(
        "SELECT id, job_id, at, level, kind, data FROM job_events
         WHERE job_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY id",
    )?;
    let rows = stmt.query_map(params![job_id, kind], |r| {
        let level: String = r.get(3)?;
        let data: String = r.get(5)?;
        Ok(JobEvent {
            id: r.get(0)?,
            job_id: r.get(1)?,
            at: r.get(2)?,
            level: match level.as_str() {
                "warn" => Level::Warn,
                "error" => Level::Error,
                _ => Level::Info,
            },
            kind: r.get(4)?,
            data: serde_json::from_str(&data).unwrap_or(serde_json::Value::String(data)),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
