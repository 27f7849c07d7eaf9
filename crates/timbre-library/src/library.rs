//! The library: one data directory holding the database, the content store and the
//! per-process lock files that tell live processes from dead ones.

use crate::db::{self, conversions, models, takes, voices};
use crate::settings::Settings;
use crate::store::ContentStore;
use anyhow::{Context, Result};
use rusqlite::Connection;
use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Notification {
    Job {
        job: Box<db::jobs::Job>,
    },
    LibraryChanged,
    /// A training logged a step's losses.
    TrainingMetric {
        training_id: i64,
        metric: db::training_metrics::TrainingMetric,
    },
    /// A training rendered an epoch's preview.
    TrainingPreview {
        preview: db::training_previews::TrainingPreview,
    },
    /// A training's session started again from a checkpoint: the losses it had logged after
    /// `step` and the previews after `epoch` are gone, as it trains them again.
    TrainingRewound {
        training_id: i64,
        epoch: i64,
        step: i64,
    },
}

pub const DATABASE: &str = "library.sqlite3";

/// Room held on the library's disk (a file of zeros in `run/`) and given up when the disk is
/// full, so that a job can still record its failure and takes can still be deleted.
const RESERVE_BYTES: usize = 1 << 20;

pub struct Library {
    data_dir: PathBuf,
    conn: Mutex<Connection>,
    store: ContentStore,
    process_id: String,
    _process_lock: File,
    subscribers: Mutex<Vec<Sender<Notification>>>,
}

/// Where the library lives: `--data-dir`, else `TIMBRE_DATA_DIR`, else the XDG data dir.
pub fn resolve_data_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("TIMBRE_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    Ok(dirs::data_dir()
        .context("no data directory: set TIMBRE_DATA_DIR")?
        .join("timbre-studio"))
}

impl Library {
    /// Opens (creating) the library in `data_dir`. Opening an up-to-date library writes nothing
    /// to the database, and the store's cleanup only frees space, so a full disk can still be
    /// browsed and cleared.
    pub fn open(data_dir: &Path) -> Result<Library> {
        Library::open_inner(data_dir).map_err(|err| crate::error::explain_disk_full(err, data_dir))
    }

    fn open_inner(data_dir: &Path) -> Result<Library> {
        let run_dir = data_dir.join("run");
        fs::create_dir_all(&run_dir).with_context(|| format!("creating {}", run_dir.display()))?;
        // Held while this process registers itself, so two starting processes never judge
        // each other dead between creating and locking their files.
        let startup = File::create(run_dir.join("startup.lock"))?;
        startup
            .lock()
            .context("waiting for another Timbre process to start")?;
        let process_id = uuid::Uuid::new_v4().to_string();
        let process_lock = File::create(run_dir.join(format!("{process_id}.lock")))?;
        process_lock.lock()?;
        let conn = db::open(&data_dir.join(DATABASE))?;
        let library = Library {
            data_dir: data_dir.to_path_buf(),
            conn: Mutex::new(conn),
            store: ContentStore::open(data_dir.join("store"))?,
            process_id,
            _process_lock: process_lock,
            subscribers: Mutex::new(Vec::new()),
        };
        if library.remove_dead_process_locks()? {
            library.collect_garbage()?;
        }
        library.keep_reserve();
        drop(startup);
        Ok(library)
    }

    /// Puts a backup (a name in `backups/` or a path) in place of the library database, once no
    /// other process has the library open; the replaced file is kept aside, renamed. Returns
    /// where it went.
    pub fn restore_backup(data_dir: &Path, backup: &str) -> Result<Option<PathBuf>> {
        let database = data_dir.join(DATABASE);
        let backup = db::backups::find(&database, backup)?;
        let run_dir = data_dir.join("run");
        fs::create_dir_all(&run_dir).with_context(|| format!("creating {}", run_dir.display()))?;
        let startup = File::create(run_dir.join("startup.lock"))?;
        startup
            .lock()
            .context("waiting for another Timbre process to start")?;
        for entry in fs::read_dir(&run_dir)? {
            let path = entry?.path();
            if path.file_stem().is_some_and(|s| s == "startup")
                || path.extension().is_none_or(|e| e != "lock")
            {
                continue;
            }
            if File::open(&path).is_ok_and(|f| f.try_lock().is_err()) {
                return Err(crate::error::busy(format!(
                    "another Timbre process has the library in {} open: close it, then restore",
                    data_dir.display()
                )));
            }
        }
        db::backups::restore(&database, &backup)
    }

    fn reserve_path(&self) -> PathBuf {
        self.data_dir.join("run").join("reserve")
    }

    /// Sets the reserve aside again when it was given up and there is room for it.
    fn keep_reserve(&self) {
        let path = self.reserve_path();
        if path.exists() {
            return;
        }
        let partial = path.with_extension("part");
        let written = fs::write(&partial, vec![0u8; RESERVE_BYTES])
            .and_then(|()| fs::rename(&partial, &path));
        if written.is_err() {
            let _ = fs::remove_file(&partial);
        }
    }

    /// Runs a database write; when the disk is full, gives up the reserve and tries once more.
    pub fn write<T>(&self, f: impl Fn(&Connection) -> Result<T>) -> Result<T> {
        let first = f(&self.conn());
        match first {
            Err(err)
                if crate::error::is_disk_full(&err)
                    && fs::remove_file(self.reserve_path()).is_ok() =>
            {
                f(&self.conn())
            }
            other => other,
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn store(&self) -> &ContentStore {
        &self.store
    }

    /// Identifies this process as the worker that owns the jobs it runs.
    pub fn process_id(&self) -> &str {
        &self.process_id
    }

    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn settings(&self) -> Result<Settings> {
        Settings::load(&self.conn())
    }

    pub fn subscribe(&self) -> Receiver<Notification> {
        let (tx, rx) = channel();
        self.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    pub fn notify(&self, notification: Notification) {
        self.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|tx| tx.send(notification.clone()).is_ok());
    }

    /// Whether the process that registered `process_id` has ended (its lock is free).
    pub fn is_process_dead(&self, process_id: &str) -> bool {
        let path = self.data_dir.join("run").join(format!("{process_id}.lock"));
        match File::open(&path) {
            Ok(file) => file.try_lock().is_ok(),
            Err(_) => true,
        }
    }

    /// Deletes the lock files of ended processes; true when no other process is alive.
    fn remove_dead_process_locks(&self) -> Result<bool> {
        let mut alone = true;
        for entry in fs::read_dir(self.data_dir.join("run"))? {
            let path = entry?.path();
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if id == "startup"
                || id == self.process_id
                || path.extension().is_none_or(|e| e != "lock")
            {
                continue;
            }
            if self.is_process_dead(id) {
                // Jobs still name this worker until a job system recovers them.
                if db::jobs::running_workers(&self.conn())?
                    .iter()
                    .all(|w| w != id)
                {
                    fs::remove_file(&path)?;
                }
            } else {
                alone = false;
            }
        }
        Ok(alone)
    }

    fn collect_garbage(&self) -> Result<()> {
        if self.replaced_database_kept()? {
            // Its takes' audio is kept until the user removes it: it may be all that is left.
            self.store
                .clean_tmp()
                .context("cleaning the content store")?;
            return Ok(());
        }
        let keep: HashSet<(String, String)> = {
            let conn = self.conn();
            let mut keep: HashSet<_> = takes::all_hashes(&conn)?.into_iter().collect();
            keep.extend(models::all_hashes(&conn)?);
            keep.extend(conversions::all_hashes(&conn)?);
            keep
        };
        self.store
            .collect_garbage(&keep)
            .context("cleaning the content store")?;
        Ok(())
    }

    /// Whether a database replaced by a restore is still kept aside.
    fn replaced_database_kept(&self) -> Result<bool> {
        let aside = format!("{DATABASE}.damaged-");
        for entry in fs::read_dir(&self.data_dir)? {
            if entry?.file_name().to_string_lossy().starts_with(&aside) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub fn take_path(&self, take: &takes::Take) -> PathBuf {
        self.store.object_path(&take.sha256, &take.format)
    }

    pub fn delete_take(&self, id: i64) -> Result<takes::Take> {
        let take = self.write(|conn| takes::delete(conn, id))?;
        self.store.remove(&take.sha256, &take.format)?;
        self.notify(Notification::LibraryChanged);
        Ok(take)
    }

    /// Deletes a voice model and its stored weights and index.
    pub fn delete_model(&self, id: i64) -> Result<models::Model> {
        let model = self.write(|conn| models::delete(conn, id))?;
        self.store
            .remove(&model.weights_sha256, models::WEIGHTS_EXT)?;
        if let Some(index) = &model.index_sha256 {
            self.store.remove(index, models::INDEX_EXT)?;
        }
        self.notify(Notification::LibraryChanged);
        Ok(model)
    }

    pub fn conversion_path(&self, conversion: &conversions::Conversion) -> PathBuf {
        self.store
            .object_path(&conversion.sha256, &conversion.format)
    }

    /// Deletes a conversion, and its audio unless another conversion or a take (a cover's) has
    /// the same output.
    pub fn delete_conversion(&self, id: i64) -> Result<conversions::Conversion> {
        let (conversion, still_used) = self.write(|conn| {
            let conversion = conversions::delete(conn, id)?;
            let still_used = conversions::all_hashes(conn)?
                .contains(&(conversion.sha256.clone(), conversion.format.clone()))
                || takes::find_by_sha(conn, &conversion.sha256)?.is_some();
            Ok((conversion, still_used))
        })?;
        if !still_used {
            self.store.remove(&conversion.sha256, &conversion.format)?;
        }
        self.notify(Notification::LibraryChanged);
        Ok(conversion)
    }

    /// Runs a library edit and tells subscribers the library changed.
    pub fn edit<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let out = f(&self.conn())?;
        self.notify(Notification::LibraryChanged);
        Ok(out)
    }

    pub fn resolve_voice(&self, voice: Option<&str>) -> Result<Option<i64>> {
        voice
            .map(|name| Ok(voices::ensure(&self.conn(), name)?.id))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_process_sees_the_first_alive_and_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let first = Library::open(dir.path()).unwrap();
        let second = Library::open(dir.path()).unwrap();
        assert!(!second.is_process_dead(first.process_id()));
        let first_id = first.process_id().to_string();
        drop(first);
        assert!(second.is_process_dead(&first_id));
    }

    #[test]
    fn orphans_are_collected_when_alone_only() {
        let dir = tempfile::tempdir().unwrap();
        let first = Library::open(dir.path()).unwrap();
        let orphan = first.store().ingest_bytes(b"orphan", "wav").unwrap();
        drop(Library::open(dir.path()).unwrap());
        assert!(
            orphan.path.exists(),
            "a live process may still be committing it"
        );
        drop(first);
        drop(Library::open(dir.path()).unwrap());
        assert!(!orphan.path.exists());
    }

    #[test]
    fn a_reserve_is_kept_and_given_up_for_a_write_on_a_full_disk() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        let reserve = library.reserve_path();
        assert_eq!(fs::metadata(&reserve).unwrap().len(), RESERVE_BYTES as u64);
        let full = || {
            let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL);
            anyhow::Error::new(rusqlite::Error::SqliteFailure(code, None))
        };
        let tries = std::sync::atomic::AtomicU32::new(0);
        let written =
            library.write(
                |_| match tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                    0 => Err(full()),
                    _ => Ok(7),
                },
            );
        assert_eq!(written.unwrap(), 7);
        assert!(!reserve.exists());
        assert!(
            library.write(|_| Err::<(), _>(full())).is_err(),
            "given up once"
        );
        drop(library);
        drop(Library::open(dir.path()).unwrap());
        assert!(reserve.exists(), "set aside again");
    }

    #[test]
    fn data_dir_precedence() {
        assert_eq!(
            resolve_data_dir(Some(Path::new("/x"))).unwrap(),
            PathBuf::from("/x")
        );
    }
}
