//! The Record page: the input devices, and a capture whose levels reach the UI as it runs,
//! saved as a take when stopped, or cancelled.

use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use std::sync::Arc;
use tauri::State;
use tauri::ipc::Channel;
use timbre_audio::record::{self, InputDevice};
use timbre_core::db::takes::Take;

#[derive(Clone, Serialize, ts_rs::TS)]
pub struct LevelUpdate {
    peak: f32,
    rms: f32,
    clipping: bool,
    seconds: f64,
}

/// Asking the audio backend for its devices can take a moment: a blocking thread does it.
#[tauri::command]
pub async fn list_input_devices() -> CommandResult<Vec<InputDevice>> {
    let devices =
        tauri::async_runtime::spawn_blocking(|| anyhow::Ok(record::list_input_devices()?))
            .await??;
    Ok(devices)
}

#[tauri::command]
pub fn start_recording(
    state: State<'_, AppState>,
    device: Option<String>,
    on_level: Channel<LevelUpdate>,
) -> CommandResult<()> {
    state.recorder.start(device, move |level, seconds| {
        let _ = on_level.send(LevelUpdate {
            peak: level.peak,
            rms: level.rms,
            clipping: level.clipping,
            seconds,
        });
    })?;
    Ok(())
}

/// Waits for the capture thread's audio and saves it as a take on a blocking thread.
#[tauri::command]
pub async fn stop_recording(
    state: State<'_, AppState>,
    name: Option<String>,
    voice_id: Option<i64>,
) -> CommandResult<Take> {
    let recorder = Arc::clone(&state.recorder);
    let jobs = Arc::clone(&state.jobs);
    let take = tauri::async_runtime::spawn_blocking(move || {
        recorder.stop(jobs.library(), name.as_deref(), voice_id)
    })
    .await??;
    Ok(take)
}

#[tauri::command]
pub fn cancel_recording(state: State<'_, AppState>) -> CommandResult<()> {
    state.recorder.cancel()?;
    Ok(())
}
