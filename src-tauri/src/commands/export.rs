//! Results out of the library: a take or a conversion exported to a file the user picked, or
//! several into a folder, and a file shown in the system's file manager.

use crate::error::CommandResult;
use crate::state::AppState;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::State;
use timbre_core::library_export::{self, LibraryItem};

/// The name the save dialog offers for `item`.
#[tauri::command]
pub fn get_export_name(state: State<'_, AppState>, item: LibraryItem) -> CommandResult<String> {
    Ok(library_export::default_file_name(state.library(), item)?)
}

/// Writes `item` to `path`, encoding it when the extension asks for another format (off the
/// main thread); the path written.
#[tauri::command]
pub async fn export_library_item(
    state: State<'_, AppState>,
    item: LibraryItem,
    path: PathBuf,
) -> CommandResult<PathBuf> {
    let jobs = Arc::clone(&state.jobs);
    let written = tauri::async_runtime::spawn_blocking(move || {
        library_export::export(jobs.library(), item, &path)
    })
    .await??;
    Ok(written)
}

/// Copies `items` into `dir` under their default names, never overwriting; the paths written.
#[tauri::command]
pub async fn export_library_items(
    state: State<'_, AppState>,
    items: Vec<LibraryItem>,
    dir: PathBuf,
) -> CommandResult<Vec<PathBuf>> {
    let jobs = Arc::clone(&state.jobs);
    let written = tauri::async_runtime::spawn_blocking(move || {
        library_export::export_into(jobs.library(), &items, &dir)
    })
    .await??;
    Ok(written)
}

#[tauri::command]
pub fn reveal_file(path: PathBuf) -> CommandResult<()> {
    Ok(timbre_core::reveal::reveal(&path)?)
}
