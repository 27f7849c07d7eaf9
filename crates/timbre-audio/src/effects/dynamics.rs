//! The compressor and the de-esser: a feed-forward gain computer driven by a smoothed mean
//! square, linked across channels (every channel gets the same gain, so the image holds).

use std::collections::VecDeque;

use super::{Compressor, DeEsser, db_to_gain};
use crate::enhance::filters::HighPassStream;

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

fn loudest_square(block: &[Vec<f32>], i: usize) -> f64 {
    block
        .iter()
        .map(|c| f64::from(c[i]).powi(2))
        .fold(0.0, f64::max)
}

/// The compressor over a stream: every channel of a frame gets the gain of the loudest.
pub(super) struct CompressorStage {
    computer: GainComputer,
    makeup_db: f64,
}

impl CompressorStage {
    pub fn new(p: &Compressor, rate: u32) -> Self {
        let timing = [COMPRESSOR_RMS_MS, p.attack_ms, p.release_ms];
        CompressorStage {
            computer: GainComputer::new(
                p.threshold_db,
                p.ratio,
                p.knee_db,
                timing,
                f64::from(rate),
            ),
            makeup_db: p.makeup_db,
        }
    }

    /// Compresses the next block in place.
    pub fn process(&mut self, block: &mut [Vec<f32>]) {
        for i in 0..block.first().map_or(0, Vec::len) {
            let gain_db = self.computer.step(loudest_square(block, i)) + self.makeup_db;
            let gain = db_to_gain(gain_db) as f32;
            block.iter_mut().for_each(|c| c[i] *= gain);
        }
    }
}

/// Splits each channel at `frequency_hz` with enhancement's zero-phase high-pass (so the high
/// band and the rest sum back to the input exactly, with no phase between them to cancel) and
/// compresses only the high band, by its own level. The input waits in `dry` for the high-pass,
/// which lags it, so the two stay aligned.
pub(super) struct DeEsserStage {
    computer: GainComputer,
    splits: Vec<HighPassStream>,
    dry: Vec<VecDeque<f32>>,
    /// The high band of the frames the high-pass has just given out.
    highs: Vec<Vec<f32>>,
}

impl DeEsserStage {
    /// Expects `frequency_hz` below the Nyquist frequency of `rate`.
    pub fn new(p: &DeEsser, rate: u32, channels: usize) -> Self {
        let timing = [DE_ESSER_RMS_MS, DE_ESSER_ATTACK_MS, DE_ESSER_RELEASE_MS];
        let split = || HighPassStream::new(rate, p.frequency_hz).expect("frequency checked");
        let splits: Vec<HighPassStream> = (0..channels).map(|_| split()).collect();
        let longest = splits.first().map_or(0, HighPassStream::max_held);
        DeEsserStage {
            computer: GainComputer::new(p.threshold_db, p.ratio, 0.0, timing, f64::from(rate)),
            splits,
            dry: vec![VecDeque::with_capacity(longest); channels],
            highs: vec![Vec::new(); channels],
        }
    }

    /// Takes the next block; gives the frames whose high band is complete.
    pub fn push(&mut self, block: &[Vec<f32>]) -> Vec<Vec<f32>> {
        let frames = block.first().map_or(0, Vec::len);
        let mut out = vec![Vec::with_capacity(frames); block.len()];
        // A frame at a time, so the dry signal waits no longer than the high-pass holds.
        for i in 0..frames {
            for ((channel, split), (dry, high)) in block
                .iter()
                .zip(&mut self.splits)
                .zip(self.dry.iter_mut().zip(&mut self.highs))
            {
                dry.push_back(channel[i]);
                split.push(std::slice::from_ref(&channel[i]), high);
            }
            self.reduce(&mut out);
        }
        out
    }

    /// The frames still held back.
    pub fn finish(mut self) -> Vec<Vec<f32>> {
        for (split, high) in std::mem::take(&mut self.splits)
            .into_iter()
            .zip(&mut self.highs)
        {
            split.finish(high);
        }
        let mut out = vec![Vec::new(); self.dry.len()];
        self.reduce(&mut out);
        out
    }

    /// Today's per-sample arithmetic on the frames whose high band has come out.
    fn reduce(&mut self, out: &mut [Vec<f32>]) {
        for i in 0..self.highs.first().map_or(0, Vec::len) {
            let square = loudest_square(&self.highs, i);
            let reduction = (db_to_gain(self.computer.step(square)) - 1.0) as f32;
            for ((high, dry), channel) in self.highs.iter().zip(&mut self.dry).zip(&mut *out) {
                let x = dry
                    .pop_front()
                    .expect("the high-pass gives out no more than it took");
                channel.push(x + reduction * high[i]);
            }
        }
        self.highs.iter_mut().for_each(Vec::clear);
    }

    #[cfg(test)]
    pub fn held_samples(&self) -> usize {
        let splits: usize = self.splits.iter().map(HighPassStream::held_samples).sum();
        let dry: usize = self.dry.iter().map(VecDeque::capacity).sum();
        let highs: usize = self.highs.iter().map(Vec::capacity).sum();
        splits + dry + highs
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
