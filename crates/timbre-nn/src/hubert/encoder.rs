//! HuBERT's layers under transformers' names (huggingface/transformers
//! `src/transformers/models/hubert/modeling_hubert.py`: the feature encoder, feature
//! projection, positional convolution, attention and the post-/pre-norm encoder layers).
//! Every tensor's shape is checked at load, so a malformed file fails there, not in forward.

use anyhow::{Result, bail, ensure};
use tch::Tensor;

use super::config::{FeatExtractNorm, HubertConfig};
use crate::layers::{BatchNorm, Conv1d, ConvOptions, GroupNorm, LayerNorm, Linear};
use crate::weights::Weights;

/// transformers' ACT2FN entries that HuBERT checkpoints use (fairseq's `activation_fn` names too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    Gelu,
    GeluTanh,
    Relu,
    Silu,
}

impl Activation {
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "gelu" => Self::Gelu,
            "gelu_new" | "gelu_fast" | "gelu_accurate" | "gelu_pytorch_tanh" => Self::GeluTanh,
            "relu" => Self::Relu,
            "silu" | "swish" => Self::Silu,
            other => bail!("activation {other:?} is not supported (gelu, gelu_new, relu, silu)"),
        })
    }

    pub fn forward(self, x: &Tensor) -> Tensor {
        match self {
            Self::Gelu => x.gelu("none"),
            Self::GeluTanh => x.gelu("tanh"),
            Self::Relu => x.relu(),
            Self::Silu => x.silu(),
        }
    }
}

fn check_shape(w: &Weights, name: &str, shape: &[i64]) -> Result<()> {
    w.get_shaped(name, shape).map(drop)
}

pub(crate) fn linear(w: &Weights, prefix: &str, inputs: i64, outputs: i64) -> Result<Linear> {
    check_shape(w, &format!("{prefix}.weight"), &[outputs, inputs])?;
    check_shape(w, &format!("{prefix}.bias"), &[outputs])?;
    Linear::load(w, prefix)
}

fn layer_norm(w: &Weights, prefix: &str, width: i64, eps: f64) -> Result<LayerNorm> {
    check_shape(w, &format!("{prefix}.weight"), &[width])?;
    check_shape(w, &format!("{prefix}.bias"), &[width])?;
    LayerNorm::load(w, prefix, eps)
}

enum ConvNorm {
    /// Over time per channel (one group per channel), on `[batch, channels, time]`.
    Group(GroupNorm),
    /// Over channels per frame.
    Layer(LayerNorm),
}

struct ConvLayer {
    conv: Conv1d,
    norm: Option<ConvNorm>,
}

/// The convolutions from raw audio `[batch, samples]` to `[batch, channels, frames]`.
pub(crate) struct FeatureEncoder {
    layers: Vec<ConvLayer>,
    activation: Activation,
}

impl FeatureEncoder {
    pub fn load(w: &Weights, c: &HubertConfig) -> Result<Self> {
        // transformers leaves these norms at torch's default eps, as fairseq does.
        const EPS: f64 = 1e-5;
        let mut layers = Vec::with_capacity(c.conv_dim.len());
        let mut inputs = 1;
        for (i, ((&dim, &kernel), &stride)) in c
            .conv_dim
            .iter()
            .zip(&c.conv_kernel)
            .zip(&c.conv_stride)
            .enumerate()
        {
            let prefix = format!("feature_extractor.conv_layers.{i}");
            check_shape(w, &format!("{prefix}.conv.weight"), &[dim, inputs, kernel])?;
            if c.conv_bias {
                check_shape(w, &format!("{prefix}.conv.bias"), &[dim])?;
            }
            let conv = Conv1d::load(
                w,
                &format!("{prefix}.conv"),
                ConvOptions {
                    stride,
                    ..ConvOptions::default()
                },
            )?;
            let norm_prefix = format!("{prefix}.layer_norm");
            let norm = match (c.feat_extract_norm, i) {
                (FeatExtractNorm::Group, 0) => {
                    check_shape(w, &format!("{norm_prefix}.weight"), &[dim])?;
                    check_shape(w, &format!("{norm_prefix}.bias"), &[dim])?;
                    Some(ConvNorm::Group(GroupNorm::load(w, &norm_prefix, dim, EPS)?))
                }
                (FeatExtractNorm::Group, _) => None,
                (FeatExtractNorm::Layer, _) => {
                    Some(ConvNorm::Layer(layer_norm(w, &norm_prefix, dim, EPS)?))
                }
            };
            layers.push(ConvLayer { conv, norm });
            inputs = dim;
        }
        Ok(Self {
            layers,
            activation: Activation::parse(&c.feat_extract_activation)?,
        })
    }

    pub fn forward(&self, audio: &Tensor) -> Tensor {
        self.layers.iter().fold(audio.unsqueeze(1), |x, layer| {
            let x = layer.conv.forward(&x);
            let x = match &layer.norm {
                Some(ConvNorm::Group(norm)) => norm.forward(&x),
                Some(ConvNorm::Layer(norm)) => norm.forward(&x.transpose(1, 2)).transpose(1, 2),
                None => x,
            };
            self.activation.forward(&x)
        })
    }
}

/// Conv features `[batch, frames, channels]` to the model width. fairseq omits the
/// projection (`post_extract_proj`) when the widths already agree.
pub(crate) struct FeatureProjection {
    layer_norm: Option<LayerNorm>,
    projection: Option<Linear>,
}

impl FeatureProjection {
    pub fn load(w: &Weights, c: &HubertConfig) -> Result<Self> {
        let channels = *c.conv_dim.last().unwrap_or(&c.hidden_size);
        let layer_norm = match c.feat_proj_layer_norm {
            true => Some(layer_norm(
                w,
                "feature_projection.layer_norm",
                channels,
                c.layer_norm_eps,
            )?),
            false => None,
        };
        let projection =
            match w.contains("feature_projection.projection.weight") || channels != c.hidden_size {
                true => Some(linear(
                    w,
                    "feature_projection.projection",
                    channels,
                    c.hidden_size,
                )?),
                false => None,
            };
        Ok(Self {
            layer_norm,
            projection,
        })
    }

    pub fn forward(&self, features: &Tensor) -> Tensor {
        let x = match &self.layer_norm {
            Some(norm) => norm.forward(features),
            None => features.shallow_clone(),
        };
        match &self.projection {
            Some(projection) => projection.forward(&x),
            None => x,
        }
    }
}

/// The grouped convolution over time whose output is added to the hidden states ("same"
/// padding; an even kernel gives one frame too many, which is dropped).
struct PositionalConvEmbedding {
    batch_norm: Option<BatchNorm>,
    conv: Conv1d,
    drop_last_frame: bool,
    activation: Activation,
}

impl PositionalConvEmbedding {
    fn load(w: &Weights, c: &HubertConfig) -> Result<Self> {
        let (width, kernel, groups) = (
            c.hidden_size,
            c.num_conv_pos_embeddings,
            c.num_conv_pos_embedding_groups,
        );
        let weight = w.weight("encoder.pos_conv_embed.conv")?;
        ensure!(
            weight.size() == [width, width / groups, kernel],
            "{}: encoder.pos_conv_embed.conv has shape {:?}, expected {:?}",
            w.source().display(),
            weight.size(),
            [width, width / groups, kernel]
        );
        check_shape(w, "encoder.pos_conv_embed.conv.bias", &[width])?;
        let batch_norm = match c.conv_pos_batch_norm {
            true => {
                for stat in ["weight", "bias", "running_mean", "running_var"] {
                    check_shape(
                        w,
                        &format!("encoder.pos_conv_embed.batch_norm.{stat}"),
                        &[width],
                    )?;
                }
                Some(BatchNorm::load(
                    w,
                    "encoder.pos_conv_embed.batch_norm",
                    1e-5,
                )?)
            }
            false => None,
        };
        let options = ConvOptions {
            padding: kernel / 2,
            groups,
            ..ConvOptions::default()
        };
        Ok(Self {
            batch_norm,
            conv: Conv1d::load(w, "encoder.pos_conv_embed.conv", options)?,
            drop_last_frame: kernel % 2 == 0,
            activation: Activation::parse(&c.feat_extract_activation)?,
        })
    }

    /// `[batch, frames, width]` in and out.
    fn forward(&self, hidden: &Tensor) -> Tensor {
        let mut x = hidden.transpose(1, 2);
        if let Some(norm) = &self.batch_norm {
            x = norm.forward(&x);
        }
        let mut x = self.conv.forward(&x);
        if self.drop_last_frame {
            let frames = x.size()[2];
            x = x.narrow(2, 0, frames - 1);
        }
        self.activation.forward(&x).transpose(1, 2)
    }
}

struct SelfAttention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    heads: i64,
}

impl SelfAttention {
    fn load(w: &Weights, prefix: &str, width: i64, heads: i64) -> Result<Self> {
        let proj = |name: &str| linear(w, &format!("{prefix}.{name}"), width, width);
        Ok(Self {
            q_proj: proj("q_proj")?,
            k_proj: proj("k_proj")?,
            v_proj: proj("v_proj")?,
            out_proj: proj("out_proj")?,
            heads,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let split_heads = |t: Tensor| t.unflatten(-1, [self.heads, -1]).transpose(1, 2);
        let q = split_heads(self.q_proj.forward(x));
        let k = split_heads(self.k_proj.forward(x));
        let v = split_heads(self.v_proj.forward(x));
        let attended = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            None::<Tensor>,
            0.0,
            false,
            None,
            false,
        );
        self.out_proj
            .forward(&attended.transpose(1, 2).flatten(2, 3))
    }
}

/// One transformer layer: post-norm (hubert_base, ContentVec) or pre-norm
/// (`do_stable_layer_norm`, fairseq's `layer_norm_first`).
struct EncoderLayer {
    attention: SelfAttention,
    layer_norm: LayerNorm,
    intermediate_dense: Linear,
    output_dense: Linear,
    final_layer_norm: LayerNorm,
    activation: Activation,
    norm_first: bool,
}

impl EncoderLayer {
    fn load(w: &Weights, prefix: &str, c: &HubertConfig) -> Result<Self> {
        let (width, eps) = (c.hidden_size, c.layer_norm_eps);
        Ok(Self {
            attention: SelfAttention::load(
                w,
                &format!("{prefix}.attention"),
                width,
                c.num_attention_heads,
            )?,
            layer_norm: layer_norm(w, &format!("{prefix}.layer_norm"), width, eps)?,
            intermediate_dense: linear(
                w,
                &format!("{prefix}.feed_forward.intermediate_dense"),
                width,
                c.intermediate_size,
            )?,
            output_dense: linear(
                w,
                &format!("{prefix}.feed_forward.output_dense"),
                c.intermediate_size,
                width,
            )?,
            final_layer_norm: layer_norm(w, &format!("{prefix}.final_layer_norm"), width, eps)?,
            activation: Activation::parse(&c.hidden_act)?,
            norm_first: c.do_stable_layer_norm,
        })
    }

    fn feed_forward(&self, x: &Tensor) -> Tensor {
        self.output_dense
            .forward(&self.activation.forward(&self.intermediate_dense.forward(x)))
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        if self.norm_first {
            let x = x + self.attention.forward(&self.layer_norm.forward(x));
            &x + self.feed_forward(&self.final_layer_norm.forward(&x))
        } else {
            let x = self.layer_norm.forward(&(x + self.attention.forward(x)));
            self.final_layer_norm.forward(&(&x + self.feed_forward(&x)))
        }
    }
}

/// The positional convolution, the encoder's layer norm and the transformer layers.
pub(crate) struct Encoder {
    pos_conv_embed: PositionalConvEmbedding,
    layer_norm: LayerNorm,
    layers: Vec<EncoderLayer>,
    norm_first: bool,
}

impl Encoder {
    pub fn load(w: &Weights, c: &HubertConfig) -> Result<Self> {
        let layers = (0..c.num_hidden_layers)
            .map(|i| EncoderLayer::load(w, &format!("encoder.layers.{i}"), c))
            .collect::<Result<_>>()?;
        Ok(Self {
            pos_conv_embed: PositionalConvEmbedding::load(w, c)?,
            layer_norm: layer_norm(w, "encoder.layer_norm", c.hidden_size, c.layer_norm_eps)?,
            layers,
            norm_first: c.do_stable_layer_norm,
        })
    }

    /// The output of layer `depth` (1-based, at most the layer count) for projected features
    /// `[batch, frames, width]`, running no layer past it. Pre-norm stacks apply their final
    /// layer norm after the last layer only, as transformers' `last_hidden_state` does.
    pub fn forward_to(&self, hidden: &Tensor, depth: usize) -> Tensor {
        let x = hidden + self.pos_conv_embed.forward(hidden);
        let x = if self.norm_first {
            x
        } else {
            self.layer_norm.forward(&x)
        };
        let x = self.layers[..depth]
            .iter()
            .fold(x, |x, layer| layer.forward(&x));
        if self.norm_first && depth == self.layers.len() {
            self.layer_norm.forward(&x)
        } else {
            x
        }
    }
}
