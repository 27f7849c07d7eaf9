//! Signal helpers shared by the unit tests.

pub fn sine(rate: u32, freq: f32, secs: f32, amp: f32) -> Vec<f32> {
    let frames = (rate as f32 * secs).round() as usize;
    (0..frames)
        .map(|i| amp * (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin())
        .collect()
}

/// Frequency from the spacing of the first and last upward zero crossings (interpolated).
pub fn crossing_freq(samples: &[f32], rate: u32) -> f64 {
    let crossings: Vec<f64> = samples
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| i as f64 + f64::from(-w[0] / (w[1] - w[0])))
        .collect();
    assert!(crossings.len() >= 2, "too few zero crossings");
    let span = crossings[crossings.len() - 1] - crossings[0];
    (crossings.len() - 1) as f64 * f64::from(rate) / span
}
