//! How close processed audio is to a known reference, for measuring enhancement and separation
//! on generated material.

/// Scale-invariant signal-to-distortion ratio in dB (Le Roux et al. 2019): the reference scaled
/// to best fit the estimate is the target, everything else in the estimate is distortion.
/// Multichannel audio is compared as one long signal. `None` when the reference is silent or
/// the lengths differ.
pub fn si_sdr(estimate: &[f32], reference: &[f32]) -> Option<f64> {
    if estimate.len() != reference.len() {
        return None;
    }
    let (mut cross, mut reference_energy) = (0.0f64, 0.0f64);
    for (&e, &r) in estimate.iter().zip(reference) {
        cross += f64::from(e) * f64::from(r);
        reference_energy += f64::from(r) * f64::from(r);
    }
    if reference_energy == 0.0 {
        return None;
    }
    let scale = cross / reference_energy;
    let (mut target, mut distortion) = (0.0f64, 0.0f64);
    for (&e, &r) in estimate.iter().zip(reference) {
        let fitted = scale * f64::from(r);
        target += fitted * fitted;
        distortion += (f64::from(e) - fitted).powi(2);
    }
    Some(10.0 * (target / distortion.max(f64::MIN_POSITIVE)).log10())
}

/// How much of the reference survives in the estimate, as the least-squares amplitude of the
/// reference within it (1 = all of it, at its level). `None` for a silent reference.
pub fn kept_fraction(estimate: &[f32], reference: &[f32]) -> Option<f64> {
    let cross: f64 = estimate
        .iter()
        .zip(reference)
        .map(|(&e, &r)| f64::from(e) * f64::from(r))
        .sum();
    let energy: f64 = reference.iter().map(|&r| f64::from(r).powi(2)).sum();
    (energy > 0.0).then(|| cross / energy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_sdr_ignores_scale_and_counts_added_noise() {
        let reference: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.1).sin()).collect();
        let scaled: Vec<f32> = reference.iter().map(|x| 0.5 * x).collect();
        assert!(si_sdr(&scaled, &reference).unwrap() > 100.0);
        // Adding an orthogonal signal of equal energy gives 0 dB.
        let orthogonal: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.1).cos()).collect();
        let mixed: Vec<f32> = reference
            .iter()
            .zip(&orthogonal)
            .map(|(a, b)| a + b)
            .collect();
        assert!(si_sdr(&mixed, &reference).unwrap().abs() < 0.2);
        assert_eq!(si_sdr(&mixed, &[0.0; 1000]), None);
        assert_eq!(si_sdr(&mixed[..10], &reference), None);
        assert!((kept_fraction(&scaled, &reference).unwrap() - 0.5).abs() < 1e-6);
        assert!((kept_fraction(&mixed, &reference).unwrap() - 1.0).abs() < 0.05);
    }
}
