//! Training datasets: a named set of takes (and files) for one voice, prepared by the `dataset`
//! job (`timbre_core::dataset`) into `<data dir>/datasets/<id>/`. The row holds the preparation's
//! parameters, its state and its report; `dataset_takes` links the takes it used.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(super) const CREATE: &str = "
CREATE TABLE datasets (
    id INTEGER PRIMARY KEY,
    voice_id INTEGER REFERENCES voices(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    params TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE TABLE dataset_takes (
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    take_id INTEGER NOT NULL REFERENCES takes(id) ON DELETE CASCADE,
    PRIMARY KEY (dataset_id, take_id)
);";

/// What a prepared dataset records: its state, the preparation's report and totals.
pub(super) const ADD_PREPARATION: &str = "
ALTER TABLE datasets ADD COLUMN status TEXT NOT NULL DEFAULT 'empty';
ALTER TABLE datasets ADD COLUMN report TEXT;
ALTER TABLE datasets ADD COLUMN piece_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE datasets ADD COLUMN total_secs REAL NOT NULL DEFAULT 0;
ALTER TABLE datasets ADD COLUMN updated_at TEXT;";

/// `empty` (never prepared), `preparing`, `ready` or `failed` (the last preparation failed and
/// none succeeded before it).
pub const EMPTY: &str = "empty";
/// Status while the `dataset` job prepares it.
pub const PREPARING: &str = "preparing";
/// Status once a preparation has succeeded.
pub const READY: &str = "ready";
/// Status when the last preparation failed and none succeeded before it.
pub const FAILED: &str = "failed";

/// A training dataset: a row of `datasets` with its count of linked takes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Dataset {
    /// Row id in `datasets`; also names its folder, `<data dir>/datasets/<id>/`.
    pub id: i64,
    /// The voice it trains; None when unset or the voice is deleted.
    pub voice_id: Option<i64>,
    /// Name, unique in practice (trimmed, non-empty); `ensure` finds datasets by it.
    pub name: String,
    /// Number of takes linked in `dataset_takes` (those the last preparation used).
    pub take_count: i64,
    /// When the row was created: UTC, RFC 3339.
    pub created_at: String,
    /// The preparation request of the last successful preparation as JSON; `{}` before one.
    pub params: Value,
    /// One of [`EMPTY`], [`PREPARING`], [`READY`] or [`FAILED`].
    #[ts(type = r#""empty" | "preparing" | "ready" | "failed""#)]
    pub status: String,
    /// The `timbre_audio::dataset::DatasetReport` of the last successful preparation.
    #[ts(as = "Option<timbre_audio::dataset::DatasetReport>")]
    pub report: Option<Value>,
    /// Number of pieces the last successful preparation sliced; 0 before one.
    pub piece_count: i64,
    /// Seconds of audio in the pieces (at the model rate).
    pub total_secs: f64,
    /// When the status or preparation last changed (UTC, RFC 3339); None if never.
    pub updated_at: Option<String>,
}

const SELECT: &str = "SELECT d.id, d.voice_id, d.name,
    (SELECT COUNT(*) FROM dataset_takes x WHERE x.dataset_id = d.id), d.created_at, d.params,
    d.status, d.report, d.piece_count, d.total_secs, d.updated_at
    FROM datasets d";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Dataset> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str(&t).ok());
    Ok(Dataset {
        id: r.get(0)?,
        voice_id: r.get(1)?,
        name: r.get(2)?,
        take_count: r.get(3)?,
        created_at: r.get(4)?,
        params: json(r.get(5)?).unwrap_or(Value::Null),
        status: r.get(6)?,
        report: json(r.get(7)?),
        piece_count: r.get(8)?,
        total_secs: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

/// All datasets, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Dataset>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY d.created_at DESC, d.id DESC"))?;
    Ok(stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?)
}

/// The dataset with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Dataset>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE d.id = ?1"), [id], row)
        .optional()?)
}

/// The dataset with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Dataset> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("no dataset {id}")))
}

/// The oldest dataset of that name.
pub fn find_by_name(conn: &Connection, name: &str) -> Result<Option<Dataset>> {
    Ok(conn
        .query_row(
            &format!("{SELECT} WHERE d.name = ?1 ORDER BY d.id LIMIT 1"),
            [name],
            row,
        )
        .optional()?)
}

/// The dataset of that name, created (empty) when new; its voice is updated when given.
pub fn ensure(conn: &Connection, name: &str, voice_id: Option<i64>) -> Result<Dataset> {
    let name = name.trim();
    if name.is_empty() {
        return Err(crate::error::invalid_input("a dataset needs a name"));
    }
    match find_by_name(conn, name)? {
        Some(found) => {
            if voice_id.is_some() && voice_id != found.voice_id {
                conn.execute(
                    "UPDATE datasets SET voice_id = ?2 WHERE id = ?1",
                    params![found.id, voice_id],
                )?;
            }
            require(conn, found.id)
        }
        None => {
            conn.execute(
                "INSERT INTO datasets (voice_id, name, created_at) VALUES (?1, ?2, ?3)",
                params![voice_id, name, super::now()],
            )
            .with_context(|| format!("creating dataset {name:?}"))?;
            require(conn, conn.last_insert_rowid())
        }
    }
}

/// Sets the dataset's status (one of the status constants) and stamps `updated_at`.
pub fn set_status(conn: &Connection, id: i64, status: &str) -> Result<()> {
    conn.execute(
        "UPDATE datasets SET status = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, status, super::now()],
    )?;
    Ok(())
}

/// What a successful preparation records.
pub struct Prepared<'a> {
    /// The preparation request, as JSON.
    pub params: &'a Value,
    /// The preparation's `timbre_audio::dataset::DatasetReport`, as JSON.
    pub report: &'a Value,
    /// Number of pieces sliced.
    pub piece_count: usize,
    /// Seconds of audio in the pieces (at the model rate).
    pub total_secs: f64,
    /// Row ids of the takes used; they replace the dataset's links.
    pub take_ids: &'a [i64],
}

/// Records a successful preparation and replaces the dataset's takes, in one transaction.
pub fn set_prepared(conn: &Connection, id: i64, prepared: &Prepared) -> Result<Dataset> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "UPDATE datasets SET status = ?2, params = ?3, report = ?4, piece_count = ?5,
            total_secs = ?6, updated_at = ?7 WHERE id = ?1",
        params![
            id,
            READY,
            prepared.params.to_string(),
            prepared.report.to_string(),
            prepared.piece_count as i64,
            prepared.total_secs,
            super::now()
        ],
    )?;
    tx.execute("DELETE FROM dataset_takes WHERE dataset_id = ?1", [id])?;
    for take in prepared.take_ids {
        tx.execute(
            "INSERT OR IGNORE INTO dataset_takes (dataset_id, take_id) VALUES (?1, ?2)",
            params![id, take],
        )?;
    }
    tx.commit()?;
    require(conn, id)
}

/// The ids of the takes a dataset was prepared from.
pub fn take_ids(conn: &Connection, id: i64) -> Result<Vec<i64>> {
    let mut stmt =
        conn.prepare("SELECT take_id FROM dataset_takes WHERE dataset_id = ?1 ORDER BY take_id")?;
    Ok(stmt
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Deletes the row (its take links go with it); the folder is the caller's.
pub fn delete(conn: &Connection, id: i64) -> Result<Dataset> {
    let dataset = require(conn, id)?;
    conn.execute("DELETE FROM datasets WHERE id = ?1", [id])?;
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn insert_take(conn: &Connection, sha256: &str) -> i64 {
        crate::db::takes::insert(conn, &crate::db::takes::sample(sha256)).unwrap()
    }

    #[test]
    fn a_dataset_is_created_once_per_name_and_prepared() {
        let conn = crate::db::open_in_memory();
        let voice = crate::db::voices::ensure(&conn, "Alto").unwrap();
        let a = ensure(&conn, " Set ", None).unwrap();
        assert_eq!((a.status.as_str(), a.piece_count), (EMPTY, 0));
        let b = ensure(&conn, "Set", Some(voice.id)).unwrap();
        assert_eq!((b.id, b.voice_id), (a.id, Some(voice.id)));
        assert!(ensure(&conn, " ", None).is_err());

        let take = insert_take(&conn, "one");
        set_status(&conn, a.id, PREPARING).unwrap();
        assert_eq!(require(&conn, a.id).unwrap().status, PREPARING);
        let params = json!({"sample_rate": 40000});
        let report = json!({"pieces": 3, "warnings": []});
        let done = set_prepared(
            &conn,
            a.id,
            &Prepared {
                params: &params,
                report: &report,
                piece_count: 3,
                total_secs: 11.1,
                take_ids: &[take, take],
            },
        )
        .unwrap();
        assert_eq!(done.status, READY);
        assert_eq!((done.piece_count, done.take_count), (3, 1));
        assert_eq!(done.report, Some(report));
        assert_eq!(done.params, params);
        assert_eq!(take_ids(&conn, a.id).unwrap(), vec![take]);
        assert_eq!(list(&conn).unwrap(), vec![done]);
    }

    #[test]
    fn deleting_a_dataset_removes_its_links_but_not_its_takes() {
        let conn = crate::db::open_in_memory();
        let take = insert_take(&conn, "one");
        let set = ensure(&conn, "Set", None).unwrap();
        let nothing = json!({});
        set_prepared(
            &conn,
            set.id,
            &Prepared {
                params: &nothing,
                report: &nothing,
                piece_count: 0,
                total_secs: 0.0,
                take_ids: &[take],
            },
        )
        .unwrap();
        assert_eq!(delete(&conn, set.id).unwrap().id, set.id);
        assert!(get(&conn, set.id).unwrap().is_none());
        assert!(take_ids(&conn, set.id).unwrap().is_empty());
        assert!(crate::db::takes::get(&conn, take).unwrap().is_some());
        assert!(delete(&conn, set.id).is_err());
    }
}
