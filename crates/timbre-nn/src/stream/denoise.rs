//! Live denoise: RNNoise, the enhancement's network, over the stream one block at a time.
//!
//! The reference (rvc-next 0.2.16 `StreamEngine`, from RVC's `realtime_gui.py`) uses TorchGate,
//! a spectral gate whose noise estimate is the whole rolling buffer, rerun over each block's
//! crossfade region and blended in with a fade; it adds a crossfade's worth of delay (at most
//! 40 ms) to the input. RNNoise is a recurrent network over 10 ms frames at 48 kHz that keeps its
//! state between blocks, so it sees each sample once, in order; it removes non-stationary noise
//! (keyboards, fans that change) that a gate passes, and its one-frame overlap delays the stream
//! by 10 ms. The block goes to 48 kHz and back with the engine's sinc resampler, led by 20 ms of
//! the samples before it, as the engine resamples to 16 kHz.

use timbre_audio::enhance::Rnnoise;

use super::sinc_resample::SincResampler;

/// Frames of context before the block, for the resampler's filter.
const CONTEXT_FRAMES: usize = 2;

/// RNNoise over a mono stream at a device rate that is a multiple of 100 Hz.
pub struct LiveDenoiser {
    network: Rnnoise,
    /// To 48 kHz and back; None at 48 kHz.
    resamplers: Option<(SincResampler, SincResampler)>,
    /// The last samples in (device rate) and denoised (48 kHz).
    before: Vec<f32>,
    before_48k: Vec<f32>,
}

impl LiveDenoiser {
    pub fn new(sample_rate: u32) -> Self {
        let zc = (sample_rate / 100) as usize;
        let resamplers = (sample_rate != Rnnoise::RATE).then(|| {
            (
                SincResampler::new(sample_rate, Rnnoise::RATE, tch::Device::Cpu),
                SincResampler::new(Rnnoise::RATE, sample_rate, tch::Device::Cpu),
            )
        });
        LiveDenoiser {
            network: Rnnoise::delayed(),
            resamplers,
            before: vec![0.0; CONTEXT_FRAMES * zc],
            before_48k: vec![0.0; CONTEXT_FRAMES * Rnnoise::FRAME],
        }
    }

    /// The denoised stream, one RNNoise frame (10 ms) late: as many samples as `block` holds, a whole
    /// number of 10 ms frames.
    pub fn process(&mut self, block: &[f32]) -> Vec<f32> {
        let Some((up, down)) = &self.resamplers else {
            let mut out = Vec::with_capacity(block.len());
            self.network.push(block, &mut out);
            return out;
        };
        let zc = self.before.len() / CONTEXT_FRAMES;
        debug_assert!(block.len().is_multiple_of(zc), "whole 10 ms frames");
        let frames = block.len() / zc;
        let at_48k = up.apply_slice(&with_context(&mut self.before, block));
        let mut denoised = Vec::with_capacity(frames * Rnnoise::FRAME);
        self.network.push(
            &at_48k[at_48k.len() - frames * Rnnoise::FRAME..],
            &mut denoised,
        );
        let back = down.apply_slice(&with_context(&mut self.before_48k, &denoised));
        back[back.len() - block.len()..].to_vec()
    }
}

/// `context` followed by `samples`; `context` becomes the last of them.
fn with_context(context: &mut [f32], samples: &[f32]) -> Vec<f32> {
    let mut joined = Vec::with_capacity(context.len() + samples.len());
    joined.extend_from_slice(context);
    joined.extend_from_slice(samples);
    let kept = context.len();
    context.copy_from_slice(&joined[joined.len() - kept..]);
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn energy(x: impl Iterator<Item = f32>) -> f64 {
        x.map(|v| f64::from(v).powi(2)).sum()
    }

    #[test]
    fn noise_goes_down_block_by_block_at_any_rate_one_frame_late() {
        for rate in [48_000u32, 44_100] {
            let zc = (rate / 100) as usize;
            let speech = timbre_audio::signal::speech_like(rate, 3.0, 5)
                .audio
                .channels[0]
                .clone();
            let noise = timbre_audio::signal::white_noise(rate, 3.0, 7).channels[0].clone();
            let noisy: Vec<f32> = speech
                .iter()
                .zip(&noise)
                .map(|(s, n)| s + 0.03 * n)
                .collect();
            let mut denoiser = LiveDenoiser::new(rate);
            let block = 25 * zc;
            let out: Vec<f32> = noisy
                .chunks_exact(block)
                .flat_map(|b| denoiser.process(b))
                .collect();
            assert_eq!(out.len(), noisy.len() / block * block);
            // The output follows the speech one frame (10 ms) late.
            let settled = 50 * zc..out.len() - 3 * zc;
            let correlation = |lag: usize| -> f64 {
                settled
                    .clone()
                    .map(|i| f64::from(out[i + lag]) * f64::from(speech[i]))
                    .sum()
            };
            let lag = (0..3 * zc)
                .max_by(|&a, &b| correlation(a).total_cmp(&correlation(b)))
                .unwrap();
            assert!(lag.abs_diff(zc) <= 2, "{rate} Hz: lag {lag}, not {zc}");
            // Less of the noise is left than came in.
            let noise_in = energy(settled.clone().map(|i| noisy[i] - speech[i]));
            let noise_out = energy(settled.clone().map(|i| out[i + zc] - speech[i]));
            assert!(
                noise_out < 0.5 * noise_in,
                "{rate} Hz: {noise_out:.2} left of {noise_in:.2}"
            );
        }
    }
}
