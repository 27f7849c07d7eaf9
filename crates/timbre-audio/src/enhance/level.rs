//! Loudness normalisation (EBU R128 integrated loudness through ebur128) and a true-peak
//! limiter, both in place.

use std::collections::VecDeque;
use std::f64::consts::PI;

use super::{ProcessError, Progress};
use crate::analysis::loudness_lufs;
use crate::buffer::AudioBuffer;

/// Quiet material is raised at most this much, so a near-silent file does not become loud noise.
pub(super) const MAX_GAIN_DB: f64 = 24.0;

/// What normalisation did: the loudness measured and the gain applied (`None` when the audio is
/// too short or silent to measure).
pub(super) fn normalize_loudness(buffer: &mut AudioBuffer, target_lufs: f64) -> Option<(f64, f64)> {
    let measured = loudness_lufs(buffer)?;
    let gain_db = (target_lufs - measured).min(MAX_GAIN_DB);
    let gain = 10f64.powf(gain_db / 20.0) as f32;
    buffer
        .channels
        .iter_mut()
        .flatten()
        .for_each(|x| *x *= gain);
    Some((measured, gain_db))
}

/// Lookahead before a peak over which the gain ramps down, and the ramp back up after it.
const LOOKAHEAD_SECS: f64 = 0.005;
const RELEASE_SECS: f64 = 0.08;
/// Taps either side of an interpolated point for the 4× oversampled peak estimate.
const HALF_TAPS: usize = 8;
const OVERSAMPLING: usize = 4;
/// Aim this far under the ceiling: interpolators differ (ebur128's meter reads a few hundredths
/// of a dB above this one on a sine at a quarter of the sample rate).
const CEILING_MARGIN_DB: f64 = 0.1;

/// What the limiter did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limited {
    /// Separate excursions over the ceiling.
    pub peaks: usize,
    pub max_reduction_db: f64,
}

/// Keeps the true peak (4× oversampled) at or below `ceiling_db` dBTP. For each sample, the gain
/// the worst point nearby allows is taken as the minimum over the next `L` samples and averaged
/// over the last `L` (fewer at the start), which ramps down before a peak and never lets a peak through; recovery is
/// slowed to `RELEASE_SECS`. Runs as a stream with a delay of `L + HALF_TAPS` samples, writing
/// back in place.
pub(crate) fn limit(
    buffer: &mut AudioBuffer,
    ceiling_db: f64,
    progress: &mut Progress<'_>,
) -> Result<Limited, ProcessError> {
    let ceiling = 10f64.powf((ceiling_db - CEILING_MARGIN_DB) / 20.0);
    let rate = f64::from(buffer.sample_rate);
    let lookahead = ((LOOKAHEAD_SECS * rate) as usize).max(1);
    let release = 1.0 - (-1.0 / (RELEASE_SECS * rate)).exp();
    let interpolator = Interpolator::new();
    let total = buffer.frames();
    let channels = buffer.channels.len();
    // The original samples still needed: peak estimates reach HALF_TAPS ahead and the output is
    // `lookahead + HALF_TAPS` behind the input.
    let history = lookahead + 2 * HALF_TAPS + 2;
    let original = |c: usize, i: isize, ring: &[Vec<f32>]| -> f64 {
        if i < 0 || i as usize >= total {
            0.0
        } else {
            f64::from(ring[c][i as usize % history])
        }
    };
    let mut ring = vec![vec![0.0f32; history]; channels];
    let mut minimum = SlidingMinimum::new(lookahead);
    let mut smoothing = VecDeque::with_capacity(lookahead);
    let mut smoothing_sum = 0.0;
    let mut released = 1.0f64;
    let mut report = Limited {
        peaks: 0,
        max_reduction_db: 0.0,
    };
    let mut over = false;
    let delay = lookahead - 1 + HALF_TAPS;
    for step in 0..total + delay {
        if step < total {
            for (kept, channel) in ring.iter_mut().zip(&buffer.channels) {
                kept[step % history] = channel[step];
            }
        }
        // Peak estimate around sample `k`, needing originals up to k + HALF_TAPS.
        let k = step as isize - HALF_TAPS as isize;
        if k >= 0 {
            let peak = (0..channels)
                .map(|c| interpolator.peak_after(|i| original(c, k + i, &ring)))
                .fold(0.0f64, f64::max);
            let allowed = if peak > ceiling { ceiling / peak } else { 1.0 };
            if allowed < 1.0 && !over {
                report.peaks += 1;
            }
            over = allowed < 1.0;
            minimum.push(allowed);
        }
        // Gain for sample `n`: the minimum of allowed[n ..= n + L - 1], released, then averaged.
        let j = k - (lookahead as isize - 1);
        if j >= 0 {
            released = minimum.get().min(released + (1.0 - released) * release);
            smoothing.push_back(released);
            smoothing_sum += released;
            if smoothing.len() > lookahead {
                smoothing_sum -= smoothing.pop_front().expect("longer than lookahead");
            }
            let gain = smoothing_sum / smoothing.len() as f64;
            let n = j as usize;
            if n < total {
                report.max_reduction_db = report.max_reduction_db.max(-20.0 * gain.log10());
                for (c, channel) in buffer.channels.iter_mut().enumerate() {
                    channel[n] = (original(c, n as isize, &ring) * gain) as f32;
                }
            }
        }
        if step % 65_536 == 0 && !progress(step as f64 / (total + delay) as f64) {
            return Err(ProcessError::Cancelled);
        }
    }
    Ok(report)
}

/// Minimum over the last `window` values pushed (a monotonic deque).
struct SlidingMinimum {
    window: usize,
    pushed: usize,
    values: VecDeque<(usize, f64)>,
}

impl SlidingMinimum {
    fn new(window: usize) -> Self {
        SlidingMinimum {
            window,
            pushed: 0,
            values: VecDeque::new(),
        }
    }

    fn push(&mut self, value: f64) {
        while self.values.back().is_some_and(|&(_, v)| v >= value) {
            self.values.pop_back();
        }
        self.values.push_back((self.pushed, value));
        self.pushed += 1;
        while self
            .values
            .front()
            .is_some_and(|&(i, _)| i + self.window < self.pushed)
        {
            self.values.pop_front();
        }
    }

    fn get(&self) -> f64 {
        self.values.front().map_or(1.0, |&(_, v)| v)
    }
}

/// Windowed-sinc interpolation at the quarter points between two samples.
struct Interpolator {
    /// Per fraction 1/4, 2/4, 3/4: the taps for samples -HALF_TAPS+1 ..= HALF_TAPS.
    phases: Vec<Vec<f64>>,
}

impl Interpolator {
    fn new() -> Self {
        let phases = (1..OVERSAMPLING)
            .map(|p| {
                let fraction = p as f64 / OVERSAMPLING as f64;
                (1 - HALF_TAPS as isize..=HALF_TAPS as isize)
                    .map(|i| {
                        let x = fraction - i as f64;
                        let sinc = (PI * x).sin() / (PI * x);
                        let window = 0.5 + 0.5 * (PI * x / HALF_TAPS as f64).cos();
                        sinc * window
                    })
                    .collect()
            })
            .collect();
        Interpolator { phases }
    }

    /// The largest magnitude at sample 0 and at the quarter points between it and sample 1;
    /// `sample(i)` reads samples relative to 0.
    fn peak_after(&self, sample: impl Fn(isize) -> f64) -> f64 {
        let mut around = [0.0f64; 2 * HALF_TAPS];
        for (i, x) in around.iter_mut().enumerate() {
            *x = sample(i as isize + 1 - HALF_TAPS as isize);
        }
        self.phases
            .iter()
            .map(|taps| {
                taps.iter()
                    .zip(&around)
                    .map(|(t, x)| t * x)
                    .sum::<f64>()
                    .abs()
            })
            .fold(sample(0).abs(), f64::max)
    }
}
