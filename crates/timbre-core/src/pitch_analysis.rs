//! The pitch analysis operation: an input's pitch curve as conversion would track it, for the
//! pitch view and `timbre analyze`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_nn::pipeline::F0Method;

use crate::input::AudioInput;
use crate::library::Library;
use crate::model_cache::ModelCache;
use crate::models_folder;
use crate::pitch::{PitchModel, model_file, tracker};

/// The pitch of an input as the converter tracks it, per 10 ms frame.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct PitchCurve {
    /// The input's name.
    pub input: String,
    /// The pitch method that tracked it.
    pub method: F0Method,
    /// Seconds per frame: 0.01.
    pub frame_secs: f64,
    /// Hz per frame, 0 where unvoiced (conversion fills those by interpolation).
    pub f0: Vec<f32>,
    /// Frames with a pitch (`f0` above 0).
    pub voiced_frames: usize,
    /// The median of the voiced frames.
    pub median_hz: Option<f32>,
}

/// Tracks the pitch of `input` with `method`, its model from `models` on the library's device.
pub fn analyze(
    library: &Library,
    models: &ModelCache,
    input: &AudioInput,
    method: F0Method,
) -> Result<PitchCurve> {
    let settings = library.settings()?;
    let device = crate::devices::Devices::of(&settings)?.main;
    let file = model_file(&models_folder::of(library)?, method)?;
    let model = match &file {
        Some(file) => PitchModel::load(models, method, file, device)?,
        None => None,
    };
    let (input, audio_16k) =
        crate::voice_engine::load_input(library, input, settings.max_import_duration_secs)?;
    let held = model.as_ref().map(PitchModel::lock);
    let tracker = tracker(method, held.as_ref())?;
    let f0 = timbre_nn::pipeline::pitch_curve(&audio_16k, &tracker)
        .with_context(|| format!("{}: tracking its pitch", input.name))?;
    let mut voiced: Vec<f32> = f0.iter().copied().filter(|f| *f > 0.0).collect();
    voiced.sort_by(f32::total_cmp);
    Ok(PitchCurve {
        input: input.name,
        method,
        frame_secs: 0.01,
        voiced_frames: voiced.len(),
        median_hz: voiced.get(voiced.len() / 2).copied(),
        f0,
    })
}
