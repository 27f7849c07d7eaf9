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
use crate::error::check_range;
use crate::input::{self, AudioInput};
use crate::jobs::JobSystem;
use crate::output_format::OutputFormat;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConvertRequest {
    pub inputs: Vec<AudioInput>,
    pub model_ids: Vec<i64>,
    #[serde(default)]
    pub options: ConvertOptions,
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
    pub conversion: Conversion,
    /// The copy in `out_dir`, else the file in the store.
    pub output_path: PathBuf,
    pub input_seconds: f64,
    /// The whole job's time.
    pub seconds: f64,
    pub analysis_seconds: f64,
    pub render_seconds: f64,
    pub analysis_cache: CacheUse,
    pub voice_cache: CacheUse,
}

/// Refuses options outside their ranges, naming the option.
pub fn check_options(options: &ConvertOptions) -> Result<()> {
    check_range("transpose", options.transpose, -48.0, 48.0)?;
    check_range("index_rate", options.index_rate, 0.0, 1.0)?;
    check_range("protect", options.protect, 0.0, 0.5)?;
    check_range("rms_mix_rate", options.rms_mix_rate, 0.0, 1.0)?;
    check_range("speaker_id", options.speaker_id, 0, 10_000)?;
    check_range("formant_shift", options.formant_shift, -2.0, 2.0)?;
    if let Some(autotune) = options.autotune {
        check_range("autotune strength", autotune.strength, 0.0, 1.0)?;
    }
    if let Some(rate) = options.resample_rate {
        // The render leaves the model's rate alone below 16 kHz.
        check_range("resample_rate", rate, 16_000, 192_000)?;
    }
    Ok(())
}

/// Checks the request (options, models, inputs) and queues one job per (input, model), input
/// by input.
pub fn submit(system: &JobSystem, request: ConvertRequest) -> Result<Vec<Job>> {
    if request.inputs.is_empty() || request.model_ids.is_empty() {
        return Err(crate::error::invalid_input(
            "choose at least one input and one voice model",
        ));
    }
    check_options(&request.options)?;
    if let Some(chain) = &request.effects {
        chain
            .check()
            .map_err(|e| crate::error::invalid_input(format!("effects: {e}")))?;
    }
    let library = system.library();
    for &id in &request.model_ids {
        models::require(&library.conn(), id)?;
    }
    input::check_all(library, &request.inputs)?;
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
    fn options_outside_their_ranges_are_refused_by_name() {
        assert!(check_options(&ConvertOptions::default()).is_ok());
        let refused = |options: ConvertOptions| check_options(&options).unwrap_err().to_string();
        let err = refused(ConvertOptions {
            protect: 7.0,
            ..Default::default()
        });
        assert_eq!(err, "protect must be between 0 and 0.5, not 7");
        let err = refused(ConvertOptions {
            transpose: f32::NAN,
            ..Default::default()
        });
        assert!(
            err.starts_with("transpose must be between -48 and 48"),
            "{err}"
        );
        let err = refused(ConvertOptions {
            rms_mix_rate: -3.0,
            ..Default::default()
        });
        assert!(err.contains("rms_mix_rate") && err.contains("-3"), "{err}");
        let err = refused(ConvertOptions {
            formant_shift: 5.0,
            ..Default::default()
        });
        assert_eq!(err, "formant_shift must be between -2 and 2, not 5");
        let err = refused(ConvertOptions {
            autotune: Some(timbre_nn::pipeline::Autotune {
                scale: timbre_nn::pipeline::Scale::Chromatic,
                strength: 1.5,
            }),
            ..Default::default()
        });
        assert!(
            err.starts_with("autotune strength must be between 0 and 1"),
            "{err}"
        );
        for rate in [1, 10_000_000] {
            let err = refused(ConvertOptions {
                resample_rate: Some(rate),
                ..Default::default()
            });
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
        let system = JobSystem::new(library, crate::job_handlers(&Default::default())).unwrap();
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
