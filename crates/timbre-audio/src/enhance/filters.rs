//! The high-pass (a Butterworth run forwards and backwards, in place) and the de-clicker.

use crate::filter::{butter_highpass, lfilter_zi};

const HIGH_PASS_ORDER: usize = 4;

/// Zero-phase Butterworth high-pass in place; false (and nothing done) when the cutoff is not
/// below the Nyquist frequency.
pub(crate) fn high_pass(samples: &mut [f32], rate: u32, cutoff_hz: f64) -> bool {
    let Some((b, a)) = butter_highpass(HIGH_PASS_ORDER, cutoff_hz, f64::from(rate)) else {
        return false;
    };
    if samples.is_empty() {
        return true;
    }
    let zi = lfilter_zi(&b, &a);
    filter_in_place(&b, &a, &zi, samples.iter_mut());
    filter_in_place(&b, &a, &zi, samples.iter_mut().rev());
    true
}

/// One pass of the transposed direct form II, in f64, started in the steady state of the first
/// sample (as filtfilt starts) so the ends do not ring. `a[0]` is 1 for Butterworth designs.
fn filter_in_place<'a>(
    b: &[f64],
    a: &[f64],
    zi: &[f64],
    samples: impl Iterator<Item = &'a mut f32>,
) {
    let mut samples = samples.peekable();
    let first = samples.peek().map_or(0.0, |x| f64::from(**x));
    let mut state: Vec<f64> = zi.iter().map(|z| z * first).collect();
    let order = state.len();
    for sample in samples {
        let input = f64::from(*sample);
        let output = b[0] * input + state[0];
        for i in 0..order {
            let next = if i + 1 < order { state[i + 1] } else { 0.0 };
            state[i] = b[i + 1] * input + next - a[i + 1] * output;
        }
        *sample = output as f32;
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

    #[test]
    fn high_pass_removes_rumble_and_keeps_the_voice_band_in_phase() {
        let rumble = sine(48000, 30.0, 1.0, 0.5);
        let voice = sine(48000, 500.0, 1.0, 0.5);
        let mut mixed: Vec<f32> = rumble.iter().zip(&voice).map(|(a, b)| a + b).collect();
        assert!(high_pass(&mut mixed, 48000, 80.0));
        let worst = mixed[4800..43200]
            .iter()
            .zip(&voice[4800..43200])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 0.03, "{worst}");
        assert!(!high_pass(&mut mixed, 8000, 5000.0));
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
        let worst = tone
            .iter()
            .zip(&clean)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 0.01, "{worst}");
    }
}
