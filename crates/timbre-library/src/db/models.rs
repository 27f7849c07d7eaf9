//! Voice models: an RVC inference `.pth` in the store, its optional `.index`, and what the
//! file says of itself (version, rate, pitch, metadata) so the library can show and check it.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

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

/// The store extension of a model's weights and of its index.
pub const WEIGHTS_EXT: &str = "pth";
/// The store extension of a model's feature index (a FAISS `.index`).
pub const INDEX_EXT: &str = "index";

/// A voice model: a row of `models` (`VoiceModel` in TypeScript).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[ts(rename = "VoiceModel")]
pub struct Model {
    /// Row id in `models`.
    pub id: i64,
    /// The voice it speaks with; None when unset or the voice is deleted.
    pub voice_id: Option<i64>,
    /// Display name; not unique (`find` takes the newest of a name).
    pub name: String,
    /// `rvc` for voice models.
    pub kind: String,
    /// SHA-256 (hex) of the `.pth` weights, its key in the store; unique among models.
    pub weights_sha256: String,
    /// SHA-256 (hex) of its `.index` in the store; None without an index.
    pub index_sha256: Option<String>,
    /// RVC architecture version as the file says (`v1`, `v2`); None when unknown.
    pub version: Option<String>,
    /// Output sample rate in Hz as the file says; None when unknown.
    pub sample_rate: Option<u32>,
    /// Whether the model is pitch-guided (takes an F0 curve); None when unknown.
    pub f0: Option<bool>,
    /// What the file says beyond the essentials (speakers, feature size, author, epoch…).
    pub metadata: serde_json::Value,
    /// When it was added: UTC, RFC 3339.
    pub created_at: String,
}

/// A model to record: a [`Model`] without its id and creation time.
#[derive(Debug, Clone)]
pub struct NewModel {
    /// The voice it speaks with, if any.
    pub voice_id: Option<i64>,
    /// Display name.
    pub name: String,
    /// `rvc` for voice models.
    pub kind: String,
    /// SHA-256 (hex) of the stored `.pth` weights.
    pub weights_sha256: String,
    /// SHA-256 (hex) of the stored `.index`, if any.
    pub index_sha256: Option<String>,
    /// RVC architecture version (`v1`, `v2`), if known.
    pub version: Option<String>,
    /// Output sample rate in Hz, if known.
    pub sample_rate: Option<u32>,
    /// Whether the model is pitch-guided, if known.
    pub f0: Option<bool>,
    /// What the file says beyond the essentials, as JSON.
    pub metadata: serde_json::Value,
}

const SELECT: &str = "SELECT id, voice_id, name, kind, weights_sha256, index_sha256, version,
    sample_rate, f0, metadata, created_at FROM models";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Model> {
    let metadata: String = r.get(9)?;
    Ok(Model {
        id: r.get(0)?,
        voice_id: r.get(1)?,
        name: r.get(2)?,
        kind: r.get(3)?,
        weights_sha256: r.get(4)?,
        index_sha256: r.get(5)?,
        version: r.get(6)?,
        sample_rate: r.get(7)?,
        f0: r.get::<_, Option<i64>>(8)?.map(|f| f != 0),
        metadata: serde_json::from_str(&metadata).unwrap_or_default(),
        created_at: r.get(10)?,
    })
}

/// All models, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Model>> {
    let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY created_at DESC, id DESC"))?;
    let rows = stmt.query_map([], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The model with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Model>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?)
}

/// The model with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Model> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("model {id} does not exist")))
}

/// The model whose weights have SHA-256 `sha256` (at most one), or None.
pub fn find_by_weights(conn: &Connection, sha256: &str) -> Result<Option<Model>> {
    Ok(conn
        .query_row(
            &format!("{SELECT} WHERE weights_sha256 = ?1"),
            [sha256],
            row,
        )
        .optional()?)
}

/// A model by id, or by exact name (the most recent of that name).
pub fn find(conn: &Connection, id_or_name: &str) -> Result<Model> {
    if let Ok(id) = id_or_name.parse::<i64>() {
        return require(conn, id);
    }
    conn.query_row(
        &format!("{SELECT} WHERE name = ?1 ORDER BY created_at DESC, id DESC LIMIT 1"),
        [id_or_name],
        row,
    )
    .optional()?
    .ok_or_else(|| crate::error::not_found(format!("no model is named {id_or_name:?}")))
}

/// Records a model; its new row id. Fails when a model with the same weights exists.
pub fn insert(conn: &Connection, m: &NewModel) -> Result<i64> {
    conn.execute(
        "INSERT INTO models (voice_id, name, kind, weights_sha256, index_sha256, version,
            sample_rate, f0, metadata, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            m.voice_id,
            m.name,
            m.kind,
            m.weights_sha256,
            m.index_sha256,
            m.version,
            m.sample_rate,
            m.f0.map(i64::from),
            m.metadata.to_string(),
            super::now()
        ],
    )
    .with_context(|| format!("saving model {:?}", m.name))?;
    Ok(conn.last_insert_rowid())
}

/// Sets or clears (None) the model's index, given by its SHA-256 in the store; the updated model.
pub fn set_index(conn: &Connection, id: i64, index_sha256: Option<&str>) -> Result<Model> {
    conn.execute(
        "UPDATE models SET index_sha256 = ?2 WHERE id = ?1",
        params![id, index_sha256],
    )?;
    require(conn, id)
}

/// Replaces the model's metadata; the updated model.
pub fn set_metadata(conn: &Connection, id: i64, metadata: &serde_json::Value) -> Result<Model> {
    conn.execute(
        "UPDATE models SET metadata = ?2 WHERE id = ?1",
        params![id, metadata.to_string()],
    )?;
    require(conn, id)
}

/// Renames the model (trimmed; an empty name is refused); the updated model.
pub fn rename(conn: &Connection, id: i64, name: &str) -> Result<Model> {
    let name = name.trim();
    if name.is_empty() {
        return Err(crate::error::invalid_input("a model needs a name"));
    }
    conn.execute(
        "UPDATE models SET name = ?2 WHERE id = ?1",
        params![id, name],
    )?;
    require(conn, id)
}

/// Deletes the row and returns it, so the caller can drop the stored files after commit.
pub fn delete(conn: &Connection, id: i64) -> Result<Model> {
    let model = require(conn, id)?;
    conn.execute("DELETE FROM models WHERE id = ?1", [id])?;
    Ok(model)
}

#[cfg(test)]
pub(crate) fn sample(sha256: &str) -> NewModel {
    NewModel {
        voice_id: None,
        name: "Ada v2".into(),
        kind: "rvc".into(),
        weights_sha256: sha256.into(),
        index_sha256: None,
        version: Some("v2".into()),
        sample_rate: Some(40_000),
        f0: Some(true),
        metadata: serde_json::json!({ "speakers": 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_find_index_rename_delete() {
        let conn = crate::db::open_in_memory();
        let id = insert(&conn, &sample("w1")).unwrap();
        let model = require(&conn, id).unwrap();
        assert_eq!((model.f0, model.sample_rate), (Some(true), Some(40_000)));
        assert_eq!(model.metadata["speakers"], 1);
        assert_eq!(find(&conn, "Ada v2").unwrap().id, id);
        assert_eq!(find(&conn, &id.to_string()).unwrap().id, id);
        assert!(find(&conn, "nobody").is_err());
        assert_eq!(
            set_index(&conn, id, Some("i1"))
                .unwrap()
                .index_sha256
                .as_deref(),
            Some("i1")
        );
        assert_eq!(rename(&conn, id, " Bob ").unwrap().name, "Bob");
        assert!(
            insert(&conn, &sample("w1")).is_err(),
            "one row per weights file"
        );
        delete(&conn, id).unwrap();
        assert!(get(&conn, id).unwrap().is_none());
    }
}
