//! The harmonic excitation of the NSF generator: RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/infer_pack/models.py` `SineGen` and `SourceModuleHnNSF` (as IAHispano/Applio
//! `rvc/lib/algorithm/generators/hifigan.py` `SineGenerator`, which computes the same phase, and
//! `hifigan_mrf.py`'s, which takes nine harmonics), and RefineGAN's (`refinegan.py`
//! `SineGenerator`), which interpolates f0 linearly to the sample rate instead of repeating it.
//!
//! The phase of sample `m` of frame `k` is `Σ_{j<k} hop·f0_j/sr + (m+1)·f0_k/sr`, i.e. the running
//! sum of the frame-rate increments repeated `hop` times. It is accumulated in float64 and wrapped
//! per frame, which matches the float32 reference well within its own rounding. With linear
//! interpolation it is the running sum of every sample's increment, in float64.

use std::f64::consts::TAU;

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::noise::NoiseSource;
use super::shapes::{check_layer, weight_shape};
use super::vocoder::Vocoder;
use crate::layers::Linear;
use crate::weights::Weights;

const SINE_AMPLITUDE: f64 = 0.1;
const VOICED_NOISE_STD: f64 = 0.003;
const VOICED_THRESHOLD: f64 = 0.0;

/// `SourceModuleHnNSF`: sines at f0 and its harmonics, merged by a linear layer and tanh.
pub struct HarmonicSource {
    merge: Linear,
    sample_rate: f64,
    /// RefineGAN's: f0 interpolated linearly between frames rather than held.
    interpolated: bool,
}

impl HarmonicSource {
    /// The source of `vocoder`'s generator (`dec.m_source.l_linear`, RefineGAN's
    /// `dec.m_source.merge.0`); the number of harmonics comes from that layer.
    pub fn load(w: &Weights, vocoder: Vocoder, sample_rate: u32) -> Result<Self> {
        let interpolated = vocoder == Vocoder::RefineGan;
        let name = if interpolated {
            "dec.m_source.merge.0"
        } else {
            "dec.m_source.l_linear"
        };
        let shape = weight_shape(w, name, 2)?;
        if shape[0] != 1 || shape[1] < 1 {
            bail!(
                "{}: `{name}.weight` has shape {shape:?}, expected [1, harmonics + 1]",
                w.source().display()
            );
        }
        check_layer(w, name, &shape, 1)?;
        Ok(Self {
            merge: Linear::load(w, name)?,
            sample_rate: f64::from(sample_rate),
            interpolated,
        })
    }

    /// The sines it merges: f0 and its overtones.
    pub fn harmonics(&self) -> i64 {
        self.merge.in_features()
    }

    /// `f0` `[batch, frames]` in Hz (0 = unvoiced) → excitation `[batch, 1, frames × hop]`.
    pub fn forward(&self, f0: &Tensor, hop: i64, noise: &mut NoiseSource) -> Tensor {
        let sines = sine_waves(
            f0,
            hop,
            self.harmonics(),
            self.sample_rate,
            self.interpolated,
            noise,
        );
        self.merge.forward(&sines).tanh().transpose(1, 2)
    }
}

/// `SineGen`: `[batch, frames × hop, dims]` sines of amplitude 0.1 at f0 × 1 … f0 × dims where
/// voiced, plus Gaussian noise (std 0.003 voiced, 0.1/3 unvoiced); in the kind of `f0`. f0 is held
/// through each frame, or with `interpolated` (RefineGAN's `SineGenerator`) interpolated linearly
/// to the sample rate (`F.interpolate(mode="linear")`, in the kind of `f0`) and voiced where that
/// is above 0.
pub(crate) fn sine_waves(
    f0: &Tensor,
    hop: i64,
    dims: i64,
    sample_rate: f64,
    interpolated: bool,
    noise: &mut NoiseSource,
) -> Tensor {
    let (device, kind) = (f0.device(), f0.kind());
    let harmonics = Tensor::arange_start(1, dims + 1, (Kind::Double, device));
    let (phase, voiced) = if interpolated {
        interpolated_phase(f0, hop, &harmonics, sample_rate)
    } else {
        held_phase(f0, hop, &harmonics, sample_rate)
    };
    sines_of_phase(phase, &voiced, noise).to_kind(kind)
}

/// The phase in cycles `[batch, frames × hop, dims]` and voicing `[batch, frames × hop, 1]` of
/// f0 held through each frame.
fn held_phase(f0: &Tensor, hop: i64, harmonics: &Tensor, sample_rate: f64) -> (Tensor, Tensor) {
    let (batch, frames) = (f0.size()[0], f0.size()[1]);
    let dims = harmonics.size()[0];
    let f0 = f0.to_kind(Kind::Double);
    // Cycles per sample, per frame and harmonic: [batch, frames, dims].
    let increments = (f0.unsqueeze(-1) * harmonics / sample_rate).remainder(1.0);
    let per_frame = (&increments * hop as f64).remainder(1.0);
    let frame_start = (per_frame.cumsum(1, Kind::Double) - &per_frame).remainder(1.0);
    let steps = Tensor::arange_start(1, hop + 1, (Kind::Double, f0.device())).view_([1, 1, hop, 1]);
    let phase = frame_start.unsqueeze(2) + increments.unsqueeze(2) * steps;
    let voiced = f0
        .gt(VOICED_THRESHOLD)
        .to_kind(Kind::Double)
        .repeat_interleave_self_int(hop, 1, None::<i64>)
        .unsqueeze(-1);
    (phase.view_([batch, frames * hop, dims]), voiced)
}

/// The same of f0 interpolated linearly between frames: the running sum of every sample's
/// increment.
fn interpolated_phase(
    f0: &Tensor,
    hop: i64,
    harmonics: &Tensor,
    sample_rate: f64,
) -> (Tensor, Tensor) {
    let samples = f0.size()[1] * hop;
    let f0 = f0
        .unsqueeze(1)
        .upsample_linear1d([samples], false, None::<f64>)
        .squeeze_dim(1)
        .to_kind(Kind::Double);
    let increments = (f0.unsqueeze(-1) * harmonics / sample_rate).remainder(1.0);
    let phase = increments.cumsum(1, Kind::Double).remainder(1.0);
    let voiced = f0.gt(VOICED_THRESHOLD).to_kind(Kind::Double).unsqueeze(-1);
    (phase, voiced)
}

/// Sines of amplitude 0.1 at `phase` `[batch, samples, dims]` (in cycles) where `voiced`
/// `[batch, samples, 1]`, plus Gaussian noise (std 0.003 voiced, 0.1/3 unvoiced), in float64.
fn sines_of_phase(phase: Tensor, voiced: &Tensor, noise: &mut NoiseSource) -> Tensor {
    let device = phase.device();
    let size = phase.size();
    // Random initial phases for the overtones only, shared by the batch as in the reference; the
    // fundamental starts at 0.
    let initial = noise
        .uniform(&[1, 1, size[2]], device)
        .to_kind(Kind::Double);
    let initial = initial.index_fill(2, &Tensor::from_slice(&[0i64]).to_device(device), 0.0);
    let sines: Tensor = ((phase + initial) * TAU).sin() * SINE_AMPLITUDE;
    let noise_std: Tensor = voiced * VOICED_NOISE_STD + (1.0 - voiced) * (SINE_AMPLITUDE / 3.0);
    let additive: Tensor = noise.normal(&size, device).to_kind(Kind::Double) * noise_std;
    sines * voiced + additive
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesizer::Noise;
    use tch::Device;

    fn noiseless(f0: &Tensor, hop: i64, dims: i64, sr: f64, interpolated: bool) -> Tensor {
        sine_waves(
            f0,
            hop,
            dims,
            sr,
            interpolated,
            &mut NoiseSource::new(Noise::None),
        )
    }

    #[test]
    fn a_constant_f0_gives_a_continuous_sine() {
        let (sr, hop, f0) = (1000.0, 10, 37.0);
        let frames = Tensor::full([1, 5], f0, (Kind::Float, Device::Cpu));
        let sines = noiseless(&frames, hop, 1, sr, false);
        assert_eq!(sines.size(), [1, 50, 1]);
        for n in 0..50 {
            let expected = SINE_AMPLITUDE * (TAU * f0 * (n + 1) as f64 / sr).sin();
            let got = sines.double_value(&[0, n, 0]);
            assert!(
                (got - expected).abs() < 1e-6,
                "sample {n}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn unvoiced_frames_are_silent_without_noise_and_phase_carries_over_them() {
        let (sr, hop) = (1000.0, 4);
        let frames = Tensor::from_slice(&[100.0f32, 0.0, 100.0]).view_([1, 3]);
        let sines = noiseless(&frames, hop, 2, sr, false);
        let values: Vec<f32> = Vec::try_from(sines.flatten(0, -1)).unwrap();
        assert!(values[8..16].iter().all(|&v| v == 0.0));
        // Frame 2 continues from the phase reached at the end of frame 0 (frame 1 adds none).
        let expected = SINE_AMPLITUDE * (TAU * 100.0 * 5.0 / sr).sin();
        assert!((sines.double_value(&[0, 8, 0]) - expected).abs() < 1e-6);
        let overtone = SINE_AMPLITUDE * (TAU * 200.0 * 5.0 / sr).sin();
        assert!((sines.double_value(&[0, 8, 1]) - overtone).abs() < 1e-6);
    }

    #[test]
    fn seeded_noise_reaches_unvoiced_samples() {
        let frames = Tensor::zeros([1, 2], (Kind::Float, Device::Cpu));
        let sines = sine_waves(
            &frames,
            8,
            1,
            16000.0,
            false,
            &mut NoiseSource::new(Noise::Seeded(3)),
        );
        assert!(sines.abs().max().double_value(&[]) > 0.0);
    }

    #[test]
    fn interpolated_f0_glides_between_frames_and_equals_held_f0_where_it_is_constant() {
        let (sr, hop) = (1000.0, 10);
        let constant = Tensor::full([1, 4], 50.0, (Kind::Float, Device::Cpu));
        let held = noiseless(&constant, hop, 2, sr, false);
        let glided = noiseless(&constant, hop, 2, sr, true);
        assert!(held.allclose(&glided, 1e-6, 1e-6, false));

        // From 50 to 150 Hz: the phase advances by the interpolated f0 sample by sample.
        let ramp = Tensor::from_slice(&[50.0f32, 150.0]).view_([1, 2]);
        let sines = noiseless(&ramp, hop, 1, sr, true);
        let f0 = Tensor::from_slice(&[50.0f32, 150.0])
            .view_([1, 1, 2])
            .upsample_linear1d([20], false, None::<f64>);
        let f0: Vec<f32> = Vec::try_from(f0.flatten(0, -1)).unwrap();
        let mut phase = 0.0;
        for (n, f) in f0.iter().enumerate() {
            phase += f64::from(*f) / sr;
            let expected = SINE_AMPLITUDE * (TAU * phase).sin();
            let got = sines.double_value(&[0, n as i64, 0]);
            assert!(
                (got - expected).abs() < 1e-6,
                "sample {n}: {got} vs {expected}"
            );
        }
    }
}
