//! The library: one data directory holding the database, the content store and the
//! per-process lock files that tell live processes from dead ones.

use crate::db::{self, conversions, models, objects, takes, voices};
use crate::settings::Settings;
use crate::store::{ContentStore, GarbageReport, ObjectKey, ObjectUsers, Released, StoredObject};
use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};
use std::cell::OnceCell;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, MutexGuard};

/// What the library tells its subscribers as things change; serialised tagged by `type`.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Notification {
    /// A job was queued or changed: its progress, state or result.
    Job {
        /// The job as it is now.
        job: Box<db::jobs::Job>,
    },
    /// Rows changed (takes, voices, models, conversions...): lists should be read again.
    LibraryChanged,
    /// A training logged a step's losses.
    TrainingMetric {
        /// Row id of the training in `trainings`.
        training_id: i64,
        /// The step's losses as recorded.
        metric: db::training_metrics::TrainingMetric,
    },
    /// A training rendered an epoch's preview.
    TrainingPreview {
        /// The preview as recorded.
        preview: db::training_previews::TrainingPreview,
    },
    /// The checkpoint judge scored a checkpoint of a training.
    CheckpointScored {
        /// Row id of the training in `trainings`.
        training_id: i64,
        /// The checkpoint's scores as recorded.
        score: db::checkpoint_scores::CheckpointScore,
    },
    /// A training's session started again from a checkpoint: the losses it had logged after
    /// `step` and the previews after `epoch` are gone, as it trains them again.
    TrainingRewound {
        /// Row id of the training in `trainings`.
        training_id: i64,
        /// The epoch it restarts after: previews of later epochs are gone.
        epoch: i64,
        /// The step it restarts after: losses of later steps are gone.
        step: i64,
    },
}

/// File name of the library database in the data directory.
pub const DATABASE: &str = "library.sqlite3";

/// Room held on the library's disk (a file of zeros in `run/`) and given up when the disk is
/// full, so that a job can still record its failure and takes can still be deleted.
const RESERVE_BYTES: usize = 1 << 20;

/// An open library: its data directory, database, content store and this process's registration.
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
        // A read-only or foreign library folder fails here first: say which folder.
        let create_lock = |name: &str| {
            File::create(run_dir.join(name)).with_context(|| {
                format!(
                    "creating run/{name} in the library folder {}",
                    data_dir.display()
                )
            })
        };
        // Held while this process registers itself, so two starting processes never judge
        // each other dead between creating and locking their files.
        let startup = create_lock("startup.lock")?;
        startup
            .lock()
            .context("waiting for another Timbre process to start")?;
        let process_id = uuid::Uuid::new_v4().to_string();
        let process_lock = create_lock(&format!("{process_id}.lock"))?;
        process_lock.lock()?;
        let conn = db::open(&data_dir.join(DATABASE))?;
        let library = Library {
            data_dir: data_dir.to_path_buf(),
            conn: Mutex::new(conn),
            store: ContentStore::open(data_dir.join("store"), &process_id)?,
            process_id,
            _process_lock: process_lock,
            subscribers: Mutex::new(Vec::new()),
        };
        let alone = library.remove_dead_process_locks()?;
        if alone {
            library.collect_garbage(true)?;
        }
        crate::temp_sweep::sweep(data_dir, alone);
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

    /// The data directory the library lives in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The content store holding the library's audio and model files.
    pub fn store(&self) -> &ContentStore {
        &self.store
    }

    /// Identifies this process as the worker that owns the jobs it runs.
    pub fn process_id(&self) -> &str {
        &self.process_id
    }

    /// The database connection, locked for the caller.
    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The settings as stored, defaults for what is not.
    pub fn settings(&self) -> Result<Settings> {
        Settings::load(&self.conn())
    }

    /// A receiver of every notification from now on.
    pub fn subscribe(&self) -> Receiver<Notification> {
        let (tx, rx) = channel();
        self.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    /// Sends `notification` to every subscriber, forgetting those that are gone.
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

    /// Whether no other process has this library open now.
    pub fn is_alone(&self) -> Result<bool> {
        for entry in fs::read_dir(self.data_dir.join("run"))? {
            let path = entry?.path();
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let other_lock = id != "startup"
                && id != self.process_id
                && path.extension().is_some_and(|e| e == "lock");
            if other_lock && !self.is_process_dead(id) {
                return Ok(false);
            }
        }
        Ok(true)
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

    /// Squares the content store with the rows (`ContentStore::collect_garbage`): what no row
    /// names is removed, or kept in the trash while a backup names it; what a row names comes
    /// back from the trash. `alone`: no other process is alive, so the temporary files are
    /// nobody's and go too. `timbre library gc` runs this; every start does when alone.
    pub fn collect_garbage(&self, alone: bool) -> Result<GarbageReport> {
        let named = objects::named(&self.conn())?;
        let users = self.object_users();
        let mut report = self
            .store
            .collect_garbage(&named, &users, alone)
            .context("cleaning the content store")?;
        report.missing = self.store.missing(&named);
        Ok(report)
    }

    /// Who still needs the store's objects: this database's rows, the backups kept of it (and a
    /// database a restore set aside), the processes alive.
    fn object_users(&self) -> LibraryObjectUsers<'_> {
        LibraryObjectUsers {
            library: self,
            backups: OnceCell::new(),
        }
    }

    /// Lets go of an object this process stored and will not name after all (its job failed):
    /// unpinned, then released as a deleted row's would be.
    pub fn discard(&self, stored: StoredObject) -> Result<Released> {
        let key = stored.key();
        drop(stored);
        Ok(self.release_objects(&[key])?[0])
    }

    /// Lets go of the objects of deleted rows (after the deletion is committed): each is
    /// removed unless another row names it or an ingest still holds it, and trashed while a
    /// kept backup names it.
    pub fn release_objects(&self, keys: &[ObjectKey]) -> Result<Vec<Released>> {
        self.store.release(keys, &self.object_users())
    }

    /// Where the take's audio lies in the content store.
    pub fn take_path(&self, take: &takes::Take) -> PathBuf {
        self.store.object_path(&take.sha256, &take.format)
    }

    /// Deletes a take, and its audio unless something else (a conversion with the same bytes)
    /// still names it.
    pub fn delete_take(&self, id: i64) -> Result<takes::Take> {
        let take = self.write(|conn| takes::delete(conn, id))?;
        self.notify(Notification::LibraryChanged);
        self.release_objects(&[ObjectKey::new(take.sha256.clone(), take.format.clone())])?;
        Ok(take)
    }

    /// Deletes a voice model, and its stored weights and index unless another model names them.
    pub fn delete_model(&self, id: i64) -> Result<models::Model> {
        let model = self.write(|conn| models::delete(conn, id))?;
        self.notify(Notification::LibraryChanged);
        let mut keys = vec![ObjectKey::new(
            model.weights_sha256.clone(),
            models::WEIGHTS_EXT,
        )];
        keys.extend(
            model
                .index_sha256
                .iter()
                .map(|index| ObjectKey::new(index.clone(), models::INDEX_EXT)),
        );
        self.release_objects(&keys)?;
        Ok(model)
    }

    /// Where the conversion's audio lies in the content store.
    pub fn conversion_path(&self, conversion: &conversions::Conversion) -> PathBuf {
        self.store
            .object_path(&conversion.sha256, &conversion.format)
    }

    /// Deletes a conversion, and its audio unless another conversion or a take (a cover's) has
    /// the same output.
    pub fn delete_conversion(&self, id: i64) -> Result<conversions::Conversion> {
        let conversion = self.write(|conn| conversions::delete(conn, id))?;
        self.notify(Notification::LibraryChanged);
        self.release_objects(&[ObjectKey::new(
            conversion.sha256.clone(),
            conversion.format.clone(),
        )])?;
        Ok(conversion)
    }

    /// Runs a library edit and tells subscribers the library changed.
    pub fn edit<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let out = f(&self.conn())?;
        self.notify(Notification::LibraryChanged);
        Ok(out)
    }

    /// The row id of the voice named `voice`, created when new; None when no voice is given.
    pub fn resolve_voice(&self, voice: Option<&str>) -> Result<Option<i64>> {
        voice
            .map(|name| Ok(voices::ensure(&self.conn(), name)?.id))
            .transpose()
    }
}

/// [`ObjectUsers`] for a library: its rows, its kept backups (opened read-only when first
/// asked), its processes' locks.
struct LibraryObjectUsers<'a> {
    library: &'a Library,
    backups: OnceCell<Vec<Connection>>,
}

impl LibraryObjectUsers<'_> {
    /// The kept backups and any database a restore set aside, each a read-only connection; one
    /// that cannot be opened names nothing (a damaged file keeps no object alive).
    fn backups(&self) -> Result<&[Connection]> {
        if self.backups.get().is_none() {
            let database = self.library.data_dir.join(DATABASE);
            let mut paths: Vec<PathBuf> = db::backups::list(&database)?
                .into_iter()
                .map(|b| b.path)
                .collect();
            let aside = format!("{DATABASE}.damaged-");
            for entry in fs::read_dir(&self.library.data_dir)? {
                let entry = entry?;
                if entry.file_name().to_string_lossy().starts_with(&aside) {
                    paths.push(entry.path());
                }
            }
            let connections = paths
                .iter()
                .filter_map(|path| {
                    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()
                })
                .collect();
            let _ = self.backups.set(connections);
        }
        Ok(self.backups.get().expect("set above"))
    }
}

impl ObjectUsers for LibraryObjectUsers<'_> {
    fn in_library(&self, key: &ObjectKey) -> Result<bool> {
        objects::names(&self.library.conn(), key)
    }

    fn in_backups(&self, key: &ObjectKey) -> Result<bool> {
        for backup in self.backups()? {
            // A backup that cannot be read names nothing.
            if objects::names(backup, key).unwrap_or(false) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn process_alive(&self, process_id: &str) -> bool {
        !self.library.is_process_dead(process_id)
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
