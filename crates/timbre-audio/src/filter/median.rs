//! Matches `scipy.signal.medfilt(values, 2·radius + 1)`: a running median with zero padding at
//! both ends, which RVC's `infer/modules/vc/pipeline.py` applies to harvest's f0
//! (`medfilt(f0, 3)`, i.e. radius 1) when its `filter_radius` is 3 or more.

/// Median of each `2·radius + 1` window centred on a value, reading zeros past either end (so a
/// voiced edge frame next to the border can drop to 0, as in scipy). NaN sorts above +∞.
pub fn median_filter(values: &[f32], radius: usize) -> Vec<f32> {
    // From a radius of len on, at least radius + 1 padding zeros fill every window and its
    // median is 0; clamping there keeps the answer and bounds the window.
    let radius = radius.min(values.len());
    let mut window = Vec::with_capacity(2 * radius + 1);
    (0..values.len())
        .map(|center| {
            window.clear();
            window.extend((0..=2 * radius).map(|k| {
                (center + k)
                    .checked_sub(radius)
                    .and_then(|i| values.get(i))
                    .copied()
                    .unwrap_or(0.0)
            }));
            let (_, median, _) = window.select_nth_unstable_by(radius, f32::total_cmp);
            *median
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy_medfilt_with_zero_padding() {
        let f0 = [0.0, 120.0, 0.0, 130.0, 140.0, 150.0, 0.0, 0.0, 160.0, 170.0];
        // scipy 1.17.1: signal.medfilt(f0, 3) and signal.medfilt(f0, 5).
        let kernel_3 = [0.0, 0.0, 120.0, 130.0, 140.0, 140.0, 0.0, 0.0, 160.0, 160.0];
        let kernel_5 = [0.0, 0.0, 120.0, 130.0, 130.0, 130.0, 140.0, 150.0, 0.0, 0.0];
        assert_eq!(median_filter(&f0, 1), kernel_3);
        assert_eq!(median_filter(&f0, 2), kernel_5);
        assert_eq!(median_filter(&f0, 0), f0);
    }

    #[test]
    fn edges() {
        assert!(median_filter(&[], 1).is_empty());
        // A window wider than the input still reads zeros beyond it.
        assert_eq!(median_filter(&[5.0, 6.0], 3), [0.0, 0.0]);
        assert_eq!(median_filter(&[-5.0, 6.0], usize::MAX), [0.0, 0.0]);
        let with_nan = median_filter(&[1.0, f32::NAN, 2.0, 3.0], 1);
        assert_eq!(with_nan.len(), 4);
        assert_eq!(with_nan[3], 2.0);
    }
}
