//! One-way IIR filtering as `scipy.signal.lfilter(b, a, x)` with no initial state, which RVC's
//! training preprocessing (`infer/modules/train/preprocess.py`) uses for its 48 Hz high-pass
//! (causal on purpose: the zero-phase `filtfilt` pre-rings).

use super::iir::{lfilter_in_place, normalized};

/// `scipy.signal.lfilter(b, a, x)` (direct form II transposed, zero initial state), in f64 as
/// scipy computes it for float32 input with float64 coefficients. Non-finite samples are read as
/// silence, as [`super::filtfilt`] does; an `a` without a nonzero coefficient is no filter.
pub fn lfilter(b: &[f64], a: &[f64], x: &[f32]) -> Vec<f64> {
    let mut samples: Vec<f64> = x
        .iter()
        .map(|&v| if v.is_finite() { f64::from(v) } else { 0.0 })
        .collect();
    if let Some((bn, an)) = normalized(b, a) {
        let mut state = vec![0.0; bn.len() - 1];
        lfilter_in_place(&bn, &an, &mut state, &mut samples);
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::butter_highpass;

    #[test]
    fn matches_scipy_lfilter() {
        let x: Vec<f32> = (0..48)
            .map(|i| {
                let i = i as f64;
                (0.4 * (0.07 * i).sin() + 0.25 * (0.41 * i + 0.3).cos() + 0.1) as f32
            })
            .collect();
        // scipy 1.17.1: lfilter(*butter(N=5, Wn=48, btype="high", fs=40000), x)[::6].
        let expected = [
            0.3347255662494581,
            0.0006999589116458947,
            0.46127683971547373,
            0.3813081594626698,
            0.13017577507478306,
            0.45245717156229315,
            -0.15371604495733043,
            -0.03972825494418725,
        ];
        let (b, a) = butter_highpass(5, 48.0, 40000.0).unwrap();
        let y = lfilter(&b, &a, &x);
        assert_eq!(y.len(), x.len());
        for (ours, scipy) in y.iter().step_by(6).zip(expected) {
            assert!((ours - scipy).abs() < 1e-12, "{ours} vs {scipy}");
        }
    }

    #[test]
    fn degenerate_inputs() {
        assert!(lfilter(&[1.0], &[1.0], &[]).is_empty());
        assert_eq!(lfilter(&[1.0], &[0.0], &[0.5, f32::NAN]), vec![0.5, 0.0]);
        // A pure gain: b = [2], a = [4] is y = x / 2.
        assert_eq!(lfilter(&[2.0], &[4.0], &[1.0, -0.5]), vec![0.5, -0.25]);
    }
}
