//! The YAML config of an MDX23C separation model, as ZFTurbo/Music-Source-Separation-Training
//! writes it (`configs/config_vocals_mdx23c.yaml`, `config_musdb18_mdx23c.yaml`): field names are
//! the upstream ones. Every `model:` key is read and any other is refused by name, so a config
//! option we do not implement never plays silently wrong; the values are checked against what
//! the network can be built from, as upstream's constructor and forward would find out.

use crate::separation::config::{ensure_not_negative, ensure_positive, model_entries};
use anyhow::{Result, bail, ensure};
use serde::Deserialize;

use crate::separation::config::TrainingConfig;

/// An MDX23C model's YAML config: its `audio`, `model`, `training` and `inference` sections.
#[derive(Debug, Clone, Deserialize)]
pub struct Mdx23cConfig {
    /// `audio:`: the STFT and the chunk length.
    pub audio: Mdx23cAudio,
    /// `model:`: the U-Net's hyperparameters.
    pub model: Mdx23cModel,
    /// `training:`: the instrument names that fix the stems and their order.
    #[serde(default)]
    pub training: TrainingConfig,
    /// `inference:`: overlap-add settings (upstream defaults if absent).
    #[serde(default)]
    pub inference: Mdx23cInference,
}

/// `audio:` of the config; only the keys separation needs (`dim_t` and `min_mean_abs` serve
/// training).
#[derive(Debug, Clone, Deserialize)]
pub struct Mdx23cAudio {
    /// Samples per model call in the overlap-add, unless `inference.chunk_size` is set.
    pub chunk_size: i64,
    /// STFT bins the model sees, the lowest ones; the rest come back silent.
    pub dim_f: i64,
    /// STFT hop in samples.
    pub hop_length: i64,
    /// FFT size in samples, also the length of the periodic Hann window.
    pub n_fft: i64,
    /// Channels of the audio the model takes.
    pub num_channels: i64,
    /// Rate in Hz the model expects its input at (default 44100).
    #[serde(default = "default_sample_rate")]
    pub sample_rate: i64,
}

/// `model:` of the config (upstream `TFC_TDF_net`).
#[derive(Debug, Clone, Deserialize)]
pub struct Mdx23cModel {
    /// Activation: `gelu`, `relu` or `elu<alpha>` (upstream `get_act`).
    pub act: String,
    /// How much narrower the bottleneck of each TDF block is than its frequency axis.
    pub bottleneck_factor: i64,
    /// Channels added at each downscaling.
    pub growth: i64,
    /// Normalisation: `BatchNorm`, `InstanceNorm`, `GroupNorm<groups>`, and any other name none
    /// (upstream `get_norm`).
    pub norm: String,
    /// TFC-TDF blocks at each scale.
    pub num_blocks_per_scale: i64,
    /// Channels at the first scale.
    pub num_channels: i64,
    /// Downscalings of the U-Net.
    pub num_scales: i64,
    /// Frequency subbands the spectrum is folded into as channels.
    pub num_subbands: i64,
    /// `[time, frequency]` factor of each downscaling, its kernel and stride.
    pub scale: Vec<i64>,
}

/// `inference:` of the config: how the overlap-add cuts up the track.
#[derive(Debug, Clone, Deserialize)]
pub struct Mdx23cInference {
    /// Chunks separated per model call (default 1).
    #[serde(default = "one")]
    pub batch_size: i64,
    /// Chunks covering each sample: a chunk starts every `chunk_size / num_overlap` samples.
    #[serde(default = "default_num_overlap")]
    pub num_overlap: i64,
    /// Separate the mix scaled to zero mean and unit deviation, then scale the stems back.
    #[serde(default)]
    pub normalize: bool,
    /// Samples per model call, in place of `audio.chunk_size` (upstream `demix` prefers it).
    pub chunk_size: Option<i64>,
}

impl Default for Mdx23cInference {
    fn default() -> Self {
        Self {
            batch_size: 1,
            num_overlap: default_num_overlap(),
            normalize: false,
            chunk_size: None,
        }
    }
}

/// The normalisation before each activation (upstream `get_norm`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Norm {
    /// `nn.BatchNorm2d`, with its running statistics.
    Batch,
    /// `nn.InstanceNorm2d(affine=True)`.
    Instance,
    /// `nn.GroupNorm` with this many groups.
    Group(i64),
    /// `nn.Identity`: upstream's fallback for any other name.
    Identity,
}

/// The activation (upstream `get_act`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Act {
    /// `nn.GELU()`, the exact (erf) form.
    Gelu,
    /// `nn.ReLU()`.
    Relu,
    /// `nn.ELU(alpha)`.
    Elu(f64),
}

/// The `model:` keys [`Mdx23cModel`] reads; any other is refused.
pub const MODEL_KEYS: [&str; 9] = [
    "act",
    "bottleneck_factor",
    "growth",
    "norm",
    "num_blocks_per_scale",
    "num_channels",
    "num_scales",
    "num_subbands",
    "scale",
];

fn one() -> i64 {
    1
}
fn default_num_overlap() -> i64 {
    4
}
fn default_sample_rate() -> i64 {
    44100
}

impl Mdx23cModel {
    /// The normalisation `norm` names.
    pub fn norm(&self) -> Result<Norm> {
        let name = self.norm.as_str();
        Ok(match name {
            "BatchNorm" => Norm::Batch,
            "InstanceNorm" => Norm::Instance,
            _ if name.contains("GroupNorm") => {
                let groups = name.replace("GroupNorm", "");
                match groups.trim().parse::<i64>() {
                    Ok(groups) if groups > 0 => Norm::Group(groups),
                    _ => bail!(
                        "`model.norm` is {name}: GroupNorm needs a positive group count, as GroupNorm8"
                    ),
                }
            }
            _ => Norm::Identity,
        })
    }

    /// The activation `act` names.
    pub fn act(&self) -> Result<Act> {
        let name = self.act.as_str();
        Ok(match name {
            "gelu" => Act::Gelu,
            "relu" => Act::Relu,
            _ if name.starts_with("elu") => match name.replace("elu", "").trim().parse::<f64>() {
                Ok(alpha) if alpha.is_finite() => Act::Elu(alpha),
                _ => bail!("`model.act` is {name}: elu needs its alpha, as elu1.0"),
            },
            _ => bail!("`model.act` is {name}: this player implements gelu, relu and elu<alpha>"),
        })
    }

    /// `scale` as `[time, frequency]`.
    pub fn scales(&self) -> Result<[i64; 2]> {
        match self.scale[..] {
            [time, frequency] if time > 0 && frequency > 0 => Ok([time, frequency]),
            _ => bail!(
                "`model.scale` is {:?}: it must be two positive factors, [time, frequency]",
                self.scale
            ),
        }
    }

    /// Channels at scale `level` (0 = the first; `num_scales` = the bottleneck).
    pub fn channels_at(&self, level: i64) -> i64 {
        self.num_channels + level * self.growth
    }
}

impl Mdx23cConfig {
    /// Parses a YAML config and checks it: every `model:` key known, the sizes such that the
    /// network can be built and its U-Net's skips line up for a chunk.
    pub fn from_yaml(text: &str) -> Result<Self> {
        let config: Self = serde_yaml_ng::from_str(text)?;
        check_model_keys(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Samples per model call: `inference.chunk_size`, else `audio.chunk_size`.
    pub fn chunk_size(&self) -> i64 {
        self.inference.chunk_size.unwrap_or(self.audio.chunk_size)
    }

    fn validate(&self) -> Result<()> {
        let (a, m) = (&self.audio, &self.model);
        ensure_positive(&[
            ("audio.chunk_size", self.chunk_size()),
            ("audio.dim_f", a.dim_f),
            ("audio.hop_length", a.hop_length),
            ("audio.n_fft", a.n_fft),
            ("model.bottleneck_factor", m.bottleneck_factor),
            ("model.num_channels", m.num_channels),
            ("model.num_subbands", m.num_subbands),
            ("inference.batch_size", self.inference.batch_size),
            ("inference.num_overlap", self.inference.num_overlap),
        ])?;
        ensure_not_negative(&[
            ("model.growth", m.growth),
            ("model.num_blocks_per_scale", m.num_blocks_per_scale),
            ("model.num_scales", m.num_scales),
        ])?;
        ensure!(
            a.num_channels == 2,
            "`audio.num_channels` is {}: upstream's MDX23C separates stereo audio only",
            a.num_channels
        );
        ensure!(
            a.dim_f <= a.n_fft / 2 + 1,
            "`audio.dim_f` {} is more than the {} bins of `audio.n_fft` {}",
            a.dim_f,
            a.n_fft / 2 + 1,
            a.n_fft
        );
        m.act()?;
        if let Norm::Group(groups) = m.norm()? {
            for level in 0..=m.num_scales {
                let channels = m.channels_at(level);
                ensure!(
                    channels % groups == 0,
                    "`model.norm` {}: {channels} channels at scale {level} do not split into {groups} groups",
                    m.norm
                );
            }
        }
        self.validate_shapes()
    }

    /// The U-Net halves (by `scale`) both axes `num_scales` times and doubles them back: each
    /// must divide evenly for the skips to line up.
    fn validate_shapes(&self) -> Result<()> {
        let (a, m) = (&self.audio, &self.model);
        let [time, frequency] = m.scales()?;
        let scales = u32::try_from(m.num_scales)?;
        ensure!(
            a.dim_f % m.num_subbands == 0,
            "`audio.dim_f` {} does not split into `model.num_subbands` {}",
            a.dim_f,
            m.num_subbands
        );
        let bins = a.dim_f / m.num_subbands;
        let folds = frequency.checked_pow(scales).unwrap_or(i64::MAX);
        ensure!(
            bins % folds == 0 && bins / folds >= m.bottleneck_factor,
            "`audio.dim_f` {} over {} subbands is {bins} bins, which {} downscalings by {frequency} \
             (`model.scale`) must divide into at least `model.bottleneck_factor` {}",
            a.dim_f,
            m.num_subbands,
            m.num_scales,
            m.bottleneck_factor
        );
        let chunk_size = self.chunk_size();
        ensure!(
            chunk_size % a.hop_length == 0 && chunk_size > a.n_fft / 2,
            "the chunk of {chunk_size} samples must be a multiple of `audio.hop_length` {} and \
             longer than half `audio.n_fft` {}",
            a.hop_length,
            a.n_fft
        );
        let frames = chunk_size / a.hop_length + 1;
        let folds = time.checked_pow(scales).unwrap_or(i64::MAX);
        ensure!(
            frames % folds == 0,
            "the chunk of {chunk_size} samples is {frames} STFT frames, which {} downscalings by \
             {time} (`model.scale`) do not divide",
            m.num_scales
        );
        ensure!(
            self.inference.num_overlap <= chunk_size,
            "`inference.num_overlap` {} is larger than the chunk of {chunk_size} samples",
            self.inference.num_overlap
        );
        Ok(())
    }
}

/// Fails naming the first `model:` key of `text` that [`MODEL_KEYS`] lacks.
fn check_model_keys(text: &str) -> Result<()> {
    for (key, _) in model_entries(text)? {
        let key = key.as_str();
        ensure!(
            MODEL_KEYS.contains(&key),
            "`model.{key}` is an option this player's MDX23C does not implement"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `configs/config_vocals_mdx23c.yaml`, shortened.
    const VOCALS: &str = "\
audio:
  chunk_size: 261120
  dim_f: 4096
  dim_t: 256
  hop_length: 1024
  n_fft: 8192
  num_channels: 2
  sample_rate: 44100
  min_mean_abs: 0.001
model:
  act: gelu
  bottleneck_factor: 4
  growth: 128
  norm: InstanceNorm
  num_blocks_per_scale: 2
  num_channels: 128
  num_scales: 5
  num_subbands: 4
  scale:
  - 2
  - 2
training:
  batch_size: 6
  instruments:
  - vocals
  - other
  target_instrument: null
  use_amp: true
inference:
  batch_size: 1
  dim_t: 256
  num_overlap: 4
";

    #[test]
    fn reads_upstreams_vocals_config() {
        let config = Mdx23cConfig::from_yaml(VOCALS).unwrap();
        assert_eq!(config.chunk_size(), 261120);
        assert_eq!(config.model.norm().unwrap(), Norm::Instance);
        assert_eq!(config.model.act().unwrap(), Act::Gelu);
        assert_eq!(config.model.scales().unwrap(), [2, 2]);
        assert_eq!(config.training.stems().unwrap(), ["vocals", "other"]);
        let text = VOCALS.replace(
            "  dim_t: 256\n  num_overlap",
            "  chunk_size: 130048\n  num_overlap",
        );
        assert_eq!(Mdx23cConfig::from_yaml(&text).unwrap().chunk_size(), 130048);
    }

    #[test]
    fn reads_every_norm_and_activation_upstream_builds() {
        for (norm, expected) in [
            ("BatchNorm", Norm::Batch),
            ("GroupNorm8", Norm::Group(8)),
            ("none", Norm::Identity),
        ] {
            let text = VOCALS.replace("norm: InstanceNorm", &format!("norm: {norm}"));
            let config = Mdx23cConfig::from_yaml(&text).unwrap();
            assert_eq!(config.model.norm().unwrap(), expected);
        }
        for (act, expected) in [("relu", Act::Relu), ("elu0.5", Act::Elu(0.5))] {
            let text = VOCALS.replace("act: gelu", &format!("act: {act}"));
            assert_eq!(
                Mdx23cConfig::from_yaml(&text).unwrap().model.act().unwrap(),
                expected
            );
        }
    }

    #[test]
    fn refuses_what_it_cannot_build_by_name() {
        for (from, to, named) in [
            ("act: gelu", "act: swish", "`model.act` is swish"),
            ("act: gelu", "act: elu", "`model.act` is elu"),
            (
                "norm: InstanceNorm",
                "norm: GroupNorm",
                "`model.norm` is GroupNorm",
            ),
            ("norm: InstanceNorm", "norm: GroupNorm3", "groups"),
            (
                "  num_subbands: 4\n",
                "  num_subbands: 4\n  dim: 8\n",
                "`model.dim`",
            ),
            ("num_channels: 2", "num_channels: 1", "`audio.num_channels`"),
            ("chunk_size: 261120", "chunk_size: 262144", "STFT frames"),
            (
                "num_scales: 5",
                "num_scales: 9",
                "`model.bottleneck_factor`",
            ),
            ("  - 2\n  - 2\n", "  - 2\n", "`model.scale`"),
            ("dim_f: 4096", "dim_f: 8192", "`audio.dim_f`"),
        ] {
            let text = VOCALS.replace(from, to);
            let error = Mdx23cConfig::from_yaml(&text).unwrap_err().to_string();
            assert!(error.contains(named), "{to}: {error}");
        }
    }
}
