//! Takes made from another take (enhanced speech, vocals or instrumental isolated from a mix):
//! the take each came from, the operation and its parameters, and the job that made it. The
//! source take itself is never changed.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE derived_takes (
    take_id INTEGER PRIMARY KEY REFERENCES takes(id) ON DELETE CASCADE,
    source_take_id INTEGER REFERENCES takes(id) ON DELETE SET NULL,
    operation TEXT NOT NULL,
    params TEXT NOT NULL,
    job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX derived_takes_source ON derived_takes(source_take_id);";

/// Where a derived take came from: a row of `derived_takes`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct DerivedTake {
    /// The derived take (row id in `takes`); one record per take.
    pub take_id: i64,
    /// None once the source take has been deleted.
    pub source_take_id: Option<i64>,
    /// `enhance`, `isolate_vocals` or `isolate_instrumental`.
    pub operation: String,
    /// The operation's parameters as JSON; null if unreadable.
    pub params: serde_json::Value,
    /// The job that made it; None once that job is deleted.
    pub job_id: Option<i64>,
    /// When the link was recorded: UTC, RFC 3339.
    pub created_at: String,
}

const SELECT: &str =
    "SELECT take_id, source_take_id, operation, params, job_id, created_at FROM derived_takes";

fn row(r: &rusqlite::Row) -> rusqlite::Result<DerivedTake> {
    let params: String = r.get(3)?;
    Ok(DerivedTake {
        take_id: r.get(0)?,
        source_take_id: r.get(1)?,
        operation: r.get(2)?,
        params: serde_json::from_str(&params).unwrap_or(serde_json::Value::Null),
        job_id: r.get(4)?,
        created_at: r.get(5)?,
    })
}

/// Records where `take_id` came from; false (and nothing changed) when it already has a record,
/// as when a rerun produces audio identical to an earlier result.
pub fn insert(
    conn: &Connection,
    take_id: i64,
    source_take_id: i64,
    operation: &str,
    params: &serde_json::Value,
    job_id: Option<i64>,
) -> Result<bool> {
    let inserted = conn
        .execute(
            "INSERT OR IGNORE INTO derived_takes
                (take_id, source_take_id, operation, params, job_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                take_id,
                source_take_id,
                operation,
                params.to_string(),
                job_id,
                super::now()
            ],
        )
        .with_context(|| format!("linking take {take_id} to its source take {source_take_id}"))?;
    Ok(inserted == 1)
}

/// The record of where take `take_id` came from; None for a take not derived from another.
pub fn get(conn: &Connection, take_id: i64) -> Result<Option<DerivedTake>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE take_id = ?1"), [take_id], row)
        .optional()?)
}

/// Everything made from `source_take_id`, oldest first.
pub fn from_source(conn: &Connection, source_take_id: i64) -> Result<Vec<DerivedTake>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE source_take_id = ?1 ORDER BY created_at, take_id"
    ))?;
    Ok(stmt
        .query_map([source_take_id], row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Every link whose source is still there, oldest first: the Library groups by them.
pub fn with_source(conn: &Connection) -> Result<Vec<DerivedTake>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE source_take_id IS NOT NULL ORDER BY created_at, take_id"
    ))?;
    Ok(stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::takes;

    #[test]
    fn links_follow_their_takes() {
        let conn = crate::db::open_in_memory();
        let source = takes::insert(&conn, &takes::sample("source")).unwrap();
        let vocals = takes::insert(&conn, &takes::sample("vocals")).unwrap();
        let params = serde_json::json!({ "method": "rough" });
        assert!(insert(&conn, vocals, source, "isolate_vocals", &params, None).unwrap());
        assert!(!insert(&conn, vocals, source, "enhance", &params, None).unwrap());
        let link = get(&conn, vocals).unwrap().unwrap();
        assert_eq!(
            (link.source_take_id, link.operation.as_str(), &link.params),
            (Some(source), "isolate_vocals", &params)
        );
        assert_eq!(from_source(&conn, source).unwrap(), vec![link.clone()]);
        assert_eq!(with_source(&conn).unwrap(), vec![link]);
        takes::delete(&conn, source).unwrap();
        assert_eq!(get(&conn, vocals).unwrap().unwrap().source_take_id, None);
        takes::delete(&conn, vocals).unwrap();
        assert_eq!(get(&conn, vocals).unwrap(), None);
    }
}
