//! The normalising flow between the prior and the decoder's latent, run in reverse at inference
//! and forward in training: RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/infer_pack/models.py` `ResidualCouplingBlock` with `modules.py`
//! `ResidualCouplingLayer` (mean-only) and `Flip`.

use anyhow::{Result, bail};
use tch::Tensor;

use super::shapes::{check_weight, layer_indices, weight_shape};
use super::wavenet::WaveNet;
use crate::layers::{Conv1d, ConvOptions};
use crate::weights::Weights;

/// Affine coupling: the second half of the channels is shifted (and, unless mean-only,
/// scaled) by a function of the first half.
struct CouplingLayer {
    pre: Conv1d,
    enc: WaveNet,
    post: Conv1d,
    half_channels: i64,
    mean_only: bool,
}

impl CouplingLayer {
    fn load(w: &Weights, prefix: &str, channels: i64, gin_channels: i64) -> Result<Self> {
        let half = channels / 2;
        let hidden = weight_shape(w, &format!("{prefix}.pre"), 3)?[0];
        check_weight(w, &format!("{prefix}.pre"), &[hidden, half, 1])?;
        let post_out = weight_shape(w, &format!("{prefix}.post"), 3)?[0];
        if post_out != half && post_out != 2 * half {
            bail!(
                "{}: `{prefix}.post` gives {post_out} channels; expected {half} or {}",
                w.source().display(),
                2 * half
            );
        }
        check_weight(w, &format!("{prefix}.post"), &[post_out, hidden, 1])?;
        Ok(Self {
            pre: Conv1d::load(w, &format!("{prefix}.pre"), ConvOptions::default())?,
            enc: WaveNet::load(w, &format!("{prefix}.enc"), hidden, gin_channels)?,
            post: Conv1d::load(w, &format!("{prefix}.post"), ConvOptions::default())?,
            half_channels: half,
            mean_only: post_out == half,
        })
    }

    /// The shift (and log-scale, unless mean-only) for the second half, from the first.
    fn stats(&self, x0: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        let h = self.pre.forward(x0) * x_mask;
        let h = self.enc.forward(&h, x_mask, g);
        self.post.forward(&h) * x_mask
    }

    fn forward(&self, x: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        let half = self.half_channels;
        let (x0, x1) = (x.narrow(1, 0, half), x.narrow(1, half, half));
        let stats = self.stats(&x0, x_mask, g);
        let x1 = if self.mean_only {
            stats + x1 * x_mask
        } else {
            stats.narrow(1, 0, half) + x1 * stats.narrow(1, half, half).exp() * x_mask
        };
        Tensor::cat(&[x0, x1], 1)
    }

    fn reverse(&self, x: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        let half = self.half_channels;
        let (x0, x1) = (x.narrow(1, 0, half), x.narrow(1, half, half));
        let stats = self.stats(&x0, x_mask, g);
        let x1 = if self.mean_only {
            (x1 - stats) * x_mask
        } else {
            (x1 - stats.narrow(1, 0, half)) * (-stats.narrow(1, half, half)).exp() * x_mask
        };
        Tensor::cat(&[x0, x1], 1)
    }
}

/// Coupling layers, each followed by a channel flip (flows `0, 2, 4, …`; the flips have no weights).
pub struct ResidualCouplingBlock {
    layers: Vec<CouplingLayer>,
}

impl ResidualCouplingBlock {
    pub fn load(w: &Weights, prefix: &str, channels: i64, gin_channels: i64) -> Result<Self> {
        let indices = layer_indices(w, &format!("{prefix}.flows"));
        let expected: Vec<usize> = (0..indices.len()).map(|i| 2 * i).collect();
        if indices.is_empty() || indices != expected {
            bail!(
                "{}: the flow's coupling layers are `{prefix}.flows.N` for N = {indices:?}; expected 0, 2, 4, …",
                w.source().display()
            );
        }
        let layers = indices
            .iter()
            .map(|i| CouplingLayer::load(w, &format!("{prefix}.flows.{i}"), channels, gin_channels))
            .collect::<Result<_>>()?;
        Ok(Self { layers })
    }

    /// The flow: the posterior's `z` `[batch, channels, time]` → `z_p` (training).
    pub fn forward(&self, z: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        self.layers.iter().fold(z.shallow_clone(), |x, layer| {
            layer.forward(&x, x_mask, g).flip([1])
        })
    }

    /// The inverse flow: `z_p` `[batch, channels, time]` → `z`.
    pub fn reverse(&self, z_p: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        self.layers
            .iter()
            .rev()
            .fold(z_p.shallow_clone(), |x, layer| {
                layer.reverse(&x.flip([1]), x_mask, g)
            })
    }
}
