//! Speech enhancement without downloads: mono fold-down, high-pass, de-click, RNNoise denoising,
//! silence trimming, loudness normalisation and a true-peak limiter, each optional, in that
//! order. Every step works in place on the buffer (long files go through the resampling steps
//! block by block), so an hour of audio needs little more memory than itself.

mod denoise;
pub(crate) mod filters;
pub(crate) mod level;
#[cfg(test)]
mod tests;
mod vad;

use serde::{Deserialize, Serialize};

use crate::buffer::AudioBuffer;
use crate::error::AudioError;

pub use denoise::Rnnoise;
pub use level::{Limited, TruePeakLimiter};
pub use vad::{SpeechDetector, TrimOptions};

/// A step's progress as a fraction in 0..=1; returning false cancels the processing.
pub type Progress<'a> = dyn FnMut(f64) -> bool + 'a;

/// Why enhancement (or isolation, which shares it) stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error(transparent)]
    /// Reading, resampling or processing the audio failed.
    Audio(#[from] AudioError),
    #[error("cancelled")]
    /// The progress callback returned false.
    Cancelled,
}

/// Which steps run, and how. Missing fields take the training preset's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
pub struct EnhanceOptions {
    /// Average the channels into one.
    pub mono: bool,
    /// Cutoff of the high-pass, in Hz.
    pub high_pass_hz: Option<f64>,
    /// Find and repair clicks (short impulsive spikes).
    pub declick: bool,
    /// RNNoise, blended with the original: 1 is fully denoised.
    pub denoise_strength: Option<f32>,
    /// Cut leading and trailing silence and shorten long pauses; `None` keeps them.
    pub trim: Option<TrimOptions>,
    /// Integrated loudness to normalise to (EBU R128).
    pub loudness_lufs: Option<f64>,
    /// Ceiling of the true-peak limiter, in dBTP.
    pub true_peak_ceiling_db: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "EnhancePreset")]
/// Named sets of [`EnhanceOptions`] for common uses.
pub enum Preset {
    /// Clean speech for training: mono, rumble and noise removed, pauses shortened, -20 LUFS.
    Training,
    /// Keep natural: channels and pauses kept, noise only halved, -23 LUFS.
    Natural,
}

impl Preset {
    /// The options this preset stands for.
    pub fn options(self) -> EnhanceOptions {
        match self {
            Preset::Training => EnhanceOptions {
                mono: true,
                high_pass_hz: Some(80.0),
                declick: true,
                denoise_strength: Some(1.0),
                trim: Some(TrimOptions::default()),
                loudness_lufs: Some(-20.0),
                true_peak_ceiling_db: Some(-1.0),
            },
            Preset::Natural => EnhanceOptions {
                mono: false,
                high_pass_hz: Some(40.0),
                declick: true,
                denoise_strength: Some(0.5),
                trim: None,
                loudness_lufs: Some(-23.0),
                true_peak_ceiling_db: Some(-1.0),
            },
        }
    }
}

impl Default for EnhanceOptions {
    fn default() -> Self {
        Preset::Training.options()
    }
}

/// What each step did; `None` where a step did not run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct EnhanceReport {
    /// Channels of the input.
    pub channels_in: u16,
    /// Channels of the result (1 after the mono fold-down).
    pub channels_out: u16,
    /// Length of the input, in seconds.
    pub seconds_in: f64,
    /// Length of the result, in seconds (shorter after trimming).
    pub seconds_out: f64,
    /// Cutoff of the high-pass applied, in Hz; `None` also when it was skipped as above Nyquist.
    pub high_pass_hz: Option<f64>,
    /// Clicks repaired, over all channels.
    pub clicks_repaired: Option<usize>,
    /// Energy taken out by the denoiser, in dB.
    pub noise_removed_db: Option<f64>,
    /// Silence cut by trimming, in seconds; `None` also when no speech was found.
    pub seconds_trimmed: Option<f64>,
    /// Stretches of speech the detector found.
    pub speech_segments: Option<usize>,
    /// Integrated loudness before normalisation, in LUFS.
    pub loudness_before_lufs: Option<f64>,
    /// Gain normalisation applied, in dB (raising is capped at +24 dB).
    pub gain_db: Option<f64>,
    /// Separate excursions over the true-peak ceiling that the limiter held down.
    pub peaks_limited: Option<usize>,
    /// Deepest gain reduction of the limiter, in dB (positive; 0 when nothing was limited).
    pub max_limiting_db: Option<f64>,
    /// Integrated loudness of the result.
    pub loudness_lufs: Option<f64>,
    /// Steps that had nothing to work on, in plain words.
    pub notes: Vec<String>,
}

/// Shares of the whole job, for progress: denoising dominates.
const STAGES: [(&str, f64); 6] = [
    ("high-pass", 0.04),
    ("de-click", 0.06),
    ("denoise", 0.6),
    ("trim", 0.15),
    ("loudness", 0.05),
    ("limit", 0.1),
];

/// Runs the chosen steps over `buffer`. `progress(fraction, step)`: returning false cancels.
pub fn enhance(
    mut buffer: AudioBuffer,
    options: &EnhanceOptions,
    progress: &mut dyn FnMut(f64, &str) -> bool,
) -> Result<(AudioBuffer, EnhanceReport), ProcessError> {
    let rate = buffer.sample_rate;
    let mut report = EnhanceReport {
        channels_in: buffer.channel_count(),
        seconds_in: buffer.duration_secs(),
        ..EnhanceReport::default()
    };
    if options.mono && buffer.channels.len() > 1 {
        fold_to_mono(&mut buffer);
    }
    if let Some(cutoff) = options.high_pass_hz {
        let mut applied = true;
        for channel in &mut buffer.channels {
            applied &= filters::high_pass(channel, rate, cutoff);
        }
        if applied {
            report.high_pass_hz = Some(cutoff);
        } else {
            report.notes.push(format!(
                "high-pass skipped: {cutoff} Hz is not below half the {rate} Hz sample rate"
            ));
        }
        check(&mut stage(progress, 0), 1.0)?;
    }
    if options.declick {
        let repaired = buffer
            .channels
            .iter_mut()
            .map(|c| filters::declick(c, rate))
            .sum();
        report.clicks_repaired = Some(repaired);
        check(&mut stage(progress, 1), 1.0)?;
    }
    if let Some(strength) = options.denoise_strength {
        let count = buffer.channels.len().max(1) as f64;
        let (mut before, mut after) = (0.0, 0.0);
        for (c, channel) in buffer.channels.iter_mut().enumerate() {
            let mut on_step = stage(progress, 2);
            let mut channel_progress = |f: f64| on_step((c as f64 + f) / count);
            let energies =
                denoise::denoise_channel(channel, rate, strength, &mut channel_progress)?;
            before += energies.before;
            after += energies.after;
        }
        report.noise_removed_db = Some(if after > 0.0 && before > 0.0 {
            10.0 * (before / after).log10()
        } else {
            0.0
        });
    }
    if let Some(trim) = &options.trim {
        match vad::trim(&mut buffer, trim, &mut stage(progress, 3))? {
            Some(trimmed) => {
                report.seconds_trimmed = Some(trimmed.frames_removed as f64 / f64::from(rate));
                report.speech_segments = Some(trimmed.speech_segments);
            }
            None => report
                .notes
                .push("no speech found: nothing was trimmed".into()),
        }
    }
    if let Some(target) = options.loudness_lufs {
        match level::normalize_loudness(&mut buffer, target) {
            Some((measured, gain_db)) => {
                report.loudness_before_lufs = Some(measured);
                report.gain_db = Some(gain_db);
                if gain_db < target - measured {
                    report.notes.push(format!(
                        "very quiet input: raised by at most {} dB, so it stays below {target} LUFS",
                        level::MAX_GAIN_DB
                    ));
                }
            }
            None => report
                .notes
                .push("silent or shorter than 0.4 s: loudness left as it was".into()),
        }
        check(&mut stage(progress, 4), 1.0)?;
    }
    if let Some(ceiling) = options.true_peak_ceiling_db {
        let limited = level::limit(&mut buffer, ceiling, &mut stage(progress, 5))?;
        report.peaks_limited = Some(limited.peaks);
        report.max_limiting_db = Some(limited.max_reduction_db);
    }
    report.channels_out = buffer.channel_count();
    report.seconds_out = buffer.duration_secs();
    report.loudness_lufs = crate::analysis::loudness_lufs(&buffer);
    progress(1.0, "done");
    Ok((buffer, report))
}

/// Progress of step `index` as progress of the whole.
fn stage<'a, 'b: 'a>(
    progress: &'a mut (dyn FnMut(f64, &str) -> bool + 'b),
    index: usize,
) -> impl FnMut(f64) -> bool + 'a {
    let done: f64 = STAGES[..index].iter().map(|s| s.1).sum();
    let (name, share) = STAGES[index];
    move |f| progress(done + share * f, name)
}

fn check(progress: &mut impl FnMut(f64) -> bool, fraction: f64) -> Result<(), ProcessError> {
    if progress(fraction) {
        Ok(())
    } else {
        Err(ProcessError::Cancelled)
    }
}

/// Averages every channel into the first, in place, and drops the others.
fn fold_to_mono(buffer: &mut AudioBuffer) {
    let count = buffer.channels.len() as f32;
    let (first, rest) = buffer.channels.split_at_mut(1);
    for (i, sample) in first[0].iter_mut().enumerate() {
        *sample = (*sample + rest.iter().map(|c| c[i]).sum::<f32>()) / count;
    }
    buffer.channels.truncate(1);
}
