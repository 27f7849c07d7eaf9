//! The library database: one module per table, each owning its migrations.
//! Migrations run in the order of [`MIGRATIONS`]; `PRAGMA user_version` records how many ran,
//! so a new migration is appended, never edited.

pub mod conversions;
pub mod datasets;
pub mod derived_takes;
pub mod job_events;
pub mod jobs;
pub mod listening_tests;
pub mod metrics;
pub mod models;
pub mod settings;
pub mod take_tags;
pub mod takes;
pub mod training_metrics;
pub mod training_previews;
pub mod trainings;
pub mod voices;

use anyhow::{Context, Result};
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

const MIGRATIONS: &[&str] = &[
    voices::CREATE,
    takes::CREATE,
    take_tags::CREATE,
    datasets::CREATE,
    models::CREATE,
    jobs::CREATE,
    job_events::CREATE,
    metrics::CREATE,
    settings::CREATE,
    conversions::CREATE,
    listening_tests::CREATE,
    derived_takes::CREATE,
    datasets::ADD_PREPARATION,
    trainings::CREATE,
    training_metrics::CREATE,
    training_previews::CREATE,
];

pub fn open(path: &Path) -> Result<Connection> {
    let mut conn = Connection::open(path)
        .with_context(|| format!("opening the library database {}", path.display()))?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    migrate(&mut conn).with_context(|| format!("migrating {}", path.display()))?;
    Ok(conn)
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let done = tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
    anyhow::ensure!(
        done <= MIGRATIONS.len(),
        "the library was written by a newer Timbre Studio (schema {done}, this build knows {})",
        MIGRATIONS.len()
    );
    for sql in &MIGRATIONS[done..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

/// UTC, RFC 3339 with exactly three decimals, so timestamps compare correctly as text.
pub fn timestamp(at: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .expect("formatting a UTC timestamp")
}

pub fn now() -> String {
    timestamp(time::OffsetDateTime::now_utc())
}

#[cfg(test)]
pub(crate) fn open_in_memory() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    migrate(&mut conn).unwrap();
    conn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_idempotent_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.sqlite3");
        drop(open(&path).unwrap());
        let conn = open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_newer_schema_is_refused_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.sqlite3");
        let conn = open(&path).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
        drop(conn);
        let err = format!("{:#}", open(&path).unwrap_err());
        assert!(err.contains("newer Timbre Studio"), "{err}");
    }
}
