//! Signal helpers shared by the unit tests.

use crate::signal;

pub fn sine(rate: u32, freq: f32, secs: f32, amp: f32) -> Vec<f32> {
    signal::sine(rate, freq, f64::from(secs), amp)
        .channels
        .remove(0)
}

pub fn crossing_freq(samples: &[f32], rate: u32) -> f64 {
    signal::zero_crossing_frequency(samples, rate).expect("too few zero crossings")
}
