//! The `download` job: one asset per job, on the light lane (so parallel downloads are bounded
//! by `light_workers`), resumable: a job cut off by a crash runs again and continues its
//! `.part` file.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::Catalog;
use super::download::download;
use crate::db::jobs::Job;
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem};

/// The job kind that downloads assets.
pub const KIND: JobKind = JobKind::Download;

/// The params of a `download` job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct DownloadRequest {
    /// The asset's name or path in the catalogue.
    pub asset: String,
}

/// Queues the download of one asset, checked against the catalogue first; an unfinished
/// download of the same asset (one a killed process left, re-queued when the job system
/// started) is returned instead of a second one.
pub fn start_download(system: &JobSystem, request: DownloadRequest) -> Result<Job> {
    let catalog = Catalog::read()?;
    let name = catalog.find(&request.asset)?.name.clone();
    let params = serde_json::to_value(DownloadRequest {
        asset: name.clone(),
    })?;
    system.submit_unless_unfinished(KIND, ("asset", &name), params)
}

/// Runs `download` jobs: fetches and verifies one asset, resuming its `.part` file after a crash.
pub struct DownloadHandler;

impl JobHandler for DownloadHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let request: DownloadRequest = ctx.params()?;
        let catalog = Catalog::load(&ctx.library().settings()?)?;
        let asset = catalog.find(&request.asset)?;
        let models_dir = crate::models_folder::of(ctx.library())?;
        let done = download(&models_dir, &catalog, asset, &mut |progress| {
            ctx.progress(progress.fraction(), progress.message(&asset.name))
        })
        // The disk that fills here is the models folder's, which need not be the data dir's.
        .map_err(|err| crate::error::explain_disk_full(err, &models_dir))?;
        ctx.progress(1.0, format!("{}: verified", asset.name))?;
        Ok(serde_json::to_value(done)?)
    }
}
