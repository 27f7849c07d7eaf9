//! Training datasets: a named set of takes for one voice. Filled by the training issue's
//! dataset preparation; listed by the library today.

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

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

#[derive(Debug, Clone, Serialize)]
pub struct Dataset {
    pub id: i64,
    pub voice_id: Option<i64>,
    pub name: String,
    pub take_count: i64,
    pub created_at: String,
}

pub fn list(conn: &Connection) -> Result<Vec<Dataset>> {
    let mut stmt = conn.prepare(
        "SELECT d.id, d.voice_id, d.name,
            (SELECT COUNT(*) FROM dataset_takes x WHERE x.dataset_id = d.id), d.created_at
         FROM datasets d ORDER BY d.created_at DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Dataset {
            id: r.get(0)?,
            voice_id: r.get(1)?,
            name: r.get(2)?,
            take_count: r.get(3)?,
            created_at: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
