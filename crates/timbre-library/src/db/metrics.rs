//! The `metrics` table: resource samples taken while a job runs (`crate::jobs::sampler`), one row
//! per value (its time, name and number), summarised as each name's peak and average for reports.

use anyhow::Result;
use rusqlite::{Connection, params};
use serde::Serialize;

pub(super) const CREATE: &str = "
CREATE TABLE metrics (
    id INTEGER PRIMARY KEY,
    job_id INTEGER REFERENCES jobs(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE INDEX metrics_job ON metrics(job_id, name);";

/// One sampled value: a row of `metrics`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sample {
    /// When it was sampled: UTC, RFC 3339.
    pub at: String,
    /// What was measured, e.g. `cpu_percent`, `ram_used_bytes`, `gpu0_temperature_c`.
    pub name: String,
    /// The value, in the unit its name ends with (percent, bytes, degrees Celsius).
    pub value: f64,
}

/// Peak and average of one metric over a job's samples.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The metric's name, as in [`Sample::name`].
    pub name: String,
    /// Largest sampled value.
    pub peak: f64,
    /// Mean of the sampled values.
    pub average: f64,
    /// Number of samples taken.
    pub samples: i64,
}

/// Records `values` (name, value) of job `job_id`, all sampled at `at` (UTC, RFC 3339).
pub fn insert_many(
    conn: &Connection,
    job_id: i64,
    at: &str,
    values: &[(String, f64)],
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached("INSERT INTO metrics (job_id, at, name, value) VALUES (?1, ?2, ?3, ?4)")?;
    for (name, value) in values {
        stmt.execute(params![job_id, at, name, value])?;
    }
    Ok(())
}

/// Every sample of job `job_id`, in the order recorded.
pub fn samples(conn: &Connection, job_id: i64) -> Result<Vec<Sample>> {
    let mut stmt =
        conn.prepare("SELECT at, name, value FROM metrics WHERE job_id = ?1 ORDER BY id")?;
    let rows = stmt.query_map([job_id], |r| {
        Ok(Sample {
            at: r.get(0)?,
            name: r.get(1)?,
            value: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Each metric's peak and average over job `job_id`'s samples, by name.
pub fn summary(conn: &Connection, job_id: i64) -> Result<Vec<Summary>> {
    let mut stmt = conn.prepare(
        "SELECT name, MAX(value), AVG(value), COUNT(*) FROM metrics WHERE job_id = ?1
         GROUP BY name ORDER BY name",
    )?;
    let rows = stmt.query_map([job_id], |r| {
        Ok(Summary {
            name: r.get(0)?,
            peak: r.get(1)?,
            average: r.get(2)?,
            samples: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_gives_peak_and_average_per_metric() {
        let conn = crate::db::open_in_memory();
        let job = crate::db::jobs::insert(
            &conn,
            crate::db::jobs::JobKind::Import,
            crate::db::jobs::Lane::Light,
            &serde_json::json!({}),
            0,
        )
        .unwrap();
        insert_many(
            &conn,
            job,
            "t1",
            &[("cpu_percent".into(), 10.0), ("ram_used_bytes".into(), 5.0)],
        )
        .unwrap();
        insert_many(&conn, job, "t2", &[("cpu_percent".into(), 30.0)]).unwrap();
        let s = summary(&conn, job).unwrap();
        assert_eq!(
            s[0],
            Summary {
                name: "cpu_percent".into(),
                peak: 30.0,
                average: 20.0,
                samples: 2
            }
        );
        assert_eq!(samples(&conn, job).unwrap().len(), 3);
    }
}
