//! What the CLI and the app ask of conversions: one request, checked once, then one `convert`
//! job per (input, model).

use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use timbre_audio::effects::EffectChain;
use timbre_nn::pipeline::ConvertOptions;

use super::{CacheUse, ConvertParams, KIND};
use crate::db::conversions::Conversion;
use crate::db::jobs::Job;
use crate::db::models;
use crate::input::AudioInput;
use crate::jobs::JobSystem;
use crate::library::Library;
use crate::out_folder;
use crate::output_format::OutputFormat;
use crate::voice_engine::check_options;

/// A batch of conversions: every input through every model, with the same settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConvertRequest {
    /// The takes or files to convert; at least one.
    pub inputs: Vec<AudioInput>,
    /// Ids of the voice models to convert with; at least one.
    pub model_ids: Vec<i64>,
    /// Conversion settings (pitch shift, f0 method, index rate, …), checked against their ranges.
    #[serde(default)]
    pub options: ConvertOptions,
    /// How each result is encoded; 16-bit WAV unless given.
    #[serde(default)]
    pub format: OutputFormat,
    /// Also write each result into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// Run over the converted audio before it is encoded; none leaves the conversion as is.
    #[serde(default)]
    pub effects: Option<EffectChain>,
}

/// What a `convert` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct ConvertResult {
    /// The conversion as saved in the library.
    pub conversion: Conversion,
    /// The copy in `out_dir`, else the file in the store.
    pub output_path: PathBuf,
    /// Length of the input in seconds.
    pub input_seconds: f64,
    /// The whole job's time.
    pub seconds: f64,
    /// Time spent on the analysis (content features and pitch) in seconds; near 0 when cached.
    pub analysis_seconds: f64,
    /// Time spent rendering the voice from the analysis, in seconds.
    pub render_seconds: f64,
    /// Where the input's analysis came from: memory, disk, or computed afresh.
    pub analysis_cache: CacheUse,
    /// Whether the voice model was already loaded in memory or loaded for this job.
    pub voice_cache: CacheUse,
}

/// Checks a request before anything is stored or queued: its options and effects, the models
/// it names, its inputs, and that the output folder takes each result's copy under the name it
/// will have. `pending_model` names a model file that is imported only once the request passes
/// (its results are checked under that name).
pub fn check(
    library: &Library,
    request: &ConvertRequest,
    pending_model: Option<&str>,
) -> Result<()> {
    check_options(&request.options)?;
    if let Some(chain) = &request.effects {
        chain
            .check()
            .map_err(|e| crate::error::invalid_input(format!("effects: {e}")))?;
    }
    let mut model_names = request
        .model_ids
        .iter()
        .map(|&id| Ok(models::require(&library.conn(), id)?.name))
        .collect::<Result<Vec<String>>>()?;
    model_names.extend(pending_model.map(String::from));
    let inputs = request
        .inputs
        .iter()
        .map(|input| input.resolve(library))
        .collect::<Result<Vec<_>>>()?;
    if let Some(dir) = &request.out_dir {
        for input in &inputs {
            for model in &model_names {
                out_folder::check(
                    dir,
                    &out_folder::conversion_stem(&input.name, model),
                    request.format.extension(),
                )?;
            }
        }
    }
    Ok(())
}

/// Checks the request (see [`check`]) and queues one job per (input, model), input by input.
pub fn submit(system: &JobSystem, request: ConvertRequest) -> Result<Vec<Job>> {
    if request.inputs.is_empty() || request.model_ids.is_empty() {
        return Err(crate::error::invalid_input(
            "choose at least one input and one voice model",
        ));
    }
    check(system.library(), &request, None)?;
    let out_dir = request
        .out_dir
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    let mut jobs = Vec::with_capacity(request.inputs.len() * request.model_ids.len());
    for input in request.inputs {
        let input = input.absolute()?;
        for &model_id in &request.model_ids {
            let params = ConvertParams {
                input: input.clone(),
                model_id,
                options: request.options.clone(),
                format: request.format,
                out_dir: out_dir.clone(),
                effects: request.effects.clone(),
            };
            jobs.push(system.submit(KIND, serde_json::to_value(&params)?)?);
        }
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_outside_their_ranges_are_refused_by_name_as_bad_input() {
        assert!(check_options(&ConvertOptions::default()).is_ok());
        let refused = |options: ConvertOptions| check_options(&options).unwrap_err();
        let err = refused(ConvertOptions {
            voice: timbre_nn::voice::VoiceParams {
                protect: 7.0,
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(err.to_string(), "protect must be between 0 and 0.5, not 7");
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::InvalidInput);
        for rate in [1, 10_000_000] {
            let err = refused(ConvertOptions {
                resample_rate: Some(rate),
                ..Default::default()
            })
            .to_string();
            assert!(
                err.contains("resample_rate must be between 16000 and 192000"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_request_for_a_missing_model_or_input_queues_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let library = std::sync::Arc::new(crate::Library::open(dir.path()).unwrap());
        let system =
            JobSystem::new(library, crate::handlers::job_handlers(&Default::default())).unwrap();
        let request = ConvertRequest {
            inputs: vec![AudioInput::Take(1)],
            model_ids: vec![1],
            options: ConvertOptions::default(),
            format: OutputFormat::Wav16,
            out_dir: None,
            effects: None,
        };
        let err = submit(&system, request.clone()).unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
        let none = ConvertRequest {
            model_ids: vec![],
            ..request
        };
        assert!(submit(&system, none).is_err());
        let jobs = crate::db::jobs::list(&system.library().conn(), 10).unwrap();
        assert!(jobs.is_empty());
    }
}
