//! Content-addressed store: `objects/<first two hex>/<sha256>.<ext>`, one file however many rows
//! name it.
//!
//! Files are written under `tmp/` and renamed into place, so an object is never half written.
//! Between an object's ingest and the commit of the row that names it, the object is *pinned*:
//! a file `pins/<process id>/<sha256>.<ext>` that lives as long as the [`StoredObject`] the
//! ingest returned. Deleting rows releases their objects (`Library::release_objects`), which
//! removes an object only when no row names it and no live process has it pinned, with the
//! store's lock file held: ingests take it to pin and check for the object, so an ingest and a
//! release never interleave and a release never takes a file that an ingest has just found.
//! An object only a kept database backup still names goes to `trash/`, from where it comes back
//! when that backup is restored, and is removed with the last backup that names it.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The library's content-addressed store of audio and model files, under `<data dir>/store/`.
pub struct ContentStore {
    root: PathBuf,
    process_id: String,
}

/// An object as the database names it: its content's SHA-256 and its file extension.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ObjectKey {
    /// SHA-256 of the content, 64 lowercase hex digits.
    pub sha256: String,
    /// File extension without the dot (`wav`, `pth`, `index`, ...).
    pub ext: String,
}

impl ObjectKey {
    /// The key of the object with content hash `sha256` and extension `ext`.
    pub fn new(sha256: impl Into<String>, ext: impl Into<String>) -> Self {
        ObjectKey {
            sha256: sha256.into(),
            ext: ext.into(),
        }
    }

    fn file_name(&self) -> String {
        format!("{}.{}", self.sha256, self.ext)
    }

    fn from_file_name(path: &Path) -> Option<ObjectKey> {
        let (stem, ext) = (path.file_stem()?, path.extension()?);
        Some(ObjectKey::new(
            stem.to_string_lossy(),
            ext.to_string_lossy(),
        ))
    }
}

/// A stored object, pinned (kept from release) until the last clone of it is dropped: hold it
/// until the row that names the object is committed.
#[derive(Debug, Clone)]
pub struct StoredObject {
    /// SHA-256 of the content, 64 lowercase hex digits.
    pub sha256: String,
    /// File extension without the dot.
    pub ext: String,
    /// Where the object lies, `objects/<first two hex>/<sha256>.<ext>`.
    pub path: PathBuf,
    /// Size of the content in bytes.
    pub size: u64,
    _pin: Arc<Pin>,
}

impl StoredObject {
    /// The object's key, as a row names it.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.sha256.clone(), self.ext.clone())
    }
}

/// This process's claim on an object: a file under `pins/<process id>/`, removed when dropped.
#[derive(Debug)]
struct Pin {
    path: PathBuf,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// What a garbage collection ([`ContentStore::collect_garbage`]) did, counted.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GarbageReport {
    /// Objects no row names, removed.
    pub orphan_objects: usize,
    /// Objects no row names but a kept backup does, moved to the trash.
    pub trashed_objects: usize,
    /// Objects a row names that were found in the trash and put back.
    pub restored_objects: usize,
    /// Objects in the trash that no kept backup names any more, removed.
    pub emptied_from_trash: usize,
    /// Temporary files (partial writes, outputs of killed jobs) removed; 0 unless run alone.
    pub partial_files: usize,
    /// Pins left by processes that ended.
    pub stale_pins: usize,
    /// Objects a row names that are neither in place nor in the trash: lost before this
    /// collection (by a version without reference counting, or by hand).
    pub missing: Vec<ObjectKey>,
}

/// What became of an object [`ContentStore::release`] was asked to let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// A row still names it, or a live process has it pinned: kept.
    Kept,
    /// Only a kept backup names it: moved to the trash.
    Trashed,
    /// Nothing names it: removed.
    Removed,
}

/// Who still needs an object, asked with the store's lock held.
pub trait ObjectUsers {
    /// Whether a row of the live database names the object.
    fn in_library(&self, key: &ObjectKey) -> Result<bool>;
    /// Whether a kept backup of the database names the object.
    fn in_backups(&self, key: &ObjectKey) -> Result<bool>;
    /// Whether the process that registered `process_id` is still running.
    fn process_alive(&self, process_id: &str) -> bool;
}

impl ContentStore {
    /// The store under `root`, for the process registered as `process_id` (its pins).
    pub fn open(root: PathBuf, process_id: &str) -> Result<Self> {
        for dir in ["objects", "tmp", "trash", "pins"] {
            let dir = root.join(dir);
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(ContentStore {
            root,
            process_id: process_id.to_string(),
        })
    }

    /// Where every temporary file of the library's work goes: emptied at a start when no other
    /// process is alive.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Where the object `<sha256>.<ext>` lies (or would lie) in the store.
    pub fn object_path(&self, sha256: &str, ext: &str) -> PathBuf {
        // A row's hash is ours, 64 hex digits; a damaged one still gets a path, not a panic.
        let shard = sha256.get(..2).unwrap_or("__");
        self.root
            .join("objects")
            .join(shard)
            .join(format!("{sha256}.{ext}"))
    }

    fn key_path(&self, key: &ObjectKey) -> PathBuf {
        self.object_path(&key.sha256, &key.ext)
    }

    fn trash_path(&self, key: &ObjectKey) -> PathBuf {
        self.root.join("trash").join(key.file_name())
    }

    /// Copies the file at `src` into the store as an object with extension `ext`, pinned.
    pub fn ingest_file(&self, src: &Path, ext: &str) -> Result<StoredObject> {
        let file = File::open(src).with_context(|| format!("{}: cannot open", src.display()))?;
        self.ingest(file, ext)
            .with_context(|| format!("{}: cannot copy into the library", src.display()))
    }

    /// Stores `bytes` as an object with extension `ext`, pinned.
    pub fn ingest_bytes(&self, bytes: &[u8], ext: &str) -> Result<StoredObject> {
        self.ingest(bytes, ext)
            .context("cannot save audio into the library")
    }

    fn ingest(&self, mut reader: impl Read, ext: &str) -> Result<StoredObject> {
        let tmp_path = self
            .tmp_dir()
            .join(format!("{}.part", uuid::Uuid::new_v4()));
        let result = (|| {
            let mut tmp = File::create(&tmp_path)?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 16];
            let mut size = 0u64;
            loop {
                let n = reader.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                tmp.write_all(&buf[..n])?;
                size += n as u64;
            }
            tmp.sync_all()?;
            let key = ObjectKey::new(hex(&hasher.finalize()), ext);
            let path = self.key_path(&key);
            let dir = path.parent().expect("object paths have a parent");
            fs::create_dir_all(dir)?;
            let _lock = self.lock()?;
            let pin = self.pin(&key)?;
            if path.exists() {
                fs::remove_file(&tmp_path)?;
            } else {
                fs::rename(&tmp_path, &path)?;
                File::open(dir)?.sync_all()?;
            }
            Ok::<_, std::io::Error>(StoredObject {
                sha256: key.sha256,
                ext: key.ext,
                path,
                size,
                _pin: Arc::new(pin),
            })
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp_path);
        }
        Ok(result?)
    }

    /// The store's lock, held while pinning or releasing objects (by every process).
    fn lock(&self) -> std::io::Result<File> {
        let file = File::create(self.root.join("objects.lock"))?;
        file.lock()?;
        Ok(file)
    }

    fn pin(&self, key: &ObjectKey) -> std::io::Result<Pin> {
        let dir = self.root.join("pins").join(&self.process_id);
        fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}.{}", key.file_name(), uuid::Uuid::new_v4()));
        File::create(&path)?;
        Ok(Pin { path })
    }

    /// Whether a process `users` says is alive has `key` pinned.
    fn pinned(&self, key: &ObjectKey, users: &dyn ObjectUsers) -> Result<bool> {
        let prefix = format!("{}.", key.file_name());
        for process in fs::read_dir(self.root.join("pins"))? {
            let process = process?;
            let id = process.file_name().to_string_lossy().into_owned();
            if !users.process_alive(&id) {
                continue;
            }
            for pin in fs::read_dir(process.path())? {
                if pin?.file_name().to_string_lossy().starts_with(&prefix) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Lets go of objects whose rows were deleted: each is removed unless a row still names it
    /// or a live process has it pinned, or moved to the trash when only a kept backup names it.
    pub fn release(&self, keys: &[ObjectKey], users: &dyn ObjectUsers) -> Result<Vec<Released>> {
        let _lock = self.lock().context("locking the content store")?;
        let mut outcomes = Vec::with_capacity(keys.len());
        for key in keys {
            // The pins first: an ingest pins under this lock, then commits its row and unpins
            // without it, so a row looked up first could be committed, and its pin gone, before
            // the pins are read. Read in this order, an unpinned object's row is already there.
            let outcome = if self.pinned(key, users)? || users.in_library(key)? {
                Released::Kept
            } else if users.in_backups(key)? {
                self.move_file(&self.key_path(key), &self.trash_path(key))?;
                Released::Trashed
            } else {
                remove_if_there(&self.key_path(key))?;
                Released::Removed
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    fn move_file(&self, from: &Path, to: &Path) -> Result<()> {
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        match fs::rename(from, to) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => {
                other.with_context(|| format!("moving {} to {}", from.display(), to.display()))
            }
        }
    }

    /// Removes the temporary files (partial writes, outputs of killed jobs); how many.
    /// Only safe while no other process is working.
    pub fn clean_tmp(&self) -> Result<usize> {
        let mut removed = 0;
        for entry in fs::read_dir(self.tmp_dir())? {
            let path = entry?.path();
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Squares the store with the rows: objects the library names come back from the trash;
    /// objects it does not name are removed, or trashed while a kept backup names them; the
    /// trash keeps only what a kept backup names; ended processes' pins go, and with `alone`
    /// (no other process alive) the temporary files too. Objects pinned by a live process stay.
    pub fn collect_garbage(
        &self,
        named: &HashSet<ObjectKey>,
        users: &dyn ObjectUsers,
        alone: bool,
    ) -> Result<GarbageReport> {
        let _lock = self.lock().context("locking the content store")?;
        let mut report = GarbageReport {
            partial_files: if alone { self.clean_tmp()? } else { 0 },
            ..GarbageReport::default()
        };
        for process in fs::read_dir(self.root.join("pins"))? {
            let process = process?;
            if process.file_name().to_string_lossy() != self.process_id
                && !users.process_alive(&process.file_name().to_string_lossy())
            {
                report.stale_pins += fs::read_dir(process.path())?.count();
                fs::remove_dir_all(process.path())
                    .with_context(|| format!("removing {}", process.path().display()))?;
            }
        }
        for entry in fs::read_dir(self.root.join("trash"))? {
            let path = entry?.path();
            let Some(key) = ObjectKey::from_file_name(&path) else {
                continue;
            };
            if named.contains(&key) {
                self.move_file(&path, &self.key_path(&key))?;
                report.restored_objects += 1;
            } else if !users.in_backups(&key)? {
                remove_if_there(&path)?;
                report.emptied_from_trash += 1;
            }
        }
        for shard in fs::read_dir(self.root.join("objects"))? {
            for entry in fs::read_dir(shard?.path())? {
                let path = entry?.path();
                let Some(key) = ObjectKey::from_file_name(&path) else {
                    continue;
                };
                // `named` was read before the lock: a row committed since, whose ingest has
                // unpinned already, is found by asking again after the pins (see `release`).
                if named.contains(&key) || self.pinned(&key, users)? || users.in_library(&key)? {
                    continue;
                }
                if users.in_backups(&key)? {
                    self.move_file(&path, &self.trash_path(&key))?;
                    report.trashed_objects += 1;
                } else {
                    remove_if_there(&path)
                        .with_context(|| format!("removing orphan {}", path.display()))?;
                    report.orphan_objects += 1;
                }
            }
        }
        Ok(report)
    }

    /// Objects a row names that are neither in place nor in the trash: lost.
    pub fn missing(&self, named: &HashSet<ObjectKey>) -> Vec<ObjectKey> {
        let mut missing: Vec<ObjectKey> = named
            .iter()
            .filter(|key| !self.key_path(key).exists())
            .cloned()
            .collect();
        missing.sort();
        missing
    }
}

fn remove_if_there(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Rows, backups and live processes as a test says they are.
    #[derive(Default)]
    struct Users {
        rows: Mutex<HashSet<ObjectKey>>,
        backups: HashSet<ObjectKey>,
        dead: HashSet<String>,
    }

    impl ObjectUsers for Users {
        fn in_library(&self, key: &ObjectKey) -> Result<bool> {
            Ok(self.rows.lock().unwrap().contains(key))
        }
        fn in_backups(&self, key: &ObjectKey) -> Result<bool> {
            Ok(self.backups.contains(key))
        }
        fn process_alive(&self, process_id: &str) -> bool {
            !self.dead.contains(process_id)
        }
    }

    fn key_of(object: &StoredObject, ext: &str) -> ObjectKey {
        ObjectKey::new(object.sha256.clone(), ext)
    }

    fn store_in(dir: &Path, process: &str) -> ContentStore {
        ContentStore::open(dir.join("store"), process).unwrap()
    }

    #[test]
    fn same_content_is_stored_once_under_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path(), "p1");
        let a = store.ingest_bytes(b"hello", "wav").unwrap();
        let b = store.ingest_bytes(b"hello", "wav").unwrap();
        assert_eq!((&a.sha256, &a.path), (&b.sha256, &b.path));
        assert_eq!(a.sha256, sha256_hex(b"hello"));
        assert_eq!(fs::read(&a.path).unwrap(), b"hello");
        assert_eq!(
            fs::read_dir(dir.path().join("store/tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_release_keeps_what_a_row_or_a_pin_still_needs() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path(), "p1");
        let named = store.ingest_bytes(b"named", "wav").unwrap();
        let pinned = store.ingest_bytes(b"pinned", "wav").unwrap();
        let free = store.ingest_bytes(b"free", "wav").unwrap();
        let users = Users::default();
        users.rows.lock().unwrap().insert(key_of(&named, "wav"));
        let (named_path, free_path) = (named.path.clone(), free.path.clone());
        drop((named, free));
        let keys = [
            ObjectKey::new(sha256_hex(b"named"), "wav"),
            key_of(&pinned, "wav"),
            ObjectKey::new(sha256_hex(b"free"), "wav"),
        ];
        let outcomes = store.release(&keys, &users).unwrap();
        assert_eq!(
            outcomes,
            [Released::Kept, Released::Kept, Released::Removed]
        );
        assert!(named_path.exists() && pinned.path.exists() && !free_path.exists());
        let pinned_path = pinned.path.clone();
        drop(pinned);
        assert_eq!(
            store.release(&keys[1..2], &users).unwrap(),
            [Released::Removed],
            "unpinned once the ingest's object is dropped"
        );
        assert!(!pinned_path.exists());
    }

    #[test]
    fn a_dead_process_pin_keeps_nothing_and_a_backup_keeps_the_object_in_the_trash() {
        let dir = tempfile::tempdir().unwrap();
        let crashed = store_in(dir.path(), "crashed");
        let left = crashed.ingest_bytes(b"left behind", "wav").unwrap();
        let key = key_of(&left, "wav");
        // The process died holding its pin: the file stays.
        std::mem::forget(left);
        let store = store_in(dir.path(), "p2");
        let mut users = Users::default();
        users.dead.insert("crashed".into());
        users.backups.insert(key.clone());
        assert_eq!(
            store.release(std::slice::from_ref(&key), &users).unwrap(),
            [Released::Trashed]
        );
        assert!(!store.key_path(&key).exists() && store.trash_path(&key).exists());
        // Restoring a backup that names it brings it back at the next collection.
        let named = HashSet::from([key.clone()]);
        let report = store.collect_garbage(&named, &users, true).unwrap();
        assert_eq!((report.restored_objects, report.stale_pins), (1, 1));
        assert!(store.key_path(&key).exists());
        assert!(store.missing(&named).is_empty());
    }

    #[test]
    fn garbage_collection_squares_objects_trash_and_pins_with_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path(), "p1");
        let kept = key_of(&store.ingest_bytes(b"kept", "wav").unwrap(), "wav");
        let orphan = key_of(&store.ingest_bytes(b"orphan", "flac").unwrap(), "flac");
        let backed_up = key_of(&store.ingest_bytes(b"in a backup", "wav").unwrap(), "wav");
        let forgotten = ObjectKey::new(sha256_hex(b"old"), "wav");
        fs::write(store.trash_path(&forgotten), b"old").unwrap();
        fs::write(dir.path().join("store/tmp/x.part"), b"half").unwrap();
        let users = Users {
            backups: HashSet::from([backed_up.clone()]),
            ..Users::default()
        };
        let report = store
            .collect_garbage(&HashSet::from([kept.clone()]), &users, true)
            .unwrap();
        assert_eq!(
            report,
            GarbageReport {
                orphan_objects: 1,
                trashed_objects: 1,
                emptied_from_trash: 1,
                partial_files: 1,
                ..GarbageReport::default()
            }
        );
        assert!(store.key_path(&kept).exists());
        assert!(!store.key_path(&orphan).exists());
        assert!(store.trash_path(&backed_up).exists());
        assert!(!store.trash_path(&forgotten).exists());
    }

    #[test]
    fn an_ingest_racing_a_release_never_loses_a_named_object() {
        // One thread keeps importing the same bytes and naming them in a row, the other keeps
        // deleting that row and releasing the object: whenever the row names the object, the
        // file must be there.
        let dir = tempfile::tempdir().unwrap();
        let importer = store_in(dir.path(), "importer");
        let deleter = store_in(dir.path(), "deleter");
        let users = Users::default();
        let key = ObjectKey::new(sha256_hex(b"contended"), "wav");
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..300 {
                    let stored = importer.ingest_bytes(b"contended", "wav").unwrap();
                    users.rows.lock().unwrap().insert(key.clone());
                    drop(stored);
                    let rows = users.rows.lock().unwrap();
                    if rows.contains(&key) {
                        assert!(
                            importer.key_path(&key).exists(),
                            "a named object was removed"
                        );
                    }
                }
            });
            scope.spawn(|| {
                for _ in 0..300 {
                    users.rows.lock().unwrap().remove(&key);
                    deleter.release(std::slice::from_ref(&key), &users).unwrap();
                }
            });
        });
    }

    #[test]
    fn a_missing_source_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path(), "p1");
        let err = store
            .ingest_file(Path::new("/nope/missing.wav"), "wav")
            .unwrap_err();
        assert!(format!("{err:#}").contains("/nope/missing.wav"));
    }
}
