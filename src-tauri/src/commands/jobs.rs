//! Jobs and what the app watches: jobs listed, cancelled, retried, resumed or dropped, their
//! events and reports, the notification stream, the resource snapshot and the model cache.

use crate::error::CommandResult;
use crate::state::AppState;
use tauri::State;
use tauri::ipc::Channel;
use timbre_core::Notification;
use timbre_core::db::{job_events, jobs};
use timbre_core::model_cache::ModelCacheReport;
use timbre_core::monitor::ResourceSnapshot;

#[tauri::command]
pub fn list_jobs(state: State<'_, AppState>) -> CommandResult<Vec<jobs::Job>> {
    Ok(jobs::list(&state.library().conn(), 200)?)
}

#[tauri::command]
pub fn list_job_events(
    state: State<'_, AppState>,
    id: i64,
) -> CommandResult<Vec<job_events::JobEvent>> {
    Ok(job_events::list(&state.library().conn(), id, None)?)
}

#[tauri::command]
pub fn cancel_job(state: State<'_, AppState>, id: i64) -> CommandResult<jobs::Job> {
    Ok(state.jobs.cancel(id)?)
}

#[tauri::command]
pub fn retry_job(state: State<'_, AppState>, id: i64) -> CommandResult<jobs::Job> {
    Ok(state.jobs.retry(id)?)
}

#[tauri::command]
pub fn resume_job(state: State<'_, AppState>, id: i64) -> CommandResult<jobs::Job> {
    Ok(state.jobs.resume(id)?)
}

#[tauri::command]
pub fn drop_job(state: State<'_, AppState>, id: i64) -> CommandResult<jobs::Job> {
    Ok(state.jobs.drop_job(id)?)
}

#[tauri::command]
pub fn get_job_report(state: State<'_, AppState>, id: i64) -> CommandResult<serde_json::Value> {
    Ok(timbre_core::jobs::job_report(state.library(), id)?)
}

/// Streams job and library changes to the UI until the channel closes.
#[tauri::command]
pub fn subscribe_notifications(
    state: State<'_, AppState>,
    on_event: Channel<Notification>,
) -> CommandResult<()> {
    let updates = state.library().subscribe();
    std::thread::spawn(move || {
        for update in updates {
            if on_event.send(update).is_err() {
                break;
            }
        }
    });
    Ok(())
}

#[tauri::command]
pub fn get_resource_snapshot(state: State<'_, AppState>) -> CommandResult<ResourceSnapshot> {
    Ok(state
        .monitor
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .snapshot())
}

/// The models loaded for the jobs and previews, and how often the cache spared a load.
#[tauri::command]
pub fn get_model_cache(state: State<'_, AppState>) -> CommandResult<ModelCacheReport> {
    Ok(state.models.report())
}

/// Unloads every cached model (jobs running keep theirs until they finish).
#[tauri::command]
pub fn free_model_cache(state: State<'_, AppState>) -> CommandResult<ModelCacheReport> {
    state.models.clear();
    Ok(state.models.report())
}
