//! Getting weight files in: the catalogue of every asset the app uses (`catalog`), their state
//! in the models folder (`state`, with hashes remembered in `ledger`), and verified, resumable
//! downloads (`download` for one asset over `crate::fetch`, `job` for the `download` job
//! kind). See "The path of a download and of a voice import" in docs/ARCHITECTURE.md.

pub mod catalog;
pub mod download;
pub mod job;
mod ledger;
pub mod state;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

pub use catalog::{Asset, Catalog, KnownFile, known_files};
pub use download::Downloaded;
pub use job::{DownloadHandler, DownloadRequest, start_download};
pub use state::AssetState;

/// One asset and its state, for listings.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct AssetStatus {
    /// The catalogue entry, its fields inlined in the JSON.
    #[serde(flatten)]
    pub asset: Asset,
    /// Its state in the models folder, inlined as a `state` tag plus that state's fields.
    #[serde(flatten)]
    pub state: AssetState,
    /// Bytes on disk (the file's, or the part's).
    pub bytes_on_disk: u64,
}

/// The state of each asset of `assets` in `models_dir`; `hash` hashes every file present
/// (verify), else the sizes and the ledger decide (list).
pub fn inspect<'a>(
    models_dir: &Path,
    assets: impl IntoIterator<Item = &'a Asset>,
    hash: bool,
) -> Result<Vec<AssetStatus>> {
    let ledger = ledger::Ledger::read(models_dir);
    assets
        .into_iter()
        .map(|asset| {
            let state = if hash {
                state::verify(models_dir, asset)?
            } else {
                state::status(models_dir, asset, &ledger)
            };
            let on_disk = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).ok();
            let bytes_on_disk = on_disk(state::file_path(models_dir, asset))
                .or_else(|| on_disk(state::part_path(models_dir, asset)))
                .unwrap_or(0);
            Ok(AssetStatus {
                asset: asset.clone(),
                state,
                bytes_on_disk,
            })
        })
        .collect()
}

/// Deletes an asset's file and any partial download; whether there was anything. A hash
/// pinned for it stays, so a later download must match it.
pub fn remove(models_dir: &Path, asset: &Asset) -> Result<bool> {
    let mut removed = false;
    for path in [
        state::file_path(models_dir, asset),
        state::part_path(models_dir, asset),
    ] {
        match std::fs::remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("{}: deleting {}", asset.name, path.display()));
            }
        }
    }
    Ok(removed)
}
