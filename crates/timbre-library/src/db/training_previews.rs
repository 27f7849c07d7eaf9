//! What a training sounds like as it goes: one WAV per preview epoch, the same piece of the
//! dataset resynthesised each time, in `<data dir>/trainings/<id>/previews/`. They stay out of
//! `takes`: they are the training's working files, deleted with it, not recordings of the voice.

use anyhow::Result;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

pub(super) const CREATE: &str = "
CREATE TABLE training_previews (
    id INTEGER PRIMARY KEY,
    training_id INTEGER NOT NULL REFERENCES trainings(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    step INTEGER NOT NULL,
    path TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (training_id, epoch)
);";

/// One epoch's preview of a training: a row of `training_previews`.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct TrainingPreview {
    /// Row id in `training_previews`.
    pub id: i64,
    /// The training it belongs to (row id in `trainings`).
    pub training_id: i64,
    /// The epoch it was rendered after (1 for the first); one preview per epoch.
    pub epoch: i64,
    /// Optimizer steps taken in all when it was rendered.
    pub step: i64,
    /// The WAV file (float, at the model's rate).
    pub path: String,
    /// When it was recorded: UTC, RFC 3339.
    pub created_at: String,
}

const SELECT: &str = "SELECT id, training_id, epoch, step, path, created_at FROM training_previews";

fn row(r: &rusqlite::Row) -> rusqlite::Result<TrainingPreview> {
    Ok(TrainingPreview {
        id: r.get(0)?,
        training_id: r.get(1)?,
        epoch: r.get(2)?,
        step: r.get(3)?,
        path: r.get(4)?,
        created_at: r.get(5)?,
    })
}

/// Records the preview of `epoch`, replacing an earlier one of the same epoch.
pub fn insert(
    conn: &Connection,
    training_id: i64,
    epoch: i64,
    step: i64,
    path: &str,
) -> Result<TrainingPreview> {
    let id: i64 = conn.query_row(
        "INSERT OR REPLACE INTO training_previews (training_id, epoch, step, path, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
        params![training_id, epoch, step, path, super::now()],
        |r| r.get(0),
    )?;
    require(conn, id)
}

/// The previews of training `training_id`, by epoch.
pub fn list(conn: &Connection, training_id: i64) -> Result<Vec<TrainingPreview>> {
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE training_id = ?1 ORDER BY epoch"))?;
    Ok(stmt
        .query_map([training_id], row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// The preview with row id `id`; a not-found error when there is none.
pub fn require(conn: &Connection, id: i64) -> Result<TrainingPreview> {
    conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], row)
        .optional()?
        .ok_or_else(|| crate::error::not_found(format!("no training preview {id}")))
}

/// Removes the previews after `epoch` and returns them, so their files can go too: a run
/// resumed from an earlier checkpoint makes them again.
pub fn delete_after(
    conn: &Connection,
    training_id: i64,
    epoch: i64,
) -> Result<Vec<TrainingPreview>> {
    let mut stmt = conn.prepare(
        "DELETE FROM training_previews WHERE training_id = ?1 AND epoch > ?2
         RETURNING id, training_id, epoch, step, path, created_at",
    )?;
    Ok(stmt
        .query_map(params![training_id, epoch], row)?
        .collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_preview_per_epoch_and_the_later_ones_go_on_resume() {
        let conn = crate::db::open_in_memory();
        let training = crate::db::trainings::sample(&conn);
        let id = training.id;
        insert(&conn, id, 2, 20, "/p/epoch_2.wav").unwrap();
        insert(&conn, id, 4, 40, "/p/epoch_4.wav").unwrap();
        let again = insert(&conn, id, 2, 21, "/p/epoch_2.wav").unwrap();
        assert_eq!(require(&conn, again.id).unwrap().step, 21);
        let epochs: Vec<i64> = list(&conn, id).unwrap().iter().map(|p| p.epoch).collect();
        assert_eq!(epochs, [2, 4]);
        let removed = delete_after(&conn, id, 3).unwrap();
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].path, "/p/epoch_4.wav");
        assert_eq!(list(&conn, id).unwrap().len(), 1);
    }
}
