//! The RoFormer separators, as ZFTurbo/Music-Source-Separation-Training
//! `models/bs_roformer/bs_roformer.py` (`BSRoformer`) and `mel_band_roformer.py`
//! (`MelBandRoformer`) run them: STFT → band split → axial transformers → a complex mask per
//! stem and bin → iSTFT. The two differ in how bins form bands (`bs_roformer.rs`,
//! `mel_band_roformer.rs`), in where RMSNorms sit, and in the depth of the mask MLPs.
//! Recent upstream versions also silence the DC bin of the separated spectrum (`zero_dc`, on by
//! default); the parity fixtures come from such a version.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use super::bands::{AxialDepths, AxialTransformer, BandSplit, MaskEstimator};
use super::bs_roformer;
use super::config::ModelConfig;
use super::mel_band_roformer::MelBands;
use super::params::Params;
use super::stft::{Stft, Window};
use super::transformer::{Dims, RmsNorm};
use crate::weights::Weights;

/// The model types of the upstream training code that we run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoformerKind {
    /// Band-Split RoFormer: contiguous bands of STFT bins (`bs_roformer`).
    BsRoformer,
    /// Mel-Band RoFormer: overlapping mel bands (`mel_band_roformer`).
    MelBandRoformer,
}

impl FromStr for RoformerKind {
    type Err = anyhow::Error;

    /// The upstream `--model_type` names.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "bs_roformer" => Ok(Self::BsRoformer),
            "mel_band_roformer" => Ok(Self::MelBandRoformer),
            _ => bail!(
                "unknown separation model type `{name}`: expected bs_roformer or mel_band_roformer"
            ),
        }
    }
}

impl RoformerKind {
    /// Tells the kind from the checkpoint's tensors: only BS-RoFormer has a final norm, and only
    /// Mel-Band RoFormer's transformers end in one.
    pub fn detect(weights: &Weights) -> Result<Self> {
        if weights.contains("final_norm.gamma") {
            Ok(Self::BsRoformer)
        } else if weights.names().any(|name| {
            name.starts_with("layers.")
                && name.ends_with(".norm.gamma")
                && name.matches('.').count() == 4
        }) {
            Ok(Self::MelBandRoformer)
        } else {
            bail!(
                "{}: neither a BS-RoFormer nor a Mel-Band RoFormer checkpoint",
                weights.source().display()
            )
        }
    }
}

/// How the interleaved `(bin, channel)` axis of the spectrum forms bands.
enum Banding {
    /// Consecutive disjoint runs (BS-RoFormer).
    Contiguous,
    /// Overlapping mel bands (Mel-Band RoFormer).
    Mel(MelBands),
}

/// A loaded BS- or Mel-Band RoFormer: mix audio in, one complex-masked estimate per stem out.
pub struct Roformer {
    kind: RoformerKind,
    stft: Stft,
    banding: Banding,
    band_split: BandSplit,
    axial: AxialTransformer,
    final_norm: Option<RmsNorm>,
    mask_estimators: Vec<MaskEstimator>,
    audio_channels: i64,
    /// iSTFT to the input's length (else `hop × (frames − 1)` samples).
    match_input_length: bool,
    zero_dc: bool,
    device: Device,
    weight_kind: Kind,
}

impl Roformer {
    /// Builds `kind` as `model` describes it from `weights`, every tensor checked against the
    /// config (`config_path` names it in errors). The network runs on the device and in the
    /// kind of the weights (see `to_model_weights`).
    pub fn load(
        kind: RoformerKind,
        model: &ModelConfig,
        weights: &Weights,
        config_path: &Path,
    ) -> Result<Self> {
        let used = RefCell::new(BTreeSet::new());
        let p = Params::new(weights, config_path, &used);
        let probe = weights.get("band_split.to_features.0.1.weight")?;
        Self::build(kind, model, &p, config_path, probe.device(), probe.kind())
    }

    /// `kind` as `model` describes it with made-up float32 weights on the CPU (see
    /// `Params::random`), and those weights as the state dict a checkpoint of it would hold:
    /// full-size models for benchmarks.
    pub fn random(kind: RoformerKind, model: &ModelConfig) -> Result<(Self, Weights)> {
        let (used, made) = (RefCell::new(BTreeSet::new()), RefCell::new(HashMap::new()));
        let config_path = Path::new("random weights");
        let empty = Weights::new(HashMap::new(), config_path);
        let p = Params::random(&empty, config_path, &used, &made);
        let roformer = Self::build(kind, model, &p, config_path, Device::Cpu, Kind::Float)?;
        Ok((roformer, Weights::new(made.into_inner(), config_path)))
    }

    fn build(
        kind: RoformerKind,
        model: &ModelConfig,
        p: &Params,
        config_path: &Path,
        device: Device,
        weight_kind: Kind,
    ) -> Result<Self> {
        let audio_channels = if model.stereo { 2 } else { 1 };
        let stft = Stft {
            n_fft: model.stft_n_fft,
            hop_length: model.stft_hop_length,
            win_length: model.stft_win_length,
            normalized: model.stft_normalized,
            window: Window::Hann,
        };
        let dims = Dims {
            dim: model.dim,
            heads: model.heads,
            dim_head: model.dim_head,
        };
        let depths = AxialDepths {
            depth: model.depth,
            linear: model.linear_transformer_depth,
            time: model.time_transformer_depth,
            freq: model.freq_transformer_depth,
        };
        let (banding, widths, mask_layers) = match kind {
            RoformerKind::BsRoformer => {
                let widths = bs_roformer::band_widths(model, stft.bins(), audio_channels)
                    .with_context(|| format!("{}", config_path.display()))?;
                // MLP(depth): `depth` linear layers, at least one.
                (
                    Banding::Contiguous,
                    widths,
                    model.mask_estimator_depth.unwrap_or(2).max(1),
                )
            }
            RoformerKind::MelBandRoformer => {
                let bands = MelBands::new(
                    model.sample_rate,
                    model.stft_n_fft,
                    model.num_bands,
                    audio_channels,
                    device,
                )
                .with_context(|| format!("{}", config_path.display()))?;
                let widths = bands.widths.clone();
                // This file's MLP(depth) has `depth + 1` linear layers.
                (
                    Banding::Mel(bands),
                    widths,
                    model.mask_estimator_depth.unwrap_or(1) + 1,
                )
            }
        };
        ensure!(
            mask_layers >= 1,
            "{}: `model.mask_estimator_depth` is negative",
            config_path.display()
        );
        let is_bs = kind == RoformerKind::BsRoformer;
        let axial = AxialTransformer::load(p, &dims, &depths, !is_bs, model.skip_connection)?;
        let final_norm = if is_bs {
            Some(RmsNorm::load(&p.at("final_norm"), model.dim)?)
        } else {
            None
        };
        let band_split = BandSplit::load(&p.at("band_split"), model.dim, &widths)?;
        let hidden = model.dim * model.mlp_expansion_factor;
        let mask_estimators = (0..model.num_stems)
            .map(|stem| {
                MaskEstimator::load(
                    &p.at(format!("mask_estimators.{stem}")),
                    model.dim,
                    hidden,
                    mask_layers,
                    &widths,
                )
            })
            .collect::<Result<_>>()?;
        p.ensure_all_used()?;
        Ok(Self {
            kind,
            stft,
            banding,
            band_split,
            axial,
            final_norm,
            mask_estimators,
            audio_channels,
            match_input_length: is_bs || model.match_input_audio_length,
            zero_dc: model.zero_dc,
            device,
            weight_kind,
        })
    }

    /// Which of the two architectures this is.
    pub fn kind(&self) -> RoformerKind {
        self.kind
    }

    /// Channels the model takes: 2 for a stereo model, else 1.
    pub fn audio_channels(&self) -> i64 {
        self.audio_channels
    }

    /// Number of stems it estimates, one mask estimator each.
    pub fn num_stems(&self) -> i64 {
        self.mask_estimators.len() as i64
    }

    /// Device the weights live on and the network runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Separates `audio` `[batch, channels, samples]` into `[batch, stems, channels, samples']`
    /// on the model's device (samples' = samples, except for a Mel-Band RoFormer without
    /// `match_input_audio_length`: `hop × (frames − 1)`). Upstream drops the stem axis when
    /// there is one stem; we keep it so callers need not tell the cases apart.
    pub fn forward(&self, audio: &Tensor) -> Result<Tensor> {
        let size = audio.size();
        let [batch, channels, samples] = size[..] else {
            bail!("the separator takes audio as [batch, channels, samples], got {size:?}");
        };
        ensure!(
            channels == self.audio_channels,
            "this model separates {}-channel audio, got {channels} channel(s)",
            self.audio_channels
        );
        ensure!(
            samples > self.stft.n_fft / 2,
            "{samples} samples are too few for an STFT of n_fft {}",
            self.stft.n_fft
        );
        tch::no_grad(|| {
            self.separate(
                &audio.to_device(self.device).to_kind(Kind::Float),
                batch,
                samples,
            )
        })
    }

    fn separate(&self, audio: &Tensor, batch: i64, samples: i64) -> Result<Tensor> {
        let channels = self.audio_channels;
        let spectrum = self
            .stft
            .forward(&audio.reshape([batch * channels, samples]))?;
        let (bins, frames) = (spectrum.size()[1], spectrum.size()[2]);
        // b s f t c -> b (f s) t c
        let spectrum = spectrum
            .view_as_real()
            .reshape([batch, channels, bins, frames, 2])
            .permute([0, 2, 1, 3, 4])
            .reshape([batch, bins * channels, frames, 2]);
        let selected = match &self.banding {
            Banding::Contiguous => spectrum.shallow_clone(),
            Banding::Mel(bands) => bands.select(&spectrum),
        };
        // b f t c -> b t (f c)
        let x = selected
            .permute([0, 2, 1, 3])
            .reshape([batch, frames, -1])
            .to_kind(self.weight_kind);
        let mut x = self.axial.forward(&self.band_split.forward(&x));
        if let Some(norm) = &self.final_norm {
            x = norm.forward(&x);
        }
        let stems = self.num_stems();
        let masks: Vec<Tensor> = self
            .mask_estimators
            .iter()
            .map(|estimator| estimator.forward(&x))
            .collect();
        // b n t (f c) -> b n f t c
        let masks = Tensor::stack(&masks, 1)
            .to_kind(Kind::Float)
            .reshape([batch, stems, frames, -1, 2])
            .permute([0, 1, 3, 2, 4]);
        let masks = match &self.banding {
            Banding::Contiguous => masks,
            Banding::Mel(bands) => bands.merge(&masks),
        };
        let masked = spectrum.unsqueeze(1).contiguous().view_as_complex()
            * masks.contiguous().view_as_complex();
        // b n (f s) t -> (b n s) f t
        let masked = masked
            .reshape([batch, stems, bins, channels, frames])
            .permute([0, 1, 3, 2, 4])
            .reshape([batch * stems * channels, bins, frames]);
        if self.zero_dc {
            let _ = masked.narrow(1, 0, 1).zero_();
        }
        let length = if self.match_input_length {
            Some(samples)
        } else {
            None
        };
        let audio = self.stft.inverse(&masked, length)?;
        let out_samples = audio.size()[1];
        Ok(audio.reshape([batch, stems, channels, out_samples]))
    }
}

/// `weights` on `device`, floating tensors in `kind` except the rotary frequencies, which stay
/// float32: in half precision the angles of late positions would be off by whole radians.
pub fn to_model_weights(weights: &Weights, device: Device, kind: Kind) -> Weights {
    let tensors = weights
        .names()
        .filter_map(|name| Some((name.to_string(), weights.get_opt(name)?)))
        .map(|(name, tensor)| {
            let tensor = tensor.to_device(device);
            let keep_kind = !tensor.is_floating_point() || name.ends_with("rotary_embed.freqs");
            let tensor = if keep_kind {
                tensor
            } else {
                tensor.to_kind(kind)
            };
            (name, tensor)
        })
        .collect();
    Weights::new(tensors, weights.source())
}

/// Loads a separation checkpoint's state dict: a `torch.save` file (`.ckpt`, `.pth`, `.pt`;
/// the dict itself, or under `state_dict` / `state`, or under `model_state_dict` as upstream's
/// training saves it) or a `.safetensors` file.
pub fn load_state_dict(path: &Path) -> Result<Weights> {
    let is_safetensors = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("safetensors"));
    if is_safetensors {
        return Weights::from_safetensors(path);
    }
    let value = crate::checkpoint::read_torch_file(path)?;
    let dict = value
        .get("state_dict")
        .or_else(|| value.get("state"))
        .or_else(|| value.get("model_state_dict"))
        .unwrap_or(&value);
    let weights = crate::checkpoint::weights_from_dict(dict, path)?;
    ensure!(!weights.is_empty(), "{}: holds no tensors", path.display());
    Ok(weights)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn weights_named(names: &[&str]) -> Weights {
        let tensors = names
            .iter()
            .map(|name| (name.to_string(), Tensor::ones([2], tch::kind::FLOAT_CPU)))
            .collect::<HashMap<_, _>>();
        Weights::new(tensors, "model.ckpt")
    }

    #[test]
    fn tells_the_kind_from_the_checkpoint() {
        let bs = weights_named(&["final_norm.gamma", "layers.0.0.layers.0.0.norm.gamma"]);
        assert_eq!(RoformerKind::detect(&bs).unwrap(), RoformerKind::BsRoformer);
        let mel = weights_named(&["layers.0.0.layers.0.0.norm.gamma", "layers.0.1.norm.gamma"]);
        assert_eq!(
            RoformerKind::detect(&mel).unwrap(),
            RoformerKind::MelBandRoformer
        );
        assert!(RoformerKind::detect(&weights_named(&["conv.weight"])).is_err());
        assert_eq!(
            "mel_band_roformer".parse::<RoformerKind>().unwrap(),
            RoformerKind::MelBandRoformer
        );
        assert!("htdemucs".parse::<RoformerKind>().is_err());
    }

    #[test]
    fn half_precision_keeps_rotary_frequencies_in_float() {
        let weights = weights_named(&[
            "layers.0.0.layers.0.0.rotary_embed.freqs",
            "final_norm.gamma",
        ]);
        let converted = to_model_weights(&weights, Device::Cpu, Kind::Half);
        assert_eq!(
            converted
                .get("layers.0.0.layers.0.0.rotary_embed.freqs")
                .unwrap()
                .kind(),
            Kind::Float
        );
        assert_eq!(
            converted.get("final_norm.gamma").unwrap().kind(),
            Kind::Half
        );
    }
}
