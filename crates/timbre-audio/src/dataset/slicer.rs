//! Cutting a recording at its silences exactly as RVC's `infer/lib/slicer2.py` `Slicer` does
//! (RVC-Project/Retrieval-based-Voice-Conversion-WebUI), slices returned as sample ranges.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::{AudioError, AudioErrorKind};

/// The slicer's parameters, in the reference's units; the defaults are the ones RVC's training
/// preprocessing passes (`threshold=-42, min_length=1500, min_interval=400, hop_size=15,
/// max_sil_kept=500`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SlicerConfig {
    /// Frames whose RMS is below this level (dBFS) are silent.
    pub threshold_db: f64,
    /// Shortest slice, in ms (a cut in the middle needs this much audio since the last cut).
    pub min_length_ms: u32,
    /// Shortest silence that is cut, in ms.
    pub min_interval_ms: u32,
    /// RMS frame hop, in ms.
    pub hop_size_ms: u32,
    /// Most silence kept around a slice, in ms.
    pub max_sil_kept_ms: u32,
}

impl Default for SlicerConfig {
    fn default() -> Self {
        SlicerConfig {
            threshold_db: -42.0,
            min_length_ms: 1500,
            min_interval_ms: 400,
            hop_size_ms: 15,
            max_sil_kept_ms: 500,
        }
    }
}

/// The slicer for one sample rate, its parameters converted to frames as the reference does
/// (Python's `round`, i.e. ties to even).
#[derive(Debug, Clone, PartialEq)]
pub struct Slicer {
    threshold: f64,
    hop: usize,
    win: usize,
    min_length: usize,
    min_interval: usize,
    max_sil_kept: usize,
}

impl Slicer {
    /// Fails as the reference's constructor does unless `min_length >= min_interval >= hop_size`
    /// and `max_sil_kept >= hop_size`, and for a zero rate or a hop of zero samples.
    pub fn new(sample_rate: u32, cfg: &SlicerConfig) -> Result<Slicer, AudioError> {
        let invalid = |detail: &str| {
            Err(AudioError::new(
                AudioErrorKind::Unsupported,
                None,
                format!("invalid slicer settings: {detail}"),
            ))
        };
        if !(cfg.min_length_ms >= cfg.min_interval_ms && cfg.min_interval_ms >= cfg.hop_size_ms) {
            return invalid("min_length >= min_interval >= hop_size must hold");
        }
        if cfg.max_sil_kept_ms < cfg.hop_size_ms {
            return invalid("max_sil_kept >= hop_size must hold");
        }
        if !cfg.threshold_db.is_finite() {
            return invalid("the threshold must be a number of dB");
        }
        let sr = f64::from(sample_rate);
        let min_interval = sr * f64::from(cfg.min_interval_ms) / 1000.0;
        let hop = (sr * f64::from(cfg.hop_size_ms) / 1000.0).round_ties_even();
        if hop < 1.0 {
            return invalid("the hop is shorter than one sample");
        }
        let frames = |ms: u32| (sr * f64::from(ms) / 1000.0 / hop).round_ties_even() as usize;
        Ok(Slicer {
            threshold: 10f64.powf(cfg.threshold_db / 20.0),
            hop: hop as usize,
            win: (min_interval.round_ties_even() as usize).min(4 * hop as usize),
            min_length: frames(cfg.min_length_ms),
            min_interval: (min_interval / hop).round_ties_even() as usize,
            max_sil_kept: frames(cfg.max_sil_kept_ms),
        })
    }

    /// Samples per RMS frame hop.
    pub fn hop_size(&self) -> usize {
        self.hop
    }

    /// The silence threshold as a linear RMS level.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// RMS per frame as the reference's `get_rms` computes it (librosa's: frames of `win`
    /// samples every `hop`, the signal zero-padded by `win / 2` at both ends; the squares summed
    /// in order, as numpy reduces that axis).
    pub fn frame_rms<T: Copy + Into<f64>>(&self, samples: &[T]) -> Vec<f64> {
        let pad = self.win / 2;
        let padded = samples.len() + 2 * pad;
        if padded < self.win {
            return Vec::new();
        }
        let frames = (padded - self.win) / self.hop + 1;
        (0..frames)
            .map(|f| {
                let start = (f * self.hop).saturating_sub(pad);
                let end = (f * self.hop + self.win)
                    .saturating_sub(pad)
                    .min(samples.len());
                let sum: f64 = samples[start.min(end)..end]
                    .iter()
                    .map(|&x| {
                        let x: f64 = x.into();
                        x * x
                    })
                    .sum();
                (sum / self.win as f64).sqrt()
            })
            .collect()
    }

    /// The slices of `samples` (mono), in order, as the reference's `Slicer.slice` returns them.
    ///
    /// As there, audio of at most `min_length` *frames* worth of samples (the reference compares
    /// the sample count with a frame count) and audio with no silence to cut come back whole.
    pub fn slice<T: Copy + Into<f64>>(&self, samples: &[T]) -> Vec<Range<usize>> {
        self.slice_with_rms(samples.len(), &self.frame_rms(samples))
    }

    /// [`Slicer::slice`] of `n` samples whose [`Slicer::frame_rms`] is `rms` (for callers that
    /// also want the levels).
    pub fn slice_with_rms(&self, n: usize, rms: &[f64]) -> Vec<Range<usize>> {
        if n <= self.min_length {
            return std::iter::once(0..n).collect();
        }
        let tags = self.silence_tags(rms);
        if tags.is_empty() {
            return std::iter::once(0..n).collect();
        }
        let hop = self.hop;
        let range = |begin: usize, end: usize| {
            let start = (begin * hop).min(n);
            start..(end * hop).min(n).max(start)
        };
        let total = rms.len();
        let mut chunks = Vec::with_capacity(tags.len() + 1);
        if tags[0].0 > 0 {
            chunks.push(range(0, tags[0].0));
        }
        for pair in tags.windows(2) {
            chunks.push(range(pair[0].1, pair[1].0));
        }
        let last = tags[tags.len() - 1].1;
        if last < total {
            chunks.push(range(last, total));
        }
        chunks
    }

    /// The silent frame ranges to remove, `(first, end)` per cut, from the reference's scan.
    fn silence_tags(&self, rms: &[f64]) -> Vec<(usize, usize)> {
        let keep = self.max_sil_kept;
        let mut tags = Vec::new();
        let mut silence_start: Option<usize> = None;
        let mut clip_start = 0usize;
        for (i, &level) in rms.iter().enumerate() {
            if level < self.threshold {
                silence_start.get_or_insert(i);
                continue;
            }
            let Some(start) = silence_start else {
                continue;
            };
            let leading = start == 0 && i > keep;
            let middle = i - start >= self.min_interval && i - clip_start >= self.min_length;
            if !leading && !middle {
                silence_start = None;
                continue;
            }
            if i - start <= keep {
                let pos = argmin(rms, start, i + 1);
                tags.push(if start == 0 { (0, pos) } else { (pos, pos) });
                clip_start = pos;
            } else if i - start <= keep * 2 {
                let pos = argmin(rms, i - keep, start + keep + 1);
                let pos_l = argmin(rms, start, start + keep + 1);
                let pos_r = argmin(rms, i - keep, i + 1);
                if start == 0 {
                    tags.push((0, pos_r));
                    clip_start = pos_r;
                } else {
                    tags.push((pos_l.min(pos), pos_r.max(pos)));
                    clip_start = pos_r.max(pos);
                }
            } else {
                let pos_l = argmin(rms, start, start + keep + 1);
                let pos_r = argmin(rms, i - keep, i + 1);
                tags.push(if start == 0 {
                    (0, pos_r)
                } else {
                    (pos_l, pos_r)
                });
                clip_start = pos_r;
            }
            silence_start = None;
        }
        let total = rms.len();
        if let Some(start) = silence_start
            && total - start >= self.min_interval
        {
            let end = total.min(start + keep);
            tags.push((argmin(rms, start, end + 1), total + 1));
        }
        tags
    }
}

/// Index (into `values`) of the first smallest value of `values[start..end]`, `end` clamped to
/// the length as Python's slicing does (numpy's `argmin` + offset).
fn argmin(values: &[f64], start: usize, end: usize) -> usize {
    let end = end.min(values.len());
    let mut best = start;
    for i in start..end {
        if values[i] < values[best] {
            best = i;
        }
    }
    best
}
