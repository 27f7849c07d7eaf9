//! The Live page: one stream at a time, held in the app's state; its numbers are polled.

use crate::error::CommandResult;
use crate::state::AppState;
use std::sync::{Arc, MutexGuard};
use tauri::State;
use timbre_audio::live::Gains;
use timbre_core::db::jobs::Job;
use timbre_core::live::tune::{self, TuneRequest};
use timbre_core::live::{
    self, DeviceList, LatencyMeasurement, LiveRequest, LiveStatus, LiveStream, LiveVoice,
    RecordedSession,
};
use timbre_nn::stream::StreamParams;

pub(crate) fn stream<'a>(state: &'a State<'_, AppState>) -> MutexGuard<'a, Option<LiveStream>> {
    state.live.lock().unwrap_or_else(|p| p.into_inner())
}

/// Asking the audio backend for its devices can take a moment: a blocking thread does it.
#[tauri::command]
pub async fn list_live_devices() -> CommandResult<DeviceList> {
    Ok(tauri::async_runtime::spawn_blocking(live::devices).await??)
}

/// Loads the models and starts the stream (off the main thread: loading takes a moment).
#[tauri::command]
pub async fn start_live(
    state: State<'_, AppState>,
    request: LiveRequest,
) -> CommandResult<LiveStatus> {
    if stream(&state).is_some() {
        return Err(timbre_core::error::busy("a live stream is already running").into());
    }
    let library = Arc::clone(state.jobs.library());
    let models = Arc::clone(&state.models);
    let started =
        tauri::async_runtime::spawn_blocking(move || LiveStream::start(library, models, request))
            .await??;
    let status = started.status();
    *stream(&state) = Some(started);
    Ok(status)
}

/// The running stream's numbers, or none.
#[tauri::command]
pub fn live_status(state: State<'_, AppState>) -> Option<LiveStatus> {
    stream(&state).as_ref().map(LiveStream::status)
}

/// Changes what the stream runs from its next block: the parameters, the voice (live A/B),
/// passthrough, the gains. Each part left out stays.
#[tauri::command]
pub fn update_live(
    state: State<'_, AppState>,
    params: Option<StreamParams>,
    voice: Option<LiveVoice>,
    passthrough: Option<bool>,
    gains: Option<Gains>,
) -> CommandResult<LiveStatus> {
    let mut slot = stream(&state);
    let live = slot
        .as_mut()
        .ok_or_else(|| timbre_core::error::invalid_input("no live stream is running"))?;
    if let Some(params) = params {
        live.set_params(params)?;
    }
    if let Some(voice) = voice {
        live.set_voice(voice)?;
    }
    if let Some(on) = passthrough {
        live.set_passthrough(on)?;
    }
    if let Some(gains) = gains {
        live.set_gains(gains);
    }
    Ok(live.status())
}

/// Stops the stream; a recorded one's input and output come back as takes.
#[tauri::command]
pub async fn stop_live(state: State<'_, AppState>) -> CommandResult<Option<RecordedSession>> {
    let Some(live) = stream(&state).take() else {
        return Ok(None);
    };
    Ok(tauri::async_runtime::spawn_blocking(move || live.stop()).await??)
}

/// The real round trip through the devices (the stream must be stopped: it needs them).
#[tauri::command]
pub async fn measure_live_latency(
    state: State<'_, AppState>,
    input: Option<String>,
    output: Option<String>,
    block_ms: f64,
    crossfade_ms: f64,
) -> CommandResult<LatencyMeasurement> {
    if stream(&state).is_some() {
        return Err(timbre_core::error::busy(
            "stop the live stream first: the measurement needs its devices",
        )
        .into());
    }
    Ok(tauri::async_runtime::spawn_blocking(move || {
        live::measure_latency(input, output, block_ms, crossfade_ms)
    })
    .await??)
}

/// What a new stream starts with.
#[tauri::command]
pub fn get_live_defaults() -> StreamParams {
    StreamParams::default()
}

/// Queues a `live_tune` job: the smallest block this machine keeps up with for the request.
#[tauri::command]
pub fn tune_live(state: State<'_, AppState>, request: TuneRequest) -> CommandResult<Job> {
    Ok(tune::submit(&state.jobs, request)?)
}
