//! The MDX23C separator, as ZFTurbo/Music-Source-Separation-Training (commit ccc011a)
//! `models/mdx23c_tfc_tdf_v3.py` (`TFC_TDF_net`, with its `STFT`, `TFC_TDF`, `Downscale` and
//! `Upscale`) runs it: the lowest `dim_f` bins of the STFT, real and imaginary parts as channels,
//! folded into `num_subbands` subbands → a U-Net of TFC-TDF blocks (3×3 convolutions over time and
//! frequency, bottlenecked linear layers along frequency) → the spectrum of every stem directly
//! (no mask) → iSTFT. Every layer is bias-free; each is preceded by a norm and an activation.

mod blocks;
mod config;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

pub use config::{Act, MODEL_KEYS, Mdx23cAudio, Mdx23cConfig, Mdx23cInference, Mdx23cModel, Norm};

use blocks::{Design, Op, Step, TfcTdf};

use super::params::Params;
use super::stft::{Stft, Window};
use crate::weights::Weights;

/// A loaded MDX23C: stereo mix audio in, the estimate of every stem out.
pub struct Mdx23c {
    stft: Stft,
    dim_f: i64,
    subbands: i64,
    stems: i64,
    act: Act,
    /// Upstream `first_conv`: `[channels, 4 × subbands, 1, 1]`.
    first_conv: Tensor,
    /// Each scale's `tfc_tdf` and `downscale`.
    encoders: Vec<(TfcTdf, Step)>,
    bottleneck: TfcTdf,
    /// Each scale's `upscale` and `tfc_tdf`.
    decoders: Vec<(Step, TfcTdf)>,
    /// Upstream `final_conv`: two 1×1 convolutions with the activation between.
    final_conv: [Tensor; 2],
    /// What the STFT frames must divide by: the time scale to the power of `num_scales`.
    time_folds: i64,
    device: Device,
    weight_kind: Kind,
}

/// Channels of the audio the network takes (upstream's inverse STFT makes two).
const AUDIO_CHANNELS: i64 = 2;

impl Mdx23c {
    /// Whether `weights` hold an MDX23C (a `first_conv` and a `final_conv` around the U-Net).
    pub fn is_checkpoint(weights: &Weights) -> bool {
        weights.contains("first_conv.weight") && weights.contains("final_conv.0.weight")
    }

    /// Builds the network `config` describes from `weights`, every tensor checked against the
    /// config (`config_path` names it in errors), one output per stem of `config.training`. It
    /// runs on the device and in the kind of the weights (see `to_model_weights`).
    pub fn load(config: &Mdx23cConfig, weights: &Weights, config_path: &Path) -> Result<Self> {
        let (a, m) = (&config.audio, &config.model);
        let stems = config
            .training
            .stems()
            .with_context(|| config_path.display().to_string())?
            .len() as i64;
        let used = RefCell::new(BTreeSet::new());
        let p = Params::new(weights, config_path, &used);
        let net = Design {
            norm: m.norm()?,
            scale: m.scales()?,
            blocks: m.num_blocks_per_scale,
            bottleneck: m.bottleneck_factor,
        };
        let dim_c = m.num_subbands * AUDIO_CHANNELS * 2;
        let first_conv = p
            .at("first_conv")
            .tensor("weight", &[m.num_channels, dim_c, 1, 1])?;
        let [time, frequency] = net.scale;
        let down = Op::Conv {
            stride: net.scale,
            padding: [0, 0],
        };
        let mut bins = a.dim_f / m.num_subbands;
        let mut encoders = Vec::new();
        for level in 0..m.num_scales {
            let (c, wider) = (m.channels_at(level), m.channels_at(level + 1));
            let p = p.at(format!("encoder_blocks.{level}"));
            let tfc_tdf = TfcTdf::load(&p.at("tfc_tdf"), &net, c, c, bins)?;
            let shape = [wider, c, time, frequency];
            let downscale = Step::load(&p.at("downscale.conv"), &net, c, down, &shape)?;
            encoders.push((tfc_tdf, downscale));
            bins /= frequency;
        }
        let c = m.channels_at(m.num_scales);
        let bottleneck = TfcTdf::load(&p.at("bottleneck_block"), &net, c, c, bins)?;
        let mut decoders = Vec::new();
        for level in 0..m.num_scales {
            let (wide, c) = (
                m.channels_at(m.num_scales - level),
                m.channels_at(m.num_scales - level - 1),
            );
            let p = p.at(format!("decoder_blocks.{level}"));
            let up = Op::ConvTranspose { stride: net.scale };
            let shape = [wide, c, time, frequency];
            let upscale = Step::load(&p.at("upscale.conv"), &net, wide, up, &shape)?;
            bins *= frequency;
            decoders.push((
                upscale,
                TfcTdf::load(&p.at("tfc_tdf"), &net, 2 * c, c, bins)?,
            ));
        }
        let c = m.num_channels;
        let final_conv = [
            p.at("final_conv.0")
                .tensor("weight", &[c, c + dim_c, 1, 1])?,
            p.at("final_conv.2")
                .tensor("weight", &[stems * dim_c, c, 1, 1])?,
        ];
        p.ensure_all_used()?;
        Ok(Self {
            stft: Stft {
                n_fft: a.n_fft,
                hop_length: a.hop_length,
                win_length: a.n_fft,
                normalized: false,
                window: Window::Hann,
            },
            dim_f: a.dim_f,
            subbands: m.num_subbands,
            stems,
            act: m.act()?,
            device: first_conv.device(),
            weight_kind: first_conv.kind(),
            first_conv,
            encoders,
            bottleneck,
            decoders,
            final_conv,
            time_folds: time.pow(u32::try_from(m.num_scales)?),
        })
    }

    /// Channels the model takes: always 2.
    pub fn audio_channels(&self) -> i64 {
        AUDIO_CHANNELS
    }

    /// Number of stems it estimates.
    pub fn num_stems(&self) -> i64 {
        self.stems
    }

    /// Device the weights live on and the network runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Separates `audio` `[batch, 2, samples]` into `[batch, stems, 2, hop × (frames − 1)]` on
    /// the model's device. The U-Net needs the STFT's `samples / hop + 1` frames to divide by
    /// its downscalings, as a chunk of a valid config does.
    pub fn forward(&self, audio: &Tensor) -> Result<Tensor> {
        let size = audio.size();
        let [batch, channels, samples] = size[..] else {
            bail!("the separator takes audio as [batch, channels, samples], got {size:?}");
        };
        ensure!(
            channels == AUDIO_CHANNELS,
            "this model separates {AUDIO_CHANNELS}-channel audio, got {channels} channel(s)"
        );
        ensure!(
            samples > self.stft.n_fft / 2,
            "{samples} samples are too few for an STFT of n_fft {}",
            self.stft.n_fft
        );
        let frames = samples / self.stft.hop_length + 1;
        ensure!(
            frames % self.time_folds == 0,
            "{samples} samples are {frames} STFT frames, which the U-Net's downscalings (by {} \
             in all) do not divide",
            self.time_folds
        );
        tch::no_grad(|| {
            let audio = audio.to_device(self.device).to_kind(Kind::Float);
            self.separate(&audio, batch, samples)
        })
    }

    fn separate(&self, audio: &Tensor, batch: i64, samples: i64) -> Result<Tensor> {
        let c2 = AUDIO_CHANNELS * 2;
        let spectrum = self
            .stft
            .forward(&audio.reshape([batch * AUDIO_CHANNELS, samples]))?;
        let (bins, frames) = (spectrum.size()[1], spectrum.size()[2]);
        // (b c) f t, complex -> b (c re/im) f t, the lowest dim_f bins; cac2cws folds the
        // subbands into the channels: b (c re/im k) (f / k) t.
        let mix = spectrum
            .view_as_real()
            .permute([0, 3, 1, 2])
            .reshape([batch, c2, bins, frames])
            .narrow(2, 0, self.dim_f)
            .reshape([
                batch,
                c2 * self.subbands,
                self.dim_f / self.subbands,
                frames,
            ])
            .to_kind(self.weight_kind);
        let conv1 =
            |x: &Tensor, w: &Tensor| x.conv2d(w, None::<&Tensor>, [1, 1], [0, 0], [1, 1], 1);
        let first = conv1(&mix, &self.first_conv);
        // The U-Net runs on b c t f.
        let mut x = first.transpose(-1, -2);
        let mut skips = Vec::with_capacity(self.encoders.len());
        for (tfc_tdf, downscale) in &self.encoders {
            x = tfc_tdf.forward(&x, self.act);
            skips.push(x.shallow_clone());
            x = downscale.forward(&x, self.act);
        }
        x = self.bottleneck.forward(&x, self.act);
        for (upscale, tfc_tdf) in &self.decoders {
            x = upscale.forward(&x, self.act);
            let skip = skips.pop().expect("one skip per scale");
            x = tfc_tdf.forward(&Tensor::cat(&[&x, &skip], 1), self.act);
        }
        let x = x.transpose(-1, -2) * first;
        let x = conv1(&Tensor::cat(&[&mix, &x], 1), &self.final_conv[0]);
        let x = conv1(&self.act.forward(&x), &self.final_conv[1]);
        // cws2cac, the stems apart and the bins above dim_f silent: (b n c) f t, complex.
        let spectrum = x
            .to_kind(Kind::Float)
            .reshape([batch * self.stems * AUDIO_CHANNELS, 2, self.dim_f, frames])
            .constant_pad_nd([0, 0, 0, bins - self.dim_f])
            .permute([0, 2, 3, 1])
            .contiguous()
            .view_as_complex();
        let audio = self.stft.inverse(&spectrum, None)?;
        let out_samples = audio.size()[1];
        Ok(audio.reshape([batch, self.stems, AUDIO_CHANNELS, out_samples]))
    }
}
