//! A Schroeder–Moorer reverberator (Freeverb's layout): eight parallel feedback combs, each with
//! a one-pole low-pass in its loop, then four allpasses in series. Each comb's feedback is set
//! from the decay time, `g = 10^(-3·delay / RT60)`, so every comb falls 60 dB in `decay_seconds`.

use super::Reverb;
use crate::buffer::AudioBuffer;

/// Freeverb's delays, in samples at 44.1 kHz (scaled to the buffer's rate).
const COMB_DELAYS: [usize; 8] = [1116, 1188, 1277, 1356, 1422, 1491, 1557, 1617];
const ALLPASS_DELAYS: [usize; 4] = [556, 441, 341, 225];
const ALLPASS_FEEDBACK: f64 = 0.5;
/// Added to every delay of the second, fourth… channel, so channels decorrelate.
const CHANNEL_SPREAD: usize = 23;
const REFERENCE_RATE: f64 = 44_100.0;

struct Comb {
    line: Vec<f64>,
    feedback: f64,
    damping: f64,
    filtered: f64,
}

impl Comb {
    fn step(&mut self, i: usize, x: f64) -> f64 {
        let slot = i % self.line.len();
        let out = self.line[slot];
        // DC gain 1: low frequencies decay exactly at the set rate, highs faster.
        self.filtered = (1.0 - self.damping) * out + self.damping * self.filtered;
        self.line[slot] = x + self.feedback * self.filtered;
        out
    }
}

struct Allpass {
    line: Vec<f64>,
}

impl Allpass {
    fn step(&mut self, i: usize, x: f64) -> f64 {
        let slot = i % self.line.len();
        let delayed = self.line[slot];
        let w = x + ALLPASS_FEEDBACK * delayed;
        self.line[slot] = w;
        delayed - ALLPASS_FEEDBACK * w
    }
}

fn scaled(delay: usize, rate: f64) -> usize {
    ((delay as f64 * rate / REFERENCE_RATE).round() as usize).max(1)
}

pub(super) fn reverb(buffer: &mut AudioBuffer, p: &Reverb) {
    let rate = f64::from(buffer.sample_rate);
    let pre_delay = (p.pre_delay_ms * rate / 1000.0).round() as usize;
    let (dry, wet_share) = ((1.0 - p.mix) as f32, p.mix);
    for (c, channel) in buffer.channels.iter_mut().enumerate() {
        let spread = if c % 2 == 1 { CHANNEL_SPREAD } else { 0 };
        let mut combs: Vec<Comb> = COMB_DELAYS
            .iter()
            .map(|&d| {
                let length = scaled(d + spread, rate);
                Comb {
                    line: vec![0.0; length],
                    feedback: 10f64.powf(-3.0 * length as f64 / (p.decay_seconds * rate)),
                    damping: p.damping,
                    filtered: 0.0,
                }
            })
            .collect();
        // An impulse leaves the combs with unit energy whatever the decay.
        let energy: f64 = combs.iter().map(|c| 1.0 / (1.0 - c.feedback.powi(2))).sum();
        let input_gain = energy.sqrt().recip();
        let mut allpasses: Vec<Allpass> = ALLPASS_DELAYS
            .iter()
            .map(|&d| Allpass {
                line: vec![0.0; scaled(d + spread, rate)],
            })
            .collect();
        let source = channel.clone();
        for (i, x) in channel.iter_mut().enumerate() {
            let input = i
                .checked_sub(pre_delay)
                .map_or(0.0, |j| f64::from(source[j]) * input_gain);
            let mut wet: f64 = combs.iter_mut().map(|comb| comb.step(i, input)).sum();
            for allpass in &mut allpasses {
                wet = allpass.step(i, wet);
            }
            *x = dry * *x + (wet_share * wet) as f32;
        }
    }
}
