//! Weight-free f0 trackers on the RVC frame grid (RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/modules/vc/pipeline.py`: 16 kHz input, one f0 value per 160-sample hop, 0 = unvoiced), so
//! conversion works without `rmvpe.pt`.
//!
//! Both take `(audio_16k, f0_min, f0_max)` and return `frame_count(audio_16k.len())` values in Hz.
//! Non-finite samples are read as silence; an invalid range (not finite, `f0_min <= 0` or
//! `f0_max <= f0_min`) and audio too short for one analysis window give all-unvoiced frames.
//! `f0_min` is raised to [`LOWEST_F0`].

pub mod pm;
pub mod yin;

/// Sample rate the trackers expect.
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples per f0 frame (10 ms).
pub const HOP: usize = 160;
/// RVC's f0 search range.
pub const RVC_F0_MIN: f32 = 50.0;
/// Upper end of RVC's f0 search range, in Hz.
pub const RVC_F0_MAX: f32 = 1100.0;

/// Frames on the RVC grid for `samples` samples: frame `i` is centred on sample `i·HOP`.
pub fn frame_count(samples: usize) -> usize {
    samples / HOP + 1
}

/// Lowest f0 searched: both trackers need windows of a few periods, and periods of seconds
/// would make every frame cost seconds.
pub const LOWEST_F0: f32 = 20.0;

/// The range actually searched, `None` when it is empty or malformed.
fn search_range(f0_min: f32, f0_max: f32) -> Option<(f64, f64)> {
    let valid = f0_min.is_finite() && f0_max.is_finite() && f0_min > 0.0 && f0_max > f0_min;
    let low = f0_min.max(LOWEST_F0);
    (valid && f0_max > low).then(|| (f64::from(low), f64::from(f0_max)))
}

fn finite_samples(audio: &[f32]) -> Vec<f64> {
    audio
        .iter()
        .map(|&v| if v.is_finite() { f64::from(v) } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests;
