//! The text encoder's transformer: self-attention with relative-position keys and values
//! (a window of ±`window_size` positions) and a convolutional feed-forward network, as in
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/attentions.py`
//! (`Encoder`, `MultiHeadAttention`, `FFN`) with `modules.py`'s channel `LayerNorm`.

use anyhow::{Result, bail};
use tch::Tensor;

use super::shapes::check_weight;
use crate::layers::{Conv1d, ConvOptions};
use crate::weights::Weights;

/// LayerNorm over the channels of `[batch, channels, time]` (parameters `gamma`/`beta`).
struct ChannelLayerNorm {
    gamma: Tensor,
    beta: Tensor,
}

impl ChannelLayerNorm {
    fn load(w: &Weights, prefix: &str, channels: i64) -> Result<Self> {
        Ok(Self {
            gamma: w.get_shaped(&format!("{prefix}.gamma"), &[channels])?,
            beta: w.get_shaped(&format!("{prefix}.beta"), &[channels])?,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let channels = self.gamma.size();
        x.transpose(1, -1)
            .layer_norm(
                channels.as_slice(),
                Some(&self.gamma),
                Some(&self.beta),
                1e-5,
                true,
            )
            .transpose(1, -1)
    }
}

/// Multi-head self-attention whose logits and outputs add learned embeddings of the relative
/// position, shared by all heads, clipped to ±`window_size`.
pub struct MultiHeadAttention {
    conv_q: Conv1d,
    conv_k: Conv1d,
    conv_v: Conv1d,
    conv_o: Conv1d,
    emb_rel_k: Tensor,
    emb_rel_v: Tensor,
    n_heads: i64,
    window_size: i64,
}

impl MultiHeadAttention {
    pub fn load(w: &Weights, prefix: &str, channels: i64, n_heads: i64) -> Result<Self> {
        let conv = |name: &str| -> Result<Conv1d> {
            let name = format!("{prefix}.{name}");
            check_weight(w, &name, &[channels, channels, 1])?;
            Conv1d::load(w, &name, ConvOptions::default())
        };
        let emb_rel_k = w.get(&format!("{prefix}.emb_rel_k"))?;
        let shape = emb_rel_k.size();
        let head_channels = channels / n_heads;
        let heads_ok = shape.len() == 3 && (shape[0] == 1 || shape[0] == n_heads);
        if !heads_ok || shape[1] % 2 == 0 || shape[2] != head_channels {
            bail!(
                "{}: `{prefix}.emb_rel_k` has shape {shape:?}; expected [1 or {n_heads}, 2 × window + 1, {head_channels}]",
                w.source().display()
            );
        }
        Ok(Self {
            conv_q: conv("conv_q")?,
            conv_k: conv("conv_k")?,
            conv_v: conv("conv_v")?,
            conv_o: conv("conv_o")?,
            emb_rel_v: w.get_shaped(&format!("{prefix}.emb_rel_v"), &shape)?,
            emb_rel_k,
            n_heads,
            window_size: (shape[1] - 1) / 2,
        })
    }

    /// `x` `[batch, channels, time]`; `attn_mask` `[batch, 1, time, time]`, 0 where masked.
    pub fn forward(&self, x: &Tensor, attn_mask: &Tensor) -> Tensor {
        let (batch, channels, length) = (x.size()[0], x.size()[1], x.size()[2]);
        let head_channels = channels / self.n_heads;
        let heads = |t: Tensor| {
            t.view_([batch, self.n_heads, head_channels, length])
                .transpose(2, 3)
        };
        let query = heads(self.conv_q.forward(x)) / (head_channels as f64).sqrt();
        let key = heads(self.conv_k.forward(x));
        let value = heads(self.conv_v.forward(x));

        let key_embeddings = relative_embeddings(&self.emb_rel_k, self.window_size, length);
        let relative_logits = query.matmul(&key_embeddings.unsqueeze(0).transpose(-2, -1));
        let scores = query.matmul(&key.transpose(-2, -1)) + relative_to_absolute(&relative_logits);
        let scores = scores.masked_fill(&attn_mask.eq(0.0), -1e4);
        let weights = scores.softmax(-1, scores.kind());

        let value_embeddings = relative_embeddings(&self.emb_rel_v, self.window_size, length);
        let output = weights.matmul(&value)
            + absolute_to_relative(&weights).matmul(&value_embeddings.unsqueeze(0));
        let output = output
            .transpose(2, 3)
            .contiguous()
            .view_([batch, channels, length]);
        self.conv_o.forward(&output)
    }
}

/// The embeddings of relative positions -(length-1) … length-1 from a table covering
/// -window … window: zero beyond the window, `[heads, 2 × length - 1, channels]`.
pub(crate) fn relative_embeddings(table: &Tensor, window_size: i64, length: i64) -> Tensor {
    let pad = (length - (window_size + 1)).max(0);
    let start = ((window_size + 1) - length).max(0);
    let padded = if pad > 0 {
        table.constant_pad_nd([0, 0, pad, pad])
    } else {
        table.shallow_clone()
    };
    padded.narrow(1, start, 2 * length - 1)
}

/// `[b, h, l, 2l-1]` logits by relative position → `[b, h, l, l]` by absolute position:
/// `out[i][j] = x[i][j - i + l - 1]`.
pub(crate) fn relative_to_absolute(x: &Tensor) -> Tensor {
    let (batch, heads, length) = (x.size()[0], x.size()[1], x.size()[2]);
    let flat = x
        .constant_pad_nd([0, 1])
        .view_([batch, heads, 2 * length * length])
        .constant_pad_nd([0, length - 1]);
    flat.view_([batch, heads, length + 1, 2 * length - 1])
        .narrow(2, 0, length)
        .narrow(3, length - 1, length)
}

/// `[b, h, l, l]` weights by absolute position → `[b, h, l, 2l-1]` by relative position:
/// `out[i][r] = x[i][i + r - (l - 1)]`, zero where that falls outside.
pub(crate) fn absolute_to_relative(x: &Tensor) -> Tensor {
    let (batch, heads, length) = (x.size()[0], x.size()[1], x.size()[2]);
    let flat = x
        .constant_pad_nd([0, length - 1])
        .view_([batch, heads, length * (2 * length - 1)]);
    flat.constant_pad_nd([length, 0])
        .view_([batch, heads, length, 2 * length])
        .narrow(3, 1, 2 * length - 1)
}

/// Two convolutions with "same" padding and a ReLU between, masked.
struct FeedForward {
    conv_1: Conv1d,
    conv_2: Conv1d,
    kernel_size: i64,
}

impl FeedForward {
    fn load(
        w: &Weights,
        prefix: &str,
        channels: i64,
        filter_channels: i64,
        kernel_size: i64,
    ) -> Result<Self> {
        check_weight(
            w,
            &format!("{prefix}.conv_1"),
            &[filter_channels, channels, kernel_size],
        )?;
        check_weight(
            w,
            &format!("{prefix}.conv_2"),
            &[channels, filter_channels, kernel_size],
        )?;
        Ok(Self {
            conv_1: Conv1d::load(w, &format!("{prefix}.conv_1"), ConvOptions::default())?,
            conv_2: Conv1d::load(w, &format!("{prefix}.conv_2"), ConvOptions::default())?,
            kernel_size,
        })
    }

    fn same_padding(&self, x: &Tensor) -> Tensor {
        x.constant_pad_nd([(self.kernel_size - 1) / 2, self.kernel_size / 2])
    }

    fn forward(&self, x: &Tensor, x_mask: &Tensor) -> Tensor {
        let x = self
            .conv_1
            .forward(&self.same_padding(&(x * x_mask)))
            .relu();
        self.conv_2.forward(&self.same_padding(&(x * x_mask))) * x_mask
    }
}

struct EncoderLayer {
    attention: MultiHeadAttention,
    norm_1: ChannelLayerNorm,
    feed_forward: FeedForward,
    norm_2: ChannelLayerNorm,
}

/// Post-norm transformer encoder over `[batch, hidden, time]`.
pub struct Encoder {
    layers: Vec<EncoderLayer>,
}

pub struct EncoderSizes {
    pub hidden_channels: i64,
    pub filter_channels: i64,
    pub n_heads: i64,
    pub n_layers: i64,
    pub kernel_size: i64,
}

impl Encoder {
    pub fn load(w: &Weights, prefix: &str, sizes: &EncoderSizes) -> Result<Self> {
        let hidden = sizes.hidden_channels;
        let layers = (0..sizes.n_layers)
            .map(|i| {
                Ok(EncoderLayer {
                    attention: MultiHeadAttention::load(
                        w,
                        &format!("{prefix}.attn_layers.{i}"),
                        hidden,
                        sizes.n_heads,
                    )?,
                    norm_1: ChannelLayerNorm::load(
                        w,
                        &format!("{prefix}.norm_layers_1.{i}"),
                        hidden,
                    )?,
                    feed_forward: FeedForward::load(
                        w,
                        &format!("{prefix}.ffn_layers.{i}"),
                        hidden,
                        sizes.filter_channels,
                        sizes.kernel_size,
                    )?,
                    norm_2: ChannelLayerNorm::load(
                        w,
                        &format!("{prefix}.norm_layers_2.{i}"),
                        hidden,
                    )?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self { layers })
    }

    /// `x` `[batch, hidden, time]`, `x_mask` `[batch, 1, time]`.
    pub fn forward(&self, x: &Tensor, x_mask: &Tensor) -> Tensor {
        let attn_mask = x_mask.unsqueeze(2) * x_mask.unsqueeze(-1);
        let mut x = x * x_mask;
        for layer in &self.layers {
            let y = layer.attention.forward(&x, &attn_mask);
            x = layer.norm_1.forward(&(x + y));
            let y = layer.feed_forward.forward(&x, x_mask);
            x = layer.norm_2.forward(&(x + y));
        }
        x * x_mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn relative_logits_land_on_their_absolute_positions() {
        let length = 4;
        let x = Tensor::arange(2 * length * (2 * length - 1), (Kind::Float, Device::Cpu)).view_([
            2,
            1,
            length,
            2 * length - 1,
        ]);
        let absolute = relative_to_absolute(&x);
        assert_eq!(absolute.size(), [2, 1, length, length]);
        for b in 0..2 {
            for i in 0..length {
                for j in 0..length {
                    let expected = x.double_value(&[b, 0, i, j - i + length - 1]);
                    assert_eq!(
                        absolute.double_value(&[b, 0, i, j]),
                        expected,
                        "b {b} i {i} j {j}"
                    );
                }
            }
        }
    }

    #[test]
    fn absolute_weights_land_on_their_relative_positions() {
        let length = 3;
        let x = Tensor::arange(length * length, (Kind::Float, Device::Cpu))
            .view_([1, 1, length, length])
            + 1.0;
        let relative = absolute_to_relative(&x);
        assert_eq!(relative.size(), [1, 1, length, 2 * length - 1]);
        for i in 0..length {
            for r in 0..2 * length - 1 {
                let j = i + r - (length - 1);
                let expected = if (0..length).contains(&j) {
                    x.double_value(&[0, 0, i, j])
                } else {
                    0.0
                };
                assert_eq!(
                    relative.double_value(&[0, 0, i, r]),
                    expected,
                    "i {i} r {r}"
                );
            }
        }
    }

    #[test]
    fn relative_embeddings_clip_to_the_window() {
        let window = 2;
        let table = Tensor::arange(2 * window + 1, (Kind::Float, Device::Cpu)).view_([
            1,
            2 * window + 1,
            1,
        ]) + 1.0;
        // Shorter than the window: the middle of the table.
        assert_eq!(
            values(&relative_embeddings(&table, window, 2)),
            [2.0, 3.0, 4.0]
        );
        // Longer: the whole table with zeros for the positions beyond it.
        assert_eq!(
            values(&relative_embeddings(&table, window, 4)),
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]
        );
    }
}
