//! The high-pass (a Butterworth run forwards and backwards, in place or as a stream) and the
//! de-clicker.

use std::collections::VecDeque;

use crate::filter::{butter_highpass, lfilter_zi};

const HIGH_PASS_ORDER: usize = 4;

/// Zero-phase Butterworth high-pass in place; false (and nothing done) when the cutoff is not
/// below the Nyquist frequency.
pub(crate) fn high_pass(samples: &mut [f32], rate: u32, cutoff_hz: f64) -> bool {
    let Some(design) = Design::high_pass(rate, cutoff_hz) else {
        return false;
    };
    if samples.is_empty() {
        return true;
    }
    design.filter(samples.iter_mut());
    design.filter(samples.iter_mut().rev());
    true
}

/// A Butterworth design run in the transposed direct form II, in f64. `a[0]` is 1 for
/// Butterworth designs.
struct Design {
    b: Vec<f64>,
    a: Vec<f64>,
    zi: Vec<f64>,
}

impl Design {
    fn high_pass(rate: u32, cutoff_hz: f64) -> Option<Self> {
        let (b, a) = butter_highpass(HIGH_PASS_ORDER, cutoff_hz, f64::from(rate))?;
        let zi = lfilter_zi(&b, &a);
        Some(Design { b, a, zi })
    }

    /// The state of the filter settled on a constant `x` (as filtfilt starts, so the ends do
    /// not ring).
    fn settled(&self, x: f32) -> Vec<f64> {
        self.zi.iter().map(|z| z * f64::from(x)).collect()
    }

    fn step(&self, state: &mut [f64], sample: f32) -> f32 {
        let (b, a) = (&self.b, &self.a);
        let input = f64::from(sample);
        let output = b[0] * input + state[0];
        let order = state.len();
        for i in 0..order {
            let next = if i + 1 < order { state[i + 1] } else { 0.0 };
            state[i] = b[i + 1] * input + next - a[i + 1] * output;
        }
        output as f32
    }

    /// One pass in place, started settled on the first sample.
    fn filter<'a>(&self, samples: impl Iterator<Item = &'a mut f32>) {
        let mut samples = samples.peekable();
        let first = samples.peek().map_or(0.0, |x| **x);
        let mut state = self.settled(first);
        for sample in samples {
            *sample = self.step(&mut state, *sample);
        }
    }
}

/// Attenuation the backward pass's start transient must reach before its output is used.
const TRANSIENT_FLOOR: f64 = 1e-7;
/// Margin on the slowest pole's decay time for the rest of the impulse response.
const LOOKAHEAD_MARGIN: f64 = 1.5;
/// Hops are at least this long and at least the lookahead, so the backward pass runs over at
/// most twice the samples it gives out.
const MIN_HOP: usize = 4096;

/// [`high_pass`] on one channel as a stream: the forward pass runs as the samples come; the backward pass runs in hops of `hop` samples at fixed positions (so the
/// output does not depend on how the input is split), each started `lookahead` samples past its
/// hop, where the start transient has died away, and the last from the true end as
/// [`high_pass`] does. The output lags the input by more than `lookahead` samples and at most
/// `lookahead + hop`; the stream holds `hop + lookahead + 1` samples at most.
pub(crate) struct HighPassStream {
    design: Design,
    /// None until the first sample, on which it settles.
    forward: Option<Vec<f64>>,
    hop: usize,
    lookahead: usize,
    /// Forward-filtered samples from the first not yet given out.
    pending: VecDeque<f32>,
    backward: Vec<f32>,
}

impl HighPassStream {
    /// None when the cutoff is not below the Nyquist frequency.
    pub(crate) fn new(rate: u32, cutoff_hz: f64) -> Option<Self> {
        let design = Design::high_pass(rate, cutoff_hz)?;
        // The slowest pole pair of a 4th-order Butterworth high-pass has damping sin(π/8).
        let decay_rate = (std::f64::consts::PI / 8.0).sin() * std::f64::consts::TAU * cutoff_hz;
        let seconds = LOOKAHEAD_MARGIN * TRANSIENT_FLOOR.recip().ln() / decay_rate;
        let lookahead = (seconds * f64::from(rate)).ceil() as usize;
        let hop = lookahead.max(MIN_HOP);
        Some(HighPassStream {
            design,
            forward: None,
            hop,
            lookahead,
            pending: VecDeque::with_capacity(hop + lookahead + 1),
            backward: Vec::with_capacity(hop + lookahead + 1),
        })
    }

    /// The most samples it holds back at once.
    pub(crate) fn max_held(&self) -> usize {
        self.hop + self.lookahead + 1
    }

    /// Takes the next samples; appends to `out` the hops they complete.
    pub(crate) fn push(&mut self, samples: &[f32], out: &mut Vec<f32>) {
        for &sample in samples {
            let design = &self.design;
            let state = self.forward.get_or_insert_with(|| design.settled(sample));
            self.pending.push_back(design.step(state, sample));
            if self.pending.len() == self.max_held() {
                self.backward.clear();
                self.backward.extend(&self.pending);
                design.filter(self.backward.iter_mut().rev());
                out.extend_from_slice(&self.backward[..self.hop]);
                self.pending.drain(..self.hop);
            }
        }
    }

    /// Appends to `out` the samples still held.
    pub(crate) fn finish(mut self, out: &mut Vec<f32>) {
        let start = out.len();
        out.extend(self.pending.drain(..));
        self.design.filter(out[start..].iter_mut().rev());
    }

    /// Samples the stream has room for.
    #[cfg(test)]
    pub(crate) fn held_samples(&self) -> usize {
        self.pending.capacity() + self.backward.capacity()
    }
}

/// A click is where the second difference of the signal exceeds this many times its local mean.
const CLICK_THRESHOLD: f32 = 12.0;
/// Below this second difference nothing counts as a click (a quiet passage's mean is tiny).
const CLICK_FLOOR: f32 = 0.02;
/// Window of the local mean, in seconds, centred on the sample.
const CLICK_CONTEXT_SECS: f64 = 0.01;
/// Longer disturbances are not clicks and are left alone.
const CLICK_MAX_SECS: f64 = 0.002;
/// Samples replaced beyond the detected ones on each side; detections closer than this join.
const CLICK_GUARD: usize = 2;
const DECLICK_BLOCK: usize = 1 << 16;

/// Replaces short impulsive disturbances by a smooth curve between the samples around them, in
/// place, a block at a time; returns how many it repaired.
pub(super) fn declick(samples: &mut [f32], rate: u32) -> usize {
    let context = ((CLICK_CONTEXT_SECS * f64::from(rate)) as usize).max(4);
    let max_len = ((CLICK_MAX_SECS * f64::from(rate)) as usize).max(1);
    let mut repaired = 0;
    let mut start = 0;
    while start < samples.len() {
        let end = (start + DECLICK_BLOCK).min(samples.len());
        let from = start.saturating_sub(context);
        let clicks = find_clicks(&samples[from..(end + context).min(samples.len())], context);
        let mut next = end;
        for click in clicks {
            let (lo, hi) = (from + click.start, from + click.end);
            if lo < start || lo >= end {
                continue;
            }
            next = next.max(hi);
            // Two clean samples are needed on each side to shape the curve.
            if hi - lo <= max_len + 2 * CLICK_GUARD && lo >= 2 && hi + 2 <= samples.len() {
                bridge(&mut samples[lo - 2..hi + 2]);
                repaired += 1;
            }
        }
        start = next;
    }
    repaired
}

/// Ranges (with their guard samples) where the second difference stands out from its
/// surroundings.
fn find_clicks(x: &[f32], context: usize) -> Vec<std::ops::Range<usize>> {
    let curvature: Vec<f32> = (0..x.len())
        .map(|n| match (n.checked_sub(1), x.get(n + 1)) {
            (Some(before), Some(after)) => (x[before] - 2.0 * x[n] + after).abs(),
            _ => 0.0,
        })
        .collect();
    let mut running = vec![0.0f32; curvature.len() + 1];
    for (i, c) in curvature.iter().enumerate() {
        running[i + 1] = running[i] + c;
    }
    let is_click = |i: usize| {
        let (lo, hi) = (
            i.saturating_sub(context),
            (i + context + 1).min(curvature.len()),
        );
        let local_mean = (running[hi] - running[lo]) / (hi - lo) as f32;
        curvature[i] > CLICK_FLOOR && curvature[i] > CLICK_THRESHOLD * local_mean
    };
    let mut clicks: Vec<std::ops::Range<usize>> = Vec::new();
    for i in (0..curvature.len()).filter(|&i| is_click(i)) {
        let span = i.saturating_sub(CLICK_GUARD)..(i + CLICK_GUARD + 1).min(x.len());
        match clicks.last_mut() {
            Some(last) if span.start <= last.end => last.end = span.end,
            _ => clicks.push(span),
        }
    }
    clicks
}

/// Replaces all but the two samples at each end of `span` by the cubic that joins the inner
/// end samples with the slopes the outer pairs show.
fn bridge(span: &mut [f32]) {
    let n = span.len();
    let (p0, p1) = (span[1], span[n - 2]);
    let (m0, m1) = (span[1] - span[0], span[n - 1] - span[n - 2]);
    let steps = (n - 3) as f32;
    for (k, sample) in span.iter_mut().enumerate().take(n - 2).skip(2) {
        let t = (k - 1) as f32 / steps;
        let (t2, t3) = (t * t, t * t * t);
        *sample = (2.0 * t3 - 3.0 * t2 + 1.0) * p0
            + (t3 - 2.0 * t2 + t) * m0 * steps
            + (-2.0 * t3 + 3.0 * t2) * p1
            + (t3 - t2) * m1 * steps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::sine;
    use timbre_test_support::max_abs_difference;

    #[test]
    fn high_pass_removes_rumble_and_keeps_the_voice_band_in_phase() {
        let rumble = sine(48000, 30.0, 1.0, 0.5);
        let voice = sine(48000, 500.0, 1.0, 0.5);
        let mut mixed: Vec<f32> = rumble.iter().zip(&voice).map(|(a, b)| a + b).collect();
        assert!(high_pass(&mut mixed, 48000, 80.0));
        let worst = max_abs_difference(&mixed[4800..43200], &voice[4800..43200]);
        assert!(worst < 0.03, "{worst}");
        assert!(!high_pass(&mut mixed, 8000, 5000.0));
    }

    #[test]
    fn the_streaming_high_pass_matches_the_whole_buffer_one() {
        let rate = 44_100;
        let speech = crate::signal::speech_like(rate, 10.0, 21)
            .audio
            .channels
            .remove(0);
        for cutoff_hz in [20.0, 80.0] {
            let mut whole = speech.clone();
            assert!(high_pass(&mut whole, rate, cutoff_hz));
            let streamed_in = |block: usize| {
                let mut stream = HighPassStream::new(rate, cutoff_hz).unwrap();
                let mut out = Vec::new();
                speech.chunks(block).for_each(|c| stream.push(c, &mut out));
                stream.finish(&mut out);
                out
            };
            let streamed = streamed_in(speech.len());
            assert_eq!(streamed_in(1_001), streamed);
            assert_eq!(streamed.len(), whole.len());
            let worst = max_abs_difference(&streamed, &whole);
            assert!(worst < 1e-5, "{cutoff_hz} Hz: {worst:e}");
        }
    }

    #[test]
    fn clicks_are_bridged_and_a_clean_tone_is_left_alone() {
        let clean = sine(48000, 220.0, 0.5, 0.3);
        let mut tone = clean.clone();
        assert_eq!(declick(&mut tone, 48000), 0);
        assert_eq!(tone, clean);
        for rate in [8000, 16000, 48000] {
            let mut speech = crate::signal::speech_like(rate, 2.0, 5)
                .audio
                .channels
                .remove(0);
            assert_eq!(declick(&mut speech, rate), 0, "at {rate} Hz");
        }
        for at in [1000, 9000, 20000, 23990] {
            tone[at] += 0.6;
            tone[at + 1] -= 0.3;
        }
        assert_eq!(declick(&mut tone, 48000), 4);
        let worst = max_abs_difference(&tone, &clean);
        assert!(worst < 0.01, "{worst}");
    }
}
