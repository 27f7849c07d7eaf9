//! Test tones and a quick pitch check: generated signals for calibration, demos and tests.

use crate::buffer::AudioBuffer;

/// A mono sine of `seconds` (rounded to whole frames), starting at phase 0.
pub fn sine(sample_rate: u32, freq: f32, seconds: f64, amplitude: f32) -> AudioBuffer {
    let frames = (seconds * f64::from(sample_rate)).round() as usize;
    let step = std::f64::consts::TAU * f64::from(freq) / f64::from(sample_rate);
    let samples = (0..frames)
        .map(|i| amplitude * (step * i as f64).sin() as f32)
        .collect();
    AudioBuffer::new(sample_rate, vec![samples])
}

/// Frequency of a periodic signal from the spacing of its first and last upward zero
/// crossings (interpolated between samples); None with fewer than two crossings.
pub fn zero_crossing_frequency(samples: &[f32], sample_rate: u32) -> Option<f64> {
    let crossings: Vec<f64> = samples
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| i as f64 + f64::from(-w[0] / (w[1] - w[0])))
        .collect();
    let (first, last) = (crossings.first()?, crossings.last()?);
    (crossings.len() >= 2)
        .then(|| (crossings.len() - 1) as f64 * f64::from(sample_rate) / (last - first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_sine_measures_its_own_frequency() {
        let tone = sine(16000, 440.0, 1.0, 0.5);
        assert_eq!(tone.frames(), 16000);
        let freq = zero_crossing_frequency(&tone.channels[0], 16000).unwrap();
        assert!((freq - 440.0).abs() < 0.1, "{freq}");
        assert_eq!(zero_crossing_frequency(&[0.0; 100], 16000), None);
    }
}
