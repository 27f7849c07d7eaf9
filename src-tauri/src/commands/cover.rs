//! The Cover page: one `cover` job per song, and the stems and covers of a song (takes linked to
//! it in `derived_takes`).

use crate::commands::clean::DerivedResult;
use crate::error::CommandResult;
use crate::state::AppState;
use tauri::State;
use timbre_core::cover::{self, CoverRequest, CoverSettings};
use timbre_core::input::AudioInput;

/// What the cover job links to its song: the stems of each stage and the covers.
const COVER_OPERATIONS: &[&str] = &[
    "isolate_vocals",
    "isolate_instrumental",
    "cover_lead_vocals",
    "cover_backing_vocals",
    "cover_converted_vocals",
    "cover",
];

/// Queues one `cover` job per song and returns their ids at once.
#[tauri::command]
pub fn submit_covers(
    state: State<'_, AppState>,
    songs: Vec<AudioInput>,
    settings: CoverSettings,
) -> CommandResult<Vec<i64>> {
    let request = CoverRequest {
        songs,
        settings,
        out_dir: None,
    };
    let jobs = cover::submit(&state.jobs, request)?;
    Ok(jobs.into_iter().map(|job| job.id).collect())
}

/// The stems and covers made from a song, oldest first.
#[tauri::command]
pub fn list_cover_stems(
    state: State<'_, AppState>,
    song_take_id: i64,
) -> CommandResult<Vec<DerivedResult>> {
    let derived = crate::commands::clean::list_derived_takes(state, song_take_id)?;
    Ok(derived
        .into_iter()
        .filter(|d| COVER_OPERATIONS.contains(&d.link.operation.as_str()))
        .collect())
}
