//! The feedback delay and the chorus, each channel on its own.

use std::f64::consts::PI;

use super::{Chorus, Delay};
use crate::buffer::AudioBuffer;

pub(super) fn delay(buffer: &mut AudioBuffer, p: &Delay) {
    let length = ((p.time_ms * f64::from(buffer.sample_rate) / 1000.0).round() as usize).max(1);
    let (dry, wet_share) = ((1.0 - p.mix) as f32, p.mix as f32);
    for channel in &mut buffer.channels {
        let mut line = vec![0.0f32; length];
        for (i, x) in channel.iter_mut().enumerate() {
            let slot = i % length;
            let wet = line[slot];
            line[slot] = *x + p.feedback as f32 * wet;
            *x = dry * *x + wet_share * wet;
        }
    }
}

/// A delay swept by a sine around `delay_ms` by ± `depth_ms`, read between samples by linear
/// interpolation; channels are swept a quarter turn apart so a stereo source widens.
pub(super) fn chorus(buffer: &mut AudioBuffer, p: &Chorus) {
    let rate = f64::from(buffer.sample_rate);
    let (dry, wet_share) = ((1.0 - p.mix) as f32, p.mix as f32);
    let step = 2.0 * PI * p.rate_hz / rate;
    for (c, channel) in buffer.channels.iter_mut().enumerate() {
        let source = channel.clone();
        let phase = c as f64 * PI / 2.0;
        for (i, x) in channel.iter_mut().enumerate() {
            let delay_ms = p.delay_ms + p.depth_ms * (step * i as f64 + phase).sin();
            let position = i as f64 - delay_ms * rate / 1000.0;
            *x = dry * *x + wet_share * read_between(&source, position);
        }
    }
}

/// `source` at a fractional index, silence before the start.
fn read_between(source: &[f32], position: f64) -> f32 {
    if position < 0.0 {
        return 0.0;
    }
    let index = position.floor() as usize;
    let fraction = (position - index as f64) as f32;
    let at = |i: usize| source.get(i).copied().unwrap_or(0.0);
    at(index) * (1.0 - fraction) + at(index + 1) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impulse_repeats_at_the_delay_time_scaled_by_the_feedback() {
        let mut impulse = vec![0.0f32; 4_000];
        impulse[0] = 1.0;
        let mut buffer = AudioBuffer::new(1_000, vec![impulse]);
        let p = Delay {
            time_ms: 500.0,
            feedback: 0.5,
            mix: 0.5,
        };
        delay(&mut buffer, &p);
        let echoes: Vec<(usize, f32)> = buffer.channels[0]
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
        let mut buffer = AudioBuffer::new(1_000, vec![source]);
        let p = Chorus {
            rate_hz: 1.0,
            depth_ms: 0.0,
            delay_ms: 10.0,
            mix: 1.0,
        };
        chorus(&mut buffer, &p);
        assert_eq!(buffer.channels[0][9], 0.0);
        assert_eq!(buffer.channels[0][50], 40.0);
    }
}
