//! Voice conversion as the reference RVC pipeline does it (RVC-Project/Retrieval-based-Voice-
//! Conversion-WebUI `infer/vc/pipeline.py`, the 2026 layout): 48 Hz high-pass, reflect padding,
//! segments cut at quiet points, pitch once over the whole input, HuBERT features per segment,
//! index retrieval, ×2 feature upsampling, protect, synthesis, RMS mix, resample, peak-safe output.
//!
//! The work is split in two so that A/B between models is instant: [`analyze`] computes what
//! depends only on the input and the extractors (filtered audio, segments, features, raw pitch),
//! [`render`] what depends on the voice model and its parameters.

mod analysis;
pub mod pitch;
pub mod segments;

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

pub use analysis::{Analysis, PitchTracker, analyze};
pub use pitch::F0Method;
pub use segments::Chunking;

use crate::index::{IvfFlatIndex, SearchMode};
use crate::synthesizer::{Noise, Synthesizer};

/// Neighbours RVC blends per frame.
const INDEX_NEIGHBOURS: usize = 8;

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

/// The parameters of one conversion, with the reference's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConvertOptions {
    pub speaker_id: i64,
    /// Semitones.
    pub transpose: f32,
    pub f0_method: F0Method,
    /// How much of the features comes from the index (0 = none).
    pub index_rate: f32,
    pub index_search: IndexSearch,
    /// Below 0.5, unvoiced frames keep this share of the model's own features.
    pub protect: f32,
    /// 1 keeps the model's loudness envelope, 0 follows the input's.
    pub rms_mix_rate: f32,
    /// Resample the output to this rate (None: the model's rate).
    pub resample_rate: Option<u32>,
    /// Random draws from this seed; None: no randomness at all (reproducible renders).
    pub seed: Option<u64>,
    pub chunking: Chunking,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        Self {
            speaker_id: 0,
            transpose: 0.0,
            f0_method: F0Method::Rmvpe,
            index_rate: 0.75,
            index_search: IndexSearch::default(),
            protect: 0.33,
            rms_mix_rate: 0.25,
            resample_rate: None,
            seed: None,
            chunking: Chunking::default(),
        }
    }
}

/// Converted audio, mono, in [-1, 1).
pub struct Converted {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

/// Synthesizes the analysed input with `model`. `progress` is told the share done after each
/// segment and may stop the work by returning an error.
pub fn render(
    analysis: &Analysis,
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Converted> {
    let info = model.info();
    ensure!(
        analysis.feature_dim() == info.feature_dim,
        "the input was analysed with {}-d features but this model needs {}-d ones",
        analysis.feature_dim(),
        info.feature_dim
    );
    let pitch = match (info.f0, &analysis.f0) {
        (false, _) => None,
        (true, Some(f0)) => {
            let shifted = pitch::transpose(f0, options.transpose);
            Some((pitch::coarse(&shifted), shifted))
        }
        (true, None) => {
            anyhow::bail!("this model needs pitch but the input was analysed without it")
        }
    };
    let rate = info.sample_rate;
    let pad_tgt = options.chunking.pad_samples_at(rate);
    let mut out =
        Vec::with_capacity(analysis.filtered.len() * rate as usize / 16_000 + rate as usize);
    let total = analysis.segments.len();
    for (i, (segment, features)) in analysis.segments.iter().zip(&analysis.features).enumerate() {
        let frame_start = segment.start / segments::WINDOW;
        let frame_end = segment.end / segments::WINDOW;
        let segment_pitch = pitch.as_ref().map(|(coarse, hz)| {
            let end = frame_end.min(coarse.len());
            let start = frame_start.min(end);
            (&coarse[start..end], &hz[start..end])
        });
        let audio = synthesize_segment(
            features,
            segment.end - segment.start,
            segment_pitch,
            model,
            index,
            options,
        )?;
        let keep_end = audio.len().saturating_sub(pad_tgt);
        out.extend_from_slice(&audio[pad_tgt.min(keep_end)..keep_end]);
        progress((i + 1) as f64 / total as f64)?;
    }
    let mut samples = if options.rms_mix_rate != 1.0 {
        timbre_audio::filter::change_rms(
            &analysis.filtered,
            16_000,
            &out,
            rate,
            options.rms_mix_rate,
        )
    } else {
        out
    };
    let mut sample_rate = rate;
    if let Some(target) = options.resample_rate.filter(|&r| r != rate && r >= 16_000) {
        let buffer = timbre_audio::AudioBuffer::new(rate, vec![samples]);
        samples = timbre_audio::resample(&buffer, target)?
            .channels
            .swap_remove(0);
        sample_rate = target;
    }
    peak_safe(&mut samples);
    Ok(Converted {
        samples,
        sample_rate,
    })
}

fn synthesize_segment(
    features: &Tensor,
    segment_samples: usize,
    pitch: Option<(&[i64], &[f32])>,
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
) -> Result<Vec<f32>> {
    let _guard = tch::no_grad_guard();
    let device = model.device();
    let original = features.to_device(device).to_kind(Kind::Float);
    let retrieved = match index {
        Some(index) if options.index_rate != 0.0 => {
            let frames = original.squeeze_dim(0);
            let dim = frames.size()[1] as usize;
            let flat = Vec::<f32>::try_from(frames.to_device(tch::Device::Cpu).flatten(0, -1))?;
            let mode = match options.index_search {
                IndexSearch::Faiss => SearchMode::Probe {
                    nprobe: index.nprobe(),
                },
                IndexSearch::Exact => SearchMode::Exact,
            };
            let blended = index.blend(&flat, dim, options.index_rate, INDEX_NEIGHBOURS, mode)?;
            Tensor::from_slice(&blended)
                .view([1, -1, dim as i64])
                .to_device(device)
        }
        _ => original.shallow_clone(),
    };
    let upsample = |t: &Tensor| t.repeat_interleave_self_int(2, Some(1), None);
    let mut phone = upsample(&retrieved);
    let frames = (phone.size()[1] as usize).min(segment_samples / segments::WINDOW);
    let frames = pitch.map_or(frames, |(coarse, _)| frames.min(coarse.len()));
    phone = phone.narrow(1, 0, frames as i64);
    let pitch_tensors = pitch.map(|(coarse, hz)| {
        let coarse = Tensor::from_slice(&coarse[..frames])
            .view([1, -1])
            .to_device(device);
        let hz = Tensor::from_slice(&hz[..frames])
            .view([1, -1])
            .to_device(device);
        (coarse, hz)
    });
    if let Some((_, hz)) = &pitch_tensors
        && options.protect < 0.5
    {
        let unprotected = upsample(&original).narrow(1, 0, frames as i64);
        let keep = hz.ge(1.0).to_kind(Kind::Float);
        let unvoiced = keep.ones_like() - &keep;
        let weight = (keep + unvoiced * options.protect as f64).unsqueeze(-1);
        let unprotected_weight = weight.ones_like() - &weight;
        phone = &phone * &weight + unprotected * unprotected_weight;
    }
    let lengths = Tensor::from_slice(&[frames as i64]).to_device(device);
    let audio = model.infer(
        &phone,
        &lengths,
        pitch_tensors.as_ref().map(|(c, _)| c),
        pitch_tensors.as_ref().map(|(_, h)| h),
        options.speaker_id,
        options.seed.map_or(Noise::None, Noise::Seeded),
    )?;
    Ok(Vec::<f32>::try_from(
        audio
            .flatten(0, -1)
            .to_kind(Kind::Float)
            .to_device(tch::Device::Cpu),
    )?)
}

/// Scales the output down when its peak would pass 0.99, as the reference does before int16.
fn peak_safe(samples: &mut [f32]) {
    let peak = samples.iter().fold(0f32, |m, s| m.max(s.abs())) / 0.99;
    if peak > 1.0 {
        samples.iter_mut().for_each(|s| *s /= peak);
    }
}

/// The reference's int16 output: ×32768 and truncation toward zero (saturating at the top).
pub fn to_int16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|&s| (s as f64 * 32768.0) as i16)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loud_output_is_scaled_to_a_peak_of_0_99() {
        let mut samples = vec![0.5, -2.0, 1.0];
        peak_safe(&mut samples);
        assert!((samples[1] + 0.99).abs() < 1e-6);
        let mut quiet = vec![0.5, -0.2];
        peak_safe(&mut quiet);
        assert_eq!(quiet, vec![0.5, -0.2]);
    }

    #[test]
    fn int16_truncates_toward_zero() {
        assert_eq!(
            to_int16(&[0.5, -0.5, 0.99, -1.0, 0.0]),
            vec![16384, -16384, 32440, -32768, 0]
        );
    }
}
