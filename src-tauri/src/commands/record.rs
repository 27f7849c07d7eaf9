use crate::error::CommandResult;
use crate::state::AppState;
use anyhow::Context;
use serde::Serialize;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use tauri::State;
use tauri::ipc::Channel;
use timbre_audio::AudioBuffer;
use timbre_audio::record::{self, InputDevice, RecordOptions, Recording};
use timbre_core::db::takes::Take;

const MAX_RECORDING_SECS: f64 = 3.0 * 3600.0;

/// A capture running on its own thread, which owns the audio stream.
pub struct ActiveRecording {
    stop: Sender<()>,
    captured: Receiver<Result<AudioBuffer, timbre_audio::AudioError>>,
}

impl ActiveRecording {
    fn finish(self) -> anyhow::Result<AudioBuffer> {
        let _ = self.stop.send(());
        Ok(self
            .captured
            .recv()
            .context("the recording thread ended unexpectedly")??)
    }
}

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
    let mut slot = state.recording.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return Err(timbre_core::error::busy("a recording is already running").into());
    }
    let (started_tx, started) = channel();
    let (stop, stop_requested) = channel::<()>();
    let (captured_tx, captured) = channel();
    std::thread::spawn(move || {
        let options = RecordOptions {
            device,
            max_duration_secs: Some(MAX_RECORDING_SECS),
        };
        let recording = Recording::start(options, move |level, seconds| {
            let _ = on_level.send(LevelUpdate {
                peak: level.peak,
                rms: level.rms,
                clipping: level.clipping,
                seconds,
            });
        });
        match recording {
            Err(err) => {
                let _ = started_tx.send(Err(err));
            }
            Ok(recording) => {
                let _ = started_tx.send(Ok(()));
                let _ = stop_requested.recv();
                let _ = captured_tx.send(recording.stop());
            }
        }
    });
    started
        .recv()
        .context("the recording thread ended before starting")??;
    *slot = Some(ActiveRecording { stop, captured });
    Ok(())
}

fn take_active(state: &AppState) -> anyhow::Result<ActiveRecording> {
    state
        .recording
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .ok_or_else(|| timbre_core::error::invalid_input("no recording is running"))
}

/// Waits for the capture thread's audio and saves it as a take (encoded, stored and described)
/// on a blocking thread.
#[tauri::command]
pub async fn stop_recording(
    state: State<'_, AppState>,
    name: Option<String>,
    voice_id: Option<i64>,
) -> CommandResult<Take> {
    let recording = take_active(&state)?;
    let jobs = Arc::clone(&state.jobs);
    let take = tauri::async_runtime::spawn_blocking(move || {
        let audio = recording.finish()?;
        timbre_core::import::save_recording(jobs.library(), &audio, name.as_deref(), voice_id)
    })
    .await??;
    Ok(take)
}

#[tauri::command]
pub fn cancel_recording(state: State<'_, AppState>) -> CommandResult<()> {
    take_active(&state)?.finish()?;
    Ok(())
}
