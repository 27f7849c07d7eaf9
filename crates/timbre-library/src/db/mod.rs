//! The library database: one module per table, each owning its migrations.
//! Migrations run in the order of [`MIGRATIONS`]; `PRAGMA user_version` records how many ran,
//! so a new migration is appended, never edited.

pub mod backups;
pub mod checkpoint_scores;
pub mod conversions;
pub mod cover_stages;
pub mod datasets;
pub mod derived_takes;
pub mod effect_presets;
pub mod integrity;
pub mod job_events;
pub mod jobs;
pub mod listening_tests;
pub mod metrics;
pub mod models;
pub mod objects;
pub mod settings;
pub mod take_tags;
pub mod takes;
pub mod training_metrics;
pub mod training_previews;
pub mod trainings;
pub mod voices;

use anyhow::{Context, Result};
use rusqlite::{Connection, TransactionBehavior};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// How long a write waits for another process's write to end. Writes are short (a row or a
/// few), so this is only ever reached by a stuck process, never by a busy one.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The schema version (`PRAGMA user_version`) of a library this build has migrated.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// `PRAGMA application_id` of a Timbre Studio library ("Tmbr"), set when a library is created
/// or migrated: it tells our databases from other SQLite files (a restore checks it).
pub const APPLICATION_ID: i32 = i32::from_be_bytes(*b"Tmbr");

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
    jobs::ADD_CRASH_RECOVERY,
    cover_stages::CREATE,
    effect_presets::CREATE,
    jobs::ADD_ERROR_KIND,
    checkpoint_scores::CREATE,
];

/// Opens the library database: refused when damaged, migrated (after a backup) when older
/// than this build, backed up once a day.
pub fn open(path: &Path) -> Result<Connection> {
    integrity::check_header(path)?;
    let mut conn = match connect(path, false) {
        // No room for SQLite's shared-memory file: its index lives in this process's memory
        // instead, which keeps the library to this process until it ends, so that a full
        // library can still be browsed and cleared.
        Err(err) if crate::error::is_disk_full(&err) => connect(path, true)?,
        conn => conn?,
    };
    // Every transaction takes the write lock when it begins, waiting for it within the busy
    // timeout: a deferred one that reads first cannot wait once another process has written
    // meanwhile (SQLITE_BUSY_SNAPSHOT), and its write is lost.
    conn.set_transaction_behavior(TransactionBehavior::Immediate);
    // Setting the journal mode writes the file: only done once, so a full disk can still be read.
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    if needs_migration(&conn)? {
        if schema_version(&conn)? > 0 {
            let reason = format!("before-schema-{}", MIGRATIONS.len());
            backups::make(&conn, path, Some(&reason))?;
        }
        migrate(&mut conn).with_context(|| format!("migrating {}", path.display()))?;
    }
    // A missed daily backup must not keep the library from opening (on a full disk, say).
    if let Err(err) = backups::make_daily(&conn, path) {
        let dir = path.parent().unwrap_or(path);
        eprintln!("timbre: {:#}", crate::error::explain_disk_full(err, dir));
    }
    Ok(conn)
}

/// A checked connection; `exclusive`: one that needs no shared-memory file.
fn connect(path: &Path, exclusive: bool) -> Result<Connection> {
    let conn = Connection::open(path)
        .with_context(|| format!("opening the library database {}", path.display()))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    if exclusive {
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    }
    integrity::check(&conn, path)?;
    Ok(conn)
}

fn schema_version(conn: &Connection) -> Result<usize> {
    let done = conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
    anyhow::ensure!(
        done <= MIGRATIONS.len(),
        "the library was written by a newer Timbre Studio (schema {done}, this build knows {})",
        MIGRATIONS.len()
    );
    Ok(done)
}

/// Read without a write lock, so opening an up-to-date library never writes.
pub fn needs_migration(conn: &Connection) -> Result<bool> {
    Ok(schema_version(conn)? < MIGRATIONS.len())
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Read again under the lock: another process may have migrated meanwhile.
    let done = schema_version(&tx)?;
    for sql in &MIGRATIONS[done..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.commit()?;
    Ok(())
}

/// The tables a library of schema `version` holds, each with its columns: what the first
/// `version` migrations make.
pub fn tables_of_schema(version: usize) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let conn = Connection::open_in_memory()?;
    for sql in &MIGRATIONS[..version.min(MIGRATIONS.len())] {
        conn.execute_batch(sql)?;
    }
    tables(&conn)
}

/// The tables of `conn`'s main database (SQLite's own left out), each with its columns.
pub fn tables(conn: &Connection) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut stmt = conn.prepare(
        "SELECT m.name, c.name FROM sqlite_schema m JOIN pragma_table_info(m.name) c
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
    )?;
    let mut tables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (table, column) = row?;
        tables.entry(table).or_default().insert(column);
    }
    Ok(tables)
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

/// The current time as a [`timestamp`]: UTC, RFC 3339 with milliseconds.
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
    fn a_new_library_carries_the_application_id_and_the_schema_of_its_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("lib.sqlite3")).unwrap();
        let id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(id, APPLICATION_ID);
        let tables = tables(&conn).unwrap();
        assert_eq!(tables, tables_of_schema(SCHEMA_VERSION).unwrap());
        assert!(tables["takes"].contains("sha256"), "{tables:?}");
        assert!(tables_of_schema(0).unwrap().is_empty());
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
