//! What the CLI and the app ask of a cleaning: one request, checked once, then one job per
//! input: `isolate` (its vocals then enhanced when enhancement is chosen too) or `enhance`.

use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use timbre_audio::enhance::EnhanceOptions;

use super::{EnhanceParams, IsolateParams, enhance, isolate};
use crate::db::jobs::Job;
use crate::error::{check_range, invalid_input};
use crate::input::{self, AudioInput};
use crate::jobs::JobSystem;
use crate::output_format::OutputFormat;
use crate::separation::{IsolationMethod, choose_model};

/// A cleaning batch as the CLI or the app asks for it: the same steps on every input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CleanRequest {
    /// The takes or files to clean, one job each; at least one.
    pub inputs: Vec<AudioInput>,
    /// Isolation first; None: enhancement alone.
    #[serde(default)]
    pub isolation: Option<IsolationMethod>,
    /// Enhancement (of the vocals, after isolation); None: isolation alone.
    #[serde(default)]
    pub enhance: Option<EnhanceOptions>,
    /// Isolate only this many seconds from the middle of each input (UVR's sample mode).
    #[serde(default)]
    pub preview_secs: Option<f64>,
    /// How results are encoded; lossless formats only, 32-bit float WAV unless given.
    #[serde(default = "super::default_format")]
    pub format: OutputFormat,
    /// Also copy the results into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// The range of a preview (`preview_secs` of a cleaning, `secs` of a sample preview), seconds.
pub const PREVIEW_SECS_RANGE: (f64, f64) = (0.5, 3600.0);

/// Refuses enhancement settings outside their ranges, naming the setting.
pub fn check_enhance_options(options: &EnhanceOptions) -> Result<()> {
    if let Some(hz) = options.high_pass_hz {
        check_range("high_pass_hz", hz, 10.0, 1000.0)?;
    }
    if let Some(strength) = options.denoise_strength {
        check_range("denoise_strength", strength, 0.0, 1.0)?;
    }
    if let Some(trim) = &options.trim {
        check_range("margin_secs", trim.margin_secs, 0.0, 10.0)?;
        if let Some(pause) = trim.max_pause_secs {
            check_range("max_pause_secs", pause, 0.05, 60.0)?;
        }
        check_range("aggressiveness", trim.aggressiveness, 0, 3)?;
    }
    if let Some(lufs) = options.loudness_lufs {
        check_range("loudness_lufs", lufs, -60.0, -5.0)?;
    }
    if let Some(ceiling) = options.true_peak_ceiling_db {
        check_range("true_peak_ceiling_db", ceiling, -20.0, 0.0)?;
    }
    Ok(())
}

/// Checks the request (steps, settings, the separation model, inputs) and queues one job per
/// input.
pub fn submit(system: &JobSystem, request: CleanRequest) -> Result<Vec<Job>> {
    if request.inputs.is_empty() {
        return Err(invalid_input("choose at least one take or file to clean"));
    }
    if request.isolation.is_none() && request.enhance.is_none() {
        return Err(invalid_input("choose isolation, enhancement or both"));
    }
    if let Some(options) = &request.enhance {
        check_enhance_options(options)?;
    }
    if !request.format.is_lossless() {
        return Err(invalid_input(
            "cleaned takes are kept lossless: choose wav16, wav24, wav-float or flac",
        ));
    }
    if let Some(secs) = request.preview_secs {
        if request.isolation.is_none() {
            return Err(invalid_input(
                "preview_secs samples an isolation: choose one",
            ));
        }
        let (min, max) = PREVIEW_SECS_RANGE;
        check_range("preview_secs", secs, min, max)?;
    }
    let library = system.library();
    if let Some(method) = &request.isolation {
        choose_model(method, &crate::models_folder::of(library)?)?;
    }
    input::check_all(library, &request.inputs)?;
    let out_dir = request
        .out_dir
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    let mut jobs = Vec::with_capacity(request.inputs.len());
    for input in request.inputs {
        let input = input.absolute()?;
        let (kind, params) = match &request.isolation {
            Some(method) => (
                isolate::KIND,
                serde_json::to_value(IsolateParams {
                    input,
                    method: method.clone(),
                    preview_secs: request.preview_secs,
                    enhance: request.enhance.clone(),
                    format: request.format,
                    out_dir: out_dir.clone(),
                })?,
            ),
            None => (
                enhance::KIND,
                serde_json::to_value(EnhanceParams {
                    input,
                    options: request.enhance.clone().unwrap_or_default(),
                    format: request.format,
                    out_dir: out_dir.clone(),
                })?,
            ),
        };
        jobs.push(system.submit(kind, params)?);
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use timbre_audio::enhance::Preset;

    #[test]
    fn enhancement_settings_outside_their_ranges_are_refused_by_name() {
        for preset in [Preset::Training, Preset::Natural] {
            assert!(check_enhance_options(&preset.options()).is_ok());
        }
        let mut loud = Preset::Training.options();
        loud.loudness_lufs = Some(1000.0);
        let err = check_enhance_options(&loud).unwrap_err().to_string();
        assert_eq!(err, "loudness_lufs must be between -60 and -5, not 1000");
        let mut ceiling = Preset::Natural.options();
        ceiling.true_peak_ceiling_db = Some(50.0);
        let err = check_enhance_options(&ceiling).unwrap_err().to_string();
        assert!(
            err.starts_with("true_peak_ceiling_db must be between -20 and 0"),
            "{err}"
        );
    }

    #[test]
    fn a_request_without_steps_or_with_an_empty_preview_queues_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let library = std::sync::Arc::new(crate::Library::open(dir.path()).unwrap());
        let system =
            JobSystem::new(library, crate::handlers::job_handlers(&Default::default())).unwrap();
        let file = dir.path().join("mix.wav");
        std::fs::write(&file, b"").unwrap();
        let request = CleanRequest {
            inputs: vec![AudioInput::File(file)],
            isolation: None,
            enhance: None,
            preview_secs: None,
            format: OutputFormat::WavFloat,
            out_dir: None,
        };
        let err = submit(&system, request.clone()).unwrap_err().to_string();
        assert!(
            err.contains("choose isolation, enhancement or both"),
            "{err}"
        );
        let lossy = CleanRequest {
            isolation: Some(IsolationMethod::Rough),
            format: OutputFormat::Mp3,
            ..request.clone()
        };
        let err = submit(&system, lossy).unwrap_err().to_string();
        assert!(err.starts_with("cleaned takes are kept lossless"), "{err}");
        let preview = CleanRequest {
            isolation: Some(IsolationMethod::Rough),
            preview_secs: Some(0.0),
            ..request
        };
        let err = submit(&system, preview).unwrap_err().to_string();
        assert!(
            err.starts_with("preview_secs must be between 0.5 and 3600, not 0"),
            "{err}"
        );
        assert!(
            crate::db::jobs::list(&system.library().conn(), 10)
                .unwrap()
                .is_empty()
        );
    }
}
