//! A Hann-windowed STFT with a hop of a quarter frame, frame by frame, and its overlap-add
//! inverse. Frames start `n_fft - hop` samples before the signal, so every sample lies under
//! exactly four frames and the inverse needs no edge correction.

use std::sync::Arc;

use timbre_fft::num_complex::Complex32;
use timbre_fft::{ComplexToReal, RealToComplex};

/// About 46 ms of audio per frame, as a power of two.
const FRAME_SECS: f64 = 0.046;
const OVERLAP: usize = 4;
/// Σ w² over the four overlapping periodic Hann windows, at every sample.
const WINDOW_POWER_SUM: f32 = 1.5;

pub(super) struct Stft {
    pub n_fft: usize,
    pub hop: usize,
    window: Vec<f32>,
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    frame: Vec<f32>,
}

impl Stft {
    pub fn new(sample_rate: u32) -> Self {
        let n_fft = ((FRAME_SECS * f64::from(sample_rate)) as usize)
            .next_power_of_two()
            .max(64);
        let window = (0..n_fft)
            .map(|i| (0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n_fft as f64).cos()) as f32)
            .collect();
        let fft = timbre_fft::real_fft_f32(n_fft);
        Stft {
            n_fft,
            hop: n_fft / OVERLAP,
            window,
            forward: fft.forward,
            inverse: fft.inverse,
            frame: vec![0.0; n_fft],
        }
    }

    pub fn bins(&self) -> usize {
        self.n_fft / 2 + 1
    }

    /// Frames needed to cover `samples` samples.
    pub fn frame_count(&self, samples: usize) -> usize {
        (samples + self.n_fft - self.hop).div_ceil(self.hop)
    }

    /// First sample of frame `t` (negative before the signal starts).
    fn frame_start(&self, t: usize) -> isize {
        (t * self.hop) as isize - (self.n_fft - self.hop) as isize
    }

    /// The spectrum of frame `t` of `signal` (zero outside it) into `out` (`bins()` long).
    pub fn analyse(&mut self, signal: &[f32], t: usize, out: &mut [Complex32]) {
        let start = self.frame_start(t);
        for (i, (x, w)) in self.frame.iter_mut().zip(&self.window).enumerate() {
            let at = start + i as isize;
            *x = if at >= 0 && (at as usize) < signal.len() {
                signal[at as usize] * w
            } else {
                0.0
            };
        }
        self.forward
            .process(&mut self.frame, out)
            .expect("buffers are sized for this plan");
    }

    /// Inverts `spectrum` (consumed as scratch), windows it and adds it into `out` as frame `t`.
    pub fn overlap_add(&mut self, spectrum: &mut [Complex32], t: usize, out: &mut [f32]) {
        // A real signal's DC and Nyquist bins have no imaginary part; masks keep it so, but
        // rounding may not.
        spectrum[0].im = 0.0;
        let last = spectrum.len() - 1;
        spectrum[last].im = 0.0;
        self.inverse
            .process(spectrum, &mut self.frame)
            .expect("buffers are sized for this plan");
        let scale = 1.0 / (self.n_fft as f32 * WINDOW_POWER_SUM);
        let start = self.frame_start(t);
        for (i, (x, w)) in self.frame.iter().zip(&self.window).enumerate() {
            let at = start + i as isize;
            if at >= 0 && (at as usize) < out.len() {
                out[at as usize] += x * w * scale;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::sine;
    use timbre_test_support::max_abs_difference;

    #[test]
    fn analysis_then_overlap_add_gives_the_signal_back() {
        let signal = sine(22050, 440.0, 0.5, 0.5);
        let mut stft = Stft::new(22050);
        assert_eq!((stft.n_fft, stft.hop), (1024, 256));
        let mut spectrum = vec![Complex32::default(); stft.bins()];
        let mut out = vec![0.0; signal.len()];
        for t in 0..stft.frame_count(signal.len()) {
            stft.analyse(&signal, t, &mut spectrum);
            stft.overlap_add(&mut spectrum, t, &mut out);
        }
        let worst = max_abs_difference(&out, &signal);
        assert!(worst < 1e-5, "{worst}");
    }
}
