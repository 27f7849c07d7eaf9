//! Autotune: f0 pulled toward the nearest equal-tempered note (A4 = 440 Hz), of every semitone or
//! of one key's scale, by a strength (rvc-next 0.2.16 `engine/f0/base.py`, `autotune`: in log
//! frequency, 1 snaps, 0.5 goes half way; Applio's `f0_autotune` + `f0_autotune_strength` is the
//! chromatic case). The snap is in the pitch the listener hears: a formant shift of `s`
//! semitones raises the synthesized pitch by `s` after the synthesizer (see `render`), so the
//! note is found `s` semitones up. Unvoiced frames are 0 and stay 0.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Which notes the pitch is pulled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Scale {
    /// Every semitone.
    Chromatic,
    /// The seven notes of a major key; `tonic` is a pitch class, 0 = C … 11 = B.
    Major {
        /// The key's tonic as a pitch class, 0 = C … 11 = B.
        tonic: u8,
    },
    /// The seven notes of a natural minor key.
    Minor {
        /// The key's tonic as a pitch class, 0 = C … 11 = B.
        tonic: u8,
    },
}

const MAJOR_STEPS: [u8; 7] = [0, 2, 4, 5, 7, 9, 11];
const MINOR_STEPS: [u8; 7] = [0, 2, 3, 5, 7, 8, 10];

impl Scale {
    /// `chromatic`, or a key: a note name (C, C#, Db, … B) with `m`, `min` or `minor` for a
    /// minor key and optionally `maj`/`major` (`A minor`, `F#m`, `Bb`).
    pub fn parse(text: &str) -> Result<Self> {
        let lower = text.trim().to_ascii_lowercase();
        if lower == "chromatic" {
            return Ok(Scale::Chromatic);
        }
        let mut chars = lower.chars();
        let natural = match chars.next() {
            Some('c') => 0,
            Some('d') => 2,
            Some('e') => 4,
            Some('f') => 5,
            Some('g') => 7,
            Some('a') => 9,
            Some('b') => 11,
            _ => {
                bail!("autotune scale `{text}`: use chromatic or a key such as C, F#m or Bb minor")
            }
        };
        let rest = chars.as_str();
        // No mode word starts with `b`, so a `b` right after the letter is a flat.
        let (tonic, mode) = if let Some(mode) = rest.strip_prefix('#') {
            (natural + 1, mode)
        } else if let Some(mode) = rest.strip_prefix('b') {
            (natural + 11, mode)
        } else {
            (natural, rest)
        };
        let tonic = (tonic % 12) as u8;
        match mode.trim() {
            "" | "maj" | "major" => Ok(Scale::Major { tonic }),
            "m" | "min" | "minor" => Ok(Scale::Minor { tonic }),
            other => bail!(
                "autotune scale `{text}`: `{other}` is not major or minor (write C, Cm, C minor)"
            ),
        }
    }

    fn contains(self, note: i64) -> bool {
        let (tonic, steps) = match self {
            Scale::Chromatic => return true,
            Scale::Major { tonic } => (tonic, MAJOR_STEPS),
            Scale::Minor { tonic } => (tonic, MINOR_STEPS),
        };
        steps.contains(&((note - i64::from(tonic)).rem_euclid(12) as u8))
    }

    /// The note (MIDI number) of this scale nearest to `midi`; the lower one on a tie, except
    /// that the chromatic scale rounds half to even as numpy does.
    fn nearest(self, midi: f64) -> f64 {
        if self == Scale::Chromatic {
            return midi.round_ties_even();
        }
        // A seven-note scale has no gap wider than two semitones.
        let floor = midi.floor() as i64;
        (floor - 3..=floor + 4)
            .filter(|&n| self.contains(n))
            .map(|n| n as f64)
            .min_by(|a, b| (a - midi).abs().total_cmp(&(b - midi).abs()))
            .unwrap_or(midi)
    }
}

/// Autotune's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Autotune {
    /// The notes the pitch is pulled to.
    pub scale: Scale,
    /// 0..1: 0 leaves the pitch alone, 1 snaps it to the note.
    pub strength: f32,
}

/// Pulls every voiced (non-zero) frame of `f0` (Hz) toward the nearest note of `scale` by
/// `strength`, the note found `formant_shift` semitones above the frame (see the module).
pub fn apply(f0: &[f32], autotune: Autotune, formant_shift: f32) -> Vec<f32> {
    let strength = f64::from(autotune.strength);
    if strength <= 0.0 {
        return f0.to_vec();
    }
    f0.iter()
        .map(|&f| {
            if f <= 0.0 {
                return f;
            }
            let midi = 69.0 + 12.0 * (f64::from(f) / 440.0).log2() + f64::from(formant_shift);
            let target = autotune.scale.nearest(midi);
            (f64::from(f) * 2f64.powf(strength * (target - midi) / 12.0)) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cents from `f` to the nearest semitone.
    fn off_semitone(f: f32) -> f64 {
        let midi = 69.0 + 12.0 * (f64::from(f) / 440.0).log2();
        100.0 * (midi - midi.round()).abs()
    }

    fn glide() -> Vec<f32> {
        // 100 Hz to 800 Hz in 0.37-cent steps, with unvoiced frames between.
        (0..10_000)
            .map(|i| {
                if i % 7 == 3 {
                    0.0
                } else {
                    (100.0 * 8f64.powf(f64::from(i) / 10_000.0)) as f32
                }
            })
            .collect()
    }

    #[test]
    fn autotune_at_strength_1_lands_every_voiced_frame_within_5_cents_of_a_semitone() {
        let input = glide();
        let tuned = apply(
            &input,
            Autotune {
                scale: Scale::Chromatic,
                strength: 1.0,
            },
            0.0,
        );
        for (before, after) in input.iter().zip(&tuned) {
            if *before == 0.0 {
                assert_eq!(*after, 0.0, "unvoiced frames stay unvoiced");
            } else {
                assert!(off_semitone(*after) < 5.0, "{before} → {after}");
                assert!(off_semitone(*after) < 0.01, "{before} → {after}");
            }
        }
        // A4 stays A4; 450 Hz (+39 cents) goes to A4; 460 Hz (+77 cents) to A#4.
        let snapped = apply(
            &[440.0, 450.0, 460.0],
            Autotune {
                scale: Scale::Chromatic,
                strength: 1.0,
            },
            0.0,
        );
        assert!((snapped[0] - 440.0).abs() < 1e-3);
        assert!((snapped[1] - 440.0).abs() < 1e-3);
        assert!((snapped[2] - 466.164).abs() < 1e-2);
    }

    #[test]
    fn autotune_at_strength_0_is_the_identity_and_half_strength_goes_half_way() {
        let input = glide();
        let off = Autotune {
            scale: Scale::Chromatic,
            strength: 0.0,
        };
        assert_eq!(apply(&input, off, 0.0), input);
        let half = apply(
            &[450.0],
            Autotune {
                scale: Scale::Chromatic,
                strength: 0.5,
            },
            0.0,
        );
        let cents = 1200.0 * (f64::from(half[0]) / 440.0).log2();
        let full = 1200.0 * (450.0f64 / 440.0).log2();
        assert!((cents - full / 2.0).abs() < 0.01, "{cents}");
    }

    #[test]
    fn autotune_of_a_key_lands_only_on_its_notes() {
        let scale = Scale::parse("A minor").unwrap();
        let tuned = apply(
            &glide(),
            Autotune {
                scale,
                strength: 1.0,
            },
            0.0,
        );
        for f in tuned.into_iter().filter(|f| *f > 0.0) {
            let midi = 69.0 + 12.0 * (f64::from(f) / 440.0).log2();
            assert!((midi - midi.round()).abs() < 1e-4);
            assert!(scale.contains(midi.round() as i64), "{f} Hz");
        }
        // C#4 (277.18 Hz) is not in C major: 10 cents above it goes to D, 10 below to C.
        let c_major = Autotune {
            scale: Scale::parse("C").unwrap(),
            strength: 1.0,
        };
        let near = apply(&[280.0, 275.6], c_major, 0.0);
        assert!((near[0] - 293.665).abs() < 0.01, "{near:?}");
        assert!((near[1] - 261.626).abs() < 0.01, "{near:?}");
    }

    #[test]
    fn a_formant_shift_moves_the_snap_to_the_pitch_heard() {
        // 450 Hz heard 0.5 semitones up (462.9 Hz, +88 cents over A4) snaps to A#4 there, so
        // the frame goes to A#4 − 0.5 semitones.
        let tuned = apply(
            &[450.0],
            Autotune {
                scale: Scale::Chromatic,
                strength: 1.0,
            },
            0.5,
        );
        let expected = 466.164 * 2f32.powf(-0.5 / 12.0);
        assert!((tuned[0] - expected).abs() < 0.01, "{tuned:?}");
    }

    #[test]
    fn keys_parse_by_name() {
        assert_eq!(Scale::parse("chromatic").unwrap(), Scale::Chromatic);
        assert_eq!(Scale::parse("C").unwrap(), Scale::Major { tonic: 0 });
        assert_eq!(Scale::parse("F#m").unwrap(), Scale::Minor { tonic: 6 });
        assert_eq!(
            Scale::parse("Bb minor").unwrap(),
            Scale::Minor { tonic: 10 }
        );
        assert_eq!(Scale::parse("bm").unwrap(), Scale::Minor { tonic: 11 });
        assert_eq!(Scale::parse("Db major").unwrap(), Scale::Major { tonic: 1 });
        assert_eq!(Scale::parse("B").unwrap(), Scale::Major { tonic: 11 });
        assert!(Scale::parse("H").is_err());
        assert!(
            Scale::parse("C dorian")
                .unwrap_err()
                .to_string()
                .contains("dorian")
        );
    }
}
