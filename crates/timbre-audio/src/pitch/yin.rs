//! YIN (de Cheveigné & Kawahara 2002, "YIN, a fundamental frequency estimator for speech and
//! music"): cumulative-mean-normalised difference function, absolute threshold, parabolic
//! interpolation, on the RVC grid of `infer/modules/vc/pipeline.py` (frame `i` centred on sample
//! `160·i`, as rmvpe's frames are).

use std::sync::Arc;

use timbre_fft::{ComplexToReal, RealToComplex};

use super::{HOP, SAMPLE_RATE, frame_count, search_range};
use crate::filter::{butter_lowpass, filtfilt};

/// A dip of the normalised difference below this is a period (the paper's absolute threshold).
const THRESHOLD: f64 = 0.1;
/// Harmonics well above the highest f0 sought are damped (zero-phase) before the search: at a
/// non-integer period they decorrelate from one period to the next and can hide the dip.
const LOWPASS_ORDER: usize = 4;
const LOWPASS_CUTOFF_PER_F0_MAX: f64 = 1.5;
const LOWPASS_CUTOFF_MIN_HZ: f64 = 1000.0;
/// Frames this far below the loudest frame are unvoiced whatever their periodicity, so hum and
/// reverb tails under a recording's noise floor stay silent.
const RELATIVE_SILENCE_DB: f64 = -50.0;
/// Frames quieter than this RMS hold no usable period at all.
const ABSOLUTE_SILENCE_RMS: f64 = 1e-6;

/// f0 in Hz per 10 ms frame (0 = unvoiced), `frame_count(audio_16k.len())` values, searching
/// periods between `1 / f0_max` and `1 / f0_min`.
pub fn track(audio_16k: &[f32], f0_min: f32, f0_max: f32) -> Vec<f32> {
    let frames = frame_count(audio_16k.len());
    let Some((f0_min, f0_max)) = search_range(f0_min, f0_max) else {
        return vec![0.0; frames];
    };
    let fs = f64::from(SAMPLE_RATE);
    let shortest = ((fs / f0_max).floor() as usize).max(2);
    let longest = ((fs / f0_min).ceil() as usize).max(shortest);
    let tracker = Tracker::new(lowpassed(audio_16k, f0_max), shortest, longest);
    let estimates: Vec<(f64, f64)> = (0..frames).map(|k| tracker.frame(k)).collect();
    let loudest = estimates.iter().fold(0.0f64, |m, e| m.max(e.1));
    let gate = (loudest * 10f64.powf(RELATIVE_SILENCE_DB / 20.0)).max(ABSOLUTE_SILENCE_RMS);
    estimates
        .into_iter()
        .map(|(f0, rms)| if rms >= gate { f0 as f32 } else { 0.0 })
        .collect()
}

fn lowpassed(audio_16k: &[f32], f0_max: f64) -> Vec<f64> {
    let fs = f64::from(SAMPLE_RATE);
    let cutoff = (LOWPASS_CUTOFF_PER_F0_MAX * f0_max).max(LOWPASS_CUTOFF_MIN_HZ);
    let filtered = match butter_lowpass(LOWPASS_ORDER, cutoff, fs) {
        Some((b, a)) => filtfilt(&b, &a, audio_16k),
        // A cutoff at or above Nyquist: nothing to damp.
        None => audio_16k.to_vec(),
    };
    filtered
        .into_iter()
        .map(|v| if v.is_finite() { f64::from(v) } else { 0.0 })
        .collect()
}

/// The period found (in samples, fractional) and the RMS of the span analysed.
struct Estimate {
    lag: Option<f64>,
    rms: f64,
}

struct Tracker {
    x: Vec<f64>,
    shortest: usize,
    longest: usize,
    /// Samples summed per lag, one longest period.
    integration: usize,
    fft: Arc<dyn RealToComplex<f64>>,
    ifft: Arc<dyn ComplexToReal<f64>>,
}

impl Tracker {
    fn new(x: Vec<f64>, shortest: usize, longest: usize) -> Self {
        let integration = longest;
        let fft_len = (integration + longest + 2).next_power_of_two();
        let fft = timbre_fft::real_fft_f64(fft_len);
        Tracker {
            x,
            shortest,
            longest,
            integration,
            fft: fft.forward,
            ifft: fft.inverse,
        }
    }

    /// f0 (0 when no dip passes the threshold) and RMS for frame `k`. The difference at lag τ
    /// compares the `integration` samples from `start` with those τ later, so it describes the
    /// time `start + (integration + τ) / 2`: a first pass finds τ, a second centres that on the
    /// frame so rising or falling pitch is not read early or late.
    fn frame(&self, k: usize) -> (f64, f64) {
        let centre = (k * HOP) as i64;
        let max_lag = self.longest + 1;
        let first = self.analyse(centre - ((self.integration + max_lag) / 2) as i64);
        let Some(lag) = first.lag else {
            return (0.0, first.rms);
        };
        let centred = self.analyse(centre - ((self.integration as f64 + lag) / 2.0).round() as i64);
        let f0 = centred.lag.map_or(0.0, |lag| f64::from(SAMPLE_RATE) / lag);
        (f0, first.rms)
    }

    fn analyse(&self, start: i64) -> Estimate {
        // Lags up to longest + 1 so the parabola at the longest period has a right neighbour.
        let max_lag = self.longest + 1;
        let span = self.integration + max_lag;
        let mut segment = self.fft.make_input_vec();
        for (j, slot) in segment.iter_mut().take(span).enumerate() {
            *slot = usize::try_from(start + j as i64)
                .ok()
                .and_then(|i| self.x.get(i))
                .copied()
                .unwrap_or(0.0);
        }
        let mut energy_before = Vec::with_capacity(span + 1);
        energy_before.push(0.0);
        for v in &segment[..span] {
            energy_before.push(energy_before.last().copied().unwrap_or(0.0) + v * v);
        }
        let rms = (energy_before[span] / span as f64).sqrt();
        if rms < ABSOLUTE_SILENCE_RMS {
            return Estimate { lag: None, rms };
        }

        let cross = self.cross_correlation(&segment);
        let reference_energy = energy_before[self.integration];
        let difference = |lag: usize| {
            let lagged_energy = energy_before[lag + self.integration] - energy_before[lag];
            (reference_energy + lagged_energy - 2.0 * cross[lag]).max(0.0)
        };
        let mut normalized = vec![1.0; max_lag + 1];
        let mut running = 0.0;
        for (lag, slot) in normalized.iter_mut().enumerate().skip(1) {
            let d = difference(lag);
            running += d;
            *slot = if running > 0.0 {
                d * lag as f64 / running
            } else {
                1.0
            };
        }

        let Some(mut lag) = (self.shortest..=self.longest).find(|&lag| normalized[lag] < THRESHOLD)
        else {
            return Estimate { lag: None, rms };
        };
        while lag < self.longest && normalized[lag + 1] < normalized[lag] {
            lag += 1;
        }
        let (before, here, after) = (normalized[lag - 1], normalized[lag], normalized[lag + 1]);
        let curvature = before - 2.0 * here + after;
        let shift = if curvature > 0.0 {
            (0.5 * (before - after) / curvature).clamp(-1.0, 1.0)
        } else {
            0.0
        };
        Estimate {
            lag: Some(lag as f64 + shift),
            rms,
        }
    }

    /// Σⱼ segment[j]·segment[j + lag] over the first `integration` samples, for every lag, via
    /// the spectrum (the zero padding keeps it from wrapping around).
    fn cross_correlation(&self, segment: &[f64]) -> Vec<f64> {
        let mut reference = self.fft.make_input_vec();
        reference[..self.integration].copy_from_slice(&segment[..self.integration]);
        let mut lagged = segment.to_vec();
        let mut reference_spectrum = self.fft.make_output_vec();
        let mut lagged_spectrum = self.fft.make_output_vec();
        // Transforms only fail on buffer-length mismatches; the buffers come from the plans.
        let _ = self.fft.process(&mut reference, &mut reference_spectrum);
        let _ = self.fft.process(&mut lagged, &mut lagged_spectrum);
        for (l, r) in lagged_spectrum.iter_mut().zip(&reference_spectrum) {
            *l *= r.conj();
        }
        let mut correlation = self.ifft.make_output_vec();
        let _ = self.ifft.process(&mut lagged_spectrum, &mut correlation);
        let scale = 1.0 / correlation.len() as f64;
        correlation.iter_mut().for_each(|v| *v *= scale);
        correlation
    }
}
