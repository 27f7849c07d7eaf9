use crate::commands::library::wav_response;
use crate::error::CommandResult;
use crate::state::AppState;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::State;
use tauri::ipc::Response;
use timbre_core::convert::{ConvertInput, ConvertParams, OutputFormat};
use timbre_core::db::{conversions, models, takes};
use timbre_core::error::{invalid_input, not_found};
use timbre_nn::pipeline::ConvertOptions;

/// Queues one `convert` job per (input, model) and returns their ids at once.
#[tauri::command]
pub fn submit_conversions(
    state: State<'_, AppState>,
    inputs: Vec<ConvertInput>,
    model_ids: Vec<i64>,
    options: ConvertOptions,
    format: OutputFormat,
    out_dir: Option<PathBuf>,
) -> CommandResult<Vec<i64>> {
    if inputs.is_empty() || model_ids.is_empty() {
        return Err(invalid_input("choose at least one input and one voice model").into());
    }
    check_exist(&state, &inputs, &model_ids)?;
    let mut job_ids = Vec::with_capacity(inputs.len() * model_ids.len());
    for input in &inputs {
        for &model_id in &model_ids {
            let params = ConvertParams {
                input: input.clone(),
                model_id,
                options: options.clone(),
                format,
                out_dir: out_dir.clone(),
            };
            job_ids.push(
                state
                    .jobs
                    .submit("convert", serde_json::to_value(&params)?)?
                    .id,
            );
        }
    }
    Ok(job_ids)
}

/// Refuses at once what every job would fail on: a missing model, take or file.
fn check_exist(state: &AppState, inputs: &[ConvertInput], model_ids: &[i64]) -> anyhow::Result<()> {
    let conn = state.library().conn();
    for &id in model_ids {
        models::require(&conn, id)?;
    }
    for input in inputs {
        match input {
            ConvertInput::Take(id) => {
                takes::require(&conn, *id)?;
            }
            ConvertInput::File(path) if !path.is_file() => {
                return Err(not_found(format!("{}: no such file", path.display())));
            }
            ConvertInput::File(_) => {}
        }
    }
    Ok(())
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
