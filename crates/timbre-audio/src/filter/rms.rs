//! Matches `librosa.feature.rms(y=…)` (centred frames, zero padding), `torch.nn.functional
//! .interpolate(mode="linear", align_corners=False)` and `change_rms` of RVC's
//! `infer/modules/vc/pipeline.py`, which blends the input's loudness envelope into the output.

/// Output envelope values are floored here before dividing by them, as in RVC.
const TARGET_RMS_FLOOR: f64 = 1e-6;

/// Root mean square of centred frames, as `librosa.feature.rms(y=x, frame_length, hop_length)`:
/// `frame_length / 2` zeros on each side, frame `i` spanning padded samples
/// `[i·hop, i·hop + frame_length)`, `1 + (padded − frame_length) / hop` frames. Empty where
/// librosa would raise (no full frame, zero length or hop). Non-finite samples count as silence.
pub fn frame_rms(x: &[f32], frame_length: usize, hop_length: usize) -> Vec<f32> {
    frame_rms_f64(x, frame_length, hop_length)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

fn frame_rms_f64(x: &[f32], frame_length: usize, hop_length: usize) -> Vec<f64> {
    let pad = frame_length / 2;
    let Some(padded_len) = x.len().checked_add(2 * pad) else {
        return Vec::new();
    };
    if frame_length == 0 || hop_length == 0 || padded_len < frame_length {
        return Vec::new();
    }
    let frames = 1 + (padded_len - frame_length) / hop_length;
    (0..frames)
        .map(|i| {
            // Padded index p holds x[p − pad]; zeros outside contribute nothing but still count.
            let start = (i * hop_length).saturating_sub(pad).min(x.len());
            let end = (i * hop_length + frame_length)
                .saturating_sub(pad)
                .min(x.len());
            frame_value(&x[start..end], frame_length)
        })
        .collect()
}

/// The RMS of one frame of `frame_length` samples of which `present` are not padding. The
/// present samples may come in several pieces (`present` is their concatenation); the sum runs
/// in order, so a frame gives the same value whether it is measured whole or in pieces.
pub fn frame_value<'a>(present: impl IntoIterator<Item = &'a f32>, frame_length: usize) -> f64 {
    let sum: f64 = present
        .into_iter()
        .filter(|v| v.is_finite())
        .map(|&v| f64::from(v) * f64::from(v))
        .sum();
    (sum / frame_length as f64).sqrt()
}

/// Linear resampling of an envelope to `size` points, as `F.interpolate(…, size, mode="linear")`
/// (`align_corners=False`): output `j` reads the input at `(j + 0.5)·len/size − 0.5`, clamped to
/// the first value on the left and the last on the right. An empty envelope gives zeros.
pub fn interpolate_linear(values: &[f32], size: usize) -> Vec<f32> {
    let values: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    interpolate_linear_f64(&values, size)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

fn interpolate_linear_f64(values: &[f64], size: usize) -> Vec<f64> {
    if values.is_empty() {
        return vec![0.0; size];
    }
    (0..size).map(|j| interpolate_at(values, size, j)).collect()
}

/// Point `j` of [`interpolate_linear`] over `size` points, for a non-empty envelope.
pub fn interpolate_at(values: &[f64], size: usize, j: usize) -> f64 {
    let last = values.len() - 1;
    let scale = values.len() as f64 / size as f64;
    let source = (scale * (j as f64 + 0.5) - 0.5).max(0.0);
    let left = (source as usize).min(last);
    let right = if left < last { left + 1 } else { left };
    let weight = source - left as f64;
    (1.0 - weight) * values[left] + weight * values[right]
}

/// RVC's RMS mix: scales `target` (at `target_rate`) so its loudness envelope becomes
/// `source_env^(1 − rate) · target_env^rate`, each envelope being `frame_rms` with a one-second
/// frame and a half-second hop (`sample_rate / 2 · 2` and `sample_rate / 2` samples) stretched
/// linearly over the target's samples. `rate` = 1 keeps the target's own envelope; 0 imposes the source's.
///
/// `rate` is clamped to [0, 1] (NaN counts as 1, no change); a sample rate below 2 Hz leaves no
/// frame to measure, so the target comes back unchanged.
pub fn change_rms(
    source: &[f32],
    source_rate: u32,
    target: &[f32],
    target_rate: u32,
    rate: f32,
) -> Vec<f32> {
    let source_frames = envelope(source, source_rate);
    let target_frames = envelope(target, target_rate);
    if source_frames.is_empty() || target_frames.is_empty() {
        return target.to_vec();
    }
    let source_envelope = interpolate_linear_f64(&source_frames, target.len());
    let target_envelope = interpolate_linear_f64(&target_frames, target.len());
    target
        .iter()
        .zip(source_envelope.iter().zip(&target_envelope))
        .map(|(&sample, (&source_rms, &target_rms))| {
            mix_sample(sample, source_rms, target_rms, rate)
        })
        .collect()
}

/// One sample of [`change_rms`], given both envelopes at that sample. Pieces of a long output
/// can be mixed with this alone, from the envelopes of the whole.
pub fn mix_sample(sample: f32, source_rms: f64, target_rms: f64, rate: f32) -> f32 {
    let rate = if rate.is_nan() {
        1.0
    } else {
        rate.clamp(0.0, 1.0)
    };
    // torch receives the exponents as float32 scalars.
    let source_exponent = f64::from(1.0 - rate);
    let target_exponent = f64::from(rate - 1.0);
    let gain =
        source_rms.powf(source_exponent) * target_rms.max(TARGET_RMS_FLOOR).powf(target_exponent);
    (f64::from(sample) * gain) as f32
}

/// The loudness envelope [`change_rms`] measures: one-second frames, half-second hops.
pub fn envelope(x: &[f32], sample_rate: u32) -> Vec<f64> {
    let half = envelope_hop(sample_rate);
    frame_rms_f64(x, 2 * half, half)
}

/// The hop of [`envelope`] at `sample_rate` (its frames are twice as long).
pub fn envelope_hop(sample_rate: u32) -> usize {
    (sample_rate / 2) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(actual: &[f32], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len(), "{actual:?}");
        for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
            assert!(
                (f64::from(a) - e).abs() < tolerance,
                "value {i}: {a} vs {e}"
            );
        }
    }

    fn sine(len: usize, step: f64, amplitude: f64) -> Vec<f32> {
        (0..len)
            .map(|i| (amplitude * (step * i as f64).sin()) as f32)
            .collect()
    }

    #[test]
    fn frame_rms_matches_librosa() {
        // librosa 0.11.0: feature.rms(y=x, frame_length=16, hop_length=8)[0], x = 0.5·sin(0.3·i).
        let even = [
            0.26742279529571533,
            0.3456135094165802,
            0.31443554162979126,
            0.35493457317352295,
            0.38897496461868286,
            0.3586420714855194,
            0.2794848680496216,
        ];
        assert_close(&frame_rms(&sine(50, 0.3, 0.5), 16, 8), &even, 1e-7);
        // An odd frame pads frame_length // 2 on each side: feature.rms(y=x[:10], 7, 3)[0].
        let odd = [
            0.1908397227525711,
            0.36993372440338135,
            0.4144578278064728,
            0.2886182367801666,
        ];
        assert_close(&frame_rms(&sine(10, 0.3, 0.5), 7, 3), &odd, 1e-7);
    }

    #[test]
    fn frame_rms_edges() {
        // Centre padding alone fills one frame of an even length, as in librosa.
        assert_eq!(frame_rms(&[], 16, 8), vec![0.0]);
        // Where librosa raises: no full frame, zero-length frames or hops.
        assert!(frame_rms(&[], 7, 3).is_empty());
        assert!(frame_rms(&[0.5; 10], 0, 3).is_empty());
        assert!(frame_rms(&[0.5; 10], 4, 0).is_empty());
        assert!(frame_rms(&[0.5; 10], usize::MAX, 1).is_empty());
        let with_nan = frame_rms(&[0.5, f32::NAN, 0.5, 0.5], 4, 2);
        assert_eq!(with_nan, frame_rms(&[0.5, 0.0, 0.5, 0.5], 4, 2));
    }

    #[test]
    fn interpolation_matches_torch_linear_without_corner_alignment() {
        // torch 2.11: F.interpolate(t[None, None], size, mode="linear")[0, 0].
        let up = [
            1.0,
            1.2857143878936768,
            2.142857313156128,
            3.0,
            2.5714285373687744,
            2.142857074737549,
            2.0,
        ];
        assert_close(&interpolate_linear(&[1.0, 3.0, 2.0], 7), &up, 1e-6);
        let down = [1.6666666269302368, 2.0, 4.333333492279053];
        assert_close(
            &interpolate_linear(&[1.0, 3.0, 2.0, 5.0, 4.0], 3),
            &down,
            1e-6,
        );
        assert_eq!(interpolate_linear(&[4.0], 3), vec![4.0; 3]);
        assert_eq!(interpolate_linear(&[], 2), vec![0.0; 2]);
        assert!(interpolate_linear(&[1.0, 2.0], 0).is_empty());
    }

    #[test]
    fn change_rms_matches_rvc() {
        // RVC's change_rms(src, 16, tgt, 20, 0.25) with src = 0.5·sin(0.9·i)·i/40 (40 samples,
        // float64 as the pipeline passes it) and tgt = 0.3·sin(0.5·j + 1) (50 samples, float32).
        let expected = [
            0.05801950767636299,
            0.06877738237380981,
            0.06269615143537521,
            0.041264716535806656,
            0.010299194604158401,
            -0.029508467763662338,
            -0.07119172066450119,
            -0.10073281824588776,
            -0.10665135830640793,
            -0.0837506577372551,
            -0.035093460232019424,
            0.028389444574713707,
            0.09059110283851624,
            0.14082254469394684,
            0.1604318618774414,
            0.13893863558769226,
            0.07652699947357178,
            -0.01482338272035122,
            -0.11353100091218948,
            -0.19355960190296173,
            -0.23128369450569153,
            -0.210136279463768,
            -0.13274990022182465,
            -0.016886135563254356,
            0.10993921756744385,
            0.21585796773433685,
            0.2727177143096924,
            0.26356241106987,
            0.18754085898399353,
            0.06102101132273674,
            -0.08759937435388565,
            -0.22279302775859833,
            -0.3093472719192505,
            -0.32249969244003296,
            -0.25486519932746887,
            -0.11925908178091049,
            0.05352156609296799,
            0.2216397076845169,
            0.3381470739841461,
            0.37393978238105774,
            0.3181644082069397,
            0.1820080280303955,
            -0.0034703328274190426,
            -0.19431322813034058,
            -0.34387725591659546,
            -0.4139305353164673,
            -0.3782831132411957,
            -0.24702508747577667,
            -0.05528669431805611,
            0.1499878168106079,
        ];
        let source: Vec<f32> = (0..40)
            .map(|i| (0.5 * (0.9 * f64::from(i)).sin() * f64::from(i) / 40.0) as f32)
            .collect();
        let target: Vec<f32> = (0..50)
            .map(|j| (0.3 * (0.5 * f64::from(j) + 1.0).sin()) as f32)
            .collect();
        assert_close(&change_rms(&source, 16, &target, 20, 0.25), &expected, 1e-6);
    }

    #[test]
    fn change_rms_limits() {
        let source = sine(3200, 0.05, 0.1);
        let target = sine(4000, 0.07, 0.4);
        let keep = change_rms(&source, 1600, &target, 2000, 1.0);
        assert_close(
            &keep,
            &target.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
            1e-7,
        );
        assert_eq!(change_rms(&source, 1600, &target, 2000, f32::NAN), keep);
        assert_eq!(change_rms(&source, 1600, &target, 2000, 7.0), keep);
        // Rate 0 hands the target the source's level (0.1 / 0.4 of it, away from the edges).
        let imposed = change_rms(&source, 1600, &target, 2000, 0.0);
        let ratio = crate::analysis::rms(&crate::AudioBuffer::new(
            2000,
            vec![imposed[1000..3000].to_vec()],
        )) / crate::analysis::rms(&crate::AudioBuffer::new(
            2000,
            vec![target[1000..3000].to_vec()],
        ));
        assert!((ratio - 0.25).abs() < 0.01, "{ratio}");
        assert!(change_rms(&source, 16000, &[], 40000, 0.5).is_empty());
        assert_eq!(change_rms(&source, 1, &target, 2000, 0.5), target);
        let silent_source = change_rms(&[], 16000, &target, 2000, 0.5);
        assert!(silent_source.iter().all(|&v| v == 0.0));
    }
}
