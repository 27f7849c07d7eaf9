//! The compressor and the de-esser: a feed-forward gain computer driven by a smoothed mean
//! square, linked across channels (every channel gets the same gain, so the image holds).

use super::{Compressor, DeEsser, db_to_gain};
use crate::buffer::AudioBuffer;
use crate::enhance::filters;

/// Averaging time of the RMS detectors.
const COMPRESSOR_RMS_MS: f64 = 10.0;
const DE_ESSER_RMS_MS: f64 = 5.0;
const DE_ESSER_ATTACK_MS: f64 = 1.0;
const DE_ESSER_RELEASE_MS: f64 = 60.0;
/// Mean squares are floored here before taking logs (-200 dBFS).
const SILENCE: f64 = 1e-20;

/// One-pole smoothing coefficient for a time constant; 0 (no smoothing) for a zero time.
fn coefficient(ms: f64, rate: f64) -> f64 {
    if ms <= 0.0 {
        0.0
    } else {
        (-1000.0 / (ms * rate)).exp()
    }
}

/// The static curve (with a quadratic soft knee of `knee_db` around the threshold) and its
/// attack/release ballistics, on levels and gains in dB.
struct GainComputer {
    threshold_db: f64,
    slope: f64,
    knee_db: f64,
    detector: f64,
    mean_square: f64,
    attack: f64,
    release: f64,
    gain_db: f64,
}

impl GainComputer {
    fn new(threshold_db: f64, ratio: f64, knee_db: f64, timing: [f64; 3], rate: f64) -> Self {
        let [rms_ms, attack_ms, release_ms] = timing;
        GainComputer {
            threshold_db,
            slope: 1.0 / ratio - 1.0,
            knee_db,
            detector: coefficient(rms_ms, rate),
            mean_square: 0.0,
            attack: coefficient(attack_ms, rate),
            release: coefficient(release_ms, rate),
            gain_db: 0.0,
        }
    }

    /// The gain change the static curve gives at `level_db`.
    fn static_gain_db(&self, level_db: f64) -> f64 {
        let over = level_db - self.threshold_db;
        if 2.0 * over <= -self.knee_db {
            0.0
        } else if 2.0 * over < self.knee_db {
            let into = over + self.knee_db / 2.0;
            self.slope * into * into / (2.0 * self.knee_db)
        } else {
            self.slope * over
        }
    }

    /// Takes the next sample's square (the loudest channel's) and gives its gain in dB.
    fn step(&mut self, square: f64) -> f64 {
        self.mean_square = self.detector * self.mean_square + (1.0 - self.detector) * square;
        let level_db = 10.0 * self.mean_square.max(SILENCE).log10();
        let target = self.static_gain_db(level_db);
        let k = if target < self.gain_db {
            self.attack
        } else {
            self.release
        };
        self.gain_db = k * self.gain_db + (1.0 - k) * target;
        self.gain_db
    }
}

fn loudest_square(buffer: &AudioBuffer, i: usize) -> f64 {
    buffer
        .channels
        .iter()
        .map(|c| f64::from(c[i]).powi(2))
        .fold(0.0, f64::max)
}

pub(super) fn compress(buffer: &mut AudioBuffer, p: &Compressor) {
    let rate = f64::from(buffer.sample_rate);
    let timing = [COMPRESSOR_RMS_MS, p.attack_ms, p.release_ms];
    let mut computer = GainComputer::new(p.threshold_db, p.ratio, p.knee_db, timing, rate);
    for i in 0..buffer.frames() {
        let gain_db = computer.step(loudest_square(buffer, i)) + p.makeup_db;
        let gain = db_to_gain(gain_db) as f32;
        buffer.channels.iter_mut().for_each(|c| c[i] *= gain);
    }
}

/// Splits each channel at `frequency_hz` with enhancement's zero-phase high-pass (so the high
/// band and the rest sum back to the input exactly, with no phase between them to cancel) and
/// compresses only the high band, by its own level.
pub(super) fn de_ess(buffer: &mut AudioBuffer, p: &DeEsser) {
    let rate = f64::from(buffer.sample_rate);
    let timing = [DE_ESSER_RMS_MS, DE_ESSER_ATTACK_MS, DE_ESSER_RELEASE_MS];
    let mut computer = GainComputer::new(p.threshold_db, p.ratio, 0.0, timing, rate);
    let highs: Vec<Vec<f32>> = buffer
        .channels
        .iter()
        .map(|channel| {
            let mut high = channel.clone();
            filters::high_pass(&mut high, buffer.sample_rate, p.frequency_hz);
            high
        })
        .collect();
    for i in 0..buffer.frames() {
        let square = highs
            .iter()
            .map(|h| f64::from(h[i]).powi(2))
            .fold(0.0, f64::max);
        let reduction = (db_to_gain(computer.step(square)) - 1.0) as f32;
        for (high, channel) in highs.iter().zip(&mut buffer.channels) {
            channel[i] += reduction * high[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_knee_joins_the_two_slopes_continuously() {
        let computer = GainComputer::new(-20.0, 4.0, 6.0, [10.0, 1.0, 1.0], 48_000.0);
        assert_eq!(computer.static_gain_db(-23.0), 0.0);
        assert!((computer.static_gain_db(-17.0) - (-0.75 * 3.0)).abs() < 1e-12);
        let inside = computer.static_gain_db(-20.0);
        assert!(inside < 0.0 && inside > -0.75 * 3.0, "{inside}");
    }
}
