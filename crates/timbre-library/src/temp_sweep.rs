//! Temporary files that writers outside the content store leave behind when their process is
//! killed mid-write: a training's checkpoint being saved (`trainings/<id>/checkpoints/
//! .G_<step>.pth.<pid>.<n>.tmp`, hundreds of MB for a full-size model; exports alike) and an
//! analysis being cached (`cache/analysis/<key>.<pid>-<n>.tmp`). Each writer renames its file
//! into place when complete, so a `.tmp` there is garbage once no live process can be writing
//! it. (The store's own `tmp/` is emptied by `ContentStore::collect_garbage`.)

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sysinfo::{ProcessesToUpdate, System};

/// The folders under the data dir where such files are written, with how many levels of
/// subfolders below each are searched (`trainings/<id>/checkpoints/`: two).
const TEMP_FOLDERS: &[(&str, usize)] = &[("trainings", 2), ("cache/analysis", 0)];

/// Age past which a temporary file is abandoned even while other processes run: no checkpoint
/// or analysis takes a day to write.
const ABANDONED_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Removes the temporary files of the known folders under `data_dir` that no live process can
/// be writing: when this process is `alone` with the library, those last written before it
/// started; otherwise those a day old. Best effort: a file that cannot be removed stays for the
/// next start, and never keeps the library from opening.
pub(crate) fn sweep(data_dir: &Path, alone: bool) {
    let abandoned = SystemTime::now().checked_sub(ABANDONED_AFTER);
    let before = if alone {
        process_start().or(abandoned)
    } else {
        abandoned
    };
    let Some(before) = before else {
        return;
    };
    for (folder, depth) in TEMP_FOLDERS {
        sweep_folder(&data_dir.join(folder), *depth, before);
    }
}

fn sweep_folder(dir: &Path, depth: usize, before: SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let path = entry.path();
        if meta.is_dir() && depth > 0 {
            sweep_folder(&path, depth - 1, before);
        } else if meta.is_file()
            && entry.file_name().to_string_lossy().ends_with(".tmp")
            && meta.modified().is_ok_and(|at| at < before)
        {
            let _ = fs::remove_file(&path);
        }
    }
}

/// When this process started, to the second (rounded down, so a file written in that second
/// is kept).
fn process_start() -> Option<SystemTime> {
    let pid = sysinfo::get_current_pid().ok()?;
    let mut system = System::new().ok()?;
    system.refresh_processes(ProcessesToUpdate::Some(&[pid]), false);
    let secs = system.process(pid)?.start_time();
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Library;

    /// Writes an empty file at `path` (under `root`) last modified at `at`.
    fn file_at(root: &Path, path: &str, at: SystemTime) -> std::path::PathBuf {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::File::create(&path).unwrap().set_modified(at).unwrap();
        path
    }

    #[test]
    fn temp_files_no_live_process_can_be_writing_are_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let first = Library::open(root).unwrap();
        let now = SystemTime::now();
        let hour_ago = now - Duration::from_secs(3600);
        let two_days_ago = now - 2 * ABANDONED_AFTER;
        let checkpoint_tmp = file_at(
            root,
            "trainings/3/checkpoints/.D_3.pth.4242.0.tmp",
            hour_ago,
        );
        let export_tmp = file_at(root, "trainings/3/.Ada.pth.4242.1.tmp", two_days_ago);
        let analysis_tmp = file_at(root, "cache/analysis/key.4242-0.tmp", hour_ago);
        let checkpoint = file_at(root, "trainings/3/checkpoints/G_2.pth", two_days_ago);
        let elsewhere = file_at(root, "datasets/1/.piece.tmp", two_days_ago);
        let written_now = file_at(
            root,
            "cache/analysis/other.4243-0.tmp",
            now + ABANDONED_AFTER,
        );

        // Another process has the library open: only what is a day old is surely abandoned.
        drop(Library::open(root).unwrap());
        assert!(!export_tmp.exists());
        assert!(checkpoint_tmp.exists() && analysis_tmp.exists());

        // Alone: whatever was written before this process started.
        drop(first);
        drop(Library::open(root).unwrap());
        assert!(!checkpoint_tmp.exists() && !analysis_tmp.exists());
        assert!(written_now.exists(), "may be this process's own");
        assert!(
            checkpoint.exists() && elsewhere.exists(),
            "not temporary files of ours"
        );
    }
}
