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
use timbre_core::clean::{
    self, CleanInput, EnhanceParams, IsolateParams, IsolationMethod, Preview, PreviewInfo,
    PreviewRequest, SeparationModel, SeparatorCache,
};
use timbre_core::convert::{OutputFormat, extractors};
use timbre_core::db::derived_takes::{self, DerivedTake};
use timbre_core::db::takes::{self, Take};
use timbre_core::error::{invalid_input, not_found};

/// The preview's separation model (kept loaded between previews) and its last result.
#[derive(Default)]
pub struct PreviewState {
    separators: SeparatorCache,
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
    take: Take,
    link: DerivedTake,
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
    let dir = isolation_dir(&state)?;
    Ok(IsolationModels {
        models: clean::separation_models(&dir),
        dir,
    })
}

fn isolation_dir(state: &AppState) -> anyhow::Result<PathBuf> {
    let library = state.library();
    let settings = library.settings()?;
    Ok(std::path::absolute(extractors::models_dir(
        &settings.models_dir,
        library.data_dir(),
    ))?)
}

/// Queues one job per input and returns their ids at once: `isolate` (whose vocals are then
/// enhanced when `enhance` is set too) or `enhance` alone.
#[tauri::command]
pub fn submit_cleaning(
    state: State<'_, AppState>,
    inputs: Vec<CleanInput>,
    isolation: Option<IsolationMethod>,
    enhance: Option<EnhanceOptions>,
) -> CommandResult<Vec<i64>> {
    if inputs.is_empty() {
        return Err(invalid_input("choose at least one take or file to clean").into());
    }
    check(&state, &inputs, isolation.as_ref(), enhance.as_ref())?;
    let mut job_ids = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (kind, params) = match &isolation {
            Some(method) => (
                "isolate",
                serde_json::to_value(IsolateParams {
                    input,
                    method: method.clone(),
                    preview_secs: None,
                    enhance: enhance.clone(),
                    format: OutputFormat::WavFloat,
                    out_dir: None,
                })?,
            ),
            None => (
                "enhance",
                serde_json::to_value(EnhanceParams {
                    input,
                    options: enhance.clone().unwrap_or_default(),
                    format: OutputFormat::WavFloat,
                    out_dir: None,
                })?,
            ),
        };
        job_ids.push(state.jobs.submit(kind, params)?.id);
    }
    Ok(job_ids)
}

/// Refuses at once what every job would fail on: no step, a missing take, file or model.
fn check(
    state: &AppState,
    inputs: &[CleanInput],
    isolation: Option<&IsolationMethod>,
    enhance: Option<&EnhanceOptions>,
) -> anyhow::Result<()> {
    if isolation.is_none() && enhance.is_none() {
        return Err(invalid_input("choose isolation, enhancement or both"));
    }
    if let Some(IsolationMethod::Model(name)) = isolation {
        let dir = isolation_dir(state)?;
        if !clean::separation_models(&dir)
            .iter()
            .any(|m| &m.name == name)
        {
            return Err(not_found(format!(
                "no isolation model {name:?} in {}",
                dir.join("separation").display()
            )));
        }
    }
    let conn = state.library().conn();
    for input in inputs {
        match input {
            CleanInput::Take(id) => {
                takes::require(&conn, *id)?;
            }
            CleanInput::File(path) if !path.is_file() => {
                return Err(not_found(format!("{}: no such file", path.display())));
            }
            CleanInput::File(_) => {}
        }
    }
    Ok(())
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
    let info = tauri::async_runtime::spawn_blocking(move || {
        let preview = clean::preview(jobs.library(), &previews.separators, &request)?;
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
