//! Formant shift as rvc-next 0.2.16 does it offline (`engine/convert/offline.py`, `_vc` and
//! `_formant_resample`; RVC's realtime `infer(…, return_length2)`): a segment of `frames`
//! frames is synthesized at `⌈frames · factor⌉` frames, factor = 2^(semitones/12) (the decoder's
//! input and the pitch excitation stretched, the f0 scaled by the same ratio), and the first
//! `frames · ⌊factor · rate / 100⌋` samples are resampled back to `frames · hop` with torchaudio's
//! sinc resampler. Played back at the original length, the spectral envelope moves up by
//! `factor` (formants up for a positive shift) and so does the pitch: the converter asks the
//! synthesizer for `semitones` less pitch so that it lands where the transpose says. A shift of 0
//! does none of this: the segment is synthesized and returned as it is.

use anyhow::Result;
use tch::Tensor;

use crate::stream::sinc_resample::SincResampler;

/// The formant shift of one segment.
pub struct Shift {
    frames: usize,
    rate: u32,
    factor: f64,
    /// Frames the decoder synthesizes; None when the shift is 0.
    decoder_frames: Option<i64>,
}

impl Shift {
    pub fn new(semitones: f32, frames: usize, rate: u32) -> Shift {
        let factor = 2f64.powf(f64::from(semitones) / 12.0);
        Shift {
            frames,
            rate,
            factor,
            decoder_frames: (semitones != 0.0).then(|| (frames as f64 * factor).ceil() as i64),
        }
    }

    pub fn decoder_frames(&self) -> Option<i64> {
        self.decoder_frames
    }

    /// The synthesizer's f0 `[1, frames]`: scaled by the stretch, so that the pitch per output
    /// sample is the one asked for.
    pub fn scale_pitch(&self, hz: &Tensor) -> Tensor {
        match self.decoder_frames {
            Some(stretched) => hz * (stretched as f64 / self.frames as f64),
            None => hz.shallow_clone(),
        }
    }

    /// The synthesized (stretched) samples squeezed back to `frames` frames.
    pub fn restore(&self, samples: &[f32]) -> Result<Vec<f32>> {
        if self.decoder_frames.is_none() {
            return Ok(samples.to_vec());
        }
        let hop = (self.rate / 100) as usize;
        let stretched_hop = (self.factor * f64::from(self.rate) / 100.0).floor() as usize;
        let take = |n: usize| samples[..n.min(samples.len())].to_vec();
        if stretched_hop == hop {
            return Ok(take(self.frames * hop));
        }
        let resampler = SincResampler::new(stretched_hop as u32, hop as u32, tch::Device::Cpu);
        Ok(resampler.apply_slice(&take(self.frames * stretched_hop)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_of_0_changes_nothing() {
        let shift = Shift::new(0.0, 50, 40_000);
        assert_eq!(shift.decoder_frames(), None);
        let samples: Vec<f32> = (0..20_000).map(|i| (i as f32 * 0.01).sin()).collect();
        assert_eq!(shift.restore(&samples).unwrap(), samples);
        let hz = Tensor::from_slice(&[110.0f32, 0.0, 220.5]);
        assert_eq!(
            Vec::<f32>::try_from(shift.scale_pitch(&hz)).unwrap(),
            vec![110.0, 0.0, 220.5]
        );
    }

    #[test]
    fn a_shift_stretches_the_synthesis_and_restores_the_length() {
        // +2 semitones: factor 1.1225, 100 frames → 113 decoder frames, 448 samples a frame
        // at 40 kHz squeezed back to 400.
        let shift = Shift::new(2.0, 100, 40_000);
        assert_eq!(shift.decoder_frames(), Some(113));
        let hz = Tensor::from_slice(&[100.0f32]);
        let scaled = Vec::<f32>::try_from(shift.scale_pitch(&hz)).unwrap();
        assert!((scaled[0] - 113.0).abs() < 1e-4);
        // A 448-sample period (89.3 Hz at 40 kHz) comes back as a 400-sample one (100 Hz).
        let stretched: Vec<f32> = (0..113 * 400)
            .map(|i| (std::f64::consts::TAU * i as f64 / 448.0).sin() as f32)
            .collect();
        let restored = shift.restore(&stretched).unwrap();
        assert_eq!(restored.len(), 100 * 400);
        for (i, value) in restored.iter().enumerate().skip(1000).take(30_000) {
            let expected = (std::f64::consts::TAU * i as f64 / 400.0).sin();
            assert!((f64::from(*value) - expected).abs() < 5e-3, "{i}: {value}");
        }
    }
}
