//! The YAML config of a RoFormer separation model, as ZFTurbo/Music-Source-Separation-Training
//! writes it (`configs/viperx/*.yaml`, `configs/KimberleyJensen/*.yaml`; MDX23C's is in
//! `mdx23c/config.rs`): field names are the upstream ones and `!!python/tuple` sequences read as
//! lists. Every `model:` key is either read, known not to change what inference computes
//! ([`IGNORED_MODEL_KEYS`]), accepted only at the value that means the network we implement
//! ([`FIXED_MODEL_KEYS`]), or refused by name: a config option we do not implement never plays
//! silently wrong. The other sections keep only what separation needs.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

/// A separation model's YAML config: its `audio`, `model`, `training` and `inference` sections.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// `audio:`: the chunk length and the input rate.
    pub audio: AudioConfig,
    /// `model:`: the network's hyperparameters.
    pub model: ModelConfig,
    /// `training:`: the instrument names that fix the stems and their order (empty if absent).
    #[serde(default)]
    pub training: TrainingConfig,
    /// `inference:`: overlap-add settings (upstream defaults if absent).
    #[serde(default)]
    pub inference: InferenceConfig,
}

/// `audio:` of the config; only the keys separation needs.
#[derive(Debug, Clone, Deserialize)]
pub struct AudioConfig {
    /// Samples per model call in the overlap-add separation.
    pub chunk_size: i64,
    /// Rate in Hz the model expects its input at (default 44100).
    #[serde(default = "default_sample_rate")]
    pub sample_rate: i64,
}

/// `model:` of both RoFormers; fields one of them lacks are ignored by the other.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelConfig {
    /// Width of the band embeddings and of the transformer tokens (upstream dim).
    pub dim: i64,
    /// Number of axial layers, each a transformer along time then one along frequency.
    pub depth: i64,
    /// Whether the model takes two channels; else it takes mono.
    #[serde(default)]
    pub stereo: bool,
    /// Number of stems the model estimates, one mask estimator each (default 1).
    #[serde(default = "one")]
    pub num_stems: i64,
    /// Attention layers in each transformer along time (default 2).
    #[serde(default = "two")]
    pub time_transformer_depth: i64,
    /// Attention layers in each transformer along frequency (default 2).
    #[serde(default = "two")]
    pub freq_transformer_depth: i64,
    /// Linear-attention layers over all tokens opening each axial layer; 0 (default) for none.
    #[serde(default)]
    pub linear_transformer_depth: i64,
    /// BS-RoFormer: STFT bins per band (upstream default: `DEFAULT_FREQS_PER_BANDS`).
    pub freqs_per_bands: Option<Vec<i64>>,
    /// Mel-Band RoFormer: number of mel bands.
    #[serde(default = "default_num_bands")]
    pub num_bands: i64,
    /// Mel-Band RoFormer: the rate its mel filterbank is built for.
    #[serde(default = "default_sample_rate")]
    pub sample_rate: i64,
    /// Width of each attention head (default 64).
    #[serde(default = "default_dim_head")]
    pub dim_head: i64,
    /// Number of attention heads (default 8).
    #[serde(default = "default_heads")]
    pub heads: i64,
    /// FFT size of the STFT in samples (default 2048); it gives `n_fft / 2 + 1` bins.
    #[serde(default = "default_n_fft")]
    pub stft_n_fft: i64,
    /// STFT hop in samples (default 512).
    #[serde(default = "default_hop_length")]
    pub stft_hop_length: i64,
    /// Length in samples of the periodic Hann window, at most `stft_n_fft` (default 2048).
    #[serde(default = "default_n_fft")]
    pub stft_win_length: i64,
    /// Whether the STFT and iSTFT are scaled by `n_fft^-0.5` (torch `normalized`; default off).
    #[serde(default)]
    pub stft_normalized: bool,
    /// Upstream defaults differ: 2 for BS-RoFormer, 1 for Mel-Band RoFormer.
    pub mask_estimator_depth: Option<i64>,
    /// Hidden width of the mask-estimator MLPs, as a multiple of `dim` (default 4).
    #[serde(default = "default_mlp_expansion_factor")]
    pub mlp_expansion_factor: i64,
    /// Whether each axial layer's input also gets the outputs of all earlier layers added.
    #[serde(default)]
    pub skip_connection: bool,
    /// Mel-Band RoFormer: iSTFT to the input length instead of `hop × (frames − 1)`.
    #[serde(default)]
    pub match_input_audio_length: bool,
    /// Silence the DC bin of the separated spectrum (on unless the config turns it off).
    #[serde(default = "yes")]
    pub zero_dc: bool,
}

/// `training:` of the config; only the stem names.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TrainingConfig {
    /// Every instrument the model was trained on, in output order.
    #[serde(default)]
    pub instruments: Vec<String>,
    /// The one instrument the model outputs; None when it outputs all of `instruments`.
    pub target_instrument: Option<String>,
}

/// `inference:` of the config: how the overlap-add cuts up the track.
#[derive(Debug, Clone, Deserialize)]
pub struct InferenceConfig {
    /// Chunks separated per model call (default 1).
    #[serde(default = "one")]
    pub batch_size: i64,
    /// Chunks covering each sample: a chunk starts every `chunk_size / num_overlap` samples.
    #[serde(default = "default_num_overlap")]
    pub num_overlap: i64,
    /// Separate the mix scaled to zero mean and unit deviation, then scale the stems back.
    #[serde(default)]
    pub normalize: bool,
}

impl TrainingConfig {
    /// The stems the model outputs, in order: the target instrument alone when one is named,
    /// else every instrument (upstream `prefer_target_instrument`).
    pub fn stems(&self) -> Result<Vec<String>> {
        match &self.target_instrument {
            Some(target) => Ok(vec![target.clone()]),
            None if !self.instruments.is_empty() => Ok(self.instruments.clone()),
            None => bail!(
                "`training.instruments` is empty and no `training.target_instrument` is named"
            ),
        }
    }
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            batch_size: 1,
            num_overlap: default_num_overlap(),
            normalize: false,
        }
    }
}

/// The `model:` keys [`ModelConfig`] reads.
const READ_MODEL_KEYS: [&str; 21] = [
    "dim",
    "depth",
    "stereo",
    "num_stems",
    "time_transformer_depth",
    "freq_transformer_depth",
    "linear_transformer_depth",
    "freqs_per_bands",
    "num_bands",
    "sample_rate",
    "dim_head",
    "heads",
    "stft_n_fft",
    "stft_hop_length",
    "stft_win_length",
    "stft_normalized",
    "mask_estimator_depth",
    "mlp_expansion_factor",
    "skip_connection",
    "match_input_audio_length",
    "zero_dc",
];

/// `model:` keys that do not change what inference computes: training-only settings (dropouts,
/// the multi-resolution STFT loss, gradient checkpointing), the attention kernels (`flash_attn`,
/// `sage_attention`: the same attention), and `dim_freqs_in`, which MSST's constructors take and
/// never use (the bins come from the STFT).
pub const IGNORED_MODEL_KEYS: [&str; 11] = [
    "attn_dropout",
    "ff_dropout",
    "flash_attn",
    "sage_attention",
    "dim_freqs_in",
    "multi_stft_resolution_loss_weight",
    "multi_stft_resolutions_window_sizes",
    "multi_stft_hop_size",
    "multi_stft_normalized",
    "use_torch_checkpoint",
    "debug",
];

/// `model:` keys accepted at one value only, the network we implement; any other value is
/// refused naming the key: MSST's `use_pope` (PoPE position embeddings instead of rotary ones),
/// python-audio-separator's `use_shared_bias` (one learnt bias shared by every attention
/// projection), the feed-forward width and the STFT window.
pub const FIXED_MODEL_KEYS: [(&str, &str); 4] = [
    ("use_pope", "false"),
    ("use_shared_bias", "false"),
    ("ff_mult", "4"),
    ("stft_window_fn_name", "torch.hann_window"),
];

/// Fails naming the first `model:` key of `text` that is neither read, ignored nor at its fixed
/// value.
fn check_model_keys(text: &str) -> Result<()> {
    for (key, value) in model_entries(text)? {
        let key = key.as_str();
        if READ_MODEL_KEYS.contains(&key) || IGNORED_MODEL_KEYS.contains(&key) {
            continue;
        }
        if let Some((_, fixed)) = FIXED_MODEL_KEYS.iter().find(|(k, _)| *k == key) {
            let plain = match value {
                serde_yaml_ng::Value::Bool(b) => b.to_string(),
                serde_yaml_ng::Value::Number(n) => n.to_string(),
                serde_yaml_ng::Value::String(s) => s.clone(),
                other => format!("{other:?}"),
            };
            ensure!(
                plain == *fixed,
                "`model.{key}` is {plain}: this player implements only {fixed}"
            );
            continue;
        }
        if key.contains("conformer") || key.starts_with("conv_") {
            bail!("`model.{key}`: a Conformer model, which this player does not implement");
        }
        bail!("`model.{key}` is an option this player does not implement");
    }
    Ok(())
}

/// The `model:` section of a YAML config, key by key (none when it has no such section); a key
/// that is not a name is refused. Each architecture's config checks its keys from these.
pub(super) fn model_entries(text: &str) -> Result<Vec<(String, serde_yaml_ng::Value)>> {
    let root: serde_yaml_ng::Value = serde_yaml_ng::from_str(text)?;
    let Some(model) = root.get("model").and_then(|m| m.as_mapping()) else {
        return Ok(Vec::new());
    };
    model
        .iter()
        .map(|(key, value)| match key.as_str() {
            Some(name) => Ok((name.to_string(), value.clone())),
            None => bail!("`model:` has a key that is not a name: {key:?}"),
        })
        .collect()
}

/// Fails naming the first of `values` (a config entry's name and value) that is not positive.
pub(super) fn ensure_positive(values: &[(&str, i64)]) -> Result<()> {
    for (name, value) in values {
        ensure!(*value > 0, "`{name}` is {value}: it must be positive");
    }
    Ok(())
}

/// Fails naming the first of `values` that is negative.
pub(super) fn ensure_not_negative(values: &[(&str, i64)]) -> Result<()> {
    for (name, value) in values {
        ensure!(*value >= 0, "`{name}` is {value}: it must not be negative");
    }
    Ok(())
}

fn yes() -> bool {
    true
}
fn one() -> i64 {
    1
}
fn two() -> i64 {
    2
}
fn default_sample_rate() -> i64 {
    44100
}
fn default_num_bands() -> i64 {
    60
}
fn default_dim_head() -> i64 {
    64
}
fn default_heads() -> i64 {
    8
}
fn default_n_fft() -> i64 {
    2048
}
fn default_hop_length() -> i64 {
    512
}
fn default_mlp_expansion_factor() -> i64 {
    4
}
fn default_num_overlap() -> i64 {
    4
}

impl Config {
    /// Reads the YAML config at `path` and checks it as `from_yaml` does.
    pub fn from_path(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the config", path.display()))?;
        Self::from_yaml(&text)
            .with_context(|| format!("{}: not a usable RoFormer config", path.display()))
    }

    /// Parses a YAML config and checks it: sizes positive, depths not negative, STFT fits a chunk.
    pub fn from_yaml(text: &str) -> Result<Self> {
        let config: Config = serde_yaml_ng::from_str(text)?;
        check_model_keys(text)?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        let m = &self.model;
        ensure_positive(&[
            ("model.dim", m.dim),
            ("model.depth", m.depth),
            ("model.num_stems", m.num_stems),
            ("model.dim_head", m.dim_head),
            ("model.heads", m.heads),
            ("model.stft_n_fft", m.stft_n_fft),
            ("model.stft_hop_length", m.stft_hop_length),
            ("model.stft_win_length", m.stft_win_length),
            ("model.mlp_expansion_factor", m.mlp_expansion_factor),
            ("audio.chunk_size", self.audio.chunk_size),
            ("inference.batch_size", self.inference.batch_size),
            ("inference.num_overlap", self.inference.num_overlap),
        ])?;
        ensure_not_negative(&[
            ("model.time_transformer_depth", m.time_transformer_depth),
            ("model.freq_transformer_depth", m.freq_transformer_depth),
            ("model.linear_transformer_depth", m.linear_transformer_depth),
        ])?;
        ensure!(
            m.stft_win_length <= m.stft_n_fft,
            "`model.stft_win_length` {} is longer than `model.stft_n_fft` {}",
            m.stft_win_length,
            m.stft_n_fft
        );
        ensure!(
            self.audio.chunk_size > m.stft_n_fft / 2,
            "`audio.chunk_size` {} is too short for the STFT (n_fft {})",
            self.audio.chunk_size,
            m.stft_n_fft
        );
        ensure!(
            self.inference.num_overlap <= self.audio.chunk_size,
            "`inference.num_overlap` {} is larger than `audio.chunk_size` {}",
            self.inference.num_overlap,
            self.audio.chunk_size
        );
        Ok(())
    }

    /// The stems the model outputs, in order (see [`TrainingConfig::stems`]).
    pub fn stems(&self) -> Result<Vec<String>> {
        self.training.stems()
    }

    /// Channels the model takes: 2 when `model.stereo`, else 1.
    pub fn audio_channels(&self) -> i64 {
        if self.model.stereo { 2 } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS_CONFIG: &str = "\
audio:
  chunk_size: 352800
  dim_f: 1024
  n_fft: 2048
  num_channels: 2
model:
  dim: 512
  depth: 12
  stereo: true
  num_stems: 1
  time_transformer_depth: 1
  freq_transformer_depth: 1
  linear_transformer_depth: 0
  freqs_per_bands: !!python/tuple
  - 2
  - 4
  - 1019
  dim_head: 64
  heads: 8
  attn_dropout: 0.1
  flash_attn: true
  stft_hop_length: 441
  multi_stft_resolutions_window_sizes: !!python/tuple
  - 4096
  - 2048
  mask_estimator_depth: 2
  dim_freqs_in: 1025
  sage_attention: true
  use_pope: false
training:
  instruments:
  - vocals
  - other
  target_instrument: vocals
  lr: 1.0e-05
  augmentation_mix: true
inference:
  batch_size: 2
  dim_t: 801
  num_overlap: 2
";

    #[test]
    fn reads_python_tuples_and_the_keys_it_knows() {
        let config = Config::from_yaml(BS_CONFIG).unwrap();
        assert_eq!(config.model.freqs_per_bands, Some(vec![2, 4, 1019]));
        assert_eq!(config.model.dim, 512);
        assert_eq!(config.model.stft_hop_length, 441);
        assert_eq!(config.model.stft_n_fft, 2048);
        assert_eq!(config.model.mask_estimator_depth, Some(2));
        assert_eq!(config.audio.chunk_size, 352800);
        assert_eq!(
            (config.inference.batch_size, config.inference.num_overlap),
            (2, 2)
        );
        assert_eq!(config.stems().unwrap(), ["vocals"]);
        assert_eq!(config.audio_channels(), 2);
        assert!(!config.model.skip_connection);
        assert!(config.model.zero_dc);
    }

    #[test]
    fn every_instrument_is_a_stem_without_a_target() {
        let text = BS_CONFIG.replace("  target_instrument: vocals\n", "");
        assert_eq!(
            Config::from_yaml(&text).unwrap().stems().unwrap(),
            ["vocals", "other"]
        );
    }

    #[test]
    fn an_option_not_implemented_is_refused_by_name() {
        for (from, to, named) in [
            (
                "  use_pope: false\n",
                "  use_pope: true\n",
                "`model.use_pope` is true",
            ),
            (
                "  use_pope: false\n",
                "  use_shared_bias: true\n",
                "`model.use_shared_bias`",
            ),
            (
                "  use_pope: false\n",
                "  ff_mult: 2\n",
                "`model.ff_mult` is 2",
            ),
            (
                "  use_pope: false\n",
                "  time_conformer_depth: 1\n",
                "Conformer",
            ),
            (
                "  use_pope: false\n",
                "  some_future_option: [1, 2]\n",
                "`model.some_future_option`",
            ),
        ] {
            let text = BS_CONFIG.replace(from, to);
            let error = Config::from_yaml(&text).unwrap_err().to_string();
            assert!(error.contains(named), "{to}: {error}");
        }
        let fixed = BS_CONFIG.replace(
            "  use_pope: false\n",
            "  use_shared_bias: false\n  ff_mult: 4\n",
        );
        assert!(Config::from_yaml(&fixed).is_ok());
    }

    #[test]
    fn rejects_impossible_values() {
        let text = BS_CONFIG.replace("num_overlap: 2", "num_overlap: 0");
        let error = Config::from_yaml(&text).unwrap_err().to_string();
        assert!(error.contains("inference.num_overlap"), "{error}");
        assert!(Config::from_yaml("model:\n  dim: 4\n").is_err());
    }
}
