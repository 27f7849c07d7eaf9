//! Looking inside a take as the converter does: its pitch curve for the take view.

use crate::error::CommandResult;
use crate::state::AppState;
use std::sync::Arc;
use tauri::State;
use timbre_core::input::AudioInput;
use timbre_core::pitch_analysis::{self, PitchCurve};
use timbre_nn::pipeline::F0Method;

/// Hz per 10 ms frame of the take, as conversion tracks it (off the main thread: a network may
/// run).
#[tauri::command]
pub async fn analyze_pitch(
    state: State<'_, AppState>,
    take_id: i64,
    f0_method: F0Method,
) -> CommandResult<PitchCurve> {
    let library = Arc::clone(state.jobs.library());
    let models = Arc::clone(&state.models);
    Ok(tauri::async_runtime::spawn_blocking(move || {
        pitch_analysis::analyze(&library, &models, &AudioInput::Take(take_id), f0_method)
    })
    .await??)
}
