//! A/B and blind (ABX) listening sessions between conversions of one input: which outputs were
//! compared, what the listener chose, and for a blind test whether the choice named the hidden
//! one correctly.

use anyhow::Result;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

pub(super) const CREATE: &str = "
CREATE TABLE listening_tests (
    id INTEGER PRIMARY KEY,
    mode TEXT NOT NULL CHECK (mode IN ('ab', 'abx')),
    input_sha256 TEXT NOT NULL,
    conversion_ids TEXT NOT NULL,
    hidden_conversion_id INTEGER,
    chosen_conversion_id INTEGER NOT NULL,
    correct INTEGER,
    loudness_matched INTEGER NOT NULL,
    created_at TEXT NOT NULL
);";

/// How a listening test is run (`ListeningMode` in TypeScript).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[ts(rename = "ListeningMode")]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Named outputs: the listener picks the one they prefer.
    Ab,
    /// X is one of the outputs, hidden: the listener says which.
    Abx,
}

/// One recorded vote: a row of `listening_tests`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct ListeningTest {
    /// Row id in `listening_tests`.
    pub id: i64,
    /// A/B or blind ABX.
    pub mode: Mode,
    /// SHA-256 (hex) of the input every compared conversion was made from.
    pub input_sha256: String,
    /// Row ids of the conversions compared, two or more.
    pub conversion_ids: Vec<i64>,
    /// The conversion played as X in an ABX test; None in A/B mode.
    pub hidden_conversion_id: Option<i64>,
    /// The conversion the listener chose; one of `conversion_ids`.
    pub chosen_conversion_id: i64,
    /// ABX only: whether the choice was the hidden one; None in A/B mode.
    pub correct: Option<bool>,
    /// Whether the outputs were played at matched loudness.
    pub loudness_matched: bool,
    /// When the vote was recorded: UTC, RFC 3339.
    pub created_at: String,
}

/// Records a vote. In ABX mode `correct` is decided here from the hidden and chosen outputs.
pub fn record(
    conn: &Connection,
    mode: Mode,
    conversion_ids: &[i64],
    hidden: Option<i64>,
    chosen: i64,
    loudness_matched: bool,
) -> Result<ListeningTest> {
    if conversion_ids.len() < 2 || !conversion_ids.contains(&chosen) {
        return Err(crate::error::invalid_input(
            "a vote needs two or more outputs and one of them chosen",
        ));
    }
    let hidden = match (mode, hidden) {
        (Mode::Abx, Some(h)) if conversion_ids.contains(&h) => Some(h),
        (Mode::Abx, _) => {
            return Err(crate::error::invalid_input(
                "a blind test needs its hidden output",
            ));
        }
        (Mode::Ab, _) => None,
    };
    let mut input_sha256 = None;
    for id in conversion_ids {
        let sha = super::conversions::require(conn, *id)?.input_sha256;
        if input_sha256.get_or_insert_with(|| sha.clone()) != &sha {
            return Err(crate::error::invalid_input(
                "the outputs compared must come from the same input",
            ));
        }
    }
    let correct = hidden.map(|h| h == chosen);
    let mode_text = if mode == Mode::Ab { "ab" } else { "abx" };
    conn.execute(
        "INSERT INTO listening_tests (mode, input_sha256, conversion_ids, hidden_conversion_id,
            chosen_conversion_id, correct, loudness_matched, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            mode_text,
            input_sha256.unwrap_or_default(),
            serde_json::to_string(conversion_ids)?,
            hidden,
            chosen,
            correct,
            loudness_matched,
            super::now()
        ],
    )?;
    let id = conn.last_insert_rowid();
    list(conn)?
        .into_iter()
        .find(|t| t.id == id)
        .ok_or_else(|| crate::error::not_found("the vote was not saved"))
}

/// Every recorded vote, newest first.
pub fn list(conn: &Connection) -> Result<Vec<ListeningTest>> {
    let mut stmt = conn.prepare(
        "SELECT id, mode, input_sha256, conversion_ids, hidden_conversion_id, chosen_conversion_id,
            correct, loudness_matched, created_at FROM listening_tests ORDER BY id DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        let mode: String = r.get(1)?;
        let ids: String = r.get(3)?;
        Ok(ListeningTest {
            id: r.get(0)?,
            mode: if mode == "abx" { Mode::Abx } else { Mode::Ab },
            input_sha256: r.get(2)?,
            conversion_ids: serde_json::from_str(&ids).unwrap_or_default(),
            hidden_conversion_id: r.get(4)?,
            chosen_conversion_id: r.get(5)?,
            correct: r.get(6)?,
            loudness_matched: r.get(7)?,
            created_at: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conversions::{self, NewConversion};

    fn conversion(conn: &Connection, input: &str, output: &str) -> i64 {
        let model = crate::db::models::insert(conn, &crate::db::models::sample(output)).unwrap();
        conversions::insert(
            conn,
            &NewConversion {
                job_id: None,
                model_id: model,
                model_name: "m".into(),
                input_take_id: None,
                input_path: None,
                input_sha256: input.into(),
                params: serde_json::json!({}),
                sha256: output.into(),
                format: "wav".into(),
                sample_rate: 40_000,
                duration_secs: 1.0,
                peak_dbfs: -1.0,
                seconds_taken: 0.1,
            },
        )
        .unwrap()
    }

    #[test]
    fn blind_votes_are_scored_and_mixed_inputs_refused() {
        let conn = crate::db::open_in_memory();
        let (a, b, other) = (
            conversion(&conn, "in", "a"),
            conversion(&conn, "in", "b"),
            conversion(&conn, "in2", "c"),
        );
        let right = record(&conn, Mode::Abx, &[a, b], Some(b), b, true).unwrap();
        assert_eq!(right.correct, Some(true));
        let wrong = record(&conn, Mode::Abx, &[a, b], Some(b), a, false).unwrap();
        assert_eq!(wrong.correct, Some(false));
        let preference = record(&conn, Mode::Ab, &[a, b], Some(a), a, true).unwrap();
        assert_eq!(
            (preference.correct, preference.hidden_conversion_id),
            (None, None)
        );
        assert!(record(&conn, Mode::Abx, &[a, b], None, a, true).is_err());
        assert!(record(&conn, Mode::Ab, &[a, other], None, a, true).is_err());
        assert!(record(&conn, Mode::Ab, &[a], None, a, true).is_err());
        assert_eq!(list(&conn).unwrap().len(), 3);
    }
}
