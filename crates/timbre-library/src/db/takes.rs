//! The `takes` table: one row per take, a piece of imported or recorded audio (a store object,
//! one row per SHA-256) under an optional voice, with its format, length, peak, loudness and a
//! waveform thumbnail. Its tags are in `take_tags`.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE takes (
    id INTEGER PRIMARY KEY,
    voice_id INTEGER REFERENCES voices(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    format TEXT NOT NULL,
    source_path TEXT,
    origin TEXT NOT NULL CHECK (origin IN ('imported', 'recorded')),
    duration_secs REAL NOT NULL,
    sample_rate INTEGER NOT NULL,
    channels INTEGER NOT NULL,
    frames INTEGER NOT NULL,
    peak_dbfs REAL NOT NULL,
    loudness_lufs REAL,
    waveform BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX takes_voice ON takes(voice_id);";

/// How a take came into the library (`TakeOrigin` in TypeScript).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "TakeOrigin")]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Imported from a file (or made from another take).
    Imported,
    /// Recorded in the app.
    Recorded,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Imported => "imported",
            Origin::Recorded => "recorded",
        }
    }
}

/// What is known about a take before it has a row.
#[derive(Debug, Clone)]
pub struct NewTake {
    /// The voice it belongs to, if any.
    pub voice_id: Option<i64>,
    /// Display name.
    pub name: String,
    /// SHA-256 (hex) of the stored audio; unique among takes.
    pub sha256: String,
    /// File extension of the stored audio (`wav`, `flac`, ...).
    pub format: String,
    /// Path of the file it was imported from, if any.
    pub source_path: Option<String>,
    /// How it came into the library.
    pub origin: Origin,
    /// Length in seconds.
    pub duration_secs: f64,
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// Number of channels.
    pub channels: u16,
    /// Length in frames (samples per channel).
    pub frames: u64,
    /// Sample peak in dBFS, floored at -120 for silence.
    pub peak_dbfs: f64,
    /// EBU R128 integrated loudness in LUFS; None when too short (under 400 ms) or silent.
    pub loudness_lufs: Option<f64>,
    /// Thumbnail peaks in 0..=1.
    pub waveform: Vec<f32>,
}

/// A piece of audio in the library: a row of `takes` with its tags.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Take {
    /// Row id in `takes`.
    pub id: i64,
    /// The voice it belongs to; None when unassigned or the voice is deleted.
    pub voice_id: Option<i64>,
    /// Display name, non-empty.
    pub name: String,
    /// SHA-256 (hex) of the audio, its key in the content store with `format`; unique among takes.
    pub sha256: String,
    /// File extension of the stored audio (`wav`, `flac`, ...).
    pub format: String,
    /// Path of the file it was imported from; None when it came from no file (a recording).
    pub source_path: Option<String>,
    /// How it came into the library.
    pub origin: Origin,
    /// Length in seconds.
    pub duration_secs: f64,
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// Number of channels.
    pub channels: u16,
    /// Length in frames (samples per channel).
    pub frames: u64,
    /// Sample peak in dBFS, floored at -120 for silence.
    pub peak_dbfs: f64,
    /// EBU R128 integrated loudness in LUFS; None when too short (under 400 ms) or silent.
    pub loudness_lufs: Option<f64>,
    /// Its tags from `take_tags`, sorted.
    pub tags: Vec<String>,
    /// Thumbnail peaks in 0..=1 (stored as bytes, so in steps of 1/255).
    pub waveform: Vec<f32>,
    /// When it was added: UTC, RFC 3339.
    pub created_at: String,
}

const SELECT: &str =
    "SELECT id, voice_id, name, sha256, format, source_path, origin, duration_secs,
    sample_rate, channels, frames, peak_dbfs, loudness_lufs, waveform, created_at FROM takes";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Take> {
    let origin: String = r.get(6)?;
    let waveform: Vec<u8> = r.get(13)?;
    Ok(Take {
        id: r.get(0)?,
        voice_id: r.get(1)?,
        name: r.get(2)?,
        sha256: r.get(3)?,
        format: r.get(4)?,
        source_path: r.get(5)?,
        origin: if origin == "recorded" {
            Origin::Recorded
        } else {
            Origin::Imported
        },
        duration_secs: r.get(7)?,
        sample_rate: r.get(8)?,
        channels: r.get(9)?,
        frames: r.get::<_, i64>(10)? as u64,
        peak_dbfs: r.get(11)?,
        loudness_lufs: r.get(12)?,
        tags: Vec::new(),
        waveform: waveform.iter().map(|&b| f32::from(b) / 255.0).collect(),
        created_at: r.get(14)?,
    })
}

fn with_tags(conn: &Connection, mut take: Take) -> Result<Take> {
    take.tags = super::take_tags::for_take(conn, take.id)?;
    Ok(take)
}

/// The takes, newest first; of one voice when `voice_id` is given.
pub fn list(conn: &Connection, voice_id: Option<i64>) -> Result<Vec<Take>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE ?1 IS NULL OR voice_id = ?1 ORDER BY created_at DESC, id DESC"
    ))?;
    let takes = stmt
        .query_map([voice_id], row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    takes.into_iter().map(|t| with_tags(conn, t)).collect()
}

/// The take with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Take>> {
    conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?
        .map(|t| with_tags(conn, t))
        .transpose()
}

/// The take with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Take> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("take {id} does not exist")))
}

/// The take whose audio has SHA-256 `sha256` (at most one), or None.
pub fn find_by_sha(conn: &Connection, sha256: &str) -> Result<Option<Take>> {
    conn.query_row(&format!("{SELECT} WHERE sha256 = ?1"), [sha256], row)
        .optional()?
        .map(|t| with_tags(conn, t))
        .transpose()
}

/// Records a take (without tags); its new row id. Fails when a take with the same audio exists.
pub fn insert(conn: &Connection, t: &NewTake) -> Result<i64> {
    let waveform: Vec<u8> = t
        .waveform
        .iter()
        .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect();
    conn.execute(
        "INSERT INTO takes (voice_id, name, sha256, format, source_path, origin, duration_secs,
            sample_rate, channels, frames, peak_dbfs, loudness_lufs, waveform, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            t.voice_id,
            t.name,
            t.sha256,
            t.format,
            t.source_path,
            t.origin.as_str(),
            t.duration_secs,
            t.sample_rate,
            t.channels,
            t.frames as i64,
            t.peak_dbfs,
            t.loudness_lufs,
            waveform,
            super::now()
        ],
    )
    .with_context(|| format!("saving take {:?}", t.name))?;
    Ok(conn.last_insert_rowid())
}

/// Renames the take (trimmed; an empty name is refused); the updated take.
pub fn rename(conn: &Connection, id: i64, name: &str) -> Result<Take> {
    let name = name.trim();
    if name.is_empty() {
        return Err(crate::error::invalid_input("a take needs a name"));
    }
    conn.execute(
        "UPDATE takes SET name = ?2 WHERE id = ?1",
        params![id, name],
    )?;
    require(conn, id)
}

/// Assigns the take to a voice, or to none; an unknown voice is not found. The updated take.
pub fn set_voice(conn: &Connection, id: i64, voice_id: Option<i64>) -> Result<Take> {
    if let Some(v) = voice_id {
        super::voices::get(conn, v)?
            .ok_or_else(|| crate::error::not_found(format!("voice {v} does not exist")))?;
    }
    conn.execute(
        "UPDATE takes SET voice_id = ?2 WHERE id = ?1",
        params![id, voice_id],
    )?;
    require(conn, id)
}

/// Deletes the row and returns it, so the caller can drop the stored file after commit.
pub fn delete(conn: &Connection, id: i64) -> Result<Take> {
    let take = require(conn, id)?;
    conn.execute("DELETE FROM takes WHERE id = ?1", [id])?;
    Ok(take)
}

#[cfg(test)]
pub(crate) fn sample(sha256: &str) -> NewTake {
    NewTake {
        voice_id: None,
        name: "take".into(),
        sha256: sha256.into(),
        format: "wav".into(),
        source_path: None,
        origin: Origin::Imported,
        duration_secs: 1.0,
        sample_rate: 16000,
        channels: 1,
        frames: 16000,
        peak_dbfs: -6.0,
        loudness_lufs: None,
        waveform: vec![0.0, 0.5, 1.0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_rename_and_delete() {
        let conn = crate::db::open_in_memory();
        let id = insert(&conn, &sample("ab")).unwrap();
        let take = require(&conn, id).unwrap();
        assert_eq!(take.waveform, vec![0.0, 128.0 / 255.0, 1.0]);
        assert_eq!(rename(&conn, id, " hello ").unwrap().name, "hello");
        assert!(rename(&conn, id, "").is_err());
        assert_eq!(delete(&conn, id).unwrap().id, id);
        let err = require(&conn, id).unwrap_err();
        assert_eq!(
            crate::error::kind_of(&err),
            crate::error::ErrorKind::NotFound
        );
    }

    #[test]
    fn one_row_per_content_hash() {
        let conn = crate::db::open_in_memory();
        insert(&conn, &sample("same")).unwrap();
        assert!(insert(&conn, &sample("same")).is_err());
    }

    #[test]
    fn list_filters_by_voice_and_deleting_a_voice_keeps_its_takes() {
        let conn = crate::db::open_in_memory();
        let voice = crate::db::voices::ensure(&conn, "Bob").unwrap();
        let a = insert(&conn, &sample("a")).unwrap();
        insert(&conn, &sample("b")).unwrap();
        set_voice(&conn, a, Some(voice.id)).unwrap();
        assert_eq!(list(&conn, Some(voice.id)).unwrap().len(), 1);
        assert_eq!(list(&conn, None).unwrap().len(), 2);
        conn.execute("DELETE FROM voices WHERE id = ?1", [voice.id])
            .unwrap();
        assert_eq!(require(&conn, a).unwrap().voice_id, None);
        assert!(set_voice(&conn, a, Some(999)).is_err());
    }
}
