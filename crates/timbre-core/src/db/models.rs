//! Voice models (RVC `.pth` + `.index`). Filled by the conversion and training issues;
//! listed by the library today.

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

pub(super) const CREATE: &str = "
CREATE TABLE models (
    id INTEGER PRIMARY KEY,
    voice_id INTEGER REFERENCES voices(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    weights_sha256 TEXT NOT NULL,
    index_sha256 TEXT,
    version TEXT,
    sample_rate INTEGER,
    f0 INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    UNIQUE (weights_sha256)
);";

#[derive(Debug, Clone, Serialize)]
pub struct Model {
    pub id: i64,
    pub voice_id: Option<i64>,
    pub name: String,
    pub kind: String,
    pub version: Option<String>,
    pub sample_rate: Option<u32>,
    pub created_at: String,
}

pub fn list(conn: &Connection) -> Result<Vec<Model>> {
    let mut stmt = conn.prepare(
        "SELECT id, voice_id, name, kind, version, sample_rate, created_at
         FROM models ORDER BY created_at DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Model {
            id: r.get(0)?,
            voice_id: r.get(1)?,
            name: r.get(2)?,
            kind: r.get(3)?,
            version: r.get(4)?,
            sample_rate: r.get(5)?,
            created_at: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
