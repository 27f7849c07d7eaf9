//! The Convert page: one `convert` job per input and model, the voice's defaults and the ranges
//! the controls offer, the conversions with their output and input audio, and effects presets.

use crate::commands::library::wav_response;
use crate::error::CommandResult;
use crate::state::AppState;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::State;
use tauri::ipc::Response;
use timbre_audio::effects::EffectChain;
use timbre_core::convert::{self, ConvertRequest};
use timbre_core::db::effect_presets::{self, EffectPreset};
use timbre_core::db::{conversions, takes};
use timbre_core::error::not_found;
use timbre_core::input::AudioInput;
use timbre_core::output_format::OutputFormat;
use timbre_nn::pipeline::ConvertOptions;
use timbre_nn::stream::{STREAM_RANGES, StreamRanges};
use timbre_nn::voice::{RANGES, VoiceParams, VoiceRanges};

/// The ranges the app's controls offer: the voice's (the Convert, Cover and Live pages) and
/// the live stream's; the backend refuses anything outside them.
#[derive(Serialize, ts_rs::TS)]
pub struct ParameterRanges {
    voice: VoiceRanges,
    stream: StreamRanges,
}

/// Queues one `convert` job per (input, model) and returns their ids at once.
#[tauri::command]
pub fn submit_conversions(
    state: State<'_, AppState>,
    inputs: Vec<AudioInput>,
    model_ids: Vec<i64>,
    options: ConvertOptions,
    format: OutputFormat,
    out_dir: Option<PathBuf>,
    effects: Option<EffectChain>,
) -> CommandResult<Vec<i64>> {
    let request = ConvertRequest {
        inputs,
        model_ids,
        options,
        format,
        out_dir,
        effects,
    };
    let jobs = convert::submit(&state.jobs, request)?;
    Ok(jobs.into_iter().map(|job| job.id).collect())
}

/// The built-in effects presets, then the saved ones.
#[tauri::command]
pub fn list_effect_presets(state: State<'_, AppState>) -> CommandResult<Vec<EffectPreset>> {
    Ok(effect_presets::list(&state.library().conn())?)
}

/// Saves `chain` as the preset `name`, replacing a saved one of that name.
#[tauri::command]
pub fn save_effect_preset(
    state: State<'_, AppState>,
    name: String,
    chain: EffectChain,
) -> CommandResult<EffectPreset> {
    Ok(state
        .library()
        .edit(|conn| effect_presets::save(conn, &name, &chain))?)
}

#[tauri::command]
pub fn delete_effect_preset(state: State<'_, AppState>, name: String) -> CommandResult<()> {
    state
        .library()
        .edit(|conn| effect_presets::delete(conn, &name))?;
    Ok(())
}

/// The voice parameters a conversion takes unless told otherwise, for the Convert page's form;
/// the page sends them back as `options` (the offline options keep their defaults).
#[tauri::command]
pub fn get_conversion_defaults() -> VoiceParams {
    ConvertOptions::default().voice
}

#[tauri::command]
pub fn get_parameter_ranges() -> ParameterRanges {
    ParameterRanges {
        voice: RANGES,
        stream: STREAM_RANGES,
    }
}

/// Every conversion, newest first, or those of one input (by content hash).
#[tauri::command]
pub fn list_conversions(
    state: State<'_, AppState>,
    input_sha256: Option<String>,
) -> CommandResult<Vec<conversions::Conversion>> {
    Ok(conversions::list(
        &state.library().conn(),
        input_sha256.as_deref(),
    )?)
}

/// A conversion's output as WAV bytes for Web Audio, decoded on a blocking thread.
#[tauri::command]
pub async fn get_conversion_audio(state: State<'_, AppState>, id: i64) -> CommandResult<Response> {
    let jobs = Arc::clone(&state.jobs);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let library = jobs.library();
        let conversion = conversions::require(&library.conn(), id)?;
        wav_response(&library.conversion_path(&conversion))
    })
    .await??;
    Ok(audio)
}

/// The input a conversion was made from, as WAV bytes: the take while it exists, else the file;
/// decoded on a blocking thread.
#[tauri::command]
pub async fn get_conversion_input_audio(
    state: State<'_, AppState>,
    id: i64,
) -> CommandResult<Response> {
    let jobs = Arc::clone(&state.jobs);
    let audio = tauri::async_runtime::spawn_blocking(move || {
        let library = jobs.library();
        let path = {
            let conn = library.conn();
            let conversion = conversions::require(&conn, id)?;
            let take = match conversion.input_take_id {
                Some(take_id) => takes::get(&conn, take_id)?,
                None => None,
            };
            match (take, conversion.input_path) {
                (Some(take), _) => library.take_path(&take),
                (None, Some(path)) => PathBuf::from(path),
                (None, None) => {
                    return Err(not_found(format!("the input of conversion {id} is gone")));
                }
            }
        };
        wav_response(&path)
    })
    .await??;
    Ok(audio)
}

#[tauri::command]
pub fn delete_conversion(state: State<'_, AppState>, id: i64) -> CommandResult<()> {
    state.library().delete_conversion(id)?;
    Ok(())
}
