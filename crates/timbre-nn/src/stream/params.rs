//! The live parameters and the buffer layout they give, as rvc-next 0.2.16
//! `engine/stream/params.py` (`StreamParams`) and `engine/convert/params.py` (`VoiceParams`) name
//! them, with the original realtime GUI's defaults; the layout is `StreamEngine._build`
//! (RVC `realtime_gui.py` `start_vc`).
//!
//! The voice parameters are the offline conversion's ([`VoiceParams`]: one set, one check),
//! autotune included. Denoise is RNNoise from the enhancement (see `denoise`), not the
//! reference's TorchGate. Left out: the phase-vocoder crossfade (off) and effects (none); each
//! default keeps the reference's arithmetic unchanged.

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};

use crate::pipeline::F0Method;
use crate::voice::{Bounds, VoiceParams, check_bounds};

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
/// parameters (stored flat), which apply from the next block. `voice.protect` applies only when
/// `unvoiced` is not `original`, as in the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
pub struct StreamParams {
    /// The voice parameters of offline conversion, stored flat among the stream's own.
    #[serde(flatten)]
    pub voice: VoiceParams,
    /// Block length in ms, rounded to whole 10 ms frames (default 250).
    pub block_ms: f64,
    /// Crossfade between consecutive blocks in ms (default 50); SOLA fades over at most 40 ms.
    pub crossfade_ms: f64,
    /// Extra context before the block (the original's `extra_time`).
    pub context_ms: f64,
    /// RMS gate in dB; -60 turns it off.
    pub threshold_db: f32,
    /// What happens to the frames the pitch tracker finds unvoiced (default `original`).
    pub unvoiced: Unvoiced,
    /// RNNoise over the input before conversion (and over a passthrough).
    pub input_denoise: bool,
    /// RNNoise over the converted output.
    pub output_denoise: bool,
    /// Skip the voice on blocks without speech (the WebRTC detector, with a hangover): silence
    /// costs no compute and lets no noise through. Off by default, as in the reference.
    pub speech_gate: bool,
}

impl Default for StreamParams {
    fn default() -> Self {
        Self {
            voice: VoiceParams::default(),
            block_ms: 250.0,
            crossfade_ms: 50.0,
            context_ms: 2500.0,
            threshold_db: GATE_OFF_DB,
            unvoiced: Unvoiced::Original,
            input_denoise: false,
            output_denoise: false,
            speech_gate: false,
        }
    }
}

/// The stream's own ranges (the voice's are [`crate::voice::RANGES`]): block, crossfade and
/// context together must fit the pitch cache (10.24 s), and a gate at -60 dB is off.
pub const STREAM_RANGES: StreamRanges = StreamRanges {
    block_ms: Bounds {
        min: 10.0,
        max: 5000.0,
    },
    crossfade_ms: Bounds {
        min: 10.0,
        max: 1000.0,
    },
    context_ms: Bounds {
        min: 10.0,
        max: 10_000.0,
    },
    threshold_db: Bounds {
        min: -60.0,
        max: 0.0,
    },
    sample_rate: Bounds {
        min: 8000.0,
        max: 192_000.0,
    },
};

/// The ranges of [`STREAM_RANGES`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ts_rs::TS)]
pub struct StreamRanges {
    /// Bounds of `StreamParams::block_ms`.
    pub block_ms: Bounds,
    /// Bounds of `StreamParams::crossfade_ms`.
    pub crossfade_ms: Bounds,
    /// Bounds of `StreamParams::context_ms`.
    pub context_ms: Bounds,
    /// Bounds of `StreamParams::threshold_db` (-60 is off).
    pub threshold_db: Bounds,
    /// The device rate the engine runs at.
    pub sample_rate: Bounds,
}

impl StreamParams {
    /// These parameters with `block_ms` blocks, the crossfade cut to the block where it is longer.
    pub fn with_block(&self, block_ms: f64) -> StreamParams {
        StreamParams {
            block_ms,
            crossfade_ms: self.crossfade_ms.min(block_ms),
            ..self.clone()
        }
    }

    /// Whether `other` keeps the buffers (only hot parameters differ).
    pub fn same_buffers(&self, other: &StreamParams) -> bool {
        (self.block_ms, self.crossfade_ms, self.context_ms)
            == (other.block_ms, other.crossfade_ms, other.context_ms)
    }

    /// Refuses values the engine cannot run, saying which and why: the voice's ranges, the
    /// stream's, and the pitch methods a block can afford.
    pub fn check(&self) -> Result<()> {
        self.voice.check()?;
        let r = STREAM_RANGES;
        check_bounds("block_ms", self.block_ms, r.block_ms)?;
        check_bounds("crossfade_ms", self.crossfade_ms, r.crossfade_ms)?;
        check_bounds("context_ms", self.context_ms, r.context_ms)?;
        check_bounds("threshold_db", f64::from(self.threshold_db), r.threshold_db)?;
        ensure!(
            self.context_ms >= self.crossfade_ms,
            "the context ({} ms) must be at least the crossfade ({} ms)",
            self.context_ms,
            self.crossfade_ms
        );
        ensure!(
            !matches!(self.voice.f0_method, F0Method::Crepe | F0Method::CrepeTiny),
            "the {} pitch method is for offline conversion; live conversion takes rmvpe, fcpe, \
             swiftf0, pesto, pm or yin",
            self.voice.f0_method.name()
        );
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
    /// Samples per block (`block_ms` in whole 10 ms frames, at least one).
    pub block: usize,
    /// Samples per block at 16 kHz.
    pub block_16k: usize,
    /// Samples of the crossfade (`crossfade_ms` in whole 10 ms frames).
    pub crossfade: usize,
    /// The crossfade SOLA actually fades over: at most 40 ms.
    pub sola_buffer: usize,
    /// Samples SOLA may shift the output by to align it: 10 ms.
    pub sola_search: usize,
    /// Samples of context before the crossfade (`context_ms` in whole 10 ms frames).
    pub extra: usize,
    /// Samples of the rolling device-rate input.
    pub total: usize,
    /// Frames the synthesizer skips (the context), and frames it returns.
    pub skip_head: usize,
    /// Frames the synthesizer returns: block, SOLA crossfade and search, in 10 ms frames.
    pub return_length: usize,
}

impl Layout {
    /// The layout `params` give at a device rate of `sample_rate` Hz. Refuses parameters that fail
    /// `check`, a rate off its range or not a multiple of 100 Hz, and buffers over the pitch cache.
    pub fn new(params: &StreamParams, sample_rate: u32) -> Result<Layout> {
        params.check()?;
        check_bounds(
            "the device rate",
            f64::from(sample_rate),
            STREAM_RANGES.sample_rate,
        )?;
        ensure!(
            sample_rate.is_multiple_of(100),
            "the device rate must be a multiple of 100 Hz, not {sample_rate} Hz"
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
        let refused =
            |params: StreamParams, rate: u32| Layout::new(&params, rate).unwrap_err().to_string();
        let short = StreamParams {
            block_ms: 5.0,
            ..StreamParams::default()
        };
        assert_eq!(
            refused(short, 48_000),
            "block_ms must be between 10 and 5000, not 5"
        );
        let thin = StreamParams {
            context_ms: 20.0,
            ..StreamParams::default()
        };
        assert!(refused(thin, 48_000).contains("crossfade"));
        assert!(refused(StreamParams::default(), 22_050).contains("multiple of 100"));
        // The values a hostile test sent: each refused by name, none overflows or allocates.
        for (params, name) in [
            (
                StreamParams {
                    block_ms: 1e300,
                    ..Default::default()
                },
                "block_ms",
            ),
            (
                StreamParams {
                    crossfade_ms: 1e300,
                    ..Default::default()
                },
                "crossfade_ms",
            ),
            (
                StreamParams {
                    context_ms: f64::INFINITY,
                    ..Default::default()
                },
                "context_ms",
            ),
            (
                StreamParams {
                    threshold_db: f32::NAN,
                    ..Default::default()
                },
                "threshold_db",
            ),
        ] {
            assert!(refused(params, 48_000).starts_with(name), "{name}");
        }
        for rate in [100_000_000, 4_294_967_200] {
            assert!(refused(StreamParams::default(), rate).starts_with("the device rate must be"));
        }
        // The voice's checks are the offline conversion's.
        let loud = StreamParams {
            voice: VoiceParams {
                transpose: 1e9,
                ..Default::default()
            },
            ..StreamParams::default()
        };
        assert!(refused(loud, 48_000).starts_with("transpose must be between -48 and 48"));
    }

    #[test]
    fn a_stored_stream_setting_of_the_flat_layout_reads_back() {
        let json: StreamParams = serde_json::from_str(
            r#"{"block_ms": 200, "transpose": 3, "f0_method": "pm", "protect": 0.2, "seed": 7}"#,
        )
        .unwrap();
        assert_eq!(json.block_ms, 200.0);
        assert_eq!(
            (
                json.voice.transpose,
                json.voice.f0_method,
                json.voice.protect,
                json.voice.seed
            ),
            (3.0, F0Method::Pm, 0.2, Some(7))
        );
        let written = serde_json::to_value(&json).unwrap();
        assert_eq!(
            written["transpose"], 3.0,
            "written flat, as before: {written}"
        );
    }
}
