//! The Models page's download center and the first-run panel: the catalogue's assets with their
//! state in the models folder, downloads started as `download` jobs (their progress arrives as
//! job notifications), verification, removal, and the doctor's report.

use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::State;
use timbre_core::assets::{self, AssetStatus, Catalog, DownloadRequest};
use timbre_core::db::jobs::Job;
use timbre_core::{doctor, models_folder};

/// Every asset of the catalogue and its state in the models folder.
#[derive(Serialize, ts_rs::TS)]
pub struct AssetList {
    models_dir: PathBuf,
    /// Where the catalogue was read from (the shipped one, or `TIMBRE_ASSET_CATALOG`).
    catalog: String,
    assets: Vec<AssetStatus>,
}

/// The states from sizes and the hashes recorded at download or verification (no hashing).
#[tauri::command]
pub fn list_assets(state: State<'_, AppState>) -> CommandResult<AssetList> {
    let catalog = Catalog::read()?;
    let models_dir = models_folder::of(state.library())?;
    let assets = assets::inspect(&models_dir, &catalog.assets, false)?;
    Ok(AssetList {
        models_dir,
        catalog: catalog.origin,
        assets,
    })
}

/// Queues one `download` job per asset (by name or path) and returns them at once; an asset
/// already downloading returns its unfinished job. An unknown name starts nothing.
#[tauri::command]
pub fn download_assets(state: State<'_, AppState>, names: Vec<String>) -> CommandResult<Vec<Job>> {
    // Every name checked before any download starts.
    let catalog = Catalog::read()?;
    for name in &names {
        catalog.find(name)?;
    }
    let jobs = names
        .into_iter()
        .map(|asset| assets::start_download(&state.jobs, DownloadRequest { asset }))
        .collect::<anyhow::Result<_>>()?;
    Ok(jobs)
}

/// Hashes the named assets' files (hundreds of MB: on a blocking thread) and returns their
/// states, a corrupt one saying how.
#[tauri::command]
pub async fn verify_assets(
    state: State<'_, AppState>,
    names: Vec<String>,
) -> CommandResult<Vec<AssetStatus>> {
    let jobs = Arc::clone(&state.jobs);
    let statuses = tauri::async_runtime::spawn_blocking(move || {
        let catalog = Catalog::read()?;
        let models_dir = models_folder::of(jobs.library())?;
        let chosen = names
            .iter()
            .map(|name| catalog.find(name))
            .collect::<anyhow::Result<Vec<_>>>()?;
        assets::inspect(&models_dir, chosen, true)
    })
    .await??;
    Ok(statuses)
}

/// Deletes an asset's file and partial download; returns its state after.
#[tauri::command]
pub fn remove_asset(state: State<'_, AppState>, name: String) -> CommandResult<AssetStatus> {
    let catalog = Catalog::read()?;
    let asset = catalog.find(&name)?;
    let models_dir = models_folder::of(state.library())?;
    assets::remove(&models_dir, asset)?;
    let mut after = assets::inspect(&models_dir, [asset], false)?;
    Ok(after.remove(0))
}

/// What can run now and what each job kind lacks (`timbre doctor`); lists devices and audio
/// inputs, so on a blocking thread.
#[tauri::command]
pub async fn get_doctor_report(state: State<'_, AppState>) -> CommandResult<doctor::Report> {
    let jobs = Arc::clone(&state.jobs);
    let report =
        tauri::async_runtime::spawn_blocking(move || doctor::report(jobs.library())).await??;
    Ok(report)
}
