//! The architectures one `Separator` runs: which one a YAML config describes (an MDX23C config
//! has U-Net keys a RoFormer's lacks), which one a checkpoint holds (told from its tensor names),
//! and the network of either, loaded once the two agree.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use tch::{Device, Tensor};

use super::config::Config;
use super::demix::DemixOptions;
use super::mdx23c::{Mdx23c, Mdx23cConfig};
use super::roformer::{Roformer, RoformerKind};
use crate::weights::Weights;

/// The model types of the upstream training code that we run (its `--model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    /// A BS- or Mel-Band RoFormer (`bs_roformer`, `mel_band_roformer`).
    Roformer(RoformerKind),
    /// MDX23C's TFC-TDF U-Net (`mdx23c`).
    Mdx23c,
}

impl FromStr for ModelType {
    type Err = anyhow::Error;

    /// The upstream `--model_type` names.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "mdx23c" => Ok(Self::Mdx23c),
            _ => match name.parse() {
                Ok(kind) => Ok(Self::Roformer(kind)),
                Err(_) => bail!(
                    "unknown separation model type `{name}`: expected bs_roformer, \
                     mel_band_roformer or mdx23c"
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
        })
    }
}

impl ModelType {
    /// Tells the type from the checkpoint's tensors.
    pub fn detect(weights: &Weights) -> Result<Self> {
        if Mdx23c::is_checkpoint(weights) {
            return Ok(Self::Mdx23c);
        }
        RoformerKind::detect(weights)
            .map(Self::Roformer)
            .map_err(|_| {
                anyhow::anyhow!(
                    "{}: neither a BS-RoFormer, a Mel-Band RoFormer nor an MDX23C checkpoint",
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

/// A separation model's YAML config, of either architecture.
#[derive(Debug, Clone)]
pub enum SeparationConfig {
    /// A BS- or Mel-Band RoFormer's.
    Roformer(Config),
    /// An MDX23C's.
    Mdx23c(Mdx23cConfig),
}

impl SeparationConfig {
    /// Reads the YAML config at `path` and checks it as `from_yaml` does.
    pub fn from_path(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the config", path.display()))?;
        if describes_mdx23c(&text) {
            let config = Mdx23cConfig::from_yaml(&text)
                .with_context(|| format!("{}: not a usable MDX23C config", path.display()))?;
            Ok(Self::Mdx23c(config))
        } else {
            let config = Config::from_yaml(&text)
                .with_context(|| format!("{}: not a usable RoFormer config", path.display()))?;
            Ok(Self::Roformer(config))
        }
    }

    /// Parses a YAML config: an MDX23C one when its `model:` has MDX23C keys, else a RoFormer
    /// one, each checked as its own `from_yaml` checks it.
    pub fn from_yaml(text: &str) -> Result<Self> {
        if describes_mdx23c(text) {
            Ok(Self::Mdx23c(Mdx23cConfig::from_yaml(text)?))
        } else {
            Ok(Self::Roformer(Config::from_yaml(text)?))
        }
    }

    /// The architecture family the config describes, for messages: "an MDX23C".
    fn family(&self) -> &'static str {
        match self {
            Self::Roformer(_) => "a RoFormer",
            Self::Mdx23c(_) => "an MDX23C",
        }
    }

    /// The stems the model outputs, in order (upstream `prefer_target_instrument`).
    pub fn stems(&self) -> Result<Vec<String>> {
        match self {
            Self::Roformer(config) => config.stems(),
            Self::Mdx23c(config) => config.training.stems(),
        }
    }

    /// The rate in Hz the model expects its input at.
    pub fn sample_rate(&self) -> i64 {
        match self {
            Self::Roformer(config) => config.audio.sample_rate,
            Self::Mdx23c(config) => config.audio.sample_rate,
        }
    }

    /// Samples per model call in the overlap-add.
    pub fn chunk_size(&self) -> i64 {
        match self {
            Self::Roformer(config) => config.audio.chunk_size,
            Self::Mdx23c(config) => config.chunk_size(),
        }
    }

    /// How `demix` cuts a mix into chunks for this model.
    pub fn demix_options(&self) -> DemixOptions {
        let (num_overlap, batch_size) = match self {
            Self::Roformer(c) => (c.inference.num_overlap, c.inference.batch_size),
            Self::Mdx23c(c) => (c.inference.num_overlap, c.inference.batch_size),
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
        }
    }
}

/// Whether `text` is YAML whose `model:` has a key only MDX23C configs have. Text that is not
/// YAML is not: the RoFormer parser then says what is wrong with it, as it always has.
fn describes_mdx23c(text: &str) -> bool {
    let Ok(root) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return false;
    };
    root.get("model")
        .and_then(|model| model.as_mapping())
        .is_some_and(|model| {
            model
                .keys()
                .filter_map(|key| key.as_str())
                .any(|key| MDX23C_ONLY_KEYS.contains(&key))
        })
}

/// A loaded separation network of either architecture.
pub enum Network {
    /// A BS- or Mel-Band RoFormer.
    Roformer(Roformer),
    /// An MDX23C.
    Mdx23c(Mdx23c),
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
        }
    }

    /// Channels the model takes: 2 for a stereo model, else 1.
    pub fn audio_channels(&self) -> i64 {
        match self {
            Self::Roformer(model) => model.audio_channels(),
            Self::Mdx23c(model) => model.audio_channels(),
        }
    }

    /// Number of stems it estimates.
    pub fn num_stems(&self) -> i64 {
        match self {
            Self::Roformer(model) => model.num_stems(),
            Self::Mdx23c(model) => model.num_stems(),
        }
    }

    /// Device the weights live on and the network runs on.
    pub fn device(&self) -> Device {
        match self {
            Self::Roformer(model) => model.device(),
            Self::Mdx23c(model) => model.device(),
        }
    }

    /// Separates `audio` `[batch, channels, samples]` into `[batch, stems, channels, samples']`
    /// on the model's device (see each architecture's `forward` for `samples'`).
    pub fn forward(&self, audio: &Tensor) -> Result<Tensor> {
        match self {
            Self::Roformer(model) => model.forward(audio),
            Self::Mdx23c(model) => model.forward(audio),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const TINY_MDX23C: &str = "
audio: {chunk_size: 1984, dim_f: 128, hop_length: 64, n_fft: 256, num_channels: 2}
model:
  act: gelu
  bottleneck_factor: 2
  growth: 4
  norm: InstanceNorm
  num_blocks_per_scale: 1
  num_channels: 4
  num_scales: 2
  num_subbands: 2
  scale: [2, 2]
training: {instruments: [vocals, other], target_instrument: vocals}
inference: {batch_size: 2, num_overlap: 4}
";

    #[test]
    fn tells_the_architecture_from_the_config_keys() {
        let config = SeparationConfig::from_yaml(TINY_MDX23C).unwrap();
        assert!(matches!(config, SeparationConfig::Mdx23c(_)));
        assert_eq!(config.stems().unwrap(), ["vocals"]);
        let options = config.demix_options();
        assert_eq!((options.chunk_size, options.batch_size), (1984, 2));
        let roformer = "model:\n  dim: 4\n  depth: 1\naudio: {chunk_size: 4096}\n\
                        training: {instruments: [vocals]}\n";
        let config = SeparationConfig::from_yaml(roformer).unwrap();
        assert!(matches!(config, SeparationConfig::Roformer(_)));
        // A RoFormer key in an MDX23C config is refused by name, as any unknown key.
        let text = TINY_MDX23C.replace("  growth: 4\n", "  growth: 4\n  depth: 2\n");
        let error = SeparationConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(error.contains("`model.depth`"), "{error}");
    }

    #[test]
    fn tells_the_architecture_from_the_checkpoint_and_refuses_a_mismatch() {
        let weights = |names: &[&str]| {
            let tensors = names
                .iter()
                .map(|n| (n.to_string(), Tensor::ones([1], tch::kind::FLOAT_CPU)))
                .collect::<HashMap<_, _>>();
            Weights::new(tensors, "model.ckpt")
        };
        let mdx = weights(&["first_conv.weight", "final_conv.0.weight"]);
        assert_eq!(ModelType::detect(&mdx).unwrap(), ModelType::Mdx23c);
        let bs = weights(&["final_norm.gamma"]);
        let kind = ModelType::detect(&bs).unwrap();
        assert_eq!(kind, ModelType::Roformer(RoformerKind::BsRoformer));
        let error = ModelType::detect(&weights(&["conv.weight"])).unwrap_err();
        assert!(error.to_string().contains("MDX23C"), "{error}");

        let config = SeparationConfig::from_yaml(TINY_MDX23C).unwrap();
        let error = Network::load(kind, &config, &bs, Path::new("tiny.yaml"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("tiny.yaml is an MDX23C config")
                && error.contains("model.ckpt holds a BS-RoFormer"),
            "{error}"
        );
        assert_eq!("mdx23c".parse::<ModelType>().unwrap(), ModelType::Mdx23c);
        assert!("htdemucs".parse::<ModelType>().is_err());
    }
}
