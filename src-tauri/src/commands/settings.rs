//! The Settings page: every setting `timbre settings` shows and changes, checked by the same
//! `Settings::set`, with where the library and the models folder are.

use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use tauri::State;
use timbre_core::models_folder;
use timbre_core::settings::Settings;

/// The settings and the folders they resolve to.
#[derive(Serialize, ts_rs::TS)]
pub struct SettingsView {
    settings: Settings,
    /// Where the library (database, store, logs) is; `--data-dir` or `TIMBRE_DATA_DIR` chose it.
    data_dir: String,
    /// The models folder in use: `TIMBRE_MODELS_DIR`, the `models_dir` setting, `models/` in the
    /// working directory, or the data folder's.
    models_dir: String,
}

fn view(state: &AppState, settings: Settings) -> CommandResult<SettingsView> {
    let library = state.library();
    Ok(SettingsView {
        models_dir: models_folder::of(library)?.display().to_string(),
        data_dir: library.data_dir().display().to_string(),
        settings,
    })
}

#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> CommandResult<SettingsView> {
    let settings = state.library().settings()?;
    view(&state, settings)
}

/// Stores one setting, its value as JSON (`5`, `2.5`, `"cuda:1"`, `["https://…"]`); refused as
/// the CLI refuses it. The job system follows a changed device from its next job.
#[tauri::command]
pub fn set_setting(
    state: State<'_, AppState>,
    key: String,
    value: String,
) -> CommandResult<SettingsView> {
    let settings = Settings::set(&state.library().conn(), &key, &value)?;
    if key == "device" || key == "extraction_device" {
        state.jobs.devices_changed()?;
    }
    view(&state, settings)
}
