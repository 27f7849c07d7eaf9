//! What the app knows of the files in the models folder: the hash of each file it downloaded or
//! verified, with the size and modification time it had then, so listing needs no hashing; and,
//! for assets the catalogue has no hash for, the hash pinned at the first download.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

const FILE_NAME: &str = ".timbre-assets.json";
/// Held (an exclusive file lock) around each read-modify-write of the ledger, so downloads in
/// this process and in others (the app and a `timbre` beside it) never drop each other's records.
const LOCK_NAME: &str = ".timbre-assets.lock";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub sha256: String,
    pub size: u64,
    /// Nanoseconds since the epoch; a file touched since was not checked.
    pub modified_ns: u128,
}

impl Record {
    /// The record of `file` as it is now, with the hash it was found to have.
    pub fn of(file: &Path, sha256: &str) -> Result<Record> {
        let (size, modified_ns) = stamp(file)?;
        Ok(Record {
            sha256: sha256.to_string(),
            size,
            modified_ns,
        })
    }

    /// Whether `file` is still what was recorded (same size and modification time).
    pub fn matches(&self, file: &Path) -> bool {
        stamp(file).is_ok_and(|(size, modified)| size == self.size && modified == self.modified_ns)
    }
}

fn stamp(file: &Path) -> Result<(u64, u128)> {
    let meta = std::fs::metadata(file).with_context(|| format!("reading {}", file.display()))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok((meta.len(), modified))
}

/// The records, by asset path, of one models folder.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    records: BTreeMap<String, Record>,
}

impl Ledger {
    fn file(models_dir: &Path) -> PathBuf {
        models_dir.join(FILE_NAME)
    }

    /// The folder's ledger; empty when there is none yet or it cannot be read (it only saves
    /// hashing, except for pins, which a lost ledger takes again at the next download).
    pub fn read(models_dir: &Path) -> Ledger {
        std::fs::read_to_string(Ledger::file(models_dir))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn get(&self, path: &str) -> Option<&Record> {
        self.records.get(path)
    }

    /// Records `record` for `path`, replacing the ledger file atomically.
    pub fn update(models_dir: &Path, path: &str, record: Record) -> Result<()> {
        let lock_path = models_dir.join(LOCK_NAME);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("locking {}", lock_path.display()))?;
        let mut ledger = Ledger::read(models_dir);
        ledger.records.insert(path.to_string(), record);
        let file = Ledger::file(models_dir);
        let temp = file.with_extension(format!("{}.tmp", uuid::Uuid::new_v4()));
        std::fs::write(&temp, serde_json::to_vec_pretty(&ledger)?)
            .and_then(|()| std::fs::rename(&temp, &file))
            .with_context(|| format!("writing {}", file.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_and_notice_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.pt");
        std::fs::write(&file, b"abc").unwrap();
        Ledger::update(dir.path(), "a.pt", Record::of(&file, "h").unwrap()).unwrap();
        let record = Ledger::read(dir.path()).get("a.pt").cloned().unwrap();
        assert_eq!(record.sha256, "h");
        assert!(record.matches(&file));
        std::fs::write(&file, b"abcd").unwrap();
        assert!(!record.matches(&file));
        assert!(Ledger::read(dir.path()).get("b.pt").is_none());
    }

    #[test]
    fn writers_at_once_keep_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.pt");
        std::fs::write(&file, b"abc").unwrap();
        std::thread::scope(|scope| {
            for i in 0..16 {
                let (dir, file) = (dir.path(), &file);
                scope.spawn(move || {
                    for j in 0..5 {
                        let record = Record::of(file, &format!("{i}-{j}")).unwrap();
                        Ledger::update(dir, &format!("{i}/{j}.pt"), record).unwrap();
                    }
                });
            }
        });
        let ledger = Ledger::read(dir.path());
        assert_eq!(ledger.records.len(), 80);
        assert_eq!(ledger.get("7/3.pt").unwrap().sha256, "7-3");
    }

    #[test]
    fn a_writer_waits_while_another_process_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.pt");
        std::fs::write(&file, b"abc").unwrap();
        // What another process holds: an exclusive lock of the lock file.
        let held = std::fs::File::create(dir.path().join(LOCK_NAME)).unwrap();
        held.lock().unwrap();
        let (sender, done) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                Ledger::update(dir.path(), "a.pt", Record::of(&file, "h").unwrap()).unwrap();
                sender.send(()).unwrap();
            });
            let waited = done.recv_timeout(std::time::Duration::from_millis(300));
            assert!(waited.is_err(), "the update ran while the lock was held");
            held.unlock().unwrap();
            done.recv_timeout(std::time::Duration::from_secs(10))
                .expect("the update runs once the lock is free");
        });
        assert!(Ledger::read(dir.path()).get("a.pt").is_some());
    }
}
