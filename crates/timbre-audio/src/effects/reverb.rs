//! A Schroeder–Moorer reverberator (Freeverb's layout): eight parallel feedback combs, each with
//! a one-pole low-pass in its loop, then four allpasses in series. Each comb's feedback is set
//! from the decay time, `g = 10^(-3·delay / RT60)`, so every comb falls 60 dB in `decay_seconds`.

use super::Reverb;

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

/// One channel's combs, allpasses and pre-delay.
struct ChannelReverb {
    combs: Vec<Comb>,
    allpasses: Vec<Allpass>,
    input_gain: f64,
    /// The last `pre_delay + 1` input samples, sample `i` at `i % len`.
    pre_delay: Vec<f32>,
}

impl ChannelReverb {
    fn new(p: &Reverb, rate: f64, spread: usize) -> Self {
        let combs: Vec<Comb> = COMB_DELAYS
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
        let allpasses = ALLPASS_DELAYS
            .iter()
            .map(|&d| Allpass {
                line: vec![0.0; scaled(d + spread, rate)],
            })
            .collect();
        let pre_delay = (p.pre_delay_ms * rate / 1000.0).round() as usize;
        ChannelReverb {
            combs,
            allpasses,
            input_gain: energy.sqrt().recip(),
            pre_delay: vec![0.0; pre_delay + 1],
        }
    }

    /// The wet signal for sample `i`, `x`.
    fn step(&mut self, i: usize, x: f32) -> f64 {
        let length = self.pre_delay.len();
        self.pre_delay[i % length] = x;
        let input = (i + 1).checked_sub(length).map_or(0.0, |j| {
            f64::from(self.pre_delay[j % length]) * self.input_gain
        });
        let mut wet: f64 = self.combs.iter_mut().map(|comb| comb.step(i, input)).sum();
        for allpass in &mut self.allpasses {
            wet = allpass.step(i, wet);
        }
        wet
    }
}

/// The reverb over a stream, sample `i` of the stream at slot `i % length` of every line.
pub(super) struct ReverbStage {
    channels: Vec<ChannelReverb>,
    dry: f32,
    wet_share: f64,
    /// Frames processed so far.
    position: usize,
}

impl ReverbStage {
    pub fn new(p: &Reverb, rate: u32, channels: usize) -> Self {
        let rate = f64::from(rate);
        ReverbStage {
            channels: (0..channels)
                .map(|c| ChannelReverb::new(p, rate, if c % 2 == 1 { CHANNEL_SPREAD } else { 0 }))
                .collect(),
            dry: (1.0 - p.mix) as f32,
            wet_share: p.mix,
            position: 0,
        }
    }

    /// Adds the reverb to the next block in place.
    pub fn process(&mut self, block: &mut [Vec<f32>]) {
        for (reverb, channel) in self.channels.iter_mut().zip(block.iter_mut()) {
            for (i, x) in channel.iter_mut().enumerate() {
                let wet = reverb.step(self.position + i, *x);
                *x = self.dry * *x + (self.wet_share * wet) as f32;
            }
        }
        self.position += block.first().map_or(0, Vec::len);
    }

    #[cfg(test)]
    pub fn held_samples(&self) -> usize {
        let lines = |r: &ChannelReverb| {
            let combs: usize = r.combs.iter().map(|c| c.line.len()).sum();
            let allpasses: usize = r.allpasses.iter().map(|a| a.line.len()).sum();
            combs + allpasses + r.pre_delay.len()
        };
        self.channels.iter().map(lines).sum()
    }
}
