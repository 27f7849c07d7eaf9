//! The architectures one `Separator` runs: which one a YAML config describes (an MDX23C config
//! has U-Net keys a RoFormer's lacks, an SCNet config band keys), which one a checkpoint holds
//! (told from its tensor names), and the network of any, loaded once the two agree.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use tch::{Device, Tensor};

use super::config::Config;
use super::demix::DemixOptions;
use super::mdx23c::{Mdx23c, Mdx23cConfig};
use super::roformer::{Roformer, RoformerKind};
use super::scnet::{Scnet, ScnetConfig};
use crate::weights::Weights;

/// The model types of the upstream training code that we run (its `--model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    /// A BS- or Mel-Band RoFormer (`bs_roformer`, `mel_band_roformer`).
    Roformer(RoformerKind),
    /// MDX23C's TFC-TDF U-Net (`mdx23c`).
    Mdx23c,
    /// SCNet (`scnet`; not `scnet_unofficial`, `scnet_tran` or `scnet_masked`).
    Scnet,
}

impl FromStr for ModelType {
    type Err = anyhow::Error;

    /// The upstream `--model_type` names.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "mdx23c" => Ok(Self::Mdx23c),
            "scnet" => Ok(Self::Scnet),
            "scnet_unofficial" | "scnet_tran" | "scnet_masked" => bail!(
                "separation model type `{name}` is a different network from SCNet (`scnet`), \
                 which this player does not implement"
            ),
            _ => match name.parse() {
                Ok(kind) => Ok(Self::Roformer(kind)),
                Err(_) => bail!(
                    "unknown separation model type `{name}`: expected bs_roformer, \
                     mel_band_roformer, mdx23c or scnet"
                ),
            },
        }
    }
}

impl fmt::Display for ModelType {
    /// The architecture's name with its article, for messages: "an MDX23C".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Roformer(RoformerKind::BsRoformer) => "a BS-RoFormer",
            Self::Roformer(RoformerKind::MelBandRoformer) => "a Mel-Band RoFormer",
            Self::Mdx23c => "an MDX23C",
            Self::Scnet => "an SCNet",
        })
    }
}

impl ModelType {
    /// Tells the type from the checkpoint's tensors.
    pub fn detect(weights: &Weights) -> Result<Self> {
        Scnet::refuse_other_scnets(weights)?;
        if Scnet::is_checkpoint(weights) {
            return Ok(Self::Scnet);
        }
        if Mdx23c::is_checkpoint(weights) {
            return Ok(Self::Mdx23c);
        }
        RoformerKind::detect(weights)
            .map(Self::Roformer)
            .map_err(|_| {
                anyhow::anyhow!(
                    "{}: neither a BS-RoFormer, a Mel-Band RoFormer, an MDX23C nor an SCNet \
                     checkpoint",
                    weights.source().display()
                )
            })
    }
}

/// `model:` keys only an MDX23C config has: a config with any of them is read as one.
const MDX23C_ONLY_KEYS: [&str; 5] = [
    "num_scales",
    "num_subbands",
    "bottleneck_factor",
    "num_blocks_per_scale",
    "growth",
];

/// `model:` keys only an SCNet config has: a config with any of them is read as one.
const SCNET_ONLY_KEYS: [&str; 5] = [
    "band_SR",
    "band_stride",
    "band_kernel",
    "conv_depths",
    "num_dplayer",
];

/// `model:` keys of MSST's `scnet_unofficial`, a different network: refused by name.
const SCNET_UNOFFICIAL_KEYS: [&str; 5] = [
    "bandsplit_ratios",
    "downsample_strides",
    "n_conv_modules",
    "n_rnn_layers",
    "rnn_hidden_dim",
];

/// The architecture family whose keys a config's `model:` has.
enum Family {
    Roformer,
    Mdx23c,
    Scnet,
}

/// A separation model's YAML config, of any architecture.
#[derive(Debug, Clone)]
pub enum SeparationConfig {
    /// A BS- or Mel-Band RoFormer's.
    Roformer(Config),
    /// An MDX23C's.
    Mdx23c(Mdx23cConfig),
    /// An SCNet's.
    Scnet(ScnetConfig),
}

impl SeparationConfig {
    /// Reads the YAML config at `path` and checks it as `from_yaml` does.
    pub fn from_path(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the config", path.display()))?;
        let family = family_of(&text).with_context(|| path.display().to_string())?;
        let usable = |what: &str| format!("{}: not a usable {what} config", path.display());
        Ok(match family {
            Family::Mdx23c => {
                Self::Mdx23c(Mdx23cConfig::from_yaml(&text).with_context(|| usable("MDX23C"))?)
            }
            Family::Scnet => {
                Self::Scnet(ScnetConfig::from_yaml(&text).with_context(|| usable("SCNet"))?)
            }
            Family::Roformer => {
                Self::Roformer(Config::from_yaml(&text).with_context(|| usable("RoFormer"))?)
            }
        })
    }

    /// Parses a YAML config: an MDX23C or SCNet one when its `model:` has that architecture's
    /// keys, else a RoFormer one, each checked as its own `from_yaml` checks it. An
    /// `scnet_unofficial` config is refused by name.
    pub fn from_yaml(text: &str) -> Result<Self> {
        Ok(match family_of(text)? {
            Family::Mdx23c => Self::Mdx23c(Mdx23cConfig::from_yaml(text)?),
            Family::Scnet => Self::Scnet(ScnetConfig::from_yaml(text)?),
            Family::Roformer => Self::Roformer(Config::from_yaml(text)?),
        })
    }

    /// The architecture family the config describes, for messages: "an MDX23C".
    fn family(&self) -> &'static str {
        match self {
            Self::Roformer(_) => "a RoFormer",
            Self::Mdx23c(_) => "an MDX23C",
            Self::Scnet(_) => "an SCNet",
        }
    }

    /// The stems the model outputs, in order (upstream `prefer_target_instrument`).
    pub fn stems(&self) -> Result<Vec<String>> {
        match self {
            Self::Roformer(config) => config.stems(),
            Self::Mdx23c(config) => config.training.stems(),
            Self::Scnet(config) => config.training.stems(),
        }
    }

    /// The rate in Hz the model expects its input at.
    pub fn sample_rate(&self) -> i64 {
        match self {
            Self::Roformer(config) => config.audio.sample_rate,
            Self::Mdx23c(config) => config.audio.sample_rate,
            Self::Scnet(config) => config.audio.sample_rate,
        }
    }

    /// Samples per model call in the overlap-add.
    pub fn chunk_size(&self) -> i64 {
        match self {
            Self::Roformer(config) => config.audio.chunk_size,
            Self::Mdx23c(config) => config.chunk_size(),
            Self::Scnet(config) => config.chunk_size(),
        }
    }

    /// How `demix` cuts a mix into chunks for this model.
    pub fn demix_options(&self) -> DemixOptions {
        let (num_overlap, batch_size) = match self {
            Self::Roformer(c) => (c.inference.num_overlap, c.inference.batch_size),
            Self::Mdx23c(c) => (c.inference.num_overlap, c.inference.batch_size),
            Self::Scnet(c) => (c.inference.num_overlap, c.inference.batch_size),
        };
        DemixOptions {
            chunk_size: self.chunk_size(),
            num_overlap,
            batch_size,
        }
    }

    /// Whether the mix is separated normalised (`inference.normalize`).
    pub fn normalize(&self) -> bool {
        match self {
            Self::Roformer(config) => config.inference.normalize,
            Self::Mdx23c(config) => config.inference.normalize,
            Self::Scnet(config) => config.inference.normalize,
        }
    }
}

/// The family whose keys the `model:` of YAML `text` has: MDX23C or SCNet when it has a key only
/// their configs have, else RoFormer (text that is not YAML too: the RoFormer parser then says
/// what is wrong with it, as it always has). An `scnet_unofficial` config fails naming it.
fn family_of(text: &str) -> Result<Family> {
    let Ok(root) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return Ok(Family::Roformer);
    };
    let keys: Vec<&str> = root
        .get("model")
        .and_then(|model| model.as_mapping())
        .map(|model| model.keys().filter_map(|key| key.as_str()).collect())
        .unwrap_or_default();
    let has = |names: &[&str]| keys.iter().find(|key| names.contains(key)).copied();
    if let Some(key) = has(&SCNET_UNOFFICIAL_KEYS) {
        bail!(
            "`model.{key}` makes this a config of MSST's scnet_unofficial, a different network \
             from SCNet (`--model_type scnet`) that this player does not implement"
        );
    }
    Ok(if has(&MDX23C_ONLY_KEYS).is_some() {
        Family::Mdx23c
    } else if has(&SCNET_ONLY_KEYS).is_some() {
        Family::Scnet
    } else {
        Family::Roformer
    })
}

/// A loaded separation network of any architecture.
pub enum Network {
    /// A BS- or Mel-Band RoFormer.
    Roformer(Roformer),
    /// An MDX23C.
    Mdx23c(Mdx23c),
    /// An SCNet.
    Scnet(Scnet),
}

impl Network {
    /// Builds `kind` as `config` describes it from `weights`, every tensor checked against the
    /// config; a config of another architecture than `kind` fails naming both files.
    pub fn load(
        kind: ModelType,
        config: &SeparationConfig,
        weights: &Weights,
        config_path: &Path,
    ) -> Result<Self> {
        match (kind, config) {
            (ModelType::Roformer(kind), SeparationConfig::Roformer(config)) => Ok(Self::Roformer(
                Roformer::load(kind, &config.model, weights, config_path)?,
            )),
            (ModelType::Mdx23c, SeparationConfig::Mdx23c(config)) => {
                Ok(Self::Mdx23c(Mdx23c::load(config, weights, config_path)?))
            }
            (ModelType::Scnet, SeparationConfig::Scnet(config)) => {
                Ok(Self::Scnet(Scnet::load(config, weights, config_path)?))
            }
            (kind, config) => bail!(
                "{} is {} config, but {} holds {kind}: the two files belong to different models",
                config_path.display(),
                config.family(),
                weights.source().display()
            ),
        }
    }

    /// Which architecture this is.
    pub fn model_type(&self) -> ModelType {
        match self {
            Self::Roformer(model) => ModelType::Roformer(model.kind()),
            Self::Mdx23c(_) => ModelType::Mdx23c,
            Self::Scnet(_) => ModelType::Scnet,
        }
    }

    /// Channels the model takes: 2 for a stereo model, else 1.
    pub fn audio_channels(&self) -> i64 {
        match self {
            Self::Roformer(model) => model.audio_channels(),
            Self::Mdx23c(model) => model.audio_channels(),
            Self::Scnet(model) => model.audio_channels(),
        }
    }

    /// Number of stems it estimates.
    pub fn num_stems(&self) -> i64 {
        match self {
            Self::Roformer(model) => model.num_stems(),
            Self::Mdx23c(model) => model.num_stems(),
            Self::Scnet(model) => model.num_stems(),
        }
    }

    /// Device the weights live on and the network runs on.
    pub fn device(&self) -> Device {
        match self {
            Self::Roformer(model) => model.device(),
            Self::Mdx23c(model) => model.device(),
            Self::Scnet(model) => model.device(),
        }
    }

    /// Separates `audio` `[batch, channels, samples]` into `[batch, stems, channels, samples']`
    /// on the model's device (see each architecture's `forward` for `samples'`).
    pub fn forward(&self, audio: &Tensor) -> Result<Tensor> {
        match self {
            Self::Roformer(model) => model.forward(audio),
            Self::Mdx23c(model) => model.forward(audio),
            Self::Scnet(model) => model.forward(audio),
        }
    }
}

#[cfg(test)]
#[path = "architecture_tests.rs"]
mod tests;
