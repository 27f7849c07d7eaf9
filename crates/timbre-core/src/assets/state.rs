//! What state each catalogue asset is in within a models folder: cheaply from sizes and the
//! ledger (`status`), or by hashing the file (`verify`).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::catalog::Asset;
use super::ledger::{Ledger, Record};

/// Where a catalogue asset stands in the models folder, serialised with a `state` tag.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AssetState {
    /// Neither the file nor a non-empty `.part` file is there.
    Missing,
    /// A download stopped part way: `bytes` of it are in the `.part` file.
    Partial {
        /// Bytes in the `.part` file so far.
        bytes: u64,
    },
    /// There, of the right size, not hashed since it last changed.
    Present,
    /// Hashed and found to be the file the catalogue (or the pin) names.
    Verified,
    /// There but not the right file: `problem` says how.
    Corrupt {
        /// What is wrong, e.g. truncated, wrong size, or the SHA-256 that was found instead.
        problem: String,
    },
}

impl AssetState {
    /// The state's tag as a lower-case word (`missing`, `partial`, …), for listings.
    pub fn label(&self) -> &'static str {
        match self {
            AssetState::Missing => "missing",
            AssetState::Partial { .. } => "partial",
            AssetState::Present => "present",
            AssetState::Verified => "verified",
            AssetState::Corrupt { .. } => "corrupt",
        }
    }
}

/// Where `asset` lives once downloaded: its catalogue path under `models_dir`.
pub fn file_path(models_dir: &Path, asset: &Asset) -> PathBuf {
    models_dir.join(&asset.path)
}

/// Where a download of `asset` collects its bytes until they are verified.
pub fn part_path(models_dir: &Path, asset: &Asset) -> PathBuf {
    models_dir.join(format!("{}.part", asset.path))
}

/// The hash `asset` must have: the catalogue's, else the one pinned at its first download.
pub fn expected_sha256(asset: &Asset, ledger: &Ledger) -> Option<String> {
    asset
        .sha256
        .clone()
        .or_else(|| ledger.get(&asset.path).map(|r| r.sha256.clone()))
}

/// The state without hashing: a recorded hash counts while the file is unchanged since.
pub fn status(models_dir: &Path, asset: &Asset, ledger: &Ledger) -> AssetState {
    let file = file_path(models_dir, asset);
    match std::fs::metadata(&file) {
        Ok(meta) => {
            if let Some(problem) = size_problem(asset, meta.len()) {
                return AssetState::Corrupt { problem };
            }
            let recorded = ledger.get(&asset.path).filter(|r| r.matches(&file));
            match recorded {
                Some(r) if Some(&r.sha256) == expected_sha256(asset, ledger).as_ref() => {
                    AssetState::Verified
                }
                Some(r) => AssetState::Corrupt {
                    problem: format!(
                        "its SHA-256 is {}, expected {}",
                        r.sha256,
                        asset.sha256.as_deref().unwrap_or("the pinned one")
                    ),
                },
                None => AssetState::Present,
            }
        }
        // An empty `.part` (a download refused before its first byte, a 404) holds nothing to
        // resume: the asset is missing, and its failed job says why.
        Err(_) => match std::fs::metadata(part_path(models_dir, asset)) {
            Ok(meta) if meta.len() > 0 => AssetState::Partial { bytes: meta.len() },
            _ => AssetState::Missing,
        },
    }
}

/// Hashes the file (if there) and records what it found. A file of an asset the catalogue has
/// no hash for, with none pinned yet, is pinned as it is.
pub fn verify(models_dir: &Path, asset: &Asset) -> Result<AssetState> {
    let ledger = Ledger::read(models_dir);
    let file = file_path(models_dir, asset);
    if !file.is_file() {
        return Ok(status(models_dir, asset, &ledger));
    }
    let got = sha256_file(&file)?;
    let state = match expected_sha256(asset, &ledger) {
        Some(expected) if expected != got => {
            let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            let problem = size_problem(asset, size).unwrap_or_else(|| {
                format!("its SHA-256 is {got}, expected {expected} ({size} bytes)")
            });
            AssetState::Corrupt { problem }
        }
        _ => AssetState::Verified,
    };
    // A corrupt file is recorded too, so listing shows it corrupt without hashing again; the
    // pin stays where the catalogue has no hash.
    if state == AssetState::Verified || asset.sha256.is_some() {
        Ledger::update(models_dir, &asset.path, Record::of(&file, &got)?)?;
    }
    Ok(state)
}

fn size_problem(asset: &Asset, size: u64) -> Option<String> {
    let expected = asset.size_bytes?;
    match size.cmp(&expected) {
        std::cmp::Ordering::Less => Some(format!("truncated: {size} of {expected} bytes")),
        std::cmp::Ordering::Greater => Some(format!("{size} bytes, expected {expected}")),
        std::cmp::Ordering::Equal => None,
    }
}

/// The SHA-256 of the file at `path`, as 64 lower-case hex digits.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(sha256: Option<String>, size: Option<u64>) -> Asset {
        Asset {
            name: "thing".into(),
            role: String::new(),
            description: String::new(),
            path: "sub/thing.pt".into(),
            urls: vec!["x".into()],
            size_bytes: size,
            sha256,
            needed_for: Vec::new(),
            essential: false,
        }
    }

    #[test]
    fn states_follow_the_files_and_their_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path();
        let good = crate::store::sha256_hex(b"hello");
        let a = asset(Some(good.clone()), Some(5));
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Missing
        );
        std::fs::create_dir(models.join("sub")).unwrap();
        std::fs::write(part_path(models, &a), b"").unwrap();
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Missing
        );
        std::fs::write(part_path(models, &a), b"he").unwrap();
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Partial { bytes: 2 }
        );
        std::fs::write(file_path(models, &a), b"hel").unwrap();
        assert!(matches!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Corrupt { problem } if problem.contains("truncated: 3 of 5")
        ));
        std::fs::write(file_path(models, &a), b"hello").unwrap();
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Present
        );
        assert_eq!(verify(models, &a).unwrap(), AssetState::Verified);
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Verified
        );
        std::fs::write(file_path(models, &a), b"jello").unwrap();
        assert_eq!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Present
        );
        assert!(matches!(
            verify(models, &a).unwrap(),
            AssetState::Corrupt { problem } if problem.contains(&good)
        ));
        assert!(matches!(
            status(models, &a, &Ledger::read(models)),
            AssetState::Corrupt { .. }
        ));
    }

    #[test]
    fn an_asset_without_a_hash_is_pinned_at_first_sight() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path();
        let a = asset(None, None);
        std::fs::create_dir(models.join("sub")).unwrap();
        std::fs::write(file_path(models, &a), b"first").unwrap();
        assert_eq!(verify(models, &a).unwrap(), AssetState::Verified);
        std::fs::write(file_path(models, &a), b"other").unwrap();
        assert!(matches!(
            verify(models, &a).unwrap(),
            AssetState::Corrupt { .. }
        ));
    }
}
