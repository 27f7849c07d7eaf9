//! Settings' "Enable GPU": the CUDA runtime a package leaves out, installed as a
//! `runtime_install` job (its progress arrives as job notifications) and removed again.

use crate::error::CommandResult;
use crate::state::AppState;
use std::sync::Arc;
use tauri::State;
use timbre_core::cuda_runtime::{self, RuntimeStatus};
use timbre_core::db::jobs::{self as job_rows, Job, JobKind};

/// Queues the runtime's install, or returns the one already under way.
#[tauri::command]
pub fn install_cuda_runtime(state: State<'_, AppState>) -> CommandResult<Job> {
    Ok(cuda_runtime::start_install(&state.jobs)?)
}

/// Deletes the runtime (2.5 GB: off the UI's thread); refused while an install runs, whose
/// files it would pull away.
#[tauri::command]
pub async fn remove_cuda_runtime(state: State<'_, AppState>) -> CommandResult<RuntimeStatus> {
    let jobs = Arc::clone(&state.jobs);
    let status = tauri::async_runtime::spawn_blocking(move || {
        let installing = job_rows::unfinished_with_param(
            &jobs.library().conn(),
            JobKind::RuntimeInstall,
            "runtime",
            "cuda",
        )?;
        if let Some(job) = installing {
            return Err(timbre_core::error::invalid_input(format!(
                "the GPU runtime is being installed (job {}): cancel that job first",
                job.id
            )));
        }
        cuda_runtime::remove()?;
        cuda_runtime::status()
    })
    .await??;
    Ok(status)
}
