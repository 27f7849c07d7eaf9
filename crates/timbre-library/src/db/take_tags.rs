//! The `take_tags` table: one row per tag of a take (trimmed, each once), deleted with the take.

use anyhow::Result;
use rusqlite::{Connection, params};

pub(super) const CREATE: &str = "
CREATE TABLE take_tags (
    take_id INTEGER NOT NULL REFERENCES takes(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (take_id, tag)
);";

/// The tags of take `take_id`, sorted.
pub fn for_take(conn: &Connection, take_id: i64) -> Result<Vec<String>> {
    let mut stmt =
        conn.prepare_cached("SELECT tag FROM take_tags WHERE take_id = ?1 ORDER BY tag")?;
    Ok(stmt
        .query_map([take_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Replaces the take's tags; blank and repeated tags are dropped.
pub fn set(conn: &Connection, take_id: i64, tags: &[String]) -> Result<()> {
    conn.execute("DELETE FROM take_tags WHERE take_id = ?1", [take_id])?;
    for tag in tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        conn.execute(
            "INSERT OR IGNORE INTO take_tags (take_id, tag) VALUES (?1, ?2)",
            params![take_id, tag],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_trimmed_deduplicated_and_cascade_on_delete() {
        let conn = crate::db::open_in_memory();
        let id = crate::db::takes::insert(&conn, &crate::db::takes::sample("x")).unwrap();
        set(
            &conn,
            id,
            &["b ".into(), "a".into(), "b".into(), " ".into()],
        )
        .unwrap();
        assert_eq!(for_take(&conn, id).unwrap(), vec!["a", "b"]);
        crate::db::takes::delete(&conn, id).unwrap();
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM take_tags", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
