//! The Train page: trainings (the `train` job) started, stopped and resumed, their losses and
//! previews as they come, the checkpoint judge's scores, and a checkpoint exported into the
//! library as a model.

use crate::commands::library::wav_response;
use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use tauri::State;
use tauri::ipc::Response;
use timbre_core::db::models::Model;
use timbre_core::db::training_metrics::{self, TrainingMetric};
use timbre_core::db::training_previews::{self, TrainingPreview};
use timbre_core::db::trainings::{self, Training};
use timbre_core::train::{self, TrainRequest};

/// What a training runs unless told otherwise, for the Train page's form.
#[derive(Serialize, ts_rs::TS)]
pub struct TrainingDefaults {
    epochs: i64,
    save_every: i64,
    keep_checkpoints: i64,
}

#[tauri::command]
pub fn get_training_defaults() -> TrainingDefaults {
    TrainingDefaults {
        epochs: TrainRequest::DEFAULT_EPOCHS,
        save_every: TrainRequest::DEFAULT_SAVE_EVERY,
        keep_checkpoints: TrainRequest::DEFAULT_KEEP_CHECKPOINTS,
    }
}

#[tauri::command]
pub fn list_trainings(state: State<'_, AppState>) -> CommandResult<Vec<Training>> {
    Ok(trainings::list(&state.library().conn())?)
}

/// Checks the request (reading a pretrained generator takes a moment, so not on the main
/// thread), creates the training and queues its job.
#[tauri::command]
pub async fn start_training(
    state: State<'_, AppState>,
    request: TrainRequest,
) -> CommandResult<Training> {
    let jobs = Arc::clone(&state.jobs);
    let training =
        tauri::async_runtime::spawn_blocking(move || train::start_training(&jobs, request))
            .await??;
    Ok(training)
}

#[tauri::command]
pub fn stop_training(state: State<'_, AppState>, training_id: i64) -> CommandResult<Training> {
    Ok(train::stop_training(&state.jobs, training_id)?)
}

#[tauri::command]
pub fn resume_training(state: State<'_, AppState>, training_id: i64) -> CommandResult<Training> {
    Ok(train::resume_training(&state.jobs, training_id)?)
}

#[tauri::command]
pub fn list_training_metrics(
    state: State<'_, AppState>,
    training_id: i64,
) -> CommandResult<Vec<TrainingMetric>> {
    Ok(training_metrics::list(
        &state.library().conn(),
        training_id,
    )?)
}

#[tauri::command]
pub fn list_training_previews(
    state: State<'_, AppState>,
    training_id: i64,
) -> CommandResult<Vec<TrainingPreview>> {
    Ok(training_previews::list(
        &state.library().conn(),
        training_id,
    )?)
}

/// A preview's audio as float WAV bytes for Web Audio (WebKitGTK plays no file URLs), decoded
/// on a blocking thread.
#[tauri::command]
pub async fn get_training_preview_audio(
    state: State<'_, AppState>,
    preview_id: i64,
) -> CommandResult<Response> {
    let jobs = Arc::clone(&state.jobs);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let preview = training_previews::require(&jobs.library().conn(), preview_id)?;
        wav_response(Path::new(&preview.path))
    })
    .await??;
    Ok(audio)
}

/// The checkpoint judge's scores of a training and the checkpoint it recommends.
#[tauri::command]
pub fn get_judge_report(
    state: State<'_, AppState>,
    training_id: i64,
) -> CommandResult<train::judge::JudgeReport> {
    Ok(train::judge::report(state.library(), training_id)?)
}

/// The judge's rendering of a held-out piece by the checkpoint of `step`, as float WAV bytes.
#[tauri::command]
pub async fn get_judge_sample_audio(
    state: State<'_, AppState>,
    training_id: i64,
    step: i64,
) -> CommandResult<Response> {
    let jobs = Arc::clone(&state.jobs);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let report = train::judge::report(jobs.library(), training_id)?;
        let sample = report
            .scores
            .iter()
            .find(|s| s.step == step)
            .and_then(|s| s.sample.clone())
            .ok_or_else(|| {
                timbre_core::error::not_found(format!(
                    "training {training_id}: checkpoint {step} has no judged sample"
                ))
            })?;
        wav_response(Path::new(&sample))
    })
    .await??;
    Ok(audio)
}

/// The checkpoint of `step` (the newest when null) as a model in the library, with the
/// dataset's index.
#[tauri::command]
pub async fn export_training(
    state: State<'_, AppState>,
    training_id: i64,
    step: Option<i64>,
) -> CommandResult<Model> {
    let jobs = Arc::clone(&state.jobs);
    let model = tauri::async_runtime::spawn_blocking(move || {
        train::export::export_to_library(jobs.library(), training_id, step)
    })
    .await??;
    Ok(model)
}
