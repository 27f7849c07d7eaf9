//! The posterior encoder of training: a linear spectrogram → a sample of the latent the decoder
//! renders, as RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/infer_pack/models.py` `PosteriorEncoder`.

use anyhow::Result;
use tch::Tensor;

use super::noise::NoiseSource;
use super::shapes::{check_weight, weight_shape};
use super::text_encoder::sequence_mask;
use super::wavenet::WaveNet;
use crate::layers::{Conv1d, ConvOptions};
use crate::weights::Weights;

pub struct PosteriorEncoder {
    pre: Conv1d,
    enc: WaveNet,
    proj: Conv1d,
    out_channels: i64,
}

/// What the posterior encoder gives: the sample, its mean and log-scale, and the frame mask.
pub struct Posterior {
    pub z: Tensor,
    pub mean: Tensor,
    pub log_scale: Tensor,
    pub mask: Tensor,
}

impl PosteriorEncoder {
    /// `prefix` is `enc_q`: spectrograms of `spec_channels` bins → latents of `out_channels`.
    pub fn load(
        w: &Weights,
        prefix: &str,
        spec_channels: i64,
        out_channels: i64,
        gin_channels: i64,
    ) -> Result<Self> {
        let (pre, proj) = (format!("{prefix}.pre"), format!("{prefix}.proj"));
        let hidden = weight_shape(w, &pre, 3)?[0];
        check_weight(w, &pre, &[hidden, spec_channels, 1])?;
        check_weight(w, &proj, &[2 * out_channels, hidden, 1])?;
        Ok(Self {
            pre: Conv1d::load(w, &pre, ConvOptions::default())?,
            enc: WaveNet::load(w, &format!("{prefix}.enc"), hidden, gin_channels)?,
            proj: Conv1d::load(w, &proj, ConvOptions::default())?,
            out_channels,
        })
    }

    /// `spec` `[batch, bins, frames]` with `lengths` `[batch]`, speaker condition `g`
    /// `[batch, gin, 1]` → `z = (mean + ε · exp(log_scale)) · mask`, ε standard normal.
    pub fn forward(
        &self,
        spec: &Tensor,
        lengths: &Tensor,
        g: Option<&Tensor>,
        noise: &mut NoiseSource,
    ) -> Posterior {
        let mask = sequence_mask(lengths, spec.size()[2])
            .unsqueeze(1)
            .to_kind(spec.kind());
        let x = self.pre.forward(spec) * &mask;
        let x = self.enc.forward(&x, &mask, g);
        let stats = self.proj.forward(&x) * &mask;
        let mean = stats.narrow(1, 0, self.out_channels);
        let log_scale = stats.narrow(1, self.out_channels, self.out_channels);
        let epsilon = noise.normal(&mean.size(), mean.device());
        let z = (&mean + epsilon * log_scale.exp()) * &mask;
        Posterior {
            z,
            mean,
            log_scale,
            mask,
        }
    }
}
