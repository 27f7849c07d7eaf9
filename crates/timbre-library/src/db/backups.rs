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

pub const KEEP: usize = 7;
const DAY: Duration = Duration::from_secs(24 * 60 * 60);
const PREFIX: &str = "library-";
const SUFFIX: &str = ".sqlite3";

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BackupFile {
    pub name: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// UTC, as in the name: RFC 3339 with dashes for colons.
    pub made_at: String,
}

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
    {
        let conn = Connection::open_with_flags(backup, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening the backup {}", backup.display()))?;
        super::integrity::check(&conn, backup)?;
    }
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
}
