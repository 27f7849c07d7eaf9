//! The cover job's stage cache: which takes a stage made from which inputs and parameters. A
//! stage's key is the hash of its inputs' content and its parameters, so a cover of the same
//! song with another voice finds the isolation done, and one with other gains finds the
//! conversion done. Deleting a take forgets the stages that made it.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use rusqlite::{Connection, params};

pub(super) const CREATE: &str = "
CREATE TABLE cover_stages (
    key TEXT NOT NULL,
    stage TEXT NOT NULL,
    role TEXT NOT NULL,
    take_id INTEGER NOT NULL REFERENCES takes(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (key, role)
);
CREATE INDEX cover_stages_take ON cover_stages(take_id);";

/// The takes of the stage run under `key`, by role; None unless every one of `roles` is there.
pub fn find(conn: &Connection, key: &str, roles: &[&str]) -> Result<Option<BTreeMap<String, i64>>> {
    let mut statement = conn.prepare("SELECT role, take_id FROM cover_stages WHERE key = ?1")?;
    let found = statement
        .query_map([key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<BTreeMap<_, _>>>()
        .with_context(|| format!("reading the cover stage {key}"))?;
    Ok(roles
        .iter()
        .all(|role| found.contains_key(*role))
        .then_some(found))
}

/// Records the takes a stage made under `key` (replacing an earlier record of the same roles).
pub fn record(conn: &Connection, key: &str, stage: &str, takes: &[(&str, i64)]) -> Result<()> {
    for (role, take_id) in takes {
        conn.execute(
            "INSERT OR REPLACE INTO cover_stages (key, stage, role, take_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key, stage, role, take_id, super::now()],
        )
        .with_context(|| format!("recording the cover stage {stage}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_is_found_only_with_all_its_roles_and_forgotten_with_its_takes() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("library.sqlite3")).unwrap();
        let take = |sha: &str| {
            crate::db::takes::insert(
                &conn,
                &crate::db::takes::NewTake {
                    voice_id: None,
                    name: sha.into(),
                    sha256: sha.into(),
                    format: "wav".into(),
                    source_path: None,
                    origin: crate::db::takes::Origin::Imported,
                    duration_secs: 1.0,
                    sample_rate: 44_100,
                    channels: 2,
                    frames: 44_100,
                    peak_dbfs: -3.0,
                    loudness_lufs: Some(-20.0),
                    waveform: vec![],
                },
            )
            .unwrap()
        };
        let (vocals, instrumental) = (take("aa"), take("bb"));
        record(&conn, "k", "isolate", &[("vocals", vocals)]).unwrap();
        assert_eq!(find(&conn, "k", &["vocals", "instrumental"]).unwrap(), None);
        record(&conn, "k", "isolate", &[("instrumental", instrumental)]).unwrap();
        let found = find(&conn, "k", &["vocals", "instrumental"])
            .unwrap()
            .unwrap();
        assert_eq!(found["vocals"], vocals);
        crate::db::takes::delete(&conn, instrumental).unwrap();
        assert_eq!(find(&conn, "k", &["vocals", "instrumental"]).unwrap(), None);
    }
}
