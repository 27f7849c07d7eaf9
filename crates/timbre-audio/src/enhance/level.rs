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
pub struct Limited {
    /// Separate excursions over the ceiling.
    pub peaks: usize,
    /// Deepest gain reduction applied, in dB (positive; 0 when nothing was limited).
    pub max_reduction_db: f64,
}

/// Keeps the true peak (4× oversampled) at or below `ceiling_db` dBTP, in place: the buffer
/// through a [`TruePeakLimiter`].
pub(crate) fn limit(
    buffer: &mut AudioBuffer,
    ceiling_db: f64,
    progress: &mut Progress<'_>,
) -> Result<Limited, ProcessError> {
    const CHUNK: usize = 65_536;
    let total = buffer.frames();
    let mut limiter = TruePeakLimiter::new(buffer.sample_rate, buffer.channels.len(), ceiling_db);
    let mut written = 0;
    let mut put = |buffer: &mut AudioBuffer, out: Vec<Vec<f32>>| {
        let n = out.first().map_or(0, Vec::len);
        for (channel, limited) in buffer.channels.iter_mut().zip(out) {
            channel[written..written + n].copy_from_slice(&limited);
        }
        written += n;
    };
    for start in (0..total).step_by(CHUNK) {
        let end = (start + CHUNK).min(total);
        let chunk: Vec<Vec<f32>> = buffer
            .channels
            .iter()
            .map(|c| c[start..end].to_vec())
            .collect();
        let out = limiter.push(&chunk);
        put(buffer, out);
        if !progress(start as f64 / total as f64) {
            return Err(ProcessError::Cancelled);
        }
    }
    let (out, report) = limiter.finish();
    put(buffer, out);
    Ok(report)
}

/// The true-peak limiter as a stream: blocks in, the same number of frames out in all (each
/// block's output lags its input by `L + HALF_TAPS` samples; `finish` gives the rest). For each
/// sample, the gain the worst point nearby allows is taken as the minimum over the next `L`
/// samples and averaged over the last `L` (fewer at the start), which ramps down before a peak
/// and never lets a peak through; recovery is slowed to `RELEASE_SECS`.
pub struct TruePeakLimiter {
    ceiling: f64,
    lookahead: usize,
    release: f64,
    interpolator: Interpolator,
    /// The original samples still needed: peak estimates reach HALF_TAPS ahead and the output
    /// is `lookahead + HALF_TAPS` behind the input.
    history: usize,
    ring: Vec<Vec<f32>>,
    minimum: SlidingMinimum,
    smoothing: VecDeque<f64>,
    smoothing_sum: f64,
    released: f64,
    over: bool,
    /// Frames pushed, the padding of `finish` included.
    step: usize,
    /// Real frames pushed; None until `finish` knows them all.
    total: Option<usize>,
    report: Limited,
}

impl TruePeakLimiter {
    /// Limiter for `channels` channels at `sample_rate` Hz, true peaks held to `ceiling_db` dBTP.
    pub fn new(sample_rate: u32, channels: usize, ceiling_db: f64) -> Self {
        let rate = f64::from(sample_rate);
        let lookahead = ((LOOKAHEAD_SECS * rate) as usize).max(1);
        let history = lookahead + 2 * HALF_TAPS + 2;
        TruePeakLimiter {
            ceiling: 10f64.powf((ceiling_db - CEILING_MARGIN_DB) / 20.0),
            lookahead,
            release: 1.0 - (-1.0 / (RELEASE_SECS * rate)).exp(),
            interpolator: Interpolator::new(),
            history,
            ring: vec![vec![0.0f32; history]; channels],
            minimum: SlidingMinimum::new(lookahead),
            smoothing: VecDeque::with_capacity(lookahead),
            smoothing_sum: 0.0,
            released: 1.0,
            over: false,
            step: 0,
            total: None,
            report: Limited {
                peaks: 0,
                max_reduction_db: 0.0,
            },
        }
    }

    /// Takes one block (a slice per channel, all the same length) and gives the limited
    /// frames now complete.
    pub fn push(&mut self, block: &[Vec<f32>]) -> Vec<Vec<f32>> {
        let frames = block.first().map_or(0, Vec::len);
        let mut out = vec![Vec::with_capacity(frames); self.ring.len()];
        (0..frames).for_each(|i| self.step_frame(|c| block[c][i], &mut out));
        out
    }

    /// The frames still held back, and what the limiter did.
    pub fn finish(mut self) -> (Vec<Vec<f32>>, Limited) {
        self.total = Some(self.step);
        let delay = self.lookahead - 1 + HALF_TAPS;
        let mut out = vec![Vec::with_capacity(delay); self.ring.len()];
        for _ in 0..delay {
            self.step_frame(|_| 0.0, &mut out);
        }
        (out, self.report)
    }

    fn original(&self, c: usize, i: isize) -> f64 {
        if i < 0 || self.total.is_some_and(|t| i as usize >= t) {
            0.0
        } else {
            f64::from(self.ring[c][i as usize % self.history])
        }
    }

    fn step_frame(&mut self, input: impl Fn(usize) -> f32, out: &mut [Vec<f32>]) {
        let step = self.step;
        for (c, kept) in self.ring.iter_mut().enumerate() {
            kept[step % self.history] = input(c);
        }
        self.step += 1;
        // Peak estimate around sample `k`, needing originals up to k + HALF_TAPS.
        let k = step as isize - HALF_TAPS as isize;
        if k >= 0 {
            let peak = (0..self.ring.len())
                .map(|c| self.interpolator.peak_after(|i| self.original(c, k + i)))
                .fold(0.0f64, f64::max);
            let allowed = if peak > self.ceiling {
                self.ceiling / peak
            } else {
                1.0
            };
            if allowed < 1.0 && !self.over {
                self.report.peaks += 1;
            }
            self.over = allowed < 1.0;
            self.minimum.push(allowed);
        }
        // Gain for sample `n`: the minimum of allowed[n ..= n + L - 1], released, then averaged.
        let j = k - (self.lookahead as isize - 1);
        if j >= 0 {
            self.released = self
                .minimum
                .get()
                .min(self.released + (1.0 - self.released) * self.release);
            self.smoothing.push_back(self.released);
            self.smoothing_sum += self.released;
            if self.smoothing.len() > self.lookahead {
                self.smoothing_sum -= self.smoothing.pop_front().expect("longer than lookahead");
            }
            let gain = self.smoothing_sum / self.smoothing.len() as f64;
            let n = j as usize;
            if self.total.is_none_or(|t| n < t) {
                self.report.max_reduction_db =
                    self.report.max_reduction_db.max(-20.0 * gain.log10());
                for (c, channel) in out.iter_mut().enumerate() {
                    channel.push((self.original(c, n as isize) * gain) as f32);
                }
            }
        }
    }
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
