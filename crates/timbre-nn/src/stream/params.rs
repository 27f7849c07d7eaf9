//! The live parameters and the buffer layout they give, as rvc-next 0.2.16
//! `engine/stream/params.py` (`StreamParams`) and `engine/convert/params.py` (`VoiceParams`) name
//! them, with the original realtime GUI's defaults; the layout is `StreamEngine._build`
//! (RVC `realtime_gui.py` `start_vc`).
//!
//! Denoise is RNNoise from the enhancement (see `denoise`), not the reference's TorchGate.
//! Left out: autotune (0), the phase-vocoder crossfade (off) and effects (none); each default
//! keeps the reference's arithmetic unchanged.

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};

use crate::pipeline::F0Method;

/// Frames of pitch the engine keeps (the reference's `PITCH_CACHE`).
pub const PITCH_CACHE: usize = 1024;
/// The gate's threshold at which it is off.
pub const GATE_OFF_DB: f32 = -60.0;

/// What happens to the frames the pitch tracker finds unvoiced (`VoiceParams.unvoiced`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Unvoiced {
    /// Filled by interpolation; `protect` has no effect (the reference's default).
    #[default]
    Original,
    /// Filled, and `protect` applies to them.
    Protect,
    /// Kept at 0 Hz, with `protect` applied (classic RVC).
    Zero,
}

/// Block, crossfade, context and gate (rebuffering for the first three), and the voice
/// parameters, which apply from the next block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
pub struct StreamParams {
    pub block_ms: f64,
    pub crossfade_ms: f64,
    /// Extra context before the block (the original's `extra_time`).
    pub context_ms: f64,
    /// RMS gate in dB; -60 turns it off.
    pub threshold_db: f32,
    /// Semitones (the reference's `pitch`).
    pub transpose: f32,
    pub f0_method: F0Method,
    pub index_rate: f32,
    /// Below 0.5, unvoiced frames keep this share of the model's own features (only when
    /// `unvoiced` is not `original`, as in the reference).
    pub protect: f32,
    /// 1 keeps the model's loudness envelope, 0 follows the input's.
    pub rms_mix_rate: f32,
    pub speaker_id: i64,
    pub unvoiced: Unvoiced,
    /// Semitones the formants move (up: a smaller-sounding voice) while the pitch stays where
    /// the transpose puts it (the reference's `formant`).
    pub formant_shift: f32,
    /// RNNoise over the input before conversion (and over a passthrough).
    pub input_denoise: bool,
    /// RNNoise over the converted output.
    pub output_denoise: bool,
    /// The synthesizer's random draws from this seed (RVC's noise); none draws zeros, which
    /// makes the output deterministic, as the reference's no-noise mode and the parity test.
    #[ts(type = "number | null")]
    pub seed: Option<u64>,
}

impl Default for StreamParams {
    fn default() -> Self {
        Self {
            block_ms: 250.0,
            crossfade_ms: 50.0,
            context_ms: 2500.0,
            threshold_db: GATE_OFF_DB,
            transpose: 0.0,
            f0_method: F0Method::Rmvpe,
            index_rate: 0.75,
            protect: 0.33,
            rms_mix_rate: 0.25,
            speaker_id: 0,
            unvoiced: Unvoiced::Original,
            formant_shift: 0.0,
            input_denoise: false,
            output_denoise: false,
            seed: None,
        }
    }
}

impl StreamParams {
    /// Whether `other` keeps the buffers (only hot parameters differ).
    pub fn same_buffers(&self, other: &StreamParams) -> bool {
        (self.block_ms, self.crossfade_ms, self.context_ms)
            == (other.block_ms, other.crossfade_ms, other.context_ms)
    }

    /// Refuses values the engine cannot run, saying which and why.
    pub fn check(&self) -> Result<()> {
        ensure!(
            self.block_ms.is_finite() && self.block_ms >= 10.0,
            "the block must be at least 10 ms, not {} ms",
            self.block_ms
        );
        ensure!(
            self.crossfade_ms.is_finite() && self.crossfade_ms >= 10.0,
            "the crossfade must be at least 10 ms, not {} ms",
            self.crossfade_ms
        );
        ensure!(
            self.context_ms.is_finite() && self.context_ms >= self.crossfade_ms,
            "the context ({} ms) must be at least the crossfade ({} ms)",
            self.context_ms,
            self.crossfade_ms
        );
        ensure!(
            !matches!(self.f0_method, F0Method::Crepe | F0Method::CrepeTiny),
            "the {} pitch method is for offline conversion; live conversion takes rmvpe, fcpe, \
             pm or yin",
            self.f0_method.name()
        );
        ensure!(
            self.threshold_db.is_finite() && self.transpose.is_finite(),
            "the gate threshold and the transpose must be numbers"
        );
        ensure!(
            (-2.0..=2.0).contains(&self.formant_shift),
            "the formant shift must be between -2 and 2 semitones, not {}",
            self.formant_shift
        );
        for (name, value, high) in [
            ("index rate", self.index_rate, 1.0),
            ("protect", self.protect, 0.5),
            ("RMS mix rate", self.rms_mix_rate, 1.0),
        ] {
            ensure!(
                (0.0..=high).contains(&value),
                "the {name} must be between 0 and {high}, not {value}"
            );
        }
        Ok(())
    }
}

/// Milliseconds rounded to whole 10 ms frames, in samples (the reference's `_frames`, whose
/// `np.round` rounds half to even).
fn frames(ms: f64, sample_rate: usize, zc: usize) -> usize {
    (ms / 1000.0 * sample_rate as f64 / zc as f64).round_ties_even() as usize * zc
}

/// Buffer sizes in samples at the device rate, and in frames where named so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Samples per 10 ms at the device rate (`zc`).
    pub zc: usize,
    pub block: usize,
    pub block_16k: usize,
    pub crossfade: usize,
    /// The crossfade SOLA actually fades over: at most 40 ms.
    pub sola_buffer: usize,
    pub sola_search: usize,
    pub extra: usize,
    /// Samples of the rolling device-rate input.
    pub total: usize,
    /// Frames the synthesizer skips (the context), and frames it returns.
    pub skip_head: usize,
    pub return_length: usize,
}

impl Layout {
    pub fn new(params: &StreamParams, sample_rate: u32) -> Result<Layout> {
        params.check()?;
        ensure!(
            sample_rate >= 8000 && sample_rate.is_multiple_of(100),
            "the device rate must be a multiple of 100 Hz of at least 8000 Hz, not {sample_rate} Hz"
        );
        let sr = sample_rate as usize;
        let zc = sr / 100;
        let block = zc.max(frames(params.block_ms, sr, zc));
        let crossfade = frames(params.crossfade_ms, sr, zc);
        let sola_buffer = crossfade.min(4 * zc);
        let sola_search = zc;
        let extra = frames(params.context_ms, sr, zc);
        let total = extra + crossfade + sola_search + block;
        ensure!(
            total / zc <= PITCH_CACHE,
            "block, crossfade and context add up to {} ms; at most {} ms fit the pitch cache",
            total / zc * 10,
            PITCH_CACHE * 10
        );
        Ok(Layout {
            zc,
            block,
            block_16k: 160 * block / zc,
            crossfade,
            sola_buffer,
            sola_search,
            extra,
            total,
            skip_head: extra / zc,
            return_length: (block + sola_buffer + sola_search) / zc,
        })
    }

    /// Samples of the rolling 16 kHz input.
    pub fn total_16k(&self) -> usize {
        160 * self.total / self.zc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_give_the_reference_layout_at_48k() {
        let layout = Layout::new(&StreamParams::default(), 48_000).unwrap();
        assert_eq!(layout.zc, 480);
        assert_eq!(layout.block, 12_000);
        assert_eq!(layout.block_16k, 4000);
        assert_eq!(layout.sola_buffer, 1920);
        assert_eq!(layout.total, 120_000 + 2400 + 480 + 12_000);
        assert_eq!((layout.skip_head, layout.return_length), (250, 30));
    }

    #[test]
    fn bad_values_are_refused_with_reasons() {
        let short = StreamParams {
            block_ms: 5.0,
            ..StreamParams::default()
        };
        assert!(format!("{}", Layout::new(&short, 48_000).unwrap_err()).contains("10 ms"));
        let thin = StreamParams {
            context_ms: 20.0,
            ..StreamParams::default()
        };
        assert!(format!("{}", Layout::new(&thin, 48_000).unwrap_err()).contains("crossfade"));
        let odd = Layout::new(&StreamParams::default(), 22_050).unwrap_err();
        assert!(format!("{odd}").contains("multiple of 100"));
        let json: StreamParams =
            serde_json::from_str(r#"{"transpose": 3, "f0_method": "pm"}"#).unwrap();
        assert_eq!((json.transpose, json.f0_method), (3.0, F0Method::Pm));
    }
}
