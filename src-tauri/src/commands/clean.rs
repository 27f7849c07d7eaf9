//! The Clean page: isolation and enhancement batches (`isolate` / `enhance` jobs), their
//! results (takes linked to their source), the isolation models of the models folder, and the
//! 10-second sample preview, which stores nothing.

use crate::commands::library::audio_response;
use crate::error::CommandResult;
use crate::state::AppState;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tauri::State;
use tauri::ipc::Response;
use timbre_audio::enhance::{EnhanceOptions, Preset};
use timbre_core::clean::{self, CleanRequest, Preview, PreviewInfo, PreviewRequest};
use timbre_core::db::derived_takes::{self, DerivedTake};
use timbre_core::db::takes::{self, Take};
use timbre_core::error::not_found;
use timbre_core::input::AudioInput;
use timbre_core::models_folder::{self, SeparationModel};
use timbre_core::output_format::OutputFormat;
use timbre_core::separation::IsolationMethod;

/// The last preview's result.
#[derive(Default)]
pub struct PreviewState {
    last: Mutex<Option<Preview>>,
}

/// The isolation models found in the models folder.
#[derive(Serialize, ts_rs::TS)]
pub struct IsolationModels {
    dir: PathBuf,
    models: Vec<SeparationModel>,
}

/// The enhancement presets' steps, so the UI shows what each one does.
#[derive(Serialize, ts_rs::TS)]
pub struct EnhancePresets {
    training: EnhanceOptions,
    natural: EnhanceOptions,
}

/// A result and its link to the source.
#[derive(Serialize, ts_rs::TS)]
pub struct DerivedResult {
    pub take: Take,
    pub link: DerivedTake,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewPart {
    Original,
    Cleaned,
}

#[tauri::command]
pub fn list_enhance_presets() -> EnhancePresets {
    EnhancePresets {
        training: Preset::Training.options(),
        natural: Preset::Natural.options(),
    }
}

#[tauri::command]
pub fn list_isolation_models(state: State<'_, AppState>) -> CommandResult<IsolationModels> {
    let dir = models_folder::of(state.library())?;
    Ok(IsolationModels {
        models: models_folder::separation_models(&dir),
        dir,
    })
}

/// Queues one job per input and returns their ids at once: `isolate` (whose vocals are then
/// enhanced when `enhance` is set too) or `enhance` alone.
#[tauri::command]
pub fn submit_cleaning(
    state: State<'_, AppState>,
    inputs: Vec<AudioInput>,
    isolation: Option<IsolationMethod>,
    enhance: Option<EnhanceOptions>,
) -> CommandResult<Vec<i64>> {
    let request = CleanRequest {
        inputs,
        isolation,
        enhance,
        preview_secs: None,
        format: OutputFormat::WavFloat,
        out_dir: None,
    };
    let jobs = clean::submit(&state.jobs, request)?;
    Ok(jobs.into_iter().map(|job| job.id).collect())
}

/// Everything made from a take, oldest first, with the takes themselves.
#[tauri::command]
pub fn list_derived_takes(
    state: State<'_, AppState>,
    source_take_id: i64,
) -> CommandResult<Vec<DerivedResult>> {
    let conn = state.library().conn();
    let mut results = Vec::new();
    for link in derived_takes::from_source(&conn, source_take_id)? {
        if let Some(take) = takes::get(&conn, link.take_id)? {
            results.push(DerivedResult { take, link });
        }
    }
    Ok(results)
}

/// Runs the cleaning on a short excerpt (default: the loudest 10 s) on a blocking thread and
/// keeps the excerpt and its cleaned version for `get_preview_audio`; stores nothing.
#[tauri::command]
pub async fn preview_cleaning(
    state: State<'_, AppState>,
    request: PreviewRequest,
) -> CommandResult<PreviewInfo> {
    let jobs = Arc::clone(&state.jobs);
    let previews = Arc::clone(&state.previews);
    let models = Arc::clone(&state.models);
    let info = tauri::async_runtime::spawn_blocking(move || {
        let preview = clean::preview(jobs.library(), &models, &request)?;
        let info = preview.info.clone();
        *previews.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(preview);
        anyhow::Ok(info)
    })
    .await??;
    Ok(info)
}

/// The last preview's excerpt, as it was or as cleaned, as WAV bytes for Web Audio, encoded on
/// a blocking thread.
#[tauri::command]
pub async fn get_preview_audio(
    state: State<'_, AppState>,
    part: PreviewPart,
) -> CommandResult<Response> {
    let previews = Arc::clone(&state.previews);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let last = previews.last.lock().unwrap_or_else(|p| p.into_inner());
        let preview = last
            .as_ref()
            .ok_or_else(|| not_found("no preview yet: run one first"))?;
        audio_response(match part {
            PreviewPart::Original => &preview.original,
            PreviewPart::Cleaned => &preview.cleaned,
        })
    })
    .await??;
    Ok(audio)
}
