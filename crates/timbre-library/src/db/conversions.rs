//! Converted audio: one row per output, linked to the voice model and to its input (a take, or
//! a file outside the library), with the parameters that made it. The audio is a store object.

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE conversions (
    id INTEGER PRIMARY KEY,
    job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    model_id INTEGER REFERENCES models(id) ON DELETE SET NULL,
    model_name TEXT NOT NULL,
    input_take_id INTEGER REFERENCES takes(id) ON DELETE SET NULL,
    input_path TEXT,
    input_sha256 TEXT NOT NULL,
    params TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    format TEXT NOT NULL,
    sample_rate INTEGER NOT NULL,
    duration_secs REAL NOT NULL,
    peak_dbfs REAL NOT NULL,
    seconds_taken REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX conversions_input ON conversions(input_sha256);
CREATE INDEX conversions_model ON conversions(model_id);";

/// One converted output: a row of `conversions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Conversion {
    /// Row id in `conversions`.
    pub id: i64,
    /// The job that made it; None once that job is deleted.
    pub job_id: Option<i64>,
    /// The voice model used; None once that model is deleted.
    pub model_id: Option<i64>,
    /// Name of the model at conversion time, kept when the model is gone.
    pub model_name: String,
    /// The take converted; None for a file outside the library, or once the take is deleted.
    pub input_take_id: Option<i64>,
    /// Path of the input file as given, when there was one.
    pub input_path: Option<String>,
    /// SHA-256 (hex) of the input audio's content.
    pub input_sha256: String,
    /// The conversion options (and effect chain, or cover settings) as JSON.
    pub params: serde_json::Value,
    /// SHA-256 (hex) of the output audio: its key in the content store, with `format`.
    pub sha256: String,
    /// File extension of the output audio (`wav`, `flac`, ...).
    pub format: String,
    /// Sample rate of the output in Hz.
    pub sample_rate: u32,
    /// Length of the output in seconds.
    pub duration_secs: f64,
    /// Sample peak of the output in dBFS (0 is full scale).
    pub peak_dbfs: f64,
    /// Wall-clock seconds the conversion took.
    pub seconds_taken: f64,
    /// When the row was written: UTC, RFC 3339.
    pub created_at: String,
}

/// A conversion to record: a [`Conversion`] without its id and creation time.
#[derive(Debug, Clone)]
pub struct NewConversion {
    /// The job that made it, if any.
    pub job_id: Option<i64>,
    /// Row id of the voice model used.
    pub model_id: i64,
    /// Name of the model, kept with the row.
    pub model_name: String,
    /// The take converted; None for a file outside the library.
    pub input_take_id: Option<i64>,
    /// Path of the input file, when there is one.
    pub input_path: Option<String>,
    /// SHA-256 (hex) of the input audio's content.
    pub input_sha256: String,
    /// The conversion options (and effect chain, or cover settings) as JSON.
    pub params: serde_json::Value,
    /// SHA-256 (hex) of the output audio in the content store.
    pub sha256: String,
    /// File extension of the output audio (`wav`, `flac`, ...).
    pub format: String,
    /// Sample rate of the output in Hz.
    pub sample_rate: u32,
    /// Length of the output in seconds.
    pub duration_secs: f64,
    /// Sample peak of the output in dBFS.
    pub peak_dbfs: f64,
    /// Wall-clock seconds the conversion took.
    pub seconds_taken: f64,
}

const SELECT: &str = "SELECT id, job_id, model_id, model_name, input_take_id, input_path,
    input_sha256, params, sha256, format, sample_rate, duration_secs, peak_dbfs, seconds_taken,
    created_at FROM conversions";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Conversion> {
    let params: String = r.get(7)?;
    Ok(Conversion {
        id: r.get(0)?,
        job_id: r.get(1)?,
        model_id: r.get(2)?,
        model_name: r.get(3)?,
        input_take_id: r.get(4)?,
        input_path: r.get(5)?,
        input_sha256: r.get(6)?,
        params: serde_json::from_str(&params).unwrap_or_default(),
        sha256: r.get(8)?,
        format: r.get(9)?,
        sample_rate: r.get(10)?,
        duration_secs: r.get(11)?,
        peak_dbfs: r.get(12)?,
        seconds_taken: r.get(13)?,
        created_at: r.get(14)?,
    })
}

/// The columns a conversion writes, in the order of [`values`].
const COLUMNS: &str = "job_id, model_id, model_name, input_take_id, input_path, input_sha256, \
    params, sha256, format, sample_rate, duration_secs, peak_dbfs, seconds_taken, created_at";

fn values(c: &NewConversion) -> [rusqlite::types::Value; 14] {
    use rusqlite::types::Value;
    [
        c.job_id.into(),
        c.model_id.into(),
        c.model_name.clone().into(),
        c.input_take_id.into(),
        c.input_path.clone().into(),
        c.input_sha256.clone().into(),
        c.params.to_string().into(),
        c.sha256.clone().into(),
        c.format.clone().into(),
        c.sample_rate.into(),
        c.duration_secs.into(),
        c.peak_dbfs.into(),
        c.seconds_taken.into(),
        Value::Text(super::now()),
    ]
}

/// Records a conversion; its new row id.
pub fn insert(conn: &Connection, c: &NewConversion) -> Result<i64> {
    conn.execute(
        &format!(
            "INSERT INTO conversions ({COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
        ),
        rusqlite::params_from_iter(values(c)),
    )
    .with_context(|| format!("saving the conversion with {}", c.model_name))?;
    Ok(conn.last_insert_rowid())
}

/// Conversions, newest first; of one input (by content hash) when given.
pub fn list(conn: &Connection, input_sha256: Option<&str>) -> Result<Vec<Conversion>> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT} WHERE ?1 IS NULL OR input_sha256 = ?1 ORDER BY created_at DESC, id DESC"
    ))?;
    let rows = stmt.query_map([input_sha256], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The conversion with row id `id`, or None.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Conversion>> {
    Ok(conn
        .query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?)
}

/// The conversion with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<Conversion> {
    get(conn, id)?.ok_or_else(|| crate::error::not_found(format!("conversion {id} does not exist")))
}

/// The conversions a job produced.
pub fn for_job(conn: &Connection, job_id: i64) -> Result<Vec<Conversion>> {
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE job_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([job_id], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records the conversion of a job that makes one: a job that runs again (a retry, a resume
/// after a crash) replaces the row its earlier run recorded, keeping its id, so each job has
/// one row. Its id.
pub fn save_for_job(conn: &Connection, c: &NewConversion) -> Result<i64> {
    let earlier: Option<i64> = match c.job_id {
        Some(job_id) => conn
            .query_row(
                "SELECT id FROM conversions WHERE job_id = ?1 ORDER BY id LIMIT 1",
                [job_id],
                |r| r.get(0),
            )
            .optional()?,
        None => None,
    };
    let Some(id) = earlier else {
        return insert(conn, c);
    };
    let mut replaced: Vec<rusqlite::types::Value> = values(c).into();
    replaced.push(id.into());
    conn.execute(
        &format!(
            "UPDATE conversions SET ({COLUMNS}) = \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) WHERE id = ?15"
        ),
        rusqlite::params_from_iter(replaced),
    )
    .with_context(|| format!("saving the conversion with {}", c.model_name))?;
    Ok(id)
}

/// Deletes the conversion row `id` (not its audio) and returns it; not found when absent.
pub fn delete(conn: &Connection, id: i64) -> Result<Conversion> {
    let conversion = require(conn, id)?;
    conn.execute("DELETE FROM conversions WHERE id = ?1", [id])?;
    Ok(conversion)
}

#[cfg(test)]
pub(crate) fn sample(sha256: &str, model_id: i64) -> NewConversion {
    NewConversion {
        job_id: None,
        model_id,
        model_name: "Ada v2".into(),
        input_take_id: None,
        input_path: None,
        input_sha256: "in".into(),
        params: serde_json::json!({}),
        sha256: sha256.into(),
        format: "wav".into(),
        sample_rate: 40_000,
        duration_secs: 1.0,
        peak_dbfs: -3.0,
        seconds_taken: 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversion_outlives_its_model_and_input_take() {
        let conn = crate::db::open_in_memory();
        let model = crate::db::models::insert(&conn, &crate::db::models::sample("w")).unwrap();
        let take = crate::db::takes::insert(&conn, &crate::db::takes::sample("in")).unwrap();
        let id = insert(
            &conn,
            &NewConversion {
                job_id: None,
                model_id: model,
                model_name: "Ada v2".into(),
                input_take_id: Some(take),
                input_path: None,
                input_sha256: "in".into(),
                params: serde_json::json!({ "transpose": 3 }),
                sha256: "out".into(),
                format: "wav".into(),
                sample_rate: 40_000,
                duration_secs: 1.0,
                peak_dbfs: -3.0,
                seconds_taken: 0.5,
            },
        )
        .unwrap();
        assert_eq!(list(&conn, Some("in")).unwrap().len(), 1);
        assert!(list(&conn, Some("other")).unwrap().is_empty());
        conn.execute("DELETE FROM models", []).unwrap();
        conn.execute("DELETE FROM takes", []).unwrap();
        let kept = require(&conn, id).unwrap();
        assert_eq!((kept.model_id, kept.input_take_id), (None, None));
        assert_eq!(kept.params["transpose"], 3);
    }

    #[test]
    fn a_job_that_runs_again_keeps_one_row() {
        let conn = crate::db::open_in_memory();
        let model = crate::db::models::insert(&conn, &crate::db::models::sample("w")).unwrap();
        let lane = crate::db::jobs::Lane::Gpu;
        let job = crate::db::jobs::insert(
            &conn,
            crate::db::jobs::JobKind::Convert,
            lane,
            &serde_json::json!({}),
            3,
        )
        .unwrap();
        let first = NewConversion {
            job_id: Some(job),
            ..sample("first", model)
        };
        let id = save_for_job(&conn, &first).unwrap();
        let again = NewConversion {
            sha256: "second".into(),
            ..first.clone()
        };
        assert_eq!(save_for_job(&conn, &again).unwrap(), id);
        let rows = for_job(&conn, job).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].id, rows[0].sha256.as_str()), (id, "second"));
        let unowned = save_for_job(&conn, &sample("a", model)).unwrap();
        assert_ne!(save_for_job(&conn, &sample("b", model)).unwrap(), unowned);
        assert_eq!(list(&conn, None).unwrap().len(), 3);
    }
}
