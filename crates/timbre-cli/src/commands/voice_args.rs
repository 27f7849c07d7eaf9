//! The voice parameters as `timbre convert`, `timbre cover` and `timbre live` all take them:
//! one set of flags for `timbre_nn::voice::VoiceParams`, with its defaults and its ranges.

use anyhow::Result;
use timbre_nn::pipeline::{Autotune, F0Method, Scale};
use timbre_nn::voice::VoiceParams;

fn defaults() -> VoiceParams {
    VoiceParams::default()
}

#[derive(clap::Args)]
pub struct VoiceArgs {
    /// Pitch shift in semitones, -48..48.
    #[arg(long, short = 't', default_value_t = defaults().transpose, allow_hyphen_values = true)]
    transpose: f32,
    /// rmvpe (needs models/rmvpe.pt), fcpe (needs models/fcpe.pt), crepe (needs
    /// models/crepe-full.pth), crepe-tiny (needs models/crepe-tiny.pth), swiftf0 (needs
    /// models/swift-f0.onnx), pesto (needs models/pesto.ckpt), pm or yin (live: rmvpe, fcpe,
    /// swiftf0, pesto, pm or yin).
    #[arg(long, default_value = defaults().f0_method.name())]
    f0_method: String,
    /// Share of the features taken from the index, 0..1.
    #[arg(long, default_value_t = defaults().index_rate, allow_hyphen_values = true)]
    index_rate: f32,
    /// 0..0.5: below 0.5, protects breaths and consonants from the index and model.
    #[arg(long, default_value_t = defaults().protect, allow_hyphen_values = true)]
    protect: f32,
    /// 0..1: 1 keeps the model's loudness envelope, 0 follows the input's.
    #[arg(long, default_value_t = defaults().rms_mix_rate, allow_hyphen_values = true)]
    rms_mix: f32,
    /// Speaker of a multi-speaker model.
    #[arg(long, default_value_t = defaults().speaker_id, allow_hyphen_values = true)]
    speaker: i64,
    /// Random draws from this seed (default: none at all, fully reproducible).
    #[arg(long)]
    seed: Option<u64>,
    /// Pull the pitch to the nearest semitone (`--autotune`, or `--autotune chromatic`) or to the
    /// nearest note of a key (`--autotune Am`, `--autotune "Bb major"`).
    #[arg(long, num_args = 0..=1, default_missing_value = "chromatic")]
    autotune: Option<String>,
    /// How far autotune pulls, 0..1 (1 snaps).
    #[arg(
        long,
        default_value_t = 1.0,
        requires = "autotune",
        allow_hyphen_values = true
    )]
    autotune_strength: f32,
    /// Move the formants by this many semitones, -2..2, keeping the pitch (up: a smaller-sounding
    /// voice).
    #[arg(long, default_value_t = defaults().formant_shift, allow_hyphen_values = true)]
    formant_shift: f32,
}

impl VoiceArgs {
    /// The parameters, checked (a bad value is refused by name, as bad input).
    pub fn params(&self) -> Result<VoiceParams> {
        let invalid = |e: anyhow::Error| timbre_core::error::invalid_input(e.to_string());
        let params = VoiceParams {
            transpose: self.transpose,
            formant_shift: self.formant_shift,
            f0_method: F0Method::parse(&self.f0_method).map_err(invalid)?,
            index_rate: self.index_rate,
            protect: self.protect,
            rms_mix_rate: self.rms_mix,
            speaker_id: self.speaker,
            autotune: self
                .autotune
                .as_deref()
                .map(|scale| {
                    Ok::<_, anyhow::Error>(Autotune {
                        scale: Scale::parse(scale).map_err(invalid)?,
                        strength: self.autotune_strength,
                    })
                })
                .transpose()?,
            seed: self.seed,
        };
        params.check().map_err(invalid)?;
        Ok(params)
    }
}
