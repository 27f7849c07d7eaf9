//! What a voice does to the input, the same in a conversion, a cover and a live stream
//! (rvc-next 0.2.16 `engine/convert/params.py` `VoiceParams`, RVC's names and defaults): one
//! struct, one set of ranges, one check, and the pitch arithmetic both engines call.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::pipeline::autotune::{self, Autotune};
use crate::pipeline::{F0Method, pitch};

/// The voice parameters, with the reference's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
pub struct VoiceParams {
    /// Semitones.
    pub transpose: f32,
    /// Semitones the formants move (up: a smaller-sounding voice) while the pitch stays where
    /// `transpose` puts it; 0 is off.
    pub formant_shift: f32,
    /// Which tracker gives the pitch (default RMVPE).
    pub f0_method: F0Method,
    /// How much of the features comes from the index (0 = none).
    pub index_rate: f32,
    /// Below 0.5, unvoiced frames keep this share of the model's own features.
    pub protect: f32,
    /// 1 keeps the model's loudness envelope, 0 follows the input's.
    pub rms_mix_rate: f32,
    /// Which voice of a multi-speaker model.
    pub speaker_id: i64,
    /// Pull the pitch to the nearest note (None: off, the reference's arithmetic).
    pub autotune: Option<Autotune>,
    /// The synthesizer's random draws from this seed (RVC's noise); none draws zeros, which
    /// makes every render reproducible.
    #[ts(type = "number | null")]
    pub seed: Option<u64>,
}

impl Default for VoiceParams {
    fn default() -> Self {
        Self {
            transpose: 0.0,
            formant_shift: 0.0,
            f0_method: F0Method::Rmvpe,
            index_rate: 0.75,
            protect: 0.33,
            rms_mix_rate: 0.25,
            speaker_id: 0,
            autotune: None,
            seed: None,
        }
    }
}

/// The closed range a parameter may take.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ts_rs::TS)]
pub struct Bounds {
    /// Lowest value accepted (inclusive).
    pub min: f64,
    /// Highest value accepted (inclusive).
    pub max: f64,
}

/// Every numeric voice parameter's range: what [`VoiceParams::check`] accepts and what the
/// app's controls offer (the defaults command hands it to the UI).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ts_rs::TS)]
pub struct VoiceRanges {
    /// Range of `transpose` in semitones.
    pub transpose: Bounds,
    /// Range of `formant_shift` in semitones.
    pub formant_shift: Bounds,
    /// Range of `index_rate`.
    pub index_rate: Bounds,
    /// Range of `protect`, whose top (0.5) turns it off.
    pub protect: Bounds,
    /// Range of `rms_mix_rate`.
    pub rms_mix_rate: Bounds,
    /// Range of `speaker_id`; the model's own speaker count is checked separately.
    pub speaker_id: Bounds,
    /// Range of the autotune's `strength`.
    pub autotune_strength: Bounds,
}

/// The voice parameters' ranges, as [`VoiceParams::check`] applies them.
pub const RANGES: VoiceRanges = VoiceRanges {
    transpose: Bounds {
        min: -48.0,
        max: 48.0,
    },
    formant_shift: Bounds {
        min: -2.0,
        max: 2.0,
    },
    index_rate: Bounds { min: 0.0, max: 1.0 },
    protect: Bounds { min: 0.0, max: 0.5 },
    rms_mix_rate: Bounds { min: 0.0, max: 1.0 },
    speaker_id: Bounds {
        min: 0.0,
        max: 10_000.0,
    },
    autotune_strength: Bounds { min: 0.0, max: 1.0 },
};

/// Refuses `value` outside `bounds`, naming the parameter (NaN is outside every range).
pub fn check_bounds(name: &str, value: f64, bounds: Bounds) -> Result<()> {
    if bounds.min <= value && value <= bounds.max {
        return Ok(());
    }
    bail!(
        "{name} must be between {} and {}, not {value}",
        bounds.min,
        bounds.max
    )
}

impl VoiceParams {
    /// Refuses values outside [`RANGES`], naming the parameter.
    pub fn check(&self) -> Result<()> {
        let r = RANGES;
        check_bounds("transpose", f64::from(self.transpose), r.transpose)?;
        check_bounds(
            "formant_shift",
            f64::from(self.formant_shift),
            r.formant_shift,
        )?;
        check_bounds("index_rate", f64::from(self.index_rate), r.index_rate)?;
        check_bounds("protect", f64::from(self.protect), r.protect)?;
        check_bounds("rms_mix_rate", f64::from(self.rms_mix_rate), r.rms_mix_rate)?;
        check_bounds("speaker_id", self.speaker_id as f64, r.speaker_id)?;
        if let Some(autotune) = self.autotune {
            check_bounds(
                "autotune strength",
                f64::from(autotune.strength),
                r.autotune_strength,
            )?;
        }
        Ok(())
    }

    /// Refuses a speaker the model does not have (`speakers`: its speaker count).
    pub fn check_speaker(&self, speakers: i64) -> Result<()> {
        if self.speaker_id < speakers.max(1) {
            return Ok(());
        }
        bail!(
            "speaker {} asked for, but this model has {} speaker{} (0 to {})",
            self.speaker_id,
            speakers.max(1),
            if speakers > 1 { "s" } else { "" },
            speakers.max(1) - 1
        )
    }

    /// The pitch the synthesizer is given for tracked pitch `f0_hz` (Hz, unvoiced 0): moved by
    /// the transpose less the formant shift (the shift raises the synthesized pitch by itself
    /// afterwards, see `pipeline::formant`), then autotuned to the notes heard.
    pub fn synthesis_pitch(&self, f0_hz: &[f32]) -> Vec<f32> {
        let shifted = pitch::transpose(f0_hz, self.transpose - self.formant_shift);
        match self.autotune {
            Some(settings) => autotune::apply(&shifted, settings, self.formant_shift),
            None => shifted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Scale;

    #[test]
    fn values_outside_their_ranges_are_refused_by_name() {
        assert!(VoiceParams::default().check().is_ok());
        let refused = |params: VoiceParams| params.check().unwrap_err().to_string();
        let err = refused(VoiceParams {
            protect: 7.0,
            ..Default::default()
        });
        assert_eq!(err, "protect must be between 0 and 0.5, not 7");
        for transpose in [f32::NAN, f32::INFINITY, 49.0, -1e30] {
            let err = refused(VoiceParams {
                transpose,
                ..Default::default()
            });
            assert!(
                err.starts_with("transpose must be between -48 and 48"),
                "{err}"
            );
        }
        let err = refused(VoiceParams {
            formant_shift: 5.0,
            ..Default::default()
        });
        assert_eq!(err, "formant_shift must be between -2 and 2, not 5");
        let err = refused(VoiceParams {
            speaker_id: -1,
            ..Default::default()
        });
        assert!(err.starts_with("speaker_id must be between 0"), "{err}");
        let err = refused(VoiceParams {
            autotune: Some(Autotune {
                scale: Scale::Chromatic,
                strength: 1.5,
            }),
            ..Default::default()
        });
        assert!(
            err.starts_with("autotune strength must be between 0 and 1"),
            "{err}"
        );
    }

    #[test]
    fn a_speaker_past_the_models_count_is_refused() {
        let params = VoiceParams {
            speaker_id: 9,
            ..Default::default()
        };
        let err = params.check_speaker(3).unwrap_err().to_string();
        assert_eq!(
            err,
            "speaker 9 asked for, but this model has 3 speakers (0 to 2)"
        );
        assert!(params.check_speaker(10).is_ok());
        assert!(VoiceParams::default().check_speaker(1).is_ok());
    }

    #[test]
    fn the_synthesized_pitch_is_the_transpose_less_the_formant_shift_then_autotuned() {
        let f0 = [220.0f32, 0.0, 233.0];
        let params = VoiceParams {
            transpose: 12.0,
            formant_shift: 1.0,
            ..Default::default()
        };
        assert_eq!(params.synthesis_pitch(&f0), pitch::transpose(&f0, 11.0));
        let tuned = VoiceParams {
            autotune: Some(Autotune {
                scale: Scale::Chromatic,
                strength: 1.0,
            }),
            ..params
        };
        let expected = autotune::apply(&pitch::transpose(&f0, 11.0), tuned.autotune.unwrap(), 1.0);
        assert_eq!(tuned.synthesis_pitch(&f0), expected);
        assert_eq!(
            tuned.synthesis_pitch(&f0)[1],
            0.0,
            "unvoiced stays unvoiced"
        );
    }
}
