//! Voice conversion as the reference RVC pipeline does it (RVC-Project/Retrieval-based-Voice-
//! Conversion-WebUI `infer/vc/pipeline.py`, the 2026 layout): 48 Hz high-pass, reflect padding,
//! segments cut at quiet points, pitch once over the whole input (in pieces past five minutes),
//! HuBERT features per segment, index retrieval, ×2 feature upsampling, protect, synthesis, RMS
//! mix, resample, peak-safe output; an energy-conditioned voice is also given the energy
//! Vietnamese-RVC's pipeline gives it (`energy`). A long input is held once, as 16 kHz samples filtered and
//! padded in place, and never whole as features or output: features are saved and read per
//! segment, and the output goes through a scratch file to a sink ([`render_to`]).
//!
//! The work is split in two so that A/B between models is instant: [`analyze`] computes what
//! depends only on the input and the extractors (filtered audio, segments, features, raw pitch),
//! [`render`] what depends on the voice model and its parameters.

mod analysis;
pub mod autotune;
pub(crate) mod energy;
pub(crate) mod formant;
mod output;
pub mod pitch;
mod render;
pub mod segments;
mod store;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::voice::VoiceParams;

pub use analysis::{Analysis, PitchTracker, analyze, analyze_to_file, pitch_curve};
pub use autotune::{Autotune, Scale};
pub use energy::energy_curve;
pub use pitch::F0Method;
pub use render::{Converted, OutputSink, Rendered, render, render_to};
pub use segments::Chunking;

/// How the index is searched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexSearch {
    /// As faiss does with the index's own `nprobe` (RVC's results).
    #[default]
    Faiss,
    /// The true nearest neighbours.
    Exact,
}

/// The parameters of one conversion, with the reference's defaults: the voice's (stored flat,
/// as they always were) and the offline ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConvertOptions {
    /// The voice's parameters (transpose, pitch method, index rate, …), flattened when serialised.
    #[serde(flatten)]
    pub voice: VoiceParams,
    /// How the index is searched for retrieval.
    pub index_search: IndexSearch,
    /// Resample the output to this rate (None: the model's rate).
    pub resample_rate: Option<u32>,
    /// Where long inputs are cut into segments (RVC's x_pad, x_query, x_center, x_max).
    pub chunking: Chunking,
}

/// The reference's int16 output: ×32768 and truncation toward zero (saturating at the top).
pub fn to_int16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|&s| (s as f64 * 32768.0) as i16)
        .collect()
}

#[cfg(test)]
mod int16_tests {
    use super::*;

    #[test]
    fn int16_truncates_toward_zero() {
        assert_eq!(
            to_int16(&[0.5, -0.5, 0.99, -1.0, 0.0]),
            vec![16384, -16384, 32440, -32768, 0]
        );
    }
}
