//! The feedback delay and the chorus, each channel on its own, as streams.

use std::f64::consts::PI;

use super::{Chorus, Delay};

/// A feedback delay line per channel; sample `i` of the stream uses slot `i % length`.
pub(super) struct DelayStage {
    lines: Vec<Vec<f32>>,
    feedback: f32,
    dry: f32,
    wet_share: f32,
    /// Frames processed so far.
    position: usize,
}

impl DelayStage {
    pub fn new(p: &Delay, rate: u32, channels: usize) -> Self {
        let length = ((p.time_ms * f64::from(rate) / 1000.0).round() as usize).max(1);
        DelayStage {
            lines: vec![vec![0.0; length]; channels],
            feedback: p.feedback as f32,
            dry: (1.0 - p.mix) as f32,
            wet_share: p.mix as f32,
            position: 0,
        }
    }

    /// Delays the next block in place.
    pub fn process(&mut self, block: &mut [Vec<f32>]) {
        for (line, channel) in self.lines.iter_mut().zip(block.iter_mut()) {
            for (i, x) in channel.iter_mut().enumerate() {
                let slot = (self.position + i) % line.len();
                let wet = line[slot];
                line[slot] = *x + self.feedback * wet;
                *x = self.dry * *x + self.wet_share * wet;
            }
        }
        self.position += block.first().map_or(0, Vec::len);
    }

    #[cfg(test)]
    pub fn held_samples(&self) -> usize {
        self.lines.iter().map(Vec::len).sum()
    }
}

/// A delay swept by a sine around `delay_ms` by ± `depth_ms`, read between samples by linear
/// interpolation; channels are swept a quarter turn apart so a stereo source widens. A sweep
/// deeper than the delay reads ahead of the frame it makes, so the output lags by `ahead`.
pub(super) struct ChorusStage {
    rate: f64,
    step: f64,
    delay_ms: f64,
    depth_ms: f64,
    dry: f32,
    wet_share: f32,
    /// Frames past the one being made that its read can reach.
    ahead: usize,
    /// The last input samples of each channel, sample `i` at `i % len`.
    history: Vec<Vec<f32>>,
    /// Frames taken so far.
    pushed: usize,
}

impl ChorusStage {
    pub fn new(p: &Chorus, rate: u32, channels: usize) -> Self {
        let rate = f64::from(rate);
        let behind = ((p.delay_ms + p.depth_ms) * rate / 1000.0).ceil() as usize;
        let ahead = ((p.depth_ms - p.delay_ms) * rate / 1000.0).max(0.0).ceil() as usize + 1;
        ChorusStage {
            rate,
            step: 2.0 * PI * p.rate_hz / rate,
            delay_ms: p.delay_ms,
            depth_ms: p.depth_ms,
            dry: (1.0 - p.mix) as f32,
            wet_share: p.mix as f32,
            ahead,
            history: vec![vec![0.0; behind + ahead + 2]; channels],
            pushed: 0,
        }
    }

    /// Takes the next block; gives the frames whose reads it now has.
    pub fn push(&mut self, block: &[Vec<f32>]) -> Vec<Vec<f32>> {
        let frames = block.first().map_or(0, Vec::len);
        let mut out = vec![Vec::with_capacity(frames); block.len()];
        for i in 0..frames {
            for (history, channel) in self.history.iter_mut().zip(block) {
                let length = history.len();
                history[self.pushed % length] = channel[i];
            }
            self.pushed += 1;
            if let Some(frame) = self.pushed.checked_sub(self.ahead + 1) {
                self.make(frame, &mut out);
            }
        }
        out
    }

    /// The frames still held back, reading silence past the end.
    pub fn finish(self) -> Vec<Vec<f32>> {
        let mut out = vec![Vec::with_capacity(self.ahead); self.history.len()];
        for frame in self.pushed.saturating_sub(self.ahead)..self.pushed {
            self.make(frame, &mut out);
        }
        out
    }

    fn make(&self, frame: usize, out: &mut [Vec<f32>]) {
        for (c, (history, channel)) in self.history.iter().zip(out).enumerate() {
            let phase = c as f64 * PI / 2.0;
            let delay_ms = self.delay_ms + self.depth_ms * (self.step * frame as f64 + phase).sin();
            let position = frame as f64 - delay_ms * self.rate / 1000.0;
            let at = |i: usize| {
                if i < self.pushed {
                    history[i % history.len()]
                } else {
                    0.0
                }
            };
            channel.push(self.dry * at(frame) + self.wet_share * read_between(at, position));
        }
    }

    #[cfg(test)]
    pub fn held_samples(&self) -> usize {
        self.history.iter().map(Vec::len).sum()
    }
}

/// The source (`at`) at a fractional index, silence before the start.
fn read_between(at: impl Fn(usize) -> f32, position: f64) -> f32 {
    if position < 0.0 {
        return 0.0;
    }
    let index = position.floor() as usize;
    let fraction = (position - index as f64) as f32;
    at(index) * (1.0 - fraction) + at(index + 1) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impulse_repeats_at_the_delay_time_scaled_by_the_feedback() {
        let mut impulse = vec![0.0f32; 4_000];
        impulse[0] = 1.0;
        let mut block = vec![impulse];
        let p = Delay {
            time_ms: 500.0,
            feedback: 0.5,
            mix: 0.5,
        };
        DelayStage::new(&p, 1_000, 1).process(&mut block);
        let echoes: Vec<(usize, f32)> = block[0]
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| *x != 0.0)
            .collect();
        assert_eq!(echoes[..3], [(0, 0.5), (500, 0.5), (1_000, 0.25)]);
    }

    #[test]
    fn chorus_at_zero_depth_is_a_fixed_delay() {
        let source: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let p = Chorus {
            rate_hz: 1.0,
            depth_ms: 0.0,
            delay_ms: 10.0,
            mix: 1.0,
        };
        let mut chorus = ChorusStage::new(&p, 1_000, 1);
        let mut out = chorus.push(&[source]).remove(0);
        out.extend(chorus.finish().remove(0));
        assert_eq!(out.len(), 100);
        assert_eq!(out[9], 0.0);
        assert_eq!(out[50], 40.0);
    }
}
