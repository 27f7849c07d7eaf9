//! Downloading one asset: into `<models dir>/<path>.part`, resumed across attempts, mirrors and
//! restarts, verified by SHA-256, then renamed into place, so the file is there verified or not
//! at all.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::catalog::{Asset, Catalog};
use super::ledger::{Ledger, Record};
use super::state::{self, AssetState};
use crate::disk::{available_space, human_bytes};
use crate::fetch::{self, Attempt, Bounds};

/// Tries at one URL before the next mirror, with backoff between them.
const TRIES_PER_URL: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The result of a `download` job: the verified file now in the models folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Downloaded {
    /// The asset's catalogue name.
    pub asset: String,
    /// Absolute path of the verified file in the models folder.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// The file's SHA-256 as 64 lower-case hex digits; empty when the file was already there and
    /// no hash is known for it.
    pub sha256: String,
    /// None when the file was already there and verified.
    pub url: Option<String>,
    /// Bytes a `.part` file already held when this download started.
    pub resumed_from: u64,
}

/// How far a download is, for progress messages.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Bytes held so far, counting any resumed from the `.part` file.
    pub bytes: u64,
    /// Expected size in bytes, from the catalogue; None when it lists none.
    pub total: Option<u64>,
    /// Average speed of this run in bytes per second, resumed bytes excluded; 0 at the start.
    pub bytes_per_sec: f64,
}

impl Progress {
    /// Share done, 0.0 to 1.0; 0 when the total is unknown.
    pub fn fraction(&self) -> f64 {
        self.total
            .filter(|&t| t > 0)
            .map_or(0.0, |t| self.bytes as f64 / t as f64)
    }

    /// Estimated seconds left at the current speed; None when the total or the speed is unknown.
    pub fn secs_left(&self) -> Option<f64> {
        let total = self.total?;
        (self.bytes_per_sec > 0.0)
            .then(|| total.saturating_sub(self.bytes) as f64 / self.bytes_per_sec)
    }

    /// A progress line for `asset`: bytes of total, speed, and time left when known.
    pub fn message(&self, asset: &str) -> String {
        let size = match self.total {
            Some(total) => format!("{} of {}", human_bytes(self.bytes), human_bytes(total)),
            None => human_bytes(self.bytes),
        };
        let rate = format!("{}/s", human_bytes(self.bytes_per_sec as u64));
        match self.secs_left() {
            Some(left) => format!("{asset}: {size}, {rate}, {left:.0} s left"),
            None => format!("{asset}: {size}, {rate}"),
        }
    }
}

/// Downloads `asset` into `models_dir` unless it is there and verified. `on_progress` is called
/// after each chunk and between tries; an error from it (cancellation) stops the download and
/// keeps the `.part` file for the next run.
pub fn download(
    models_dir: &Path,
    catalog: &Catalog,
    asset: &Asset,
    on_progress: &mut dyn FnMut(&Progress) -> Result<()>,
) -> Result<Downloaded> {
    let target = state::file_path(models_dir, asset);
    // Hashed only when the ledger has no record of the file as it is.
    let verified = || -> Result<bool> {
        Ok(
            state::status(models_dir, asset, &Ledger::read(models_dir)) == AssetState::Verified
                || state::verify(models_dir, asset)? == AssetState::Verified,
        )
    };
    if target.is_file() && verified()? {
        let ledger = Ledger::read(models_dir);
        return Ok(Downloaded {
            asset: asset.name.clone(),
            bytes: std::fs::metadata(&target)?.len(),
            sha256: state::expected_sha256(asset, &ledger).unwrap_or_default(),
            path: target,
            url: None,
            resumed_from: 0,
        });
    }
    let part_path = state::part_path(models_dir, asset);
    let folder = part_path.parent().unwrap_or(models_dir);
    std::fs::create_dir_all(folder)
        .with_context(|| format!("{}: creating {}", asset.name, folder.display()))?;
    let part = open_part(asset, &part_path)?;
    let part_len = part
        .metadata()
        .with_context(|| format!("{}: reading {}", asset.name, part_path.display()))?
        .len();
    let resumed_from = if asset.size_bytes.is_some_and(|size| part_len > size) {
        // Longer than the file itself: garbage, not the start of the file.
        part.set_len(0)
            .with_context(|| format!("{}: emptying {}", asset.name, part_path.display()))?;
        0
    } else {
        part_len
    };
    let mut part_slot = Some(part);
    check_space(asset, folder, resumed_from)?;

    let started = Instant::now();
    let mut meter = |bytes: u64| {
        let secs = started.elapsed().as_secs_f64();
        on_progress(&Progress {
            bytes,
            total: asset.size_bytes,
            bytes_per_sec: if secs > 0.0 {
                bytes.saturating_sub(resumed_from) as f64 / secs
            } else {
                0.0
            },
        })
    };
    let agent = fetch::agent();
    let bounds = Bounds {
        declared_size: asset.size_bytes,
        min_throughput: catalog.min_throughput,
    };
    let mut problems = Vec::new();
    for url in catalog.sources(asset) {
        let part = match &mut part_slot {
            Some(file) => file,
            None => part_slot.insert(open_part(asset, &part_path)?),
        };
        let mut part_deleted = false;
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=TRIES_PER_URL {
            let outcome = if asset.size_bytes == Some(part.metadata()?.len()) {
                // A part that is complete (cut off before its rename) only needs checking.
                Attempt::Complete
            } else {
                fetch::attempt(&agent, &url, &catalog.policy, &bounds, part, &mut meter)
                    .with_context(|| format!("downloading {} from {url}", asset.name))?
            };
            match outcome {
                Attempt::Complete => {
                    match finish(models_dir, asset, &part_path, &url)? {
                        Ok(sha256) => {
                            return Ok(Downloaded {
                                asset: asset.name.clone(),
                                bytes: std::fs::metadata(&target)?.len(),
                                sha256,
                                path: target,
                                url: Some(url),
                                resumed_from,
                            });
                        }
                        Err(problem) => {
                            problems.push(problem);
                            part_deleted = true;
                        }
                    }
                    break;
                }
                Attempt::Refused(problem) => {
                    problems.push(problem);
                    break;
                }
                Attempt::TooLong(problem) => {
                    delete_part(asset, &part_path)?;
                    problems.push(problem);
                    part_deleted = true;
                    break;
                }
                Attempt::Transient(problem) if attempt == TRIES_PER_URL => {
                    problems.push(format!("{problem} (tried {TRIES_PER_URL} times)"));
                }
                Attempt::Transient(_) => {
                    std::thread::sleep(backoff);
                    backoff *= 2;
                    meter(part.metadata()?.len())?;
                }
            }
        }
        if part_deleted {
            // Start afresh at the next URL, without leaving an empty part behind when none is.
            part_slot = None;
        }
    }
    Err(anyhow::anyhow!(
        "could not download {} ({}): {}",
        asset.name,
        asset.path,
        problems.join("; ")
    ))
}

/// The part file, created if need be, locked so that two processes never write it at once.
fn open_part(asset: &Asset, part_path: &Path) -> Result<File> {
    let part = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(part_path)
        .with_context(|| format!("{}: opening {}", asset.name, part_path.display()))?;
    match part.try_lock() {
        Ok(()) => Ok(part),
        Err(TryLockError::WouldBlock) => Err(crate::error::busy(format!(
            "{}: another download is writing {}",
            asset.name,
            part_path.display()
        ))),
        Err(TryLockError::Error(err)) => {
            Err(err).with_context(|| format!("{}: locking {}", asset.name, part_path.display()))
        }
    }
}

fn check_space(asset: &Asset, folder: &Path, have: u64) -> Result<()> {
    let Some(size) = asset.size_bytes else {
        return Ok(());
    };
    let needed = size.saturating_sub(have);
    match available_space(folder) {
        Some(free) if free < needed => Err(crate::error::invalid_input(format!(
            "{}: not enough disk space in {}: {} needed, {} free",
            asset.name,
            folder.display(),
            human_bytes(needed),
            human_bytes(free)
        ))),
        _ => Ok(()),
    }
}

fn delete_part(asset: &Asset, part_path: &Path) -> Result<()> {
    std::fs::remove_file(part_path)
        .with_context(|| format!("{}: deleting {}", asset.name, part_path.display()))
}

/// Verifies a complete part and renames it into place: Ok(Ok(hash)) when it is the right file,
/// Ok(Err(what the URL served)) when it is not (the part is deleted).
fn finish(
    models_dir: &Path,
    asset: &Asset,
    part_path: &Path,
    url: &str,
) -> Result<std::result::Result<String, String>> {
    let got = state::sha256_file(part_path)?;
    let bytes = std::fs::metadata(part_path)?.len();
    let expected = state::expected_sha256(asset, &Ledger::read(models_dir));
    let size_ok = asset.size_bytes.is_none_or(|size| size == bytes);
    if !size_ok || expected.as_ref().is_some_and(|e| *e != got) {
        delete_part(asset, part_path)?;
        return Ok(Err(format!(
            "{url} served {bytes} bytes with SHA-256 {got}, expected {}{}",
            expected.as_deref().unwrap_or("any hash"),
            asset
                .size_bytes
                .map_or(String::new(), |size| format!(" and {size} bytes")),
        )));
    }
    let target = state::file_path(models_dir, asset);
    std::fs::rename(part_path, &target).with_context(|| {
        format!(
            "{}: renaming {} to {}",
            asset.name,
            part_path.display(),
            target.display()
        )
    })?;
    Ledger::update(models_dir, &asset.path, Record::of(&target, &got)?)?;
    Ok(Ok(got))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_larger_than_the_free_space_is_refused_before_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let asset = Asset {
            name: "huge".into(),
            role: String::new(),
            description: String::new(),
            path: "huge.pt".into(),
            urls: vec!["x".into()],
            size_bytes: Some(u64::MAX / 2),
            sha256: None,
            needed_for: Vec::new(),
            essential: false,
        };
        let err = check_space(&asset, dir.path(), 0).unwrap_err().to_string();
        assert!(err.starts_with("huge: not enough disk space"), "{err}");
        assert!(check_space(&asset, dir.path(), u64::MAX / 2).is_ok());
    }

    #[test]
    fn progress_reads_bytes_rate_and_time_left() {
        let progress = Progress {
            bytes: 50_000_000,
            total: Some(150_000_000),
            bytes_per_sec: 10_000_000.0,
        };
        assert_eq!(progress.fraction(), 1.0 / 3.0);
        assert_eq!(
            progress.message("rmvpe"),
            "rmvpe: 50.0 MB of 150.0 MB, 10.0 MB/s, 10 s left"
        );
        let unknown = Progress {
            total: None,
            ..progress
        };
        assert_eq!(unknown.fraction(), 0.0);
        assert_eq!(unknown.message("x"), "x: 50.0 MB, 10.0 MB/s");
    }
}
