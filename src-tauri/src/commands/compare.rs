//! The Compare page's listening tests between conversions of one input: an A/B preference or a
//! blind ABX vote (scored against the hidden output) saved, and those saved so far.

use crate::error::CommandResult;
use crate::state::AppState;
use tauri::State;
use timbre_core::db::listening_tests::{self, ListeningTest, Mode};

/// Saves an A/B preference or a blind ABX vote (scored against the hidden output).
#[tauri::command]
pub fn record_listening_test(
    state: State<'_, AppState>,
    mode: Mode,
    conversion_ids: Vec<i64>,
    hidden: Option<i64>,
    chosen: i64,
    loudness_matched: bool,
) -> CommandResult<ListeningTest> {
    Ok(listening_tests::record(
        &state.library().conn(),
        mode,
        &conversion_ids,
        hidden,
        chosen,
        loudness_matched,
    )?)
}

#[tauri::command]
pub fn list_listening_tests(state: State<'_, AppState>) -> CommandResult<Vec<ListeningTest>> {
    Ok(listening_tests::list(&state.library().conn())?)
}
