//! The RMS gate and the RMS mix of the reference streaming engine (rvc-next 0.2.16
//! `engine/stream/engine.py` `_process`, from RVC `realtime_gui.py` `audio_callback`): librosa
//! 0.11 `feature.rms` (centred frames, zero padding), `amplitude_to_db` (amin 1e-5, top_db 80)
//! and torch's `F.interpolate(mode="linear", align_corners=True)` of the envelopes.

use tch::{Kind, Tensor};

/// librosa's `feature.rms(y, frame_length, hop_length)` with `center=True` and constant
/// padding: `1 + len / hop` frames (frame `i` centred on sample `i·hop`).
pub fn rms_frames(y: &[f32], frame_length: usize, hop: usize) -> Vec<f32> {
    let half = frame_length / 2;
    let frames = 1 + (y.len() + 2 * half - frame_length) / hop;
    (0..frames)
        .map(|i| {
            let start = i * hop;
            let power: f64 = (start..start + frame_length)
                .filter_map(|p| p.checked_sub(half).and_then(|s| y.get(s)))
                .map(|&v| f64::from(v) * f64::from(v))
                .sum();
            (power / frame_length as f64).sqrt() as f32
        })
        .collect()
}

/// librosa's `amplitude_to_db(rms, ref=1.0)`: 20·log10(max(rms, 1e-5)), floored at 80 dB
/// under the loudest value.
pub fn amplitude_to_db(rms: &[f32]) -> Vec<f32> {
    let db: Vec<f32> = rms
        .iter()
        .map(|&a| 10.0 * (f64::from(a) * f64::from(a)).max(1e-10).log10())
        .map(|d| d as f32)
        .collect();
    let floor = db.iter().copied().fold(f32::NEG_INFINITY, f32::max) - 80.0;
    db.into_iter().map(|d| d.max(floor)).collect()
}

/// The gate on one block: `history` holds the previous 4 frames of 10 ms (`4·zc` samples) and
/// is updated. Returns the block with its quiet 10 ms stretches zeroed, led by the previous
/// block's last `2·zc` samples gated again (the reference writes `block + 2·zc` samples back).
pub fn gate(block: &[f32], history: &mut [f32], zc: usize, threshold_db: f32) -> Vec<f32> {
    let mut joined = history.to_vec();
    joined.extend_from_slice(block);
    let rms = rms_frames(&joined, 4 * zc, zc);
    let db = amplitude_to_db(&rms[2..]);
    history.copy_from_slice(&joined[joined.len() - 4 * zc..]);
    let mut gated = joined[2 * zc - zc / 2..].to_vec();
    for (i, quiet) in db.iter().map(|&d| d < threshold_db).enumerate() {
        if quiet {
            let start = (i * zc).min(gated.len());
            let end = ((i + 1) * zc).min(gated.len());
            gated[start..end].fill(0.0);
        }
    }
    gated.split_off(zc / 2)
}

/// An RMS envelope of `frames` values stretched to one value per sample (`samples`), as the
/// reference does: linear interpolation with aligned corners to `samples + 1`, the last dropped.
fn per_sample(envelope: &[f32], samples: usize) -> Tensor {
    Tensor::from_slice(envelope)
        .view([1, 1, -1])
        .upsample_linear1d([samples as i64 + 1], true, None)
        .view([-1])
        .narrow(0, 0, samples as i64)
}

/// Scales `output` toward the loudness envelope of `input` (its first `output.len()` samples):
/// `output · (rms_in / max(rms_out, 1e-3))^(1 − rate)`.
pub fn rms_mix(input: &[f32], output: &mut [f32], zc: usize, rate: f32) {
    let n = output.len();
    let rms_in = per_sample(&rms_frames(&input[..n], 4 * zc, zc), n);
    let rms_out = per_sample(&rms_frames(output, 4 * zc, zc), n).clamp_min(1e-3);
    let gain = (rms_in / rms_out).pow_tensor_scalar(1.0 - f64::from(rate));
    let mixed = Tensor::from_slice(output) * gain;
    let mixed = Vec::<f32>::try_from(mixed.to_kind(Kind::Float)).expect("float32 samples");
    output.copy_from_slice(&mixed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_frames_are_centred_with_zero_padding() {
        let y = vec![1.0f32; 8];
        let rms = rms_frames(&y, 4, 2);
        assert_eq!(rms.len(), 5);
        // Frame 0 covers two padding zeros and two ones.
        assert!((rms[0] - 0.5f32.sqrt()).abs() < 1e-6);
        assert_eq!(rms[2], 1.0);
    }

    #[test]
    fn the_gate_zeroes_silence_and_keeps_sound() {
        let zc = 160;
        let mut history = vec![0.0f32; 4 * zc];
        let mut block = vec![0.0f32; 10 * zc];
        for (i, v) in block.iter_mut().enumerate().skip(5 * zc) {
            *v = 0.3 * (i as f32 * 0.1).sin();
        }
        let gated = gate(&block, &mut history, zc, -40.0);
        assert_eq!(gated.len(), block.len() + 2 * zc);
        assert!(gated[..2 * zc + 3 * zc].iter().all(|&v| v == 0.0));
        assert_eq!(&gated[gated.len() - zc..], &block[block.len() - zc..]);
        assert_eq!(&history[..], &block[block.len() - 4 * zc..]);
    }

    #[test]
    fn an_rms_mix_of_zero_follows_the_input_envelope() {
        let input = vec![0.5f32; 4800];
        let mut output = vec![0.1f32; 4800];
        rms_mix(&input, &mut output, 480, 0.0);
        assert!(output[1000..3000].iter().all(|v| (v - 0.5).abs() < 1e-4));
    }
}
