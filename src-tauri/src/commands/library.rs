//! The library: voices listed and created; takes listed, renamed, tagged, given a voice and
//! deleted; audio as float WAV bytes for Web Audio (a take's, and the helpers the other pages
//! use); and an `import` job for dropped files.

use crate::error::CommandResult;
use crate::state::AppState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tauri::State;
use tauri::ipc::Response;
use timbre_audio::{AudioBuffer, DecodeOptions, SampleFormat};
use timbre_core::db::{derived_takes, take_tags, takes, voices};
use timbre_core::import::{self, ImportRequest};

#[tauri::command]
pub fn list_voices(state: State<'_, AppState>) -> CommandResult<Vec<voices::Voice>> {
    Ok(voices::list(&state.library().conn())?)
}

#[tauri::command]
pub fn create_voice(state: State<'_, AppState>, name: String) -> CommandResult<voices::Voice> {
    Ok(state.library().edit(|conn| voices::ensure(conn, &name))?)
}

#[tauri::command]
pub fn list_takes(
    state: State<'_, AppState>,
    voice_id: Option<i64>,
) -> CommandResult<Vec<takes::Take>> {
    Ok(takes::list(&state.library().conn(), voice_id)?)
}

/// Which takes were made from which (cleanings, a cover's stems and result), for the Library to
/// group them under their source.
#[tauri::command]
pub fn list_derived_links(
    state: State<'_, AppState>,
) -> CommandResult<Vec<derived_takes::DerivedTake>> {
    Ok(derived_takes::with_source(&state.library().conn())?)
}

#[tauri::command]
pub fn rename_take(
    state: State<'_, AppState>,
    id: i64,
    name: String,
) -> CommandResult<takes::Take> {
    Ok(state
        .library()
        .edit(|conn| takes::rename(conn, id, &name))?)
}

#[tauri::command]
pub fn delete_take(state: State<'_, AppState>, id: i64) -> CommandResult<()> {
    state.library().delete_take(id)?;
    Ok(())
}

#[tauri::command]
pub fn set_take_tags(
    state: State<'_, AppState>,
    id: i64,
    tags: Vec<String>,
) -> CommandResult<takes::Take> {
    Ok(state.library().edit(|conn| {
        takes::require(conn, id)?;
        take_tags::set(conn, id, &tags)?;
        takes::require(conn, id)
    })?)
}

#[tauri::command]
pub fn set_take_voice(
    state: State<'_, AppState>,
    id: i64,
    voice_id: Option<i64>,
) -> CommandResult<takes::Take> {
    Ok(state
        .library()
        .edit(|conn| takes::set_voice(conn, id, voice_id))?)
}

/// The take as WAV bytes for Web Audio, decoded on a blocking thread.
#[tauri::command]
pub async fn get_take_audio(state: State<'_, AppState>, id: i64) -> CommandResult<Response> {
    let jobs = Arc::clone(&state.jobs);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let library = jobs.library();
        let take = takes::require(&library.conn(), id)?;
        wav_response(&library.take_path(&take))
    })
    .await??;
    Ok(audio)
}

/// An audio file as float WAV bytes, which Web Audio decodes whatever the stored format
/// (WebKitGTK cannot play from a file URL).
pub(crate) fn wav_response(path: &Path) -> anyhow::Result<Response> {
    let audio = timbre_audio::decode_file(path, &DecodeOptions::default())?;
    audio_response(&audio)
}

/// Audio in memory (a preview) as float WAV bytes, like `wav_response`.
pub(crate) fn audio_response(audio: &AudioBuffer) -> anyhow::Result<Response> {
    Ok(Response::new(timbre_audio::encode_wav(
        audio,
        SampleFormat::Float32,
    )?))
}

/// Queues an import job for dropped files and returns its id at once.
#[tauri::command]
pub fn import_files(
    state: State<'_, AppState>,
    paths: Vec<PathBuf>,
    voice_id: Option<i64>,
) -> CommandResult<i64> {
    let request = ImportRequest { paths, voice_id };
    Ok(import::submit(&state.jobs, request)?.id)
}
