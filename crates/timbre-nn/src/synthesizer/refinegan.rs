//! The RefineGAN decoder: IAHispano/Applio `rvc/lib/algorithm/generators/refinegan.py`
//! `RefineGANGenerator` (b9c0ccb). The pitch excitation is brought down stage by stage
//! (torchaudio's Kaiser-windowed sinc resampling, then a convolution that doubles its channels)
//! and joins the latent, which is upsampled linearly back to audio, each stage taking the pitch
//! path's matching level; `ParallelResBlock`s average three residual blocks between AdaIN noise.

use std::f64::consts::PI;

use anyhow::{Result, bail};
use tch::{Device, Kind, Tensor};

use super::noise::NoiseSource;
use super::shapes::{check_weight, layer_count, weight_shape};
use crate::layers::{Conv1d, ConvOptions};
use crate::weights::Weights;

const LRELU_SLOPE: f64 = 0.2;
/// The dilations of every residual block (`ParallelResBlock(dilation=(1, 3, 5))`), which the
/// `config` list does not set.
pub(super) const DILATIONS: [i64; 3] = [1, 3, 5];
/// The arguments the generator gives `torchaudio.functional.resample`.
const LOWPASS_FILTER_WIDTH: f64 = 64.0;
const ROLLOFF: f64 = 0.947_593_716_739_959_6;
const KAISER_BETA: f64 = 14.769_656_459_379_492;

fn leaky_relu(x: &Tensor) -> Tensor {
    x.prelu(&Tensor::full([1], LRELU_SLOPE, (x.kind(), x.device())))
}

/// `torchaudio.functional.resample(x, factor·n, n, lowpass_filter_width=64, rolloff=…,
/// resampling_method="sinc_interp_kaiser", beta=…)`: after the gcd the ratio is `factor` to 1,
/// so one Kaiser-windowed sinc kernel, strided by `factor`, applied to each channel.
struct Downsample {
    kernel: Tensor,
    factor: i64,
    width: i64,
}

impl Downsample {
    /// The kernel is made once in the kind the generator's weights have.
    fn new(factor: i64, device: Device, kind: Kind) -> Self {
        let ratio = factor as f64;
        // base_freq = min(orig, new) · rolloff with new = 1.
        let width = (LOWPASS_FILTER_WIDTH * ratio / ROLLOFF).ceil() as i64;
        let taps: Vec<f32> = (-width..width + factor)
            .map(|i| {
                let t =
                    (i as f64 / ratio * ROLLOFF).clamp(-LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH);
                let window =
                    bessel_i0(KAISER_BETA * (1.0 - (t / LOWPASS_FILTER_WIDTH).powi(2)).sqrt())
                        / bessel_i0(KAISER_BETA);
                let t = t * PI;
                let sinc = if t == 0.0 { 1.0 } else { t.sin() / t };
                (sinc * window * ROLLOFF / ratio) as f32
            })
            .collect();
        let kernel = Tensor::from_slice(&taps)
            .view([1, 1, -1])
            .to_device(device)
            .to_kind(kind);
        Self {
            kernel,
            factor,
            width,
        }
    }

    /// `[batch, channels, length]` → `[batch, channels, ⌈length / factor⌉]`.
    fn forward(&self, x: &Tensor) -> Tensor {
        let (batch, channels, length) = x.size3().expect("[batch, channels, time]");
        let rows = x
            .reshape([batch * channels, 1, length])
            .constant_pad_nd([self.width, self.width + self.factor]);
        let out = (length + self.factor - 1) / self.factor;
        rows.conv1d(&self.kernel, None::<&Tensor>, [self.factor], [0], [1], 1)
            .narrow(2, 0, out)
            .reshape([batch, channels, out])
    }
}

/// The modified Bessel function of the first kind of order 0, by its power series (which
/// converges in a few dozen terms for the window's arguments, at most `KAISER_BETA`).
fn bessel_i0(x: f64) -> f64 {
    let quarter_square = x * x / 4.0;
    let (mut term, mut sum) = (1.0, 1.0);
    for k in 1..200 {
        term *= quarter_square / (k * k) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

/// `ResBlock`: residual pairs of a dilated and an undilated convolution.
struct ResBlock {
    pairs: Vec<(Conv1d, Conv1d)>,
}

impl ResBlock {
    fn load(w: &Weights, prefix: &str, channels: i64) -> Result<Self> {
        let steps = layer_count(w, &format!("{prefix}.convs1"))?;
        if steps != DILATIONS.len() {
            bail!(
                "{}: `{prefix}` has {steps} dilated convolutions; RefineGAN's blocks have {}",
                w.source().display(),
                DILATIONS.len()
            );
        }
        let kernel_size = weight_shape(w, &format!("{prefix}.convs1.0"), 3)?[2];
        if kernel_size % 2 == 0 {
            bail!(
                "{}: `{prefix}` has an even kernel ({kernel_size}); residual blocks need odd ones",
                w.source().display()
            );
        }
        let conv = |name: String, dilation: i64| -> Result<Conv1d> {
            check_weight(w, &name, &[channels, channels, kernel_size])?;
            let options = ConvOptions {
                dilation,
                padding: (kernel_size * dilation - dilation) / 2,
                ..ConvOptions::default()
            };
            Conv1d::load(w, &name, options)
        };
        let pairs = DILATIONS.iter().enumerate().map(|(l, &dilation)| {
            Ok((
                conv(format!("{prefix}.convs1.{l}"), dilation)?,
                conv(format!("{prefix}.convs2.{l}"), 1)?,
            ))
        });
        Ok(Self {
            pairs: pairs.collect::<Result<_>>()?,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let mut x = x.shallow_clone();
        for (dilated, plain) in &self.pairs {
            let y = plain.forward(&leaky_relu(&dilated.forward(&leaky_relu(&x))));
            x = y + x;
        }
        x
    }
}

/// `AdaIN`: Gaussian noise scaled per channel by a learnt weight, then a leaky ReLU.
struct AdaIn {
    weight: Tensor,
}

impl AdaIn {
    fn load(w: &Weights, name: &str, channels: i64) -> Result<Self> {
        Ok(Self {
            weight: w.get_shaped(name, &[channels])?.view([1, -1, 1]),
        })
    }

    fn forward(&self, x: &Tensor, noise: &mut NoiseSource) -> Tensor {
        if noise.is_zero() {
            return leaky_relu(x);
        }
        let gaussian = noise.normal(&x.size(), x.device()).to_kind(x.kind()) * &self.weight;
        leaky_relu(&(x + gaussian))
    }
}

/// `ParallelResBlock`: an input convolution, then the mean of `AdaIN → ResBlock → AdaIN` over
/// the kernel sizes.
struct ParallelResBlock {
    input_conv: Conv1d,
    blocks: Vec<(AdaIn, ResBlock, AdaIn)>,
}

impl ParallelResBlock {
    fn load(w: &Weights, prefix: &str, in_channels: i64) -> Result<Self> {
        let input = format!("{prefix}.input_conv");
        let channels = weight_shape(w, &input, 3)?[0];
        check_weight(w, &input, &[channels, in_channels, 7])?;
        let blocks = (0..layer_count(w, &format!("{prefix}.blocks"))?)
            .map(|j| {
                let block = format!("{prefix}.blocks.{j}");
                Ok((
                    AdaIn::load(w, &format!("{block}.0.weight"), channels)?,
                    ResBlock::load(w, &format!("{block}.1"), channels)?,
                    AdaIn::load(w, &format!("{block}.2.weight"), channels)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        if blocks.is_empty() {
            bail!("{}: `{prefix}` has no blocks", w.source().display());
        }
        Ok(Self {
            input_conv: Conv1d::load(w, &input, ConvOptions::padding(3))?,
            blocks,
        })
    }

    fn out_channels(&self) -> i64 {
        self.input_conv.out_channels()
    }

    fn forward(&self, x: &Tensor, noise: &mut NoiseSource) -> Tensor {
        let x = self.input_conv.forward(x);
        let outputs: Vec<Tensor> = self
            .blocks
            .iter()
            .map(|(before, block, after)| {
                after.forward(&block.forward(&before.forward(&x, noise)), noise)
            })
            .collect();
        Tensor::stack(&outputs, 0).mean_dim(0, false, None)
    }
}

/// RefineGAN generator: latent `[batch, inter, frames]` and its excitation
/// `[batch, 1, frames × hop]` → audio `[batch, 1, frames × hop]`.
pub struct RefineGan {
    pre_conv: Conv1d,
    /// The pitch path's steps down: resampling by the stage's factor, then a convolution.
    downsamples: Vec<(Downsample, Conv1d)>,
    mel_conv: Conv1d,
    cond: Option<Conv1d>,
    /// The latent's steps up: linear upsampling by the rate, then a parallel residual block.
    upsamples: Vec<(i64, ParallelResBlock)>,
    conv_post: Conv1d,
}

impl RefineGan {
    /// The generator under `dec` for latent of `inter_channels`, speaker condition of
    /// `gin_channels` and the config's upsampling `rates` (the pitch path goes down by them in
    /// reverse).
    pub fn load(
        w: &Weights,
        inter_channels: i64,
        gin_channels: i64,
        rates: &[i64],
        device: Device,
    ) -> Result<Self> {
        let pre_conv = "dec.pre_conv";
        let kind = w.weight(pre_conv)?.kind();
        let mut pitch_channels = weight_shape(w, pre_conv, 3)?[0];
        check_weight(w, pre_conv, &[pitch_channels, 1, 7])?;
        let mut levels = Vec::with_capacity(rates.len());
        let mut downsamples = Vec::with_capacity(rates.len());
        for (i, &factor) in rates.iter().rev().enumerate() {
            levels.push(pitch_channels);
            let name = format!("dec.downsample_blocks.{i}");
            let out = weight_shape(w, &name, 3)?[0];
            check_weight(w, &name, &[out, pitch_channels, 7])?;
            downsamples.push((
                Downsample::new(factor, device, kind),
                Conv1d::load(w, &name, ConvOptions::padding(3))?,
            ));
            pitch_channels = out;
        }
        let mel_conv = "dec.mel_conv";
        let mel_channels = weight_shape(w, mel_conv, 3)?[0];
        check_weight(w, mel_conv, &[mel_channels, inter_channels, 7])?;
        let cond = if w.contains("dec.cond.weight") && gin_channels > 0 {
            check_weight(w, "dec.cond", &[mel_channels, gin_channels, 1])?;
            Some(Conv1d::load(w, "dec.cond", ConvOptions::default())?)
        } else {
            None
        };
        let mut channels = mel_channels + pitch_channels;
        let mut upsamples = Vec::with_capacity(rates.len());
        for (i, (&rate, level)) in rates.iter().zip(levels.iter().rev()).enumerate() {
            let name = format!("dec.upsample_conv_blocks.{i}");
            let block = ParallelResBlock::load(w, &name, channels + level)?;
            channels = block.out_channels();
            upsamples.push((rate, block));
        }
        check_weight(w, "dec.conv_post", &[1, channels, 7])?;
        Ok(Self {
            pre_conv: Conv1d::load(w, pre_conv, ConvOptions::padding(3))?,
            downsamples,
            mel_conv: Conv1d::load(w, mel_conv, ConvOptions::padding(3))?,
            cond,
            upsamples,
            conv_post: Conv1d::load(w, "dec.conv_post", ConvOptions::padding(3))?,
        })
    }

    /// `mel` is the latent `[batch, inter, frames]`, `excitation` `[batch, 1, frames × hop]`,
    /// `g` the speaker condition `[batch, gin, 1]`.
    pub fn forward(
        &self,
        mel: &Tensor,
        excitation: &Tensor,
        g: Option<&Tensor>,
        noise: &mut NoiseSource,
    ) -> Tensor {
        let mut x = self.pre_conv.forward(excitation);
        let mut levels = Vec::with_capacity(self.downsamples.len());
        for (downsample, conv) in &self.downsamples {
            x = leaky_relu(&x);
            levels.push(x.shallow_clone());
            x = conv.forward(&downsample.forward(&x));
        }
        let mut mel = self.mel_conv.forward(mel);
        if let (Some(cond), Some(g)) = (&self.cond, g) {
            mel += cond.forward(g);
        }
        let mut x = Tensor::cat(&[mel, x], 1);
        for ((rate, block), level) in self.upsamples.iter().zip(levels.iter().rev()) {
            let x_up = leaky_relu(&x);
            let length = x_up.size()[2] * rate;
            let x_up = x_up.upsample_linear1d([length], false, Some(*rate as f64));
            x = block.forward(&Tensor::cat(&[&x_up, level], 1), noise);
        }
        self.conv_post.forward(&leaky_relu(&x)).tanh()
    }
}

/// The parts' behaviour against torchaudio's and torch's, which the fixture parity cannot
/// separate.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bessel_i0_matches_known_values() {
        // scipy.special.i0
        for (x, expected) in [
            (0.0, 1.0),
            (1.0, 1.266_065_877_752_008_4),
            (14.769_656_459_379_492, 271_903.640_681_456_6),
        ] {
            let got = bessel_i0(x);
            assert!(
                ((got - expected) / expected).abs() < 1e-9,
                "i0({x}) = {got}, expected {expected}"
            );
        }
    }

    #[test]
    fn the_downsampler_keeps_a_low_tone_and_removes_one_above_the_new_nyquist() {
        let (factor, length) = (4, 4096);
        let tone = |cycles_per_sample: f64| {
            let samples: Vec<f32> = (0..length)
                .map(|n| (2.0 * PI * cycles_per_sample * n as f64).sin() as f32)
                .collect();
            Tensor::from_slice(&samples).view([1, 1, -1])
        };
        let downsample = Downsample::new(factor, Device::Cpu, Kind::Float);
        let rms = |x: &Tensor| {
            let middle = x.narrow(2, 100, x.size()[2] - 200);
            middle.square().mean(Kind::Double).sqrt().double_value(&[])
        };
        let low = downsample.forward(&tone(0.02));
        assert_eq!(low.size(), [1, 1, length / factor]);
        assert!((rms(&low) - 0.5f64.sqrt()).abs() < 0.01, "{}", rms(&low));
        let high = downsample.forward(&tone(0.2));
        assert!(rms(&high) < 1e-3, "{}", rms(&high));
    }
}
