//! The `runtime_install` job: the app's "Enable GPU", the same [`super::install`] as
//! `timbre runtime install cuda`, on the light lane, with the wheels' bytes as one progress bar.
//! Resumable: a job cut off by a crash runs again and continues the wheels' `.part` files.

use std::collections::HashMap;

use anyhow::Result;
use serde_json::Value;

use crate::db::jobs::Job;
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem};

/// The job kind that installs the CUDA runtime.
pub const KIND: JobKind = JobKind::RuntimeInstall;

/// Queues the install, or returns the unfinished one (one runtime, one install at a time).
pub fn start_install(system: &JobSystem) -> Result<Job> {
    super::catalog()?;
    let params = serde_json::json!({ "runtime": "cuda" });
    system.submit_unless_unfinished(KIND, ("runtime", "cuda"), params)
}

/// Runs `runtime_install` jobs.
pub struct RuntimeInstallHandler;

impl JobHandler for RuntimeInstallHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let settings = ctx.library().settings()?;
        let total: u64 = super::catalog()?
            .assets
            .iter()
            .filter_map(|a| a.size_bytes)
            .sum();
        let mut held: HashMap<String, u64> = HashMap::new();
        let installed = super::install(&settings, &mut |wheel, progress| {
            held.insert(wheel.to_owned(), progress.bytes);
            let fraction = held.values().sum::<u64>() as f64 / total.max(1) as f64;
            ctx.progress(fraction.min(0.99), progress.message(wheel))
        })?;
        ctx.progress(1.0, "CUDA runtime installed: used from the next start")?;
        Ok(serde_json::to_value(installed)?)
    }
}
