//! Which device trains and converts, and which prepares datasets (the `device` and
//! `extraction_device` settings; see `timbre_core::devices`).

use crate::error::CommandResult;
use crate::state::AppState;
use tauri::State;
use timbre_core::devices::{self, DeviceReport};
use timbre_core::settings::Settings;

#[tauri::command]
pub fn get_device_report(state: State<'_, AppState>) -> CommandResult<DeviceReport> {
    Ok(devices::report(&state.library().settings()?))
}

/// Stores both settings (empty: automatic); the job system follows them from its next job.
#[tauri::command]
pub fn set_devices(
    state: State<'_, AppState>,
    device: String,
    extraction_device: String,
) -> CommandResult<DeviceReport> {
    let conn = state.library().conn();
    let as_json = |name: &str| serde_json::Value::String(name.trim().into()).to_string();
    Settings::set(&conn, "device", &as_json(&device))?;
    let settings = Settings::set(&conn, "extraction_device", &as_json(&extraction_device))?;
    drop(conn);
    state.jobs.devices_changed()?;
    Ok(devices::report(&settings))
}
