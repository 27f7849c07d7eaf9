//! Rolling copies of the library database in `<data dir>/backups/`, made with SQLite's online
//! backup API (a consistent copy while other processes write): one a day and one before each
//! migration, the last [`KEEP`] kept. A restore puts one in place and keeps the file it
//! replaces aside, renamed, never deleted.

use anyhow::{Context, Result};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How many backups are kept; older ones are deleted after each new one.
pub const KEEP: usize = 7;
const DAY: Duration = Duration::from_secs(24 * 60 * 60);
const PREFIX: &str = "library-";
const SUFFIX: &str = ".sqlite3";

/// One backup file in the backups folder.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BackupFile {
    /// File name, `library-<time>[_<reason>].sqlite3`.
    pub name: String,
    /// Full path of the file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// UTC, as in the name: RFC 3339 with dashes for colons.
    pub made_at: String,
}

/// The backups folder of the library at `database`: `backups/` beside the database file.
pub fn folder(database: &Path) -> PathBuf {
    database
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("backups")
}

/// The backups of the library at `database`, newest first.
pub fn list(database: &Path) -> Result<Vec<BackupFile>> {
    let dir = folder(database);
    let entries = match fs::read_dir(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries.with_context(|| format!("listing {}", dir.display()))?,
    };
    let mut backups = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stamp) = name
            .strip_prefix(PREFIX)
            .and_then(|n| n.strip_suffix(SUFFIX))
        else {
            continue;
        };
        backups.push(BackupFile {
            made_at: stamp.split('_').next().unwrap_or(stamp).to_string(),
            bytes: entry.metadata()?.len(),
            path: entry.path(),
            name,
        });
    }
    backups.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(backups)
}

/// Copies the database into the backups folder as `library-<time>[_<reason>].sqlite3` (written
/// under a temporary name and renamed, so a backup is whole or absent), then keeps the newest
/// [`KEEP`].
pub fn make(conn: &Connection, database: &Path, reason: Option<&str>) -> Result<BackupFile> {
    let dir = folder(database);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (name, path) = loop {
        let stamp = super::now().replace(':', "-");
        let name = match reason {
            Some(reason) => format!("{PREFIX}{stamp}_{reason}{SUFFIX}"),
            None => format!("{PREFIX}{stamp}{SUFFIX}"),
        };
        let path = dir.join(&name);
        if !path.exists() {
            break (name, path);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let partial = dir.join(format!("{name}.part"));
    let copied = copy(conn, &partial).and_then(|()| Ok(fs::rename(&partial, &path)?));
    if let Err(err) = copied {
        let _ = fs::remove_file(&partial);
        return Err(err.context(format!("backing up the library into {}", path.display())));
    }
    for old in list(database)?.into_iter().skip(KEEP) {
        fs::remove_file(&old.path).with_context(|| format!("removing {}", old.path.display()))?;
    }
    list(database)?
        .into_iter()
        .find(|b| b.name == name)
        .context("the new backup vanished")
}

fn copy(conn: &Connection, to: &Path) -> Result<()> {
    let mut dst = Connection::open(to)?;
    let backup = Backup::new(conn, &mut dst)?;
    // All pages in one step: a copy in several steps starts over whenever another process
    // writes between them.
    loop {
        match backup.step(-1)? {
            StepResult::Done => return Ok(()),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Makes the daily backup when the newest is a day old or there is none.
pub fn make_daily(conn: &Connection, database: &Path) -> Result<Option<BackupFile>> {
    let newest = list(database)?
        .first()
        .map(|b| fs::metadata(&b.path).and_then(|m| m.modified()))
        .transpose()?;
    let due = newest.is_none_or(|at| {
        SystemTime::now()
            .duration_since(at)
            .is_ok_and(|age| age >= DAY)
    });
    if !due {
        return Ok(None);
    }
    make(conn, database, None).map(Some)
}

/// Finds a backup by its name in the backups folder, or by its path.
pub fn find(database: &Path, backup: &str) -> Result<PathBuf> {
    let named = folder(database).join(backup);
    let path = if named.is_file() {
        named
    } else {
        PathBuf::from(backup)
    };
    if !path.is_file() {
        return Err(crate::error::not_found(format!(
            "no backup {backup} (`timbre library backups` lists them)"
        )));
    }
    Ok(path)
}

/// Puts `backup` in place of the database after checking it, and renames the replaced file
/// (and its WAL) to `<name>.damaged-<time>`; the caller makes sure no process has the library
/// open. Returns where the replaced file went.
pub fn restore(database: &Path, backup: &Path) -> Result<Option<PathBuf>> {
    check_restorable(backup)?;
    let staged = database.with_extension("sqlite3.restoring");
    fs::copy(backup, &staged)
        .with_context(|| format!("copying {} to {}", backup.display(), staged.display()))?;
    let stamp = super::now().replace(':', "-");
    let mut kept = None;
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", database.display()));
        if !file.exists() {
            continue;
        }
        let aside = PathBuf::from(format!("{}.damaged-{stamp}{suffix}", database.display()));
        fs::rename(&file, &aside)
            .with_context(|| format!("moving {} to {}", file.display(), aside.display()))?;
        if suffix.is_empty() {
            kept = Some(aside);
        }
    }
    fs::rename(&staged, database)
        .with_context(|| format!("moving {} to {}", staged.display(), database.display()))?;
    Ok(kept)
}

/// Refuses a file that is not a sound backup of a library this build can open: not SQLite
/// (empty, or other bytes), damaged (`PRAGMA integrity_check`), another application's database
/// (its application id), without our schema or with a newer one, or lacking a table or column
/// its schema version has. Libraries made before the application id was set carry none: they
/// pass on their schema alone.
fn check_restorable(backup: &Path) -> Result<()> {
    let refused = |what: String| {
        crate::error::invalid_input(format!(
            "{} cannot be restored: it {what}; the library was left as it was",
            backup.display()
        ))
    };
    match super::integrity::header_problem(backup) {
        Err(e) => return Err(refused(format!("cannot be read ({e})"))),
        Ok(Some(problem)) => return Err(refused(problem.to_string())),
        Ok(None) => {}
    }
    let conn = Connection::open_with_flags(backup, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening the backup {}", backup.display()))?;
    let problems: Vec<String> = conn
        .prepare("PRAGMA integrity_check(3)")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<_>>()
        })
        .map_err(|e| refused(format!("is damaged ({e})")))?;
    if problems != ["ok"] {
        return Err(refused(format!("is damaged ({})", problems.join("; "))));
    }
    let pragma = |name: &str| {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .with_context(|| format!("reading the {name} of {}", backup.display()))
    };
    let application_id = pragma("application_id")?;
    if application_id != 0 && application_id != i64::from(super::APPLICATION_ID) {
        return Err(refused(format!(
            "is another application's database (application id {application_id:#010x}), not a \
             Timbre Studio library"
        )));
    }
    let version = usize::try_from(pragma("user_version")?).unwrap_or(0);
    if version == 0 {
        return Err(refused(
            "is an SQLite database without a Timbre Studio library's schema".into(),
        ));
    }
    if version > super::SCHEMA_VERSION {
        return Err(refused(format!(
            "was written by a newer Timbre Studio (schema {version}; this build knows {})",
            super::SCHEMA_VERSION
        )));
    }
    let found = super::tables(&conn)?;
    let missing: Vec<String> = super::tables_of_schema(version)?
        .into_iter()
        .flat_map(|(table, columns)| match found.get(&table) {
            None => vec![format!("the table `{table}`")],
            Some(present) => columns
                .difference(present)
                .map(|column| format!("the column `{table}.{column}`"))
                .collect(),
        })
        .collect();
    if !missing.is_empty() {
        let shown = missing
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let more = match missing.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        return Err(refused(format!(
            "says it is a Timbre Studio library of schema {version} but lacks {shown}{more}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_roll_and_restore_keeps_the_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("library.sqlite3");
        let conn = super::super::open(&database).unwrap();
        super::super::voices::ensure(&conn, "Alto").unwrap();
        let first = make(&conn, &database, Some("test")).unwrap();
        assert!(first.name.ends_with("_test.sqlite3"), "{}", first.name);
        assert!(
            make_daily(&conn, &database).unwrap().is_none(),
            "one is fresh"
        );
        for _ in 0..KEEP + 2 {
            make(&conn, &database, None).unwrap();
        }
        assert_eq!(list(&database).unwrap().len(), KEEP);
        conn.execute("DELETE FROM voices", []).unwrap();
        let newest = list(&database).unwrap().remove(0);
        drop(conn);
        let kept = restore(&database, &find(&database, &newest.name).unwrap())
            .unwrap()
            .unwrap();
        assert!(kept.exists());
        let conn = super::super::open(&database).unwrap();
        let voices: i64 = conn
            .query_row("SELECT COUNT(*) FROM voices", [], |r| r.get(0))
            .unwrap();
        assert_eq!(voices, 1);
        assert!(find(&database, "nope.sqlite3").is_err());
    }

    /// A copy of the library at `database` (a backup), changed by `change`.
    fn changed_copy(database: &Path, change: &str) -> PathBuf {
        let conn = super::super::open(database).unwrap();
        let copy = make(&conn, database, Some("copy")).unwrap().path;
        Connection::open(&copy)
            .unwrap()
            .execute_batch(change)
            .unwrap();
        copy
    }

    #[test]
    fn a_file_that_is_not_a_backup_of_ours_is_refused_and_the_library_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("library.sqlite3");
        super::super::voices::ensure(&super::super::open(&database).unwrap(), "Alto").unwrap();
        let foreign = |name: &str, sql: &str| {
            let path = dir.path().join(name);
            Connection::open(&path).unwrap().execute_batch(sql).unwrap();
            path
        };
        let damaged = changed_copy(&database, "");
        let mut bytes = fs::read(&damaged).unwrap();
        bytes[4096..8192].fill(0xA5);
        fs::write(&damaged, bytes).unwrap();
        let cases = [
            (
                {
                    fs::write(dir.path().join("empty.sqlite3"), b"").unwrap();
                    dir.path().join("empty.sqlite3")
                },
                "empty.sqlite3 cannot be restored: it is empty (0 bytes); the library was left \
                 as it was",
            ),
            (
                {
                    fs::write(dir.path().join("notes.txt"), b"a page of notes, not SQLite")
                        .unwrap();
                    dir.path().join("notes.txt")
                },
                "it is not an SQLite database",
            ),
            (damaged, "it is damaged"),
            (
                foreign("notes.sqlite3", "CREATE TABLE notes (body TEXT)"),
                "it is an SQLite database without a Timbre Studio library's schema",
            ),
            (
                foreign(
                    "other.sqlite3",
                    "CREATE TABLE voices (id INTEGER); PRAGMA user_version = 3; \
                     PRAGMA application_id = 305419896",
                ),
                "it is another application's database (application id 0x12345678)",
            ),
            (
                changed_copy(&database, "PRAGMA user_version = 999"),
                "was written by a newer Timbre Studio (schema 999;",
            ),
            (
                changed_copy(&database, "DROP TABLE take_tags"),
                "lacks the table `take_tags`",
            ),
        ];
        for (backup, words) in cases {
            let err = format!("{:#}", restore(&database, &backup).unwrap_err());
            assert!(err.contains(words), "{err} should say {words:?}");
            assert!(err.contains(&backup.display().to_string()), "{err}");
        }
        let conn = super::super::open(&database).unwrap();
        let voices: i64 = conn
            .query_row("SELECT COUNT(*) FROM voices", [], |r| r.get(0))
            .unwrap();
        assert_eq!(voices, 1, "the library is untouched");
        drop(conn);
        let aside = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".damaged-"));
        assert!(!aside, "nothing was moved aside");

        // A library made before the application id was set: its schema is enough.
        let older = changed_copy(&database, "PRAGMA application_id = 0");
        restore(&database, &older).unwrap();
        assert!(super::super::open(&database).is_ok());
    }
}
