//! Where the reference pipeline cuts a long input: inputs longer than `x_max` seconds are split
//! every `x_center` seconds at the quietest point within `x_query` seconds, and every segment is
//! converted with `x_pad` seconds of context on both sides (RVC `infer/vc/pipeline.py`).

use serde::{Deserialize, Serialize};

/// Samples per pitch/feature frame at 16 kHz (10 ms).
pub const WINDOW: usize = 160;
/// Rate of the audio the segments, pitch and features are computed on, in Hz.
pub const SAMPLE_RATE: usize = 16_000;

/// The chunking thresholds, in seconds (RVC's x_pad, x_query, x_center, x_max).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Chunking {
    /// Context converted on either side of each segment (and the input's reflect padding).
    pub x_pad: f64,
    /// How far either side of each cut the quietest point is sought.
    pub x_query: f64,
    /// Spacing of the cuts.
    pub x_center: f64,
    /// Inputs up to this long (less one 10 ms frame) are converted in one segment.
    pub x_max: f64,
}

impl Default for Chunking {
    /// RVC's settings for GPUs with more than 6 GB (and for the CPU).
    fn default() -> Self {
        Self {
            x_pad: 3.0,
            x_query: 10.0,
            x_center: 60.0,
            x_max: 65.0,
        }
    }
}

impl Chunking {
    /// Context added on each side, in 16 kHz samples.
    pub fn pad_samples(&self) -> usize {
        (SAMPLE_RATE as f64 * self.x_pad) as usize
    }

    /// Context added on each side at the synthesizer's rate.
    pub fn pad_samples_at(&self, rate: u32) -> usize {
        (rate as f64 * self.x_pad) as usize
    }
}

/// A span of the padded input `[start, end)` that is converted in one synthesizer call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// First sample, in 16 kHz samples of the padded input.
    pub start: usize,
    /// One past the last sample.
    pub end: usize,
}

/// The segments of the padded input for a filtered (unpadded) input of `audio.len()` samples.
pub fn segments(audio: &[f32], chunking: &Chunking) -> Vec<Segment> {
    let t_pad = chunking.pad_samples();
    let padded_len = audio.len() + 2 * t_pad;
    let mut segments = Vec::new();
    let mut start = 0;
    for cut in cut_points(audio, chunking) {
        let cut = cut / WINDOW * WINDOW;
        segments.push(Segment {
            start,
            end: (cut + 2 * t_pad + WINDOW).min(padded_len),
        });
        start = cut;
    }
    segments.push(Segment {
        start,
        end: padded_len,
    });
    segments
}

/// How many segments [`segments`] gives for an input of `len` samples (it depends on the length
/// alone, so it is known before the input is filtered).
pub fn segment_count(len: usize, chunking: &Chunking) -> usize {
    if is_one_segment(len, chunking) {
        return 1;
    }
    let t_center = ((SAMPLE_RATE as f64 * chunking.x_center) as usize).max(1);
    1 + (t_center..len).step_by(t_center).count()
}

fn is_one_segment(len: usize, chunking: &Chunking) -> bool {
    len + WINDOW <= (SAMPLE_RATE as f64 * chunking.x_max) as usize || len < 2
}

/// The reference's cut points: every `x_center` seconds, the sample within `x_query` seconds
/// where the 10 ms moving sum of |x| is smallest (the first such sample on ties).
fn cut_points(audio: &[f32], chunking: &Chunking) -> Vec<usize> {
    if is_one_segment(audio.len(), chunking) {
        return Vec::new();
    }
    let t_query = (SAMPLE_RATE as f64 * chunking.x_query) as usize;
    let t_center = ((SAMPLE_RATE as f64 * chunking.x_center) as usize).max(1);
    (t_center..audio.len())
        .step_by(t_center)
        .map(|t| {
            let lo = t.saturating_sub(t_query);
            let hi = (t + t_query).min(audio.len());
            let mut best = (lo, f64::INFINITY);
            for n in lo..hi {
                // The window of the input reflect-padded by WINDOW / 2, read in place.
                let window = (n..n + WINDOW).map(|m| reflected(audio, m as isize - HALF_WINDOW));
                let sum = window_abs_sum(window);
                if sum < best.1 {
                    best = (n, sum);
                }
            }
            best.0
        })
        .collect()
}

/// The reference's `sum(|audio_pad[i : i - WINDOW]| for i in 0..WINDOW)` at one position, added
/// in the same order so exact ties (digital silence) resolve as they do there.
fn window_abs_sum(window: impl Iterator<Item = f32>) -> f64 {
    window.fold(0.0, |sum, v| sum + (v as f64).abs())
}

const HALF_WINDOW: isize = (WINDOW / 2) as isize;

/// numpy's `np.pad(x, pad, mode="reflect")` (the edge sample is not repeated); pads longer
/// than the signal reflect back and forth as numpy does.
pub fn reflect_pad(x: &[f32], pad: usize) -> Vec<f32> {
    reflect_pad_owned(x.to_vec(), pad)
}

/// [`reflect_pad`] that grows `x` itself, so a long input is never held twice.
pub fn reflect_pad_owned(mut x: Vec<f32>, pad: usize) -> Vec<f32> {
    let n = x.len();
    if n < 2 {
        let value = x.first().copied().unwrap_or(0.0);
        return vec![value; n + 2 * pad];
    }
    let left: Vec<f32> = (-(pad as isize)..0).map(|i| reflected(&x, i)).collect();
    let right: Vec<f32> = (n as isize..(n + pad) as isize)
        .map(|i| reflected(&x, i))
        .collect();
    x.reserve_exact(2 * pad);
    x.resize(n + 2 * pad, 0.0);
    x.copy_within(0..n, pad);
    x[..pad].copy_from_slice(&left);
    x[pad + n..].copy_from_slice(&right);
    x
}

/// `x[i]` of `x` reflected about its ends (numpy's "reflect"), for any `i`; needs `x.len() ≥ 2`.
fn reflected(x: &[f32], i: isize) -> f32 {
    let n = x.len();
    if let Some(&inside) = usize::try_from(i).ok().and_then(|i| x.get(i)) {
        return inside;
    }
    let period = 2 * (n - 1);
    let m = i.rem_euclid(period as isize) as usize;
    x[if m < n { m } else { period - m }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_pad_matches_numpy() {
        assert_eq!(
            reflect_pad(&[1.0, 2.0, 3.0], 2),
            vec![3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]
        );
        assert_eq!(
            reflect_pad(&[1.0, 2.0], 3),
            vec![2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0]
        );
    }

    #[test]
    fn short_input_is_one_segment_with_context() {
        let chunking = Chunking {
            x_pad: 1.0,
            x_query: 6.0,
            x_center: 38.0,
            x_max: 41.0,
        };
        let audio = vec![0.1; 64_000];
        assert_eq!(
            segments(&audio, &chunking),
            vec![Segment {
                start: 0,
                end: 96_000
            }]
        );
    }

    #[test]
    fn long_input_is_cut_at_the_quietest_point_near_each_centre() {
        let chunking = Chunking {
            x_pad: 1.0,
            x_query: 1.0,
            x_center: 3.0,
            x_max: 4.0,
        };
        let mut audio = vec![0.5; 16_000 * 7];
        // Quiet gaps near 3 s and 6 s.
        for gap in [47_000, 97_000] {
            audio[gap..gap + 400].fill(0.0);
        }
        let segments = segments(&audio, &chunking);
        assert_eq!(segments.len(), 3);
        assert_eq!(segment_count(audio.len(), &chunking), 3);
        assert_eq!(segments[0].start, 0);
        // The cut lands on the frame grid inside the first gap.
        let cut = segments[1].start;
        assert_eq!(cut % WINDOW, 0);
        assert!((47_000 - WINDOW..47_400).contains(&cut), "cut at {cut}");
        assert_eq!(segments[0].end, cut + 2 * 16_000 + WINDOW);
        assert_eq!(segments[2].end, audio.len() + 2 * 16_000);
    }
}
