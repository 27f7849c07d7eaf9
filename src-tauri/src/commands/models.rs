//! The Models page's voice models: voices imported from a `.pth` (with its index), a `.zip`, a
//! folder or a link (the `voice_import` job, the one route the page and drops take), and models
//! renamed, deleted, given an index, blended and exported with their descriptive entries edited.

use crate::error::CommandResult;
use crate::state::AppState;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::State;
use timbre_core::db::models::{self, Model};
use timbre_core::model_import;
use timbre_core::voice_import::{self, VoiceImportRequest};
use timbre_nn::model_info::InfoEdits;

#[tauri::command]
pub fn list_models(state: State<'_, AppState>) -> CommandResult<Vec<Model>> {
    Ok(models::list(&state.library().conn())?)
}

/// Queues the import of the voices of a `.zip`, a folder or a link (the `voice_import` job:
/// download, unpack, pair each `.pth` with its index) and returns the job's id at once; its
/// result is a `VoiceImportReport`.
#[tauri::command]
pub fn import_voice(state: State<'_, AppState>, request: VoiceImportRequest) -> CommandResult<i64> {
    Ok(voice_import::submit(&state.jobs, request)?.id)
}

#[tauri::command]
pub fn rename_model(state: State<'_, AppState>, id: i64, name: String) -> CommandResult<Model> {
    Ok(state
        .library()
        .edit(|conn| models::rename(conn, id, &name))?)
}

#[tauri::command]
pub fn delete_model(state: State<'_, AppState>, id: i64) -> CommandResult<()> {
    state.library().delete_model(id)?;
    Ok(())
}

/// Attaches (or replaces) a model's index, after checking it fits the model's features.
#[tauri::command]
pub async fn attach_model_index(
    state: State<'_, AppState>,
    id: i64,
    index: PathBuf,
) -> CommandResult<Model> {
    let jobs = Arc::clone(&state.jobs);
    let model = tauri::async_runtime::spawn_blocking(move || {
        model_import::attach_index(jobs.library(), id, &index)
    })
    .await??;
    Ok(model)
}

/// Remembers the embedder folder of a voice trained on a custom embedder, after checking it gives
/// the features the voice takes.
#[tauri::command]
pub async fn choose_model_embedder(
    state: State<'_, AppState>,
    id: i64,
    folder: PathBuf,
) -> CommandResult<Model> {
    let jobs = Arc::clone(&state.jobs);
    let model = tauri::async_runtime::spawn_blocking(move || {
        model_import::choose_custom_embedder(jobs.library(), id, &folder)
    })
    .await??;
    Ok(model)
}

/// A new model in the library: the weighted blend of compatible models (same version, rate and
/// pitch guidance; others are refused naming the difference).
#[tauri::command]
pub async fn blend_models(
    state: State<'_, AppState>,
    ids: Vec<i64>,
    weights: Vec<f64>,
    name: String,
) -> CommandResult<Model> {
    let jobs = Arc::clone(&state.jobs);
    let model = tauri::async_runtime::spawn_blocking(move || {
        model_import::blend(jobs.library(), &ids, &weights, &name)
    })
    .await??;
    Ok(model)
}

/// Writes a model's `.pth` into `out_dir` (named after the model) with its name, author,
/// description and info edited; the path written.
#[tauri::command]
pub async fn export_model(
    state: State<'_, AppState>,
    id: i64,
    edits: InfoEdits,
    out_dir: PathBuf,
) -> CommandResult<PathBuf> {
    let jobs = Arc::clone(&state.jobs);
    let path = tauri::async_runtime::spawn_blocking(move || {
        let library = jobs.library();
        let model = models::require(&library.conn(), id)?;
        let file_name = edits
            .model_name
            .as_deref()
            .unwrap_or(&model.name)
            .to_string();
        let path = out_dir.join(format!("{}.pth", file_name.replace(['/', '\\'], "_")));
        model_import::export_with_info(library, id, &edits, &path)?;
        anyhow::Ok(path)
    })
    .await??;
    Ok(path)
}
