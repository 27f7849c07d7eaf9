//! The SCNet separator, as ZFTurbo/Music-Source-Separation-Training (commit ccc011a)
//! `models/scnet/scnet.py` (`SCNet`, with its `SDblock`, `SDlayer`, `ConvolutionModule`,
//! `FusionLayer` and `SUlayer`) and `models/scnet/separation.py` (`SeparationNet`,
//! `DualPathRNN`, `FeatureConversion`) run it (`--model_type scnet`): the whole STFT (no window
//! passed, so torch's ones), real and imaginary parts as channels → SD blocks that split the bins
//! into a low, mid and high band and down-sample each along frequency → dual-path bidirectional
//! LSTMs over frequency and time, every other layer in the Fourier domain of time → SU blocks
//! back up, fused with the SD blocks' skips → the spectrum of every stem directly (no mask) →
//! iSTFT.
//!
//! MSST's other SCNets are other networks and are refused by name: `scnet_unofficial` (its own
//! config keys, `bandsplit_ratios`, …, and tensors, `sd_blocks.*`), `scnet_tran` (transformers
//! for the LSTMs: `tran_*` keys, `first_conv` and `time_layer` tensors) and `scnet_masked` (the
//! same config as SCNet's, told by its `pos_embed_f` and `mask_layer` tensors).

mod config;
mod layers;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

pub use config::{Band, MODEL_KEYS, ScnetAudio, ScnetConfig, ScnetModel};

use layers::{DualPathRnn, SdBlock, SuBlock, feature_conversion};

use super::params::Params;
use super::stft::{Stft, Window};
use crate::weights::Weights;

/// A loaded SCNet: mix audio in, the estimate of every stem out.
pub struct Scnet {
    stft: Stft,
    audio_channels: i64,
    stems: i64,
    /// Upstream `encoder`, from the STFT's bins down.
    encoders: Vec<SdBlock>,
    /// Upstream `separation_net.dp_modules`; a feature conversion follows each.
    dual_paths: Vec<DualPathRnn>,
    /// Upstream `decoder`, from the deepest level up.
    decoders: Vec<SuBlock>,
    device: Device,
    weight_kind: Kind,
}

/// Which of MSST's other SCNet models `weights` hold, if one: they are different networks.
fn other_scnet(weights: &Weights) -> Option<&'static str> {
    let has = |prefix: &str| weights.names().any(|name| name.starts_with(prefix));
    if has("sd_blocks.") || has("dualpath_blocks.") || has("su_blocks.") {
        Some("scnet_unofficial (MSST's `models/scnet_unofficial`)")
    } else if has("pos_embed_f") || has("mask_layer.") {
        Some("scnet_masked (MSST's `models/scnet/scnet_masked.py`)")
    } else if weights.contains("first_conv.weight") && has("encoder.0.SDlayer.")
        || weights.names().any(|name| name.contains(".time_layer."))
    {
        Some("scnet_tran (MSST's `models/scnet/scnet_tran.py`)")
    } else {
        None
    }
}

impl Scnet {
    /// Whether `weights` hold an SCNet of MSST's `--model_type scnet` (SD blocks and dual-path
    /// LSTMs under `encoder` and `separation_net`).
    pub fn is_checkpoint(weights: &Weights) -> bool {
        weights.contains("encoder.0.SDlayer.convs.0.weight")
            && weights.contains("separation_net.dp_modules.0.lstm_layers.0.weight_ih_l0")
    }

    /// Fails naming the model when `weights` hold one of MSST's other SCNets.
    pub fn refuse_other_scnets(weights: &Weights) -> Result<()> {
        if let Some(model) = other_scnet(weights) {
            bail!(
                "{} holds an {model}, a different network from SCNet (`--model_type scnet`) that \
                 this player does not implement",
                weights.source().display()
            );
        }
        Ok(())
    }

    /// Builds the network `config` describes from `weights`, every tensor checked against the
    /// config (`config_path` names it in errors), one output per `model.sources`. It runs on
    /// the device and in the kind of the weights (see `to_model_weights`).
    pub fn load(config: &ScnetConfig, weights: &Weights, config_path: &Path) -> Result<Self> {
        Self::refuse_other_scnets(weights)?;
        let m = &config.model;
        let levels = m
            .levels()
            .with_context(|| config_path.display().to_string())?;
        let stems = m.sources.len() as i64;
        let used = RefCell::new(BTreeSet::new());
        let p = Params::new(weights, config_path, &used);
        let encoders = levels
            .iter()
            .enumerate()
            .map(|(i, &bands)| {
                let p = p.at(format!("encoder.{i}"));
                SdBlock::load(&p, m, bands, m.dims[i], m.dims[i + 1])
            })
            .collect::<Result<Vec<_>>>()?;
        let deepest = m.dims[m.dims.len() - 1];
        let dual_paths = (0..m.num_dplayer)
            .map(|i| {
                let channels = deepest * if i % 2 == 1 { 2 } else { 1 };
                let p = p.at(format!("separation_net.dp_modules.{i}"));
                DualPathRnn::load(&p, channels, m.expand)
            })
            .collect::<Result<Vec<_>>>()?;
        let decoders = (0..levels.len())
            .rev()
            .enumerate()
            .map(|(j, index)| {
                let out_c = if index == 0 {
                    m.dims[0] * stems
                } else {
                    m.dims[index]
                };
                let p = p.at(format!("decoder.{j}"));
                SuBlock::load(&p, m, levels[index], m.dims[index + 1], out_c)
            })
            .collect::<Result<Vec<_>>>()?;
        p.ensure_all_used()?;
        let probe = p
            .at("encoder.0.SDlayer.convs.0")
            .tensor("weight", &[m.dims[1], m.dims[0], m.band_kernel[0], 1])?;
        Ok(Self {
            stft: Stft {
                n_fft: m.nfft,
                hop_length: m.hop_size,
                win_length: m.win_size,
                normalized: m.normalized,
                window: Window::Rectangular,
            },
            audio_channels: m.audio_channels,
            stems,
            encoders,
            dual_paths,
            decoders,
            device: probe.device(),
            weight_kind: probe.kind(),
        })
    }

    /// Channels the model takes (`model.audio_channels`).
    pub fn audio_channels(&self) -> i64 {
        self.audio_channels
    }

    /// Number of stems it estimates.
    pub fn num_stems(&self) -> i64 {
        self.stems
    }

    /// Device the weights live on and the network runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Separates `audio` `[batch, channels, samples]` into `[batch, stems, channels, samples]`
    /// on the model's device. As upstream, the audio is zero-padded to a whole, odd number of
    /// hops (so the STFT has an even number of frames) and the padding cut off again.
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
            samples >= self.stft.n_fft / 2,
            "{samples} samples are too few for an STFT of n_fft {}",
            self.stft.n_fft
        );
        tch::no_grad(|| {
            let audio = audio.to_device(self.device).to_kind(Kind::Float);
            self.separate(&audio, batch, samples)
        })
    }

    fn separate(&self, audio: &Tensor, batch: i64, samples: i64) -> Result<Tensor> {
        let (hop, channels) = (self.stft.hop_length, self.audio_channels);
        let mut padding = hop - samples % hop;
        if (samples + padding) / hop % 2 == 0 {
            padding += hop;
        }
        let padded = samples + padding;
        let spectrum = self.stft.forward(
            &audio
                .constant_pad_nd([0, padding])
                .reshape([batch * channels, padded]),
        )?;
        let (bins, frames) = (spectrum.size()[1], spectrum.size()[2]);
        // (b c) f t, complex -> b (c re/im) f t.
        let mut x = spectrum
            .view_as_real()
            .permute([0, 3, 1, 2])
            .reshape([batch, 2 * channels, bins, frames])
            .to_kind(self.weight_kind);
        let mut skips = Vec::with_capacity(self.encoders.len());
        for encoder in &self.encoders {
            let (out, skip) = encoder.forward(&x);
            skips.push(skip);
            x = out;
        }
        for (i, dual_path) in self.dual_paths.iter().enumerate() {
            x = feature_conversion(&dual_path.forward(&x), i % 2 == 1).to_kind(self.weight_kind);
        }
        for decoder in &self.decoders {
            let skip = skips.pop().expect("one skip per level");
            x = decoder.forward(&x, &skip);
        }
        // b (n c re/im) f t -> (b n c) f t, complex.
        let spectrum = x
            .to_kind(Kind::Float)
            .reshape([batch * self.stems * channels, 2, bins, frames])
            .permute([0, 2, 3, 1])
            .contiguous()
            .view_as_complex();
        let audio = self.stft.inverse(&spectrum, None)?;
        Ok(audio
            .reshape([batch, self.stems, channels, -1])
            .narrow(3, 0, samples))
    }
}
