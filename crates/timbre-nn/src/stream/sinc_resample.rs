//! Band-limited resampling as the reference streaming engine does it: torchaudio 2.11's
//! `transforms.Resample` (sinc_interp_hann, 6 zero crossings, rolloff 0.99) with its kernel built
//! in float32, as rvc-next 0.2.16 `engine/audio/sinc_resample.py` ports it and
//! `engine/stream/engine.py` constructs it (`Resample(orig, new, dtype=torch.float32)`). The
//! same libtorch operations in the same order, so the output matches the reference's to float
//! rounding. (`timbre_audio::resample` is rubato's FFT resampler: a different filter, so not used
//! here.)

use std::f64::consts::PI;

use tch::{Device, Kind, Tensor};

const LOWPASS_FILTER_WIDTH: f64 = 6.0;
const ROLLOFF: f64 = 0.99;

/// A fixed-ratio resampler; identity when both rates are equal.
pub struct SincResampler {
    /// Rates divided by their gcd.
    orig: i64,
    new: i64,
    /// `[new, 1, 2·width + orig]`, float32.
    kernel: Option<Tensor>,
    width: i64,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl SincResampler {
    /// A resampler from `orig_freq` to `new_freq` Hz with its float32 kernel built on `device`.
    pub fn new(orig_freq: u32, new_freq: u32, device: Device) -> SincResampler {
        let divisor = gcd(i64::from(orig_freq), i64::from(new_freq));
        let (orig, new) = (
            i64::from(orig_freq) / divisor,
            i64::from(new_freq) / divisor,
        );
        if orig == new {
            return SincResampler {
                orig,
                new,
                kernel: None,
                width: 0,
            };
        }
        let base_freq = orig.min(new) as f64 * ROLLOFF;
        let width = (LOWPASS_FILTER_WIDTH * orig as f64 / base_freq).ceil() as i64;
        let options = (Kind::Float, device);
        let idx = Tensor::arange_start(-width, width + orig, options).view([1, 1, -1]) / orig;
        let t = Tensor::arange_start_step(0, -new, -1, options).view([-1, 1, 1]) / new + idx;
        let t = (t * base_freq).clamp(-LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH);
        let window = (&t * PI / LOWPASS_FILTER_WIDTH / 2.0).cos().square();
        let t = t * PI;
        let scale = base_freq / orig as f64;
        let sinc = t.ones_like().where_self(&t.eq(0.0), &(t.sin() / &t));
        let kernel = sinc * (window * scale);
        SincResampler {
            orig,
            new,
            kernel: Some(kernel),
            width,
        }
    }

    /// Samples out for `samples` in: ⌈new·samples/orig⌉.
    pub fn output_len(&self, samples: usize) -> usize {
        (self.new as usize * samples).div_ceil(self.orig as usize)
    }

    /// Resamples mono float32 `audio` `[samples]` (on the kernel's device).
    pub fn apply(&self, audio: &Tensor) -> Tensor {
        let Some(kernel) = &self.kernel else {
            return audio.shallow_clone();
        };
        let samples = audio.size()[0];
        let padded = audio
            .view([1, 1, -1])
            .constant_pad_nd([self.width, self.width + self.orig]);
        let resampled = padded
            .conv1d(kernel, None::<Tensor>, [self.orig], [0], [1], 1)
            .transpose(1, 2)
            .reshape([-1]);
        resampled.narrow(0, 0, self.output_len(samples as usize) as i64)
    }

    /// [`SincResampler::apply`] on a slice, on the CPU.
    pub fn apply_slice(&self, audio: &[f32]) -> Vec<f32> {
        let out = self.apply(&Tensor::from_slice(audio));
        Vec::<f32>::try_from(out.contiguous()).expect("float32 samples")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tone_keeps_its_pitch_and_level_through_48k_to_16k() {
        let resampler = SincResampler::new(48_000, 16_000, Device::Cpu);
        let tone: Vec<f32> = (0..4800)
            .map(|i| (std::f64::consts::TAU * 440.0 * i as f64 / 48_000.0).sin() as f32 * 0.5)
            .collect();
        let out = resampler.apply_slice(&tone);
        assert_eq!(out.len(), 1600);
        for (i, value) in out.iter().enumerate().skip(100).take(1400) {
            let expected = (std::f64::consts::TAU * 440.0 * i as f64 / 16_000.0).sin() * 0.5;
            assert!(
                (f64::from(*value) - expected).abs() < 2e-3,
                "{i}: {value} vs {expected}"
            );
        }
    }

    #[test]
    fn equal_rates_pass_through() {
        let resampler = SincResampler::new(16_000, 16_000, Device::Cpu);
        assert_eq!(resampler.apply_slice(&[0.25, -0.5]), vec![0.25, -0.5]);
    }
}
