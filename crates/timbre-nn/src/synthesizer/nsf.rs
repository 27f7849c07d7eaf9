//! The harmonic excitation of the NSF generator: RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/infer_pack/models.py` `SineGen` and `SourceModuleHnNSF` (as IAHispano/Applio
//! `rvc/lib/algorithm/generators/hifigan.py` `SineGenerator`, which computes the same phase).
//!
//! The phase of sample `m` of frame `k` is `Σ_{j<k} hop·f0_j/sr + (m+1)·f0_k/sr`, i.e. the running
//! sum of the frame-rate increments repeated `hop` times. It is accumulated in float64 and wrapped
//! per frame, which matches the float32 reference well within its own rounding.

use std::f64::consts::TAU;

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::noise::NoiseSource;
use super::shapes::{check_layer, weight_shape};
use crate::layers::Linear;
use crate::weights::Weights;

const SINE_AMPLITUDE: f64 = 0.1;
const VOICED_NOISE_STD: f64 = 0.003;
const VOICED_THRESHOLD: f64 = 0.0;

/// `SourceModuleHnNSF`: sines at f0 and its harmonics, merged by a linear layer and tanh.
pub struct HarmonicSource {
    l_linear: Linear,
    sample_rate: f64,
}

impl HarmonicSource {
    /// `prefix` is `dec.m_source`; the number of harmonics comes from `l_linear`.
    pub fn load(w: &Weights, prefix: &str, sample_rate: u32) -> Result<Self> {
        let name = format!("{prefix}.l_linear");
        let shape = weight_shape(w, &name, 2)?;
        if shape[0] != 1 || shape[1] < 1 {
            bail!(
                "{}: `{name}.weight` has shape {shape:?}, expected [1, harmonics + 1]",
                w.source().display()
            );
        }
        check_layer(w, &name, &shape, 1)?;
        Ok(Self {
            l_linear: Linear::load(w, &name)?,
            sample_rate: f64::from(sample_rate),
        })
    }

    /// The sines it merges: f0 and its overtones.
    pub fn harmonics(&self) -> i64 {
        self.l_linear.in_features()
    }

    /// `f0` `[batch, frames]` in Hz (0 = unvoiced) → excitation `[batch, 1, frames × hop]`.
    pub fn forward(&self, f0: &Tensor, hop: i64, noise: &mut NoiseSource) -> Tensor {
        let sines = sine_waves(f0, hop, self.harmonics(), self.sample_rate, noise);
        self.l_linear.forward(&sines).tanh().transpose(1, 2)
    }
}

/// `SineGen`: `[batch, frames × hop, dims]` sines of amplitude 0.1 at f0 × 1 … f0 × dims where
/// voiced, plus Gaussian noise (std 0.003 voiced, 0.1/3 unvoiced); in the kind of `f0`.
pub(crate) fn sine_waves(
    f0: &Tensor,
    hop: i64,
    dims: i64,
    sample_rate: f64,
    noise: &mut NoiseSource,
) -> Tensor {
    let (device, kind) = (f0.device(), f0.kind());
    let (batch, frames) = (f0.size()[0], f0.size()[1]);
    let f0 = f0.to_kind(Kind::Double);
    let harmonics = Tensor::arange_start(1, dims + 1, (Kind::Double, device));
    // Cycles per sample, per frame and harmonic: [batch, frames, dims].
    let increments = (f0.unsqueeze(-1) * harmonics / sample_rate).remainder(1.0);
    let per_frame = (&increments * hop as f64).remainder(1.0);
    let frame_start = (per_frame.cumsum(1, Kind::Double) - &per_frame).remainder(1.0);
    let steps = Tensor::arange_start(1, hop + 1, (Kind::Double, device)).view_([1, 1, hop, 1]);
    let phase = frame_start.unsqueeze(2) + increments.unsqueeze(2) * steps;
    let phase = phase.view_([batch, frames * hop, dims]);
    // Random initial phases for the overtones only, shared by the batch as in the reference; the
    // fundamental starts at 0.
    let initial = noise.uniform(&[1, 1, dims], device).to_kind(Kind::Double);
    let initial = initial.index_fill(2, &Tensor::from_slice(&[0i64]).to_device(device), 0.0);
    let sines: Tensor = ((phase + initial) * TAU).sin() * SINE_AMPLITUDE;

    let voiced: Tensor = f0
        .gt(VOICED_THRESHOLD)
        .to_kind(Kind::Double)
        .repeat_interleave_self_int(hop, 1, None::<i64>)
        .unsqueeze(-1);
    let noise_std: Tensor = &voiced * VOICED_NOISE_STD + (1.0 - &voiced) * (SINE_AMPLITUDE / 3.0);
    let additive: Tensor = noise
        .normal(&[batch, frames * hop, dims], device)
        .to_kind(Kind::Double)
        * noise_std;
    (sines * voiced + additive).to_kind(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesizer::Noise;
    use tch::Device;

    #[test]
    fn a_constant_f0_gives_a_continuous_sine() {
        let (sr, hop, f0) = (1000.0, 10, 37.0);
        let frames = Tensor::full([1, 5], f0, (Kind::Float, Device::Cpu));
        let sines = sine_waves(&frames, hop, 1, sr, &mut NoiseSource::new(Noise::None));
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
        let sines = sine_waves(&frames, hop, 2, sr, &mut NoiseSource::new(Noise::None));
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
            &mut NoiseSource::new(Noise::Seeded(3)),
        );
        assert!(sines.abs().max().double_value(&[]) > 0.0);
    }
}
