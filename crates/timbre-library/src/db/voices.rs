//! The `voices` table: one row per voice, a unique name that takes, models and datasets are filed
//! under, listed with its count of takes.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

pub(super) const CREATE: &str = "
CREATE TABLE voices (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);";

/// A voice that takes, models and datasets are filed under: a row of `voices`.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct Voice {
    /// Row id in `voices`.
    pub id: i64,
    /// Its name: trimmed, non-empty and unique.
    pub name: String,
    /// When it was created: UTC, RFC 3339.
    pub created_at: String,
    /// Number of takes filed under it.
    pub take_count: i64,
}

const SELECT: &str = "SELECT v.id, v.name, v.created_at,
    (SELECT COUNT(*) FROM takes t WHERE t.voice_id = v.id) FROM voices v";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Voice> {
    Ok(Voice {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        take_count: r.get(3)?,
    })
}

/// All voices, by name.
pub fn list(conn: &Connection) -> Result<Vec<Voice>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY v.name"))?;
    Ok(stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?)
}

/// The voice with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Voice>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE v.id = ?1"), [id], row)
        .optional()?)
}

/// The voice named exactly `name`, or None.
pub fn find_by_name(conn: &Connection, name: &str) -> Result<Option<Voice>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE v.name = ?1"), [name], row)
        .optional()?)
}

/// Returns the voice of that name, creating it when new.
pub fn ensure(conn: &Connection, name: &str) -> Result<Voice> {
    let name = name.trim();
    if name.is_empty() {
        return Err(crate::error::invalid_input("a voice needs a name"));
    }
    conn.execute(
        "INSERT INTO voices (name, created_at) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
        params![name, super::now()],
    )
    .with_context(|| format!("creating voice {name:?}"))?;
    find_by_name(conn, name)?.context("voice vanished right after it was created")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_is_idempotent_and_rejects_blank_names() {
        let conn = crate::db::open_in_memory();
        let a = ensure(&conn, "Alice").unwrap();
        let b = ensure(&conn, " Alice ").unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(list(&conn).unwrap().len(), 1);
        assert!(ensure(&conn, "  ").is_err());
    }
}
