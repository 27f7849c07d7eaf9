//! The energy curve an energy-conditioned voice is given, as PhamHuynhAnh16/Vietnamese-RVC
//! computes it (395f6a7, the last commit whose energy path runs): `main/inference/extracting/
//! rms.py` `RMSEnergyExtractor(frame_length=2048, hop_length=160, center=True,
//! pad_mode="reflect")`, librosa's `feature.rms`, one value per 10 ms frame. Offline
//! (`main/inference/conversion/pipeline.py`) it runs over the 48 Hz high-passed input
//! reflect-padded by `x_pad` seconds, cut to `p_len` (the pitch's frames), not normalised, and
//! each segment takes the frames its pitch takes; live (`main/inference/realtime/pipeline.py`)
//! over the 16 kHz context, its first `p_len` frames.

use super::segments::{self, Chunking, WINDOW};

/// Samples per RMS frame.
const FRAME_LENGTH: usize = 2048;

/// Vietnamese-RVC's offline energy for 16 kHz audio: the RMS of the high-passed input padded by
/// `chunking`'s `x_pad`, one value per 10 ms frame of the padded input (`padded / 160` values),
/// as the pitch is laid out.
pub fn energy_curve(audio_16k: &[f32], chunking: &Chunking) -> Vec<f32> {
    let filtered = timbre_audio::filter::rvc_highpass(audio_16k);
    let padded = segments::reflect_pad_owned(filtered, chunking.pad_samples());
    frames(&padded, padded.len() / WINDOW)
}

/// The first `count` values (fewer for short audio) of librosa's `feature.rms(y=audio,
/// frame_length=2048, hop_length=160, center=True, pad_mode="reflect")`: frame `i` is centred on
/// sample `160·i`, its samples beyond either end reflected (numpy's `reflect`: the edge sample
/// not repeated, again and again for audio shorter than the padding). No audio, no frames.
pub(crate) fn frames(audio: &[f32], count: usize) -> Vec<f32> {
    let half = FRAME_LENGTH / 2;
    if audio.is_empty() {
        return Vec::new();
    }
    let count = count.min(audio.len() / WINDOW + 1);
    let mut edge = Vec::with_capacity(FRAME_LENGTH);
    (0..count)
        .map(|i| {
            let centre = i * WINDOW;
            let value = if centre >= half && centre + half <= audio.len() {
                timbre_audio::filter::frame_value(
                    &audio[centre - half..centre + half],
                    FRAME_LENGTH,
                )
            } else {
                edge.clear();
                edge.extend((0..FRAME_LENGTH).map(|k| {
                    audio[reflected(centre as isize + k as isize - half as isize, audio.len())]
                }));
                timbre_audio::filter::frame_value(&edge, FRAME_LENGTH)
            };
            value as f32
        })
        .collect()
}

/// numpy's `reflect` index into `len` (at least 1) samples for any position.
fn reflected(position: isize, len: usize) -> usize {
    let period = 2 * (len as isize - 1);
    if period == 0 {
        return 0;
    }
    let folded = position.rem_euclid(period);
    (if folded < len as isize {
        folded
    } else {
        period - folded
    }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_match_librosa_with_reflect_padding() {
        // librosa 0.11.0: feature.rms(y=x, frame_length=2048, hop_length=160, center=True,
        // pad_mode="reflect")[0, [0, 1, 6, 7, 12]], x = 0.5·sin(0.01·i²) · (i / 2000) computed
        // in float64 and stored as float32, 2000 samples; then of x[:300].
        let audio: Vec<f32> = (0..2000)
            .map(|i| {
                let i = f64::from(i);
                (0.5 * (0.01 * i * i).sin() * (i / 2000.0)) as f32
            })
            .collect();
        let rms = frames(&audio, 100);
        assert_eq!(rms.len(), 2000 / 160 + 1);
        let expected = [
            (0, 0.106_471_67),
            (1, 0.110_346_17),
            (6, 0.201_462_48),
            (7, 0.223_999_02),
            (12, 0.270_359_04),
        ];
        for (i, value) in expected {
            assert!(
                (rms[i] - value).abs() < 1e-6,
                "frame {i}: {} vs {value}",
                rms[i]
            );
        }
        assert_eq!(frames(&audio, 3).len(), 3);
        // Shorter than the padding: reflected again and again, as numpy pads it.
        let short = frames(&audio[..300], 10);
        assert_eq!(short.len(), 2);
        for (i, value) in [(0, 0.032_492_64), (1, 0.030_601_31)] {
            assert!(
                (short[i] - value).abs() < 1e-6,
                "short frame {i}: {} vs {value}",
                short[i]
            );
        }
        assert!(frames(&[], 10).is_empty());
    }

    #[test]
    fn the_curve_has_the_pitch_frames_of_the_padded_input() {
        let chunking = Chunking::default();
        let audio = vec![0.25f32; 16_000];
        let curve = energy_curve(&audio, &chunking);
        assert_eq!(curve.len(), (16_000 + 2 * chunking.pad_samples()) / WINDOW);
    }
}
