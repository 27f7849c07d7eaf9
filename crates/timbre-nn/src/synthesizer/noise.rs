//! The random draws of RVC: at inference the prior's `randn × 0.66666` and the sine source's noise
//! and harmonic phases, either all zero or from a seeded generator of our own so that a render is
//! reproducible whatever the device and whatever else uses libtorch's global generator; in
//! training also the posterior's sample and the slice starts, from libtorch's generator or given.

use std::collections::VecDeque;

use anyhow::{Result, bail};
use tch::{Device, Kind, Tensor};

/// How the synthesizer draws its randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// Every draw is zero: deterministic output (the reference fixtures are made this way).
    None,
    /// RVC's randomness from this seed: the same seed gives the same audio.
    Seeded(u64),
}

/// Where the training forward's random draws come from.
#[derive(Debug)]
pub enum TrainingNoise {
    /// libtorch's generator on the model's device (seeded by `tch::manual_seed`), as the
    /// reference trains.
    Torch,
    /// Exactly these draws, in the order the reference makes them, so a test can replay the
    /// reference's: the posterior's ε `[batch, inter_channels, spec frames]` (normal), the slice
    /// starts `[batch]` (uniform), and for a pitch model the sine source's initial phases
    /// `[1, 1, harmonics + 1]` (uniform) and its noise `[batch, segment × hop, harmonics + 1]`
    /// (normal).
    Given(Vec<Tensor>),
}

/// One random draw of a training forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainingDraw {
    /// Its shape.
    pub shape: Vec<i64>,
    /// Standard normal, else uniform in [0, 1).
    pub normal: bool,
    /// One row per batch item along the first dimension, else shared by the batch.
    pub per_item: bool,
}

/// The random draws of one forward, made in the order the reference makes them.
pub(crate) enum NoiseSource {
    Zero,
    /// SplitMix64 state.
    Seeded(u64),
    Torch,
    Given(VecDeque<Tensor>),
}

impl NoiseSource {
    pub fn new(noise: Noise) -> Self {
        match noise {
            Noise::None => Self::Zero,
            Noise::Seeded(seed) => Self::Seeded(seed),
        }
    }

    /// The source of a training forward whose draws have `shapes`, in order; given draws must
    /// have exactly those.
    pub fn training(noise: TrainingNoise, shapes: &[Vec<i64>]) -> Result<Self> {
        let TrainingNoise::Given(draws) = noise else {
            return Ok(Self::Torch);
        };
        let given: Vec<Vec<i64>> = draws.iter().map(Tensor::size).collect();
        if given != shapes {
            bail!("the given random draws have shapes {given:?}; this forward draws {shapes:?}");
        }
        Ok(Self::Given(draws.into()))
    }

    /// SplitMix64.
    fn next_u64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn next_unit(state: &mut u64) -> f64 {
        (Self::next_u64(state) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// The next given draw, which must have `shape`.
    fn next_given(draws: &mut VecDeque<Tensor>, shape: &[i64], device: Device) -> Tensor {
        let draw = draws
            .pop_front()
            .expect("the forward draws no more than the shapes it checked");
        assert_eq!(
            draw.size(),
            shape,
            "the forward draws the shapes it checked"
        );
        draw.to_device(device).to_kind(Kind::Float)
    }

    /// Whether every draw is zero, so that a caller may skip adding them.
    pub fn is_zero(&self) -> bool {
        matches!(self, Self::Zero)
    }

    /// Standard normal draws of `shape` (zeros when there is no noise), float32 on `device`.
    pub fn normal(&mut self, shape: &[i64], device: Device) -> Tensor {
        let state = match self {
            Self::Zero => return Tensor::zeros(shape, (Kind::Float, device)),
            Self::Torch => return Tensor::randn(shape, (Kind::Float, device)),
            Self::Given(draws) => return Self::next_given(draws, shape, device),
            Self::Seeded(state) => state,
        };
        let count = shape.iter().product::<i64>().max(0) as usize;
        let mut values = Vec::with_capacity(count + 1);
        while values.len() < count {
            // Box–Muller: two independent normals from two uniforms, the first kept away from 0.
            let radius = (-2.0 * (1.0 - Self::next_unit(state)).ln()).sqrt();
            let angle = std::f64::consts::TAU * Self::next_unit(state);
            values.push((radius * angle.cos()) as f32);
            values.push((radius * angle.sin()) as f32);
        }
        values.truncate(count);
        Tensor::from_slice(&values).view_(shape).to_device(device)
    }

    /// Uniform draws in [0, 1) of `shape` (zeros when there is no noise), float32 on `device`.
    pub fn uniform(&mut self, shape: &[i64], device: Device) -> Tensor {
        let state = match self {
            Self::Zero => return Tensor::zeros(shape, (Kind::Float, device)),
            Self::Torch => return Tensor::rand(shape, (Kind::Float, device)),
            Self::Given(draws) => return Self::next_given(draws, shape, device),
            Self::Seeded(state) => state,
        };
        let count = shape.iter().product::<i64>().max(0) as usize;
        let values: Vec<f32> = (0..count).map(|_| Self::next_unit(state) as f32).collect();
        Tensor::from_slice(&values).view_(shape).to_device(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_noise_is_zero_and_a_seed_repeats() {
        let zeros = NoiseSource::new(Noise::None).normal(&[2, 3], Device::Cpu);
        assert_eq!(zeros.abs().sum(Kind::Double).double_value(&[]), 0.0);

        let draw = |seed| NoiseSource::new(Noise::Seeded(seed)).normal(&[4, 1000], Device::Cpu);
        let (a, b, c) = (draw(7), draw(7), draw(8));
        assert!(a.equal(&b));
        assert!(!a.equal(&c));
        let (mean, std) = (
            a.mean(Kind::Double).double_value(&[]),
            a.std(true).double_value(&[]),
        );
        assert!(
            mean.abs() < 0.05 && (std - 1.0).abs() < 0.05,
            "mean {mean} std {std}"
        );
    }

    #[test]
    fn uniform_draws_stay_in_the_unit_interval() {
        let u = NoiseSource::new(Noise::Seeded(1)).uniform(&[5000], Device::Cpu);
        let (min, max) = (u.min().double_value(&[]), u.max().double_value(&[]));
        assert!(
            (0.0..0.01).contains(&min) && (0.99..1.0).contains(&max),
            "min {min} max {max}"
        );
    }
}
