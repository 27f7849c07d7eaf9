//! The text encoder's transformer: self-attention with relative-position keys and values
//! (a window of ±`window_size` positions) and a convolutional feed-forward network, as in
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/attentions.py`
//! (`Encoder`, `MultiHeadAttention`, `FFN`) with `modules.py`'s channel `LayerNorm`.

use anyhow::{Result, bail};
use tch::{Device, Kind, Tensor};

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

    /// `x` `[batch, channels, time]`; `masked` `[batch, 1, time, time]` is true where a key is
    /// hidden from a query (`None` when nothing is).
    pub fn forward(&self, x: &Tensor, masked: Option<&Tensor>) -> Tensor {
        let (batch, channels, length) = (x.size()[0], x.size()[1], x.size()[2]);
        let head_channels = channels / self.n_heads;
        let heads = |t: Tensor| {
            // Contiguous: the fused CPU kernel reads its inputs as if they were.
            t.view_([batch, self.n_heads, head_channels, length])
                .transpose(2, 3)
                .contiguous()
        };
        let query = heads(self.conv_q.forward(x)) / (head_channels as f64).sqrt();
        let key = heads(self.conv_k.forward(x));
        let value = heads(self.conv_v.forward(x));

        let output = self.attend(&query, &key, &value, masked);
        let output = output
            .transpose(2, 3)
            .contiguous()
            .view_([batch, channels, length]);
        self.conv_o.forward(&output)
    }

    /// Attention of `query` (already scaled) over `key`/`value`, all `[b, h, l, d]`. The
    /// reference pads the ±window tables to every relative position (2·length − 1) and
    /// multiplies by those, mostly zeros: quadratic work that dominated long inputs. Only the
    /// band |i − j| ≤ window carries embeddings, so only the band is computed.
    fn attend(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        masked: Option<&Tensor>,
    ) -> Tensor {
        let length = query.size()[2];
        let relative_logits = query.matmul(&self.emb_rel_k.unsqueeze(0).transpose(-2, -1));
        let bias = band_to_absolute(&relative_logits, length);
        let value_embeddings = self.emb_rel_v.unsqueeze(0);
        // Training takes the plain path: the fused kernel's log-sum-exp has no gradient.
        if masked.is_none() && query.device() == Device::Cpu && !query.requires_grad() {
            // Fused attention never holds the [l, l] weights; the band of them that the value
            // embeddings need comes back from its log-sum-exp.
            let (output, logsumexp) = Tensor::internal_scaled_dot_product_flash_attention_for_cpu(
                query,
                key,
                value,
                0.0,
                false,
                Some(&bias),
                1.0,
            );
            let band_logits = band_scores(query, key, self.window_size) + relative_logits;
            let band_weights = (band_logits - logsumexp.unsqueeze(-1))
                .exp()
                .where_scalarother(&band_inside(length, self.window_size, query.device()), 0.0);
            return output + band_weights.matmul(&value_embeddings);
        }
        let mut scores = query.matmul(&key.transpose(-2, -1)) + bias;
        if let Some(masked) = masked {
            let _ = scores.masked_fill_(masked, -1e4);
        }
        let weights = scores.softmax(-1, scores.kind());
        let band_weights = absolute_to_band(&weights, self.window_size);
        weights.matmul(value) + band_weights.matmul(&value_embeddings)
    }
}

/// `query · key` for the keys within ±`window` of each query: `[b, h, l, 2w + 1]`, zero
/// where the key falls outside.
fn band_scores(query: &Tensor, key: &Tensor, window: i64) -> Tensor {
    let keys = key
        .constant_pad_nd([0, 0, window, window])
        .unfold(2, 2 * window + 1, 1);
    query.unsqueeze(-2).matmul(&keys).squeeze_dim(-2)
}

/// Whether offset r of row i is a position inside the sequence: `[l, 2w + 1]`.
fn band_inside(length: i64, window: i64, device: Device) -> Tensor {
    let rows = Tensor::arange(length, (Kind::Int64, device)).unsqueeze(1);
    let columns = rows + Tensor::arange_start(-window, window + 1, (Kind::Int64, device));
    columns.ge(0).logical_and(&columns.lt(length))
}

/// Logits by relative position `[b, h, l, 2w + 1]` (offsets −w … w) → `[b, h, l, l]` by
/// absolute position: `out[i][j] = band[i][j − i + w]` where |j − i| ≤ w, else 0.
pub(crate) fn band_to_absolute(band: &Tensor, length: i64) -> Tensor {
    let size = band.size();
    let (batch, heads, width) = (size[0], size[1], size[3]);
    let window = (width - 1) / 2;
    // Rows of l + 2w with the band first; read with a row stride one shorter, each row starts
    // one column further left, so offset r of row i lands on column i + r − w.
    let row = length + 2 * window;
    let padded = band.constant_pad_nd([0, row - width]);
    padded.as_strided(
        [batch, heads, length, length],
        [heads * length * row, length * row, row - 1, 1],
        window,
    )
}

/// Weights by absolute position `[b, h, l, l]` → the band `[b, h, l, 2w + 1]` by relative
/// position: `out[i][r] = x[i][i + r − w]`, zero where that falls outside.
pub(crate) fn absolute_to_band(x: &Tensor, window: i64) -> Tensor {
    let size = x.size();
    let (batch, heads, length) = (size[0], size[1], size[2]);
    let row = length + 2 * window;
    let padded = x.constant_pad_nd([window, window]);
    padded.as_strided(
        [batch, heads, length, 2 * window + 1],
        [heads * length * row, length * row, row + 1, 1],
        0,
    )
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
        let masked = (x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)).eq(0.0);
        let masked = bool::try_from(masked.any())
            .unwrap_or(true)
            .then_some(masked);
        let mut x = x * x_mask;
        for layer in &self.layers {
            let y = layer.attention.forward(&x, masked.as_ref());
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

    fn positions(batch: i64, heads: i64, length: i64) -> impl Iterator<Item = [i64; 4]> {
        (0..batch).flat_map(move |b| {
            (0..heads).flat_map(move |h| {
                (0..length).flat_map(move |i| (0..length).map(move |j| [b, h, i, j]))
            })
        })
    }

    #[test]
    fn band_logits_land_on_their_absolute_positions() {
        let window = 2;
        let width = 2 * window + 1;
        for length in [1, 2, 3, 7] {
            let band = Tensor::arange(2 * 3 * length * width, (Kind::Float, Device::Cpu))
                .view_([2, 3, length, width])
                + 1.0;
            let absolute = band_to_absolute(&band, length);
            assert_eq!(absolute.size(), [2, 3, length, length]);
            for [b, h, i, j] in positions(2, 3, length) {
                let offset = j - i + window;
                let expected = if (0..width).contains(&offset) {
                    band.double_value(&[b, h, i, offset])
                } else {
                    0.0
                };
                let got = absolute.double_value(&[b, h, i, j]);
                assert_eq!(got, expected, "length {length} at {b} {h} {i} {j}");
            }
        }
    }

    #[test]
    fn absolute_weights_land_on_their_band_positions() {
        let window = 2;
        for length in [1, 2, 6] {
            let x = Tensor::arange(2 * 3 * length * length, (Kind::Float, Device::Cpu))
                .view_([2, 3, length, length])
                + 1.0;
            let band = absolute_to_band(&x, window);
            assert_eq!(band.size(), [2, 3, length, 2 * window + 1]);
            let rows = positions(2, 3, length).filter(|p| p[3] == 0);
            for ([b, h, i, _], r) in rows.flat_map(|p| (0..2 * window + 1).map(move |r| (p, r))) {
                let j = i + r - window;
                let expected = if (0..length).contains(&j) {
                    x.double_value(&[b, h, i, j])
                } else {
                    0.0
                };
                let got = band.double_value(&[b, h, i, r]);
                assert_eq!(got, expected, "length {length} at {b} {h} {i} {r}");
            }
        }
    }

    #[test]
    fn fused_and_materialized_attention_agree() {
        tch::manual_seed(7);
        let (channels, heads, window, length) = (8, 2, 3, 37);
        let head_channels = channels / heads;
        let random = |shape: &[i64]| Tensor::randn(shape, (Kind::Float, Device::Cpu));
        let mut tensors = std::collections::HashMap::new();
        for name in ["conv_q", "conv_k", "conv_v", "conv_o"] {
            tensors.insert(
                format!("attn.{name}.weight"),
                random(&[channels, channels, 1]),
            );
        }
        for name in ["emb_rel_k", "emb_rel_v"] {
            tensors.insert(
                format!("attn.{name}"),
                random(&[1, 2 * window + 1, head_channels]),
            );
        }
        let weights = Weights::new(tensors, "random");
        let attention = MultiHeadAttention::load(&weights, "attn", channels, heads).unwrap();
        let x = Tensor::randn([1, channels, length], (Kind::Float, Device::Cpu));
        let nothing_masked = Tensor::zeros([1, 1, length, length], (Kind::Bool, Device::Cpu));
        let fused = attention.forward(&x, None);
        let materialized = attention.forward(&x, Some(&nothing_masked));
        let difference = (fused - materialized).abs().max().double_value(&[]);
        assert!(
            difference < 1e-5,
            "fused and materialized differ by {difference}"
        );
    }
}
