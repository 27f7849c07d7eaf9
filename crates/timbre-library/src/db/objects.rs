//! Which rows name objects of the content store: takes (their audio), models (weights and
//! index) and conversions (their output). The one list the store's reference counting reads,
//! for the live database and for backups (whose older schemas may lack a table).

use std::collections::HashSet;

use anyhow::Result;
use rusqlite::{Connection, OptionalExtension};

use super::models::{INDEX_EXT, WEIGHTS_EXT};
use crate::store::ObjectKey;

/// A column that names objects: their SHA-256 in `sha256`, their extension in the column
/// `ext_column` or, for a whole column of one kind, the fixed `ext`.
struct Naming {
    table: &'static str,
    sha256: &'static str,
    ext: Ext,
}

enum Ext {
    Column(&'static str),
    Fixed(&'static str),
}

const NAMINGS: &[Naming] = &[
    Naming {
        table: "takes",
        sha256: "sha256",
        ext: Ext::Column("format"),
    },
    Naming {
        table: "models",
        sha256: "weights_sha256",
        ext: Ext::Fixed(WEIGHTS_EXT),
    },
    Naming {
        table: "models",
        sha256: "index_sha256",
        ext: Ext::Fixed(INDEX_EXT),
    },
    Naming {
        table: "conversions",
        sha256: "sha256",
        ext: Ext::Column("format"),
    },
];

impl Naming {
    /// The extension as SQL: the column, or the fixed value as a literal (our own constants).
    fn ext_sql(&self) -> String {
        match self.ext {
            Ext::Column(column) => column.to_string(),
            Ext::Fixed(ext) => format!("'{ext}'"),
        }
    }
}

fn has_table(conn: &Connection, table: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Every object some row of `conn`'s database names.
pub fn named(conn: &Connection) -> Result<HashSet<ObjectKey>> {
    let mut named = HashSet::new();
    for naming in NAMINGS {
        if !has_table(conn, naming.table)? {
            continue;
        }
        let sql = format!(
            "SELECT {sha}, {ext} FROM {table} WHERE {sha} IS NOT NULL",
            sha = naming.sha256,
            ext = naming.ext_sql(),
            table = naming.table
        );
        let mut statement = conn.prepare(&sql)?;
        let keys = statement.query_map([], |r| {
            Ok(ObjectKey::new(
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
            ))
        })?;
        for key in keys {
            named.insert(key?);
        }
    }
    Ok(named)
}

/// Whether some row of `conn`'s database names `key`.
pub fn names(conn: &Connection, key: &ObjectKey) -> Result<bool> {
    for naming in NAMINGS {
        if !has_table(conn, naming.table)? {
            continue;
        }
        let sql = format!(
            "SELECT 1 FROM {table} WHERE {sha} = ?1 AND {ext} = ?2 LIMIT 1",
            sha = naming.sha256,
            ext = naming.ext_sql(),
            table = naming.table
        );
        let found = conn
            .query_row(&sql, [&key.sha256, &key.ext], |_| Ok(()))
            .optional()?;
        if found.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{conversions, models, takes};

    #[test]
    fn takes_models_indexes_and_conversions_name_their_objects() {
        let conn = crate::db::open_in_memory();
        takes::insert(&conn, &takes::sample("take")).unwrap();
        let model = models::insert(&conn, &models::sample("weights")).unwrap();
        models::set_index(&conn, model, Some("index")).unwrap();
        conversions::insert(&conn, &conversions::sample("out", model)).unwrap();
        let expected = HashSet::from([
            ObjectKey::new("take", takes::sample("take").format),
            ObjectKey::new("weights", WEIGHTS_EXT),
            ObjectKey::new("index", INDEX_EXT),
            ObjectKey::new("out", "wav"),
        ]);
        assert_eq!(named(&conn).unwrap(), expected);
        for key in &expected {
            assert!(names(&conn, key).unwrap(), "{key:?}");
        }
        // Same hash, another extension: another object.
        assert!(!names(&conn, &ObjectKey::new("index", "wav")).unwrap());
        assert!(!names(&conn, &ObjectKey::new("nobody", "wav")).unwrap());
    }

    #[test]
    fn a_database_without_some_tables_names_what_it_has() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE takes (sha256 TEXT, format TEXT);
             INSERT INTO takes VALUES ('old', 'flac');",
        )
        .unwrap();
        assert_eq!(
            named(&conn).unwrap(),
            HashSet::from([ObjectKey::new("old", "flac")])
        );
        assert!(names(&conn, &ObjectKey::new("old", "flac")).unwrap());
    }
}
