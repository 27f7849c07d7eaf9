//! Settings' About section: this build's version and commit, the libtorch it links, how it was
//! installed and where its CUDA runtime stands; the update check (also made once at start when
//! `update_check` is on) and the install of the release it offers, as an `update_install` job.

use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use std::sync::Arc;
use tauri::State;
use timbre_core::cuda_runtime::{self, RuntimeStatus};
use timbre_core::db::jobs::Job;
use timbre_core::updates::{self, InstallForm, UpdateCheck, UpdateRequest};

/// What the About section shows.
#[derive(Serialize, ts_rs::TS)]
pub struct About {
    /// This build's version (`timbre --version` prints the same).
    version: String,
    /// The git commit it was built from.
    commit: String,
    /// How this copy was installed: which says how it is updated.
    installed_as: InstallForm,
    /// libtorch's version and its CUDA runtime.
    runtime: RuntimeStatus,
}

/// The build and its runtime (NVML's answer takes a moment: off the UI's thread).
#[tauri::command]
pub async fn get_about() -> CommandResult<About> {
    let about = tauri::async_runtime::spawn_blocking(|| -> anyhow::Result<About> {
        Ok(About {
            version: updates::CURRENT_VERSION.to_owned(),
            commit: env!("TIMBRE_GIT_COMMIT").to_owned(),
            installed_as: updates::installed_form(&updates::install_root()?)?,
            runtime: cuda_runtime::status()?,
        })
    })
    .await??;
    Ok(about)
}

/// Asks the signed feed what is newest; refused when update checks are off.
#[tauri::command]
pub async fn check_for_updates(state: State<'_, AppState>) -> CommandResult<UpdateCheck> {
    let jobs = Arc::clone(&state.jobs);
    let check =
        tauri::async_runtime::spawn_blocking(move || updates::check(&jobs.library().settings()?))
            .await??;
    Ok(check)
}

/// Queues the install of the release a check offered (the tar.gz form only; the job says why
/// not otherwise).
#[tauri::command]
pub fn install_update(state: State<'_, AppState>, version: String) -> CommandResult<Job> {
    Ok(updates::start_install(
        &state.jobs,
        UpdateRequest { version },
    )?)
}
