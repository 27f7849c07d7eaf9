//! The prior encoder: content features (+ coarse pitch) → the mean and log-scale of the latent,
//! as RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/models.py`
//! `TextEncoder256`/`TextEncoder768` (the feature width is the only difference), and with
//! PhamHuynhAnh16/Vietnamese-RVC's energy embedding (`main/library/algorithm/encoders.py`
//! `TextEncoder(energy=True)`: `emb_energy = Linear(1, hidden)` of each frame's RMS, added after
//! the pitch embedding).

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::attentions::{Encoder, EncoderSizes};
use super::parameters::PITCH_CLASSES;
use super::shapes::{check_layer, check_weight, weight_shape};
use crate::layers::{Conv1d, ConvOptions, Embedding, Linear};
use crate::weights::Weights;

/// The content features a model can be given: HuBERT's 256-d `final_proj` output (v1) or its
/// 768-d last layer (v2).
const FEATURE_DIMS: [i64; 2] = [256, 768];

pub struct TextEncoder {
    emb_phone: Linear,
    emb_pitch: Option<Embedding>,
    emb_energy: Option<Linear>,
    encoder: Encoder,
    proj: Conv1d,
    hidden_channels: i64,
    out_channels: i64,
}

impl TextEncoder {
    /// `prefix` is `enc_p`; the pitch embedding is loaded when the weights have one, the energy
    /// embedding when `energy` (the model is conditioned on energy; see `ModelInfo::energy`).
    pub fn load(
        w: &Weights,
        prefix: &str,
        sizes: &EncoderSizes,
        out_channels: i64,
        energy: bool,
    ) -> Result<Self> {
        let hidden = sizes.hidden_channels;
        let phone_name = format!("{prefix}.emb_phone");
        let feature_dim = weight_shape(w, &phone_name, 2)?[1];
        if !FEATURE_DIMS.contains(&feature_dim) {
            bail!(
                "{}: `{phone_name}` has a weight of shape [{hidden}, {feature_dim}], expected \
                 [{hidden}, 256] (v1) or [{hidden}, 768] (v2): no content features are \
                 {feature_dim}-d",
                w.source().display()
            );
        }
        check_layer(w, &phone_name, &[hidden, feature_dim], hidden)?;
        check_weight(w, &format!("{prefix}.proj"), &[2 * out_channels, hidden, 1])?;
        let pitch_name = format!("{prefix}.emb_pitch");
        let emb_pitch = if w.contains(&format!("{pitch_name}.weight")) {
            check_weight(w, &pitch_name, &[PITCH_CLASSES, hidden])?;
            Some(Embedding::load(w, &pitch_name)?)
        } else {
            None
        };
        let emb_energy = if energy {
            let energy_name = format!("{prefix}.emb_energy");
            check_layer(w, &energy_name, &[hidden, 1], hidden)?;
            Some(Linear::load(w, &energy_name)?)
        } else {
            None
        };
        Ok(Self {
            emb_phone: Linear::load(w, &phone_name)?,
            emb_pitch,
            emb_energy,
            encoder: Encoder::load(w, &format!("{prefix}.encoder"), sizes)?,
            proj: Conv1d::load(w, &format!("{prefix}.proj"), ConvOptions::default())?,
            hidden_channels: hidden,
            out_channels,
        })
    }

    /// Coarse pitch classes the pitch embedding has (256 in RVC), if the model takes pitch.
    pub fn pitch_classes(&self) -> Option<i64> {
        self.emb_pitch.as_ref().map(Embedding::num_embeddings)
    }

    /// Whether the encoder takes each frame's energy.
    pub fn takes_energy(&self) -> bool {
        self.emb_energy.is_some()
    }

    /// `phone` `[batch, time, features]`, `pitch` `[batch, time]` classes, `energy`
    /// `[batch, time]` RMS values, `lengths` `[batch]` → (mean, log-scale) `[batch, out, time]`
    /// and the mask `[batch, 1, time]`.
    pub fn forward(
        &self,
        phone: &Tensor,
        pitch: Option<&Tensor>,
        energy: Option<&Tensor>,
        lengths: &Tensor,
    ) -> (Tensor, Tensor, Tensor) {
        let mut x = self.emb_phone.forward(phone);
        if let (Some(emb_pitch), Some(pitch)) = (&self.emb_pitch, pitch) {
            x += emb_pitch.forward(pitch);
        }
        if let (Some(emb_energy), Some(energy)) = (&self.emb_energy, energy) {
            x += emb_energy.forward(&energy.unsqueeze(-1));
        }
        let x = x * (self.hidden_channels as f64).sqrt();
        let x = x.maximum(&(&x * 0.1)).transpose(1, -1);
        let x_mask = sequence_mask(lengths, x.size()[2])
            .unsqueeze(1)
            .to_kind(x.kind());
        let x = self.encoder.forward(&(x * &x_mask), &x_mask);
        let stats = self.proj.forward(&x) * &x_mask;
        let mean = stats.narrow(1, 0, self.out_channels);
        let log_scale = stats.narrow(1, self.out_channels, self.out_channels);
        (mean, log_scale, x_mask)
    }
}

/// `[batch, max_length]`: true for the first `lengths[b]` positions.
pub fn sequence_mask(lengths: &Tensor, max_length: i64) -> Tensor {
    let positions = Tensor::arange(max_length, (Kind::Int64, lengths.device()));
    positions.unsqueeze(0).lt_tensor(&lengths.unsqueeze(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn sequence_mask_marks_each_length() {
        let mask = sequence_mask(&Tensor::from_slice(&[2i64, 0, 3]), 3).to_kind(Kind::Int64);
        let rows: Vec<i64> = Vec::try_from(mask.flatten(0, -1)).unwrap();
        assert_eq!(rows, [1, 1, 0, 0, 0, 0, 1, 1, 1]);
        assert_eq!(mask.device(), Device::Cpu);
    }
}
