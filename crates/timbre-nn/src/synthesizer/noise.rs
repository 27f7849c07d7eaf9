//! The random draws of RVC inference (the prior's `randn × 0.66666`, the sine source's noise and
//! harmonic phases), either all zero or from a seeded generator of our own so that a render is
//! reproducible whatever the device and whatever else uses libtorch's global generator.

use tch::{Device, Kind, Tensor};

/// How the synthesizer draws its randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// Every draw is zero: deterministic output (the reference fixtures are made this way).
    None,
    /// RVC's randomness from this seed: the same seed gives the same audio.
    Seeded(u64),
}

pub(crate) struct NoiseSource {
    state: Option<u64>,
}

impl NoiseSource {
    pub fn new(noise: Noise) -> Self {
        Self {
            state: match noise {
                Noise::None => None,
                Noise::Seeded(seed) => Some(seed),
            },
        }
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

    /// Standard normal draws of `shape` (zeros when there is no noise), float32 on `device`.
    pub fn normal(&mut self, shape: &[i64], device: Device) -> Tensor {
        let Some(state) = &mut self.state else {
            return Tensor::zeros(shape, (Kind::Float, device));
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
        let Some(state) = &mut self.state else {
            return Tensor::zeros(shape, (Kind::Float, device));
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
