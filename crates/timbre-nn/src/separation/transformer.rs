//! The transformer the RoFormers share, as in ZFTurbo/Music-Source-Separation-Training
//! `models/bs_roformer/bs_roformer.py` (RMSNorm, FeedForward, Attention, LinearAttention,
//! Transformer) and `models/bs_roformer/attend.py`, with rotary embeddings as lucidrains'
//! `rotary_embedding_torch` applies them by default (interleaved pairs).

use anyhow::Result;
use tch::{Kind, Tensor};

use super::params::Params;
use crate::layers::Linear;

/// `F.normalize(x, dim=-1) * sqrt(dim) * gamma`.
pub(super) struct RmsNorm {
    gamma: Tensor,
    scale: f64,
}

impl RmsNorm {
    pub(super) fn load(p: &Params, dim: i64) -> Result<Self> {
        Ok(Self {
            gamma: p.tensor("gamma", &[dim])?,
            scale: (dim as f64).sqrt(),
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let norm = x.norm_scalaropt_dim(2, [-1], true).clamp_min(1e-12);
        x / norm * self.scale * &self.gamma
    }
}

/// RMSNorm → Linear → GELU → Linear (`net.0`, `net.1`, `net.4`).
struct FeedForward {
    norm: RmsNorm,
    expand: Linear,
    contract: Linear,
}

/// The upstream Transformer's fixed `ff_mult`.
const FEED_FORWARD_MULT: i64 = 4;

impl FeedForward {
    fn load(p: &Params, dim: i64) -> Result<Self> {
        let inner = dim * FEED_FORWARD_MULT;
        Ok(Self {
            norm: RmsNorm::load(&p.at("net.0"), dim)?,
            expand: p.linear("net.1", dim, inner, true)?,
            contract: p.linear("net.4", inner, dim, true)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        self.contract
            .forward(&self.expand.forward(&self.norm.forward(x)).gelu("none"))
    }
}

/// Rotary position embedding over the sequence axis (-2) of `[.., seq, dim_head]` tensors.
pub(super) struct Rotary {
    /// One frequency per rotated pair, as stored in the checkpoint (`rotary_embed.freqs`).
    freqs: Tensor,
}

impl Rotary {
    fn load(p: &Params, dim_head: i64) -> Result<Self> {
        Ok(Self {
            freqs: p.tensor("freqs", &[dim_head / 2])?,
        })
    }

    /// `(cos, sin)` of `[seq, 2 × freqs]` angles, each frequency repeated for its pair.
    /// Positions are counted in `kind` first, as upstream counts them in the queries' dtype.
    fn angles(&self, seq_len: i64, kind: Kind) -> (Tensor, Tensor) {
        let device = self.freqs.device();
        let positions = Tensor::arange(seq_len, (kind, device)).to_kind(Kind::Float);
        let freqs = self.freqs.to_kind(Kind::Float);
        let pairs = freqs.size()[0];
        let angles = positions
            .outer(&freqs)
            .unsqueeze(-1)
            .expand([seq_len, pairs, 2], false)
            .reshape([seq_len, pairs * 2]);
        (angles.cos(), angles.sin())
    }

    /// Rotates the first `2 × freqs` features of `t` (`[.., seq, dim_head]`), pairs `(2i, 2i+1)`.
    fn rotate(&self, t: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
        let rotated_dim = cos.size()[1];
        let head_dim = *t.size().last().unwrap_or(&0);
        let middle = t.narrow(-1, 0, rotated_dim).to_kind(Kind::Float);
        let rotated = &middle * cos + rotate_half(&middle) * sin;
        let rotated = rotated.to_kind(t.kind());
        if rotated_dim == head_dim {
            rotated
        } else {
            Tensor::cat(
                &[rotated, t.narrow(-1, rotated_dim, head_dim - rotated_dim)],
                -1,
            )
        }
    }
}

/// `(x1, x2)` pairs to `(-x2, x1)`.
fn rotate_half(x: &Tensor) -> Tensor {
    let mut shape = x.size();
    let dim = shape.pop().unwrap_or(0);
    let pairs = x.reshape([shape.as_slice(), &[dim / 2, 2]].concat());
    let (first, second) = (pairs.select(-1, 0), pairs.select(-1, 1));
    Tensor::stack(&[second.neg(), first], -1).reshape(x.size())
}

/// Multi-head self-attention with rotary positions and a sigmoid gate per head.
struct Attention {
    norm: RmsNorm,
    to_qkv: Linear,
    to_gates: Linear,
    to_out: Linear,
    rotary: Rotary,
    heads: i64,
}

impl Attention {
    fn load(p: &Params, dims: &Dims) -> Result<Self> {
        let inner = dims.heads * dims.dim_head;
        Ok(Self {
            norm: RmsNorm::load(&p.at("norm"), dims.dim)?,
            to_qkv: p.linear("to_qkv", dims.dim, inner * 3, false)?,
            to_gates: p.linear("to_gates", dims.dim, dims.heads, true)?,
            to_out: p.linear("to_out.0", inner, dims.dim, false)?,
            rotary: Rotary::load(&p.at("rotary_embed"), dims.dim_head)?,
            heads: dims.heads,
        })
    }

    /// `x`: `[batch, seq, dim]`.
    fn forward(&self, x: &Tensor) -> Tensor {
        let (batch, seq) = (x.size()[0], x.size()[1]);
        let x = self.norm.forward(x);
        // b n (qkv h d) -> qkv b h n d
        let qkv = self
            .to_qkv
            .forward(&x)
            .reshape([batch, seq, 3, self.heads, -1])
            .permute([2, 0, 3, 1, 4]);
        let (cos, sin) = self.rotary.angles(seq, x.kind());
        let q = self.rotary.rotate(&qkv.get(0), &cos, &sin);
        let k = self.rotary.rotate(&qkv.get(1), &cos, &sin);
        let out = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &qkv.get(2),
            None::<Tensor>,
            0.0,
            false,
            None,
            false,
        );
        let gates = self
            .to_gates
            .forward(&x)
            .permute([0, 2, 1])
            .unsqueeze(-1)
            .sigmoid();
        let out = (out * gates)
            .permute([0, 2, 1, 3])
            .reshape([batch, seq, -1]);
        self.to_out.forward(&out)
    }
}

/// Cross-covariance ("linear") attention of El-Nouby et al.: attention runs across the head
/// features, each an l2-normalised vector over the sequence, with a fixed scale of 8.
struct LinearAttention {
    norm: RmsNorm,
    to_qkv: Linear,
    temperature: Tensor,
    to_out: Linear,
    heads: i64,
}

const LINEAR_ATTENTION_SCALE: f64 = 8.0;

impl LinearAttention {
    fn load(p: &Params, dims: &Dims) -> Result<Self> {
        let inner = dims.heads * dims.dim_head;
        Ok(Self {
            norm: RmsNorm::load(&p.at("norm"), dims.dim)?,
            to_qkv: p.linear("to_qkv.0", dims.dim, inner * 3, false)?,
            temperature: p.tensor("temperature", &[dims.heads, 1, 1])?,
            to_out: p.linear("to_out.1", inner, dims.dim, false)?,
            heads: dims.heads,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let (batch, seq) = (x.size()[0], x.size()[1]);
        let x = self.norm.forward(x);
        // b n (qkv h d) -> qkv b h d n
        let qkv = self
            .to_qkv
            .forward(&x)
            .reshape([batch, seq, 3, self.heads, -1])
            .permute([2, 0, 3, 4, 1]);
        let l2 = |t: &Tensor| t / t.norm_scalaropt_dim(2, [-1], true).clamp_min(1e-12);
        let q = l2(&qkv.get(0)) * self.temperature.exp();
        let k = l2(&qkv.get(1));
        let out = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &qkv.get(2),
            None::<Tensor>,
            0.0,
            false,
            LINEAR_ATTENTION_SCALE,
            false,
        );
        // b h d n -> b n (h d)
        self.to_out
            .forward(&out.permute([0, 3, 1, 2]).reshape([batch, seq, -1]))
    }
}

enum Mixer {
    Attention(Attention),
    Linear(LinearAttention),
}

/// The sizes every transformer of a model shares.
pub(super) struct Dims {
    pub dim: i64,
    pub heads: i64,
    pub dim_head: i64,
}

/// Pre-norm residual layers of attention and feed-forward, with an optional output RMSNorm
/// (`layers.{i}.0`, `layers.{i}.1`, `norm`).
pub(super) struct Transformer {
    layers: Vec<(Mixer, FeedForward)>,
    norm: Option<RmsNorm>,
}

impl Transformer {
    /// Rotary attention layers; `norm_output` as upstream passes it (Mel-Band: yes, BS: no).
    pub(super) fn load(p: &Params, dims: &Dims, depth: i64, norm_output: bool) -> Result<Self> {
        Self::load_with(p, dims, depth, norm_output, |p| {
            Ok(Mixer::Attention(Attention::load(p, dims)?))
        })
    }

    pub(super) fn load_linear(
        p: &Params,
        dims: &Dims,
        depth: i64,
        norm_output: bool,
    ) -> Result<Self> {
        Self::load_with(p, dims, depth, norm_output, |p| {
            Ok(Mixer::Linear(LinearAttention::load(p, dims)?))
        })
    }

    fn load_with(
        p: &Params,
        dims: &Dims,
        depth: i64,
        norm_output: bool,
        mixer: impl Fn(&Params) -> Result<Mixer>,
    ) -> Result<Self> {
        let layers = (0..depth)
            .map(|i| {
                let layer = p.at(format!("layers.{i}"));
                Ok((
                    mixer(&layer.at(0))?,
                    FeedForward::load(&layer.at(1), dims.dim)?,
                ))
            })
            .collect::<Result<_>>()?;
        let norm = if norm_output {
            Some(RmsNorm::load(&p.at("norm"), dims.dim)?)
        } else {
            None
        };
        Ok(Self { layers, norm })
    }

    /// `x`: `[batch, seq, dim]`.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let mut x = x.shallow_clone();
        for (mixer, feed_forward) in &self.layers {
            let mixed = match mixer {
                Mixer::Attention(attention) => attention.forward(&x),
                Mixer::Linear(attention) => attention.forward(&x),
            };
            x = mixed + &x;
            x = feed_forward.forward(&x) + &x;
        }
        match &self.norm {
            Some(norm) => norm.forward(&x),
            None => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotary_rotates_interleaved_pairs_by_position_times_frequency() {
        let rotary = Rotary {
            freqs: Tensor::from_slice(&[1.0f32, 0.5]),
        };
        // [seq 3, dim 4]: every pair starts as (1, 0).
        let t = Tensor::from_slice(&[1.0f32, 0.0, 1.0, 0.0]).repeat([3, 1]);
        let (cos, sin) = rotary.angles(3, Kind::Float);
        let out = rotary.rotate(&t, &cos, &sin);
        for position in 0..3 {
            for (pair, freq) in [1.0f64, 0.5].into_iter().enumerate() {
                let angle = position as f64 * freq;
                let x = out.double_value(&[position, 2 * pair as i64]);
                let y = out.double_value(&[position, 2 * pair as i64 + 1]);
                assert!(
                    (x - angle.cos()).abs() < 1e-6 && (y - angle.sin()).abs() < 1e-6,
                    "{position} {pair}: {x} {y}"
                );
            }
        }
    }

    #[test]
    fn rotary_leaves_features_past_the_rotated_ones() {
        let rotary = Rotary {
            freqs: Tensor::from_slice(&[1.0f32]),
        };
        let t = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).repeat([2, 1]);
        let (cos, sin) = rotary.angles(2, Kind::Float);
        let out = rotary.rotate(&t, &cos, &sin);
        assert_eq!(out.double_value(&[1, 2]), 3.0);
        // Position 1, angle 1: (1, 2) → (cos 1 − 2 sin 1, sin 1 + 2 cos 1).
        let expected = 1f64.cos() - 2.0 * 1f64.sin();
        assert!((out.double_value(&[1, 0]) - expected).abs() < 1e-6);
    }

    #[test]
    fn rms_norm_scales_to_the_root_of_the_dimension() {
        let norm = RmsNorm {
            gamma: Tensor::ones([4], tch::kind::FLOAT_CPU),
            scale: 2.0,
        };
        let out = norm.forward(&Tensor::from_slice(&[3.0f32, 0.0, 4.0, 0.0]));
        assert!(
            (out.double_value(&[0]) - 1.2).abs() < 1e-6
                && (out.double_value(&[2]) - 1.6).abs() < 1e-6
        );
    }
}
