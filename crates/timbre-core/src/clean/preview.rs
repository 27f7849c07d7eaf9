//! The sample preview (UVR's sample mode): the chosen cleaning on a short excerpt, returned
//! with the excerpt itself and stored nowhere, so a setting can be judged before a batch runs.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::enhance::{EnhanceOptions, enhance};
use timbre_audio::{AudioBuffer, DecodeOptions};

use crate::input::AudioInput;
use crate::library::Library;
use crate::model_cache::ModelCache;
use crate::progress::ProgressBridge;
use crate::separation::{IsolationMethod, Separators, choose_model, separate_audio};

/// The excerpt's length unless asked otherwise.
pub const PREVIEW_SECS: f64 = 10.0;

fn default_secs() -> f64 {
    PREVIEW_SECS
}

/// What to preview: the steps of a cleaning batch, on one input.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct PreviewRequest {
    /// The take or file to take the excerpt from; it is only read.
    pub input: AudioInput,
    /// Where the excerpt starts, in seconds; None: the loudest stretch of the input.
    #[serde(default)]
    pub start_secs: Option<f64>,
    /// Length of the excerpt in seconds, within `PREVIEW_SECS_RANGE`; 10 when absent.
    #[serde(default = "default_secs")]
    pub secs: f64,
    /// Isolation first (its vocals go on to enhancement); None skips it.
    #[serde(default)]
    pub isolation: Option<IsolationMethod>,
    /// Enhancement; None skips it.
    #[serde(default)]
    pub enhance: Option<EnhanceOptions>,
}

/// What the preview did, for the UI.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct PreviewInfo {
    /// Where the excerpt starts in the input, in seconds.
    pub start_secs: f64,
    /// Length of the excerpt in seconds (shorter than asked when the input ends first).
    pub secs: f64,
    /// The whole input's length.
    pub input_secs: f64,
    /// Isolated by the weight-free rough preview, not a model.
    pub rough_preview: bool,
    /// The separation model used.
    pub model: Option<String>,
    /// What the user should know about the result, from separation and enhancement.
    pub notes: Vec<String>,
}

/// The excerpt as it was and as cleaned.
pub struct Preview {
    /// The excerpt as it is in the input.
    pub original: AudioBuffer,
    /// The excerpt after the chosen steps (the vocals, when isolation ran).
    pub cleaned: AudioBuffer,
    /// What the preview did.
    pub info: PreviewInfo,
}

/// The first frame of the loudest `frames`-long stretch of `audio` (in steps of a tenth of a
/// second), 0 when the audio is no longer than that.
pub fn loudest_start(audio: &AudioBuffer, frames: usize) -> usize {
    let total = audio.frames();
    if frames == 0 || total <= frames {
        return 0;
    }
    let step = (audio.sample_rate as usize / 10).max(1);
    let blocks = total.div_ceil(step);
    let energy: Vec<f64> = (0..blocks)
        .map(|b| {
            let range = b * step..((b + 1) * step).min(total);
            audio
                .channels
                .iter()
                .map(|c| {
                    c[range.clone()]
                        .iter()
                        .map(|&x| f64::from(x * x))
                        .sum::<f64>()
                })
                .sum()
        })
        .collect();
    let window = frames.div_ceil(step);
    let mut sum: f64 = energy[..window].iter().sum();
    let (mut best, mut best_sum) = (0, sum);
    for b in 1..blocks {
        if b * step + frames > total {
            break;
        }
        sum += energy.get(b + window - 1).copied().unwrap_or(0.0) - energy[b - 1];
        if sum > best_sum + 1e-12 {
            (best, best_sum) = (b, sum);
        }
    }
    best * step
}

/// `frames` frames of `audio` from `start` (fewer at the end).
pub fn excerpt(audio: &AudioBuffer, start: usize, frames: usize) -> AudioBuffer {
    let start = start.min(audio.frames());
    let end = start.saturating_add(frames).min(audio.frames());
    let channels = audio
        .channels
        .iter()
        .map(|c| c[start..end].to_vec())
        .collect();
    AudioBuffer::new(audio.sample_rate, channels)
}

/// Runs the request's steps on its excerpt. Nothing is stored: a file input is only read.
pub fn preview(
    library: &Library,
    models: &ModelCache,
    request: &PreviewRequest,
) -> Result<Preview> {
    if request.isolation.is_none() && request.enhance.is_none() {
        return Err(crate::error::invalid_input(
            "choose isolation, enhancement or both to preview",
        ));
    }
    let (min, max) = super::PREVIEW_SECS_RANGE;
    crate::error::check_range("secs", request.secs, min, max)?;
    if let Some(options) = &request.enhance {
        super::check_enhance_options(options)?;
    }
    let settings = library.settings()?;
    models.set_budget_mb(settings.model_cache_mb);
    let separators = Separators::new(models, crate::devices::Devices::of(&settings)?.main);
    let model = match &request.isolation {
        Some(method) => choose_model(method, &crate::models_folder::of(library)?)?,
        None => None,
    };
    let path = request.input.resolve(library)?.path;
    let options = DecodeOptions {
        max_duration_secs: Some(settings.max_import_duration_secs),
    };
    let audio = timbre_audio::decode_file(&path, &options)
        .with_context(|| format!("{}: cannot preview", path.display()))?;
    let rate = f64::from(audio.sample_rate);
    let frames = (request.secs * rate).round() as usize;
    let start = match request.start_secs {
        Some(secs) => {
            let last = audio.frames().saturating_sub(frames);
            ((secs.max(0.0) * rate).round() as usize).min(last)
        }
        None => loudest_start(&audio, frames),
    };
    let original = excerpt(&audio, start, frames);
    let mut info = PreviewInfo {
        start_secs: start as f64 / rate,
        secs: original.duration_secs(),
        input_secs: audio.duration_secs(),
        rough_preview: request.isolation.is_some() && model.is_none(),
        model: model.as_ref().map(|m| m.name.clone()),
        notes: Vec::new(),
    };
    drop(audio);
    let never_stop = |_: f64, _: String| Ok(());
    let mut bridge = ProgressBridge::new(&never_stop);
    let mut cleaned = original.clone();
    if request.isolation.is_some() {
        let label = "preview";
        let separated = separate_audio(
            &separators,
            model.as_ref(),
            cleaned,
            &mut bridge,
            label,
            &mut info.notes,
        )?;
        cleaned = separated.0;
    }
    if let Some(options) = &request.enhance {
        let (enhanced, report) =
            enhance(cleaned, options, &mut |_, _| true).map_err(|err| bridge.error(err))?;
        info.notes.extend(report.notes);
        if report.seconds_trimmed.is_some_and(|s| s > 0.0) {
            info.notes.push(
                "pauses were trimmed: the cleaned excerpt is shorter, so A/B drifts apart".into(),
            );
        }
        cleaned = enhanced;
    }
    Ok(Preview {
        original,
        cleaned,
        info,
    })
}
