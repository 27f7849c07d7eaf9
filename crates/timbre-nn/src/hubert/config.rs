//! HuBERT's architecture settings under transformers' names (huggingface/transformers
//! `src/transformers/models/hubert/configuration_hubert.py`), read from a `config.json` or
//! translated from a fairseq checkpoint's `cfg.model` / `args` (facebookresearch/fairseq
//! `fairseq/models/hubert/hubert.py`, `HubertConfig`), then settled against the tensors.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use super::conv_layers::parse_conv_feature_layers;
use crate::checkpoint::Value;
use crate::weights::Weights;

/// Where the convolutional feature extractor normalises: transformers' `feat_extract_norm`
/// ("group": a group norm on the first convolution only, fairseq's extractor_mode "default";
/// "layer": a layer norm after every convolution, fairseq's "layer_norm").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatExtractNorm {
    /// A group norm on the first convolution only (fairseq's extractor_mode "default").
    Group,
    /// A layer norm after every convolution (fairseq's "layer_norm").
    Layer,
}

/// The settings HuBERT inference depends on; missing keys take transformers' defaults, which
/// are those of hubert_base / ContentVec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HubertConfig {
    /// Width of the transformer layers and of v2 features (fairseq encoder_embed_dim).
    pub hidden_size: i64,
    /// Transformer encoder layers (fairseq encoder_layers).
    pub num_hidden_layers: i64,
    /// Attention heads per layer; they must divide hidden_size (fairseq encoder_attention_heads).
    pub num_attention_heads: i64,
    /// Inner width of each layer's feed-forward block (fairseq encoder_ffn_embed_dim).
    pub intermediate_size: i64,
    /// Activation of the feed-forward blocks: gelu, gelu_new, relu or silu (fairseq activation_fn).
    pub hidden_act: String,
    /// Epsilon of the feature projection's and the encoder's layer norms.
    pub layer_norm_eps: f64,
    /// Where the convolutional feature extractor normalises (fairseq extractor_mode).
    pub feat_extract_norm: FeatExtractNorm,
    /// Activation of the feature-extractor convolutions and of the positional convolution.
    pub feat_extract_activation: String,
    /// Whether the feature projection layer-normalises the extractor's output first.
    pub feat_proj_layer_norm: bool,
    /// Output channels of each feature-extractor convolution (from fairseq conv_feature_layers).
    pub conv_dim: Vec<i64>,
    /// Kernel size of each feature-extractor convolution.
    pub conv_kernel: Vec<i64>,
    /// Stride of each feature-extractor convolution; their product is the samples per frame (320).
    pub conv_stride: Vec<i64>,
    /// Whether the feature-extractor convolutions have biases (fairseq conv_bias).
    pub conv_bias: bool,
    /// Kernel size of the convolutional positional embedding (fairseq conv_pos).
    pub num_conv_pos_embeddings: i64,
    /// Groups of the positional convolution (fairseq conv_pos_groups).
    pub num_conv_pos_embedding_groups: i64,
    /// Whether a batch norm precedes the positional convolution (instead of weight norm on it).
    pub conv_pos_batch_norm: bool,
    /// Pre-norm transformer layers rather than post-norm (fairseq layer_norm_first).
    pub do_stable_layer_norm: bool,
    /// The width of `final_proj` (RVC v1 features).
    pub classifier_proj_size: i64,
}

impl Default for HubertConfig {
    fn default() -> Self {
        Self {
            hidden_size: 768,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            hidden_act: "gelu".into(),
            layer_norm_eps: 1e-5,
            feat_extract_norm: FeatExtractNorm::Group,
            feat_extract_activation: "gelu".into(),
            feat_proj_layer_norm: true,
            conv_dim: vec![512; 7],
            conv_kernel: vec![10, 3, 3, 3, 3, 2, 2],
            conv_stride: vec![5, 2, 2, 2, 2, 2, 2],
            conv_bias: false,
            num_conv_pos_embeddings: 128,
            num_conv_pos_embedding_groups: 16,
            conv_pos_batch_norm: false,
            do_stable_layer_norm: false,
            classifier_proj_size: 256,
        }
    }
}

/// A config with the names of the fields its source stated (the rest are defaults, free to be
/// replaced by what the tensors show).
pub(crate) struct StatedConfig {
    pub config: HubertConfig,
    pub stated: HashSet<String>,
}

impl StatedConfig {
    /// A transformers `config.json`.
    pub fn from_json(text: &str, source: &Path) -> Result<Self> {
        let json: serde_json::Value = serde_json::from_str(text)
            .with_context(|| format!("{}: not valid JSON", source.display()))?;
        let Some(object) = json.as_object() else {
            bail!("{}: expected a JSON object", source.display())
        };
        let config = HubertConfig::deserialize(&json)
            .with_context(|| format!("{}: not a HuBERT config", source.display()))?;
        Ok(Self {
            config,
            stated: object.keys().cloned().collect(),
        })
    }

    /// A fairseq HuBERT's model settings: `cfg.model` (an omegaconf DictConfig or a plain dict)
    /// or the legacy `args` Namespace; keys it lacks keep fairseq's defaults.
    pub fn from_fairseq(model_cfg: &Value, source: &Path) -> Result<Self> {
        let mut config = HubertConfig::default();
        let mut stated = HashSet::new();
        let int = |key: &str| -> Result<Option<i64>> {
            match config_field(model_cfg, key) {
                None | Some(Value::None) => Ok(None),
                Some(v) => {
                    let n = v.as_i64().with_context(|| {
                        format!("{}: cfg `{key}` is not an integer", source.display())
                    })?;
                    Ok(Some(n))
                }
            }
        };
        let text = |key: &str| -> Result<Option<String>> {
            match config_field(model_cfg, key) {
                None | Some(Value::None) => Ok(None),
                Some(v) => {
                    let s = v.as_str().with_context(|| {
                        format!("{}: cfg `{key}` is not a string", source.display())
                    })?;
                    Ok(Some(s.to_string()))
                }
            }
        };
        let mut state = |name: &str| {
            stated.insert(name.to_string());
        };

        if let Some(n) = int("encoder_layers")? {
            config.num_hidden_layers = n;
            state("num_hidden_layers");
        }
        if let Some(n) = int("encoder_embed_dim")? {
            config.hidden_size = n;
            state("hidden_size");
        }
        if let Some(n) = int("encoder_ffn_embed_dim")? {
            config.intermediate_size = n;
            state("intermediate_size");
        }
        if let Some(n) = int("encoder_attention_heads")? {
            config.num_attention_heads = n;
            state("num_attention_heads");
        }
        if let Some(name) = text("activation_fn")? {
            config.hidden_act = name;
            state("hidden_act");
        }
        if let Some(layers) = text("conv_feature_layers")? {
            let layers = parse_conv_feature_layers(&layers).with_context(|| {
                format!(
                    "{}: cfg `conv_feature_layers` = {layers:?}",
                    source.display()
                )
            })?;
            config.conv_dim = layers.iter().map(|l| l.dim).collect();
            config.conv_kernel = layers.iter().map(|l| l.kernel).collect();
            config.conv_stride = layers.iter().map(|l| l.stride).collect();
            state("conv_dim");
            state("conv_kernel");
            state("conv_stride");
        }
        if let Some(mode) = text("extractor_mode")? {
            config.feat_extract_norm = match mode.as_str() {
                "default" => FeatExtractNorm::Group,
                "layer_norm" => FeatExtractNorm::Layer,
                other => bail!(
                    "{}: cfg `extractor_mode` is {other:?}, expected \"default\" or \"layer_norm\"",
                    source.display()
                ),
            };
            state("feat_extract_norm");
        }
        if let Some(bias) = int("conv_bias")? {
            config.conv_bias = bias != 0;
            state("conv_bias");
        }
        if let Some(n) = int("conv_pos")? {
            config.num_conv_pos_embeddings = n;
            state("num_conv_pos_embeddings");
        }
        if let Some(n) = int("conv_pos_groups")? {
            config.num_conv_pos_embedding_groups = n;
            state("num_conv_pos_embedding_groups");
        }
        if let Some(first) = int("layer_norm_first")? {
            config.do_stable_layer_norm = first != 0;
            state("do_stable_layer_norm");
        }
        // final_dim 0 means "the embedding width", and an untied projection is final_dim per
        // label set: only a plain positive final_dim says the width of final_proj.
        let untied = int("untie_final_proj")?.unwrap_or(0) != 0;
        if let Some(n) = int("final_dim")?.filter(|&n| n > 0 && !untied) {
            config.classifier_proj_size = n;
            state("classifier_proj_size");
        }
        Ok(Self { config, stated })
    }

    /// Fills every size the tensors (transformers names) determine, failing where the config
    /// stated something else; checks what they cannot determine for consistency.
    pub fn settle(mut self, weights: &Weights, config_source: &Path) -> Result<HubertConfig> {
        let tensors = weights.source().display().to_string();
        let config_source = config_source.display().to_string();
        let stated = &self.stated;
        let c = &mut self.config;
        let mismatch = |name: &str, said: &dyn std::fmt::Debug, found: &dyn std::fmt::Debug| {
            anyhow::anyhow!(
                "{config_source}: `{name}` is {said:?}, but the tensors of {tensors} give {found:?}"
            )
        };
        macro_rules! settle {
            ($field:ident, $found:expr) => {{
                let found = $found;
                if stated.contains(stringify!($field)) && c.$field != found {
                    return Err(mismatch(stringify!($field), &c.$field, &found));
                }
                c.$field = found;
            }};
        }

        let conv_shapes: Vec<Vec<i64>> = (0..)
            .map_while(|i| {
                weights.get_opt(&format!("feature_extractor.conv_layers.{i}.conv.weight"))
            })
            .map(|t| t.size())
            .collect();
        if conv_shapes.is_empty() || conv_shapes.iter().any(|s| s.len() != 3) {
            bail!(
                "{tensors}: no convolutional feature extractor (feature_extractor.conv_layers.0.conv.weight): not a HuBERT/ContentVec feature extractor"
            );
        }
        settle!(
            conv_dim,
            conv_shapes.iter().map(|s| s[0]).collect::<Vec<_>>()
        );
        settle!(
            conv_kernel,
            conv_shapes.iter().map(|s| s[2]).collect::<Vec<_>>()
        );
        if c.conv_stride.len() != conv_shapes.len() {
            bail!(
                "{config_source}: `conv_stride` lists {} strides, but {tensors} has {} convolutions",
                c.conv_stride.len(),
                conv_shapes.len()
            );
        }
        ensure!(
            c.conv_stride.iter().all(|&s| s > 0),
            "{config_source}: `conv_stride` {:?} must be positive",
            c.conv_stride
        );
        settle!(
            conv_bias,
            weights.contains("feature_extractor.conv_layers.0.conv.bias")
        );
        if conv_shapes.len() > 1 {
            let norm_on_second =
                weights.contains("feature_extractor.conv_layers.1.layer_norm.weight");
            settle!(
                feat_extract_norm,
                if norm_on_second {
                    FeatExtractNorm::Layer
                } else {
                    FeatExtractNorm::Group
                }
            );
        }

        settle!(
            hidden_size,
            leading_size(weights, "encoder.layer_norm.weight")?
        );
        settle!(
            feat_proj_layer_norm,
            weights.contains("feature_projection.layer_norm.weight")
        );
        let layers = (0..)
            .take_while(|i| {
                weights.contains(&format!("encoder.layers.{i}.attention.q_proj.weight"))
            })
            .count();
        ensure!(
            layers > 0,
            "{tensors}: no transformer layers (encoder.layers.0.attention.q_proj.weight)"
        );
        settle!(num_hidden_layers, layers as i64);
        settle!(
            intermediate_size,
            leading_size(
                weights,
                "encoder.layers.0.feed_forward.intermediate_dense.weight"
            )?
        );

        let pos_conv = weights.weight("encoder.pos_conv_embed.conv")?.size();
        ensure!(
            pos_conv.len() == 3 && pos_conv[1] > 0 && c.hidden_size % pos_conv[1] == 0,
            "{tensors}: encoder.pos_conv_embed.conv has shape {pos_conv:?}, expected [{h}, {h} / groups, kernel]",
            h = c.hidden_size
        );
        settle!(num_conv_pos_embeddings, pos_conv[2]);
        settle!(num_conv_pos_embedding_groups, c.hidden_size / pos_conv[1]);
        settle!(
            conv_pos_batch_norm,
            weights.contains("encoder.pos_conv_embed.batch_norm.running_mean")
        );
        if weights.contains("final_proj.weight") {
            settle!(
                classifier_proj_size,
                leading_size(weights, "final_proj.weight")?
            );
        }

        ensure!(
            c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads == 0,
            "{config_source}: {} attention heads do not divide hidden_size {}",
            c.num_attention_heads,
            c.hidden_size
        );
        Ok(self.config)
    }
}

impl HubertConfig {
    /// How many feature frames (50 per second for the standard stack) `samples` of audio give:
    /// each convolution keeps floor((length - kernel) / stride) + 1 steps.
    pub fn frame_count(&self, samples: i64) -> i64 {
        self.conv_kernel.iter().zip(&self.conv_stride).fold(
            samples,
            |length, (&kernel, &stride)| {
                if length < kernel {
                    0
                } else {
                    (length - kernel) / stride + 1
                }
            },
        )
    }

    /// The shortest audio that gives one frame.
    pub fn min_samples(&self) -> i64 {
        self.conv_kernel
            .iter()
            .zip(&self.conv_stride)
            .rev()
            .fold(1, |frames, (&kernel, &stride)| {
                (frames - 1) * stride + kernel
            })
    }
}

/// The first size of tensor `name` (a layer's output width).
fn leading_size(weights: &Weights, name: &str) -> Result<i64> {
    let shape = weights.shape(name)?;
    shape.first().copied().with_context(|| {
        format!(
            "{}: tensor `{name}` is a scalar",
            weights.source().display()
        )
    })
}

/// An entry of an omegaconf DictConfig (its `_content`, each value a node holding `_val`), of
/// a plain dict, or an attribute of an argparse Namespace.
pub(crate) fn config_field<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    let found = match node.get("_content") {
        Some(content) => content.get(key)?,
        None => node.get(key)?,
    };
    Some(found.get("_val").unwrap_or(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_frames_of_the_standard_stack() {
        let config = HubertConfig::default();
        assert_eq!(config.frame_count(64000), 199);
        assert_eq!(config.frame_count(16000), 49);
        assert_eq!(config.frame_count(400), 1);
        assert_eq!(config.frame_count(399), 0);
        assert_eq!(config.min_samples(), 400);
    }

    #[test]
    fn reads_a_transformers_config_with_defaults_for_missing_keys() {
        let json = r#"{"hidden_size": 64, "feat_extract_norm": "layer", "conv_dim": [32, 32], "model_type": "hubert"}"#;
        let parsed = StatedConfig::from_json(json, Path::new("config.json")).unwrap();
        assert_eq!(parsed.config.hidden_size, 64);
        assert_eq!(parsed.config.feat_extract_norm, FeatExtractNorm::Layer);
        assert_eq!(parsed.config.num_hidden_layers, 12);
        assert!(parsed.stated.contains("conv_dim") && !parsed.stated.contains("conv_stride"));

        let err = StatedConfig::from_json(
            r#"{"feat_extract_norm": "batch"}"#,
            Path::new("x/config.json"),
        )
        .err()
        .unwrap();
        assert!(format!("{err:#}").contains("x/config.json"), "{err:#}");
    }

    fn node(value: Value) -> Value {
        let state = Value::Dict(vec![(Value::Str("_val".into()), value)]);
        Value::Object {
            class: "omegaconf.nodes.AnyNode".into(),
            args: vec![],
            state: Some(Box::new(state)),
        }
    }

    fn dict_config(entries: Vec<(&str, Value)>) -> Value {
        let content = Value::Dict(
            entries
                .into_iter()
                .map(|(k, v)| (Value::Str(k.into()), v))
                .collect(),
        );
        let state = Value::Dict(vec![(Value::Str("_content".into()), content)]);
        Value::Object {
            class: "omegaconf.dictconfig.DictConfig".into(),
            args: vec![],
            state: Some(Box::new(state)),
        }
    }

    #[test]
    fn translates_a_fairseq_dictconfig() {
        let cfg = dict_config(vec![
            ("encoder_layers", node(Value::Int(6))),
            ("encoder_embed_dim", node(Value::Int(64))),
            ("extractor_mode", node(Value::Str("layer_norm".into()))),
            (
                "conv_feature_layers",
                node(Value::Str("[(32,10,5)] + [(32,3,2)] * 2".into())),
            ),
            ("layer_norm_first", node(Value::Bool(true))),
            ("conv_bias", node(Value::Bool(false))),
            ("final_dim", node(Value::Int(0))),
        ]);
        let parsed = StatedConfig::from_fairseq(&cfg, Path::new("m.pt")).unwrap();
        let c = &parsed.config;
        assert_eq!((c.num_hidden_layers, c.hidden_size), (6, 64));
        assert_eq!(c.feat_extract_norm, FeatExtractNorm::Layer);
        assert_eq!(
            (
                c.conv_dim.clone(),
                c.conv_kernel.clone(),
                c.conv_stride.clone()
            ),
            (vec![32; 3], vec![10, 3, 3], vec![5, 2, 2])
        );
        assert!(c.do_stable_layer_norm && !c.conv_bias);
        assert_eq!(c.num_attention_heads, 12, "a missing key keeps its default");
        assert!(
            !parsed.stated.contains("classifier_proj_size"),
            "final_dim 0 states no width"
        );
    }

    #[test]
    fn translates_a_fairseq_namespace() {
        let attrs = vec![
            ("encoder_attention_heads", Value::Int(4)),
            ("conv_pos", Value::Int(16)),
            ("conv_pos_groups", Value::Int(4)),
            ("final_dim", Value::Int(256)),
            ("extractor_mode", Value::Str("default".into())),
        ];
        let state = Value::Dict(
            attrs
                .into_iter()
                .map(|(k, v)| (Value::Str(k.into()), v))
                .collect(),
        );
        let args = Value::Object {
            class: "argparse.Namespace".into(),
            args: vec![],
            state: Some(Box::new(state)),
        };
        let parsed = StatedConfig::from_fairseq(&args, Path::new("m.pt")).unwrap();
        let c = &parsed.config;
        assert_eq!(
            (
                c.num_attention_heads,
                c.num_conv_pos_embeddings,
                c.num_conv_pos_embedding_groups
            ),
            (4, 16, 4)
        );
        assert_eq!(c.classifier_proj_size, 256);
        assert_eq!(c.feat_extract_norm, FeatExtractNorm::Group);

        let bad = dict_config(vec![("extractor_mode", node(Value::Str("batch".into())))]);
        let err = StatedConfig::from_fairseq(&bad, Path::new("m.pt"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("extractor_mode"), "{err}");
    }
}
