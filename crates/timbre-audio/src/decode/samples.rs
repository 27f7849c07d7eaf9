//! Refusing decoded samples that are not audio: NaN, infinities and magnitudes no recording has.
//! Such values overflow the FFTs and resamplers downstream (undefined behaviour in the FFT
//! crate, rubato's "Imaginary part of first value was non-zero"), so the file is refused at
//! decode rather than patched: a silently cleaned file would hide whatever damaged it.

use std::path::Path;

use crate::error::{AudioError, AudioErrorKind};

/// +60 dBFS. Integer formats cannot pass ±1; float files may carry headroom above full scale
/// (a mix bounced without a limiter reaches +20 dBFS or so), but a thousand times full scale is
/// no signal anyone recorded, and it still leaves the squares that loudness and spectra sum over
/// a minute of audio (1e6 × 2.9e6 samples) far inside f32's range.
pub const MAX_SAMPLE_MAGNITUDE: f32 = 1_000.0;

/// Checks the planes of one decoded block whose first frame is frame `first_frame` of the file.
pub(super) fn check_samples<P: AsRef<[f32]>>(
    planes: &[P],
    first_frame: usize,
    rate: u32,
    path: Option<&Path>,
) -> Result<(), AudioError> {
    for (channel, plane) in planes.iter().enumerate() {
        let plane = plane.as_ref();
        let Some(offset) = plane
            .iter()
            .position(|x| !x.is_finite() || x.abs() > MAX_SAMPLE_MAGNITUDE)
        else {
            continue;
        };
        let value = plane[offset];
        let what = if value.is_nan() {
            "is NaN".to_string()
        } else if value.is_infinite() {
            format!("is {}infinite", if value < 0.0 { "minus " } else { "" })
        } else {
            format!(
                "is {value:e}, {:.1} dB above full scale (the limit is +60 dBFS)",
                20.0 * f64::from(value.abs()).log10()
            )
        };
        let frame = first_frame + offset;
        let channel_note = if planes.len() > 1 {
            format!(", channel {}", channel + 1)
        } else {
            String::new()
        };
        return Err(AudioError::new(
            AudioErrorKind::Corrupt,
            path,
            format!(
                "sample {} ({:.3} s{channel_note}) {what}: not audio, so the file is refused \
                 rather than cleaned up",
                thousands(frame),
                frame as f64 / f64::from(rate.max(1)),
            ),
        ));
    }
    Ok(())
}

/// `12345` as `12,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_samples_within_the_bound_pass() {
        let planes = vec![vec![0.0, -1.0, 999.0, -MAX_SAMPLE_MAGNITUDE]];
        assert!(check_samples(&planes, 0, 48_000, None).is_ok());
    }

    #[test]
    fn each_bad_value_is_named_with_its_place() {
        let path = Path::new("take.wav");
        let cases = [
            (
                f32::NAN,
                "sample 12,345 (0.257 s, channel 2) is NaN: not audio",
            ),
            (
                f32::INFINITY,
                "sample 12,345 (0.257 s, channel 2) is infinite",
            ),
            (f32::NEG_INFINITY, "is minus infinite"),
            (3e29, "is 3e29, 589.5 dB above full scale"),
            (-1001.0, "is -1.001e3, 60.0 dB above full scale"),
        ];
        for (bad, words) in cases {
            let mut planes = vec![vec![0.0; 100]; 2];
            planes[1][45] = bad;
            let err = check_samples(&planes, 12_300, 48_000, Some(path)).unwrap_err();
            assert_eq!(err.kind, AudioErrorKind::Corrupt);
            let message = err.to_string();
            assert!(message.starts_with("take.wav: sample"), "{message}");
            assert!(message.contains(words), "{message} should say {words}");
            assert!(
                message.contains("refused rather than cleaned up"),
                "{message}"
            );
        }
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
