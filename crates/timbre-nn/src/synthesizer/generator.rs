//! The HiFi-GAN decoder, with or without the NSF excitation: RVC-Project/Retrieval-based-Voice-
//! Conversion-WebUI `infer/lib/infer_pack/models.py` `Generator` and `GeneratorNSF` with
//! `modules.py` `ResBlock1`/`ResBlock2`. Odd upsampling rates follow IAHispano/Applio
//! `rvc/lib/algorithm/generators/hifigan_nsf.py`, the only exporter that writes them. Applio's
//! `hifigan_mrf.py` `HiFiGANMRFGenerator` computes the same stages (an `MRFLayer` is a
//! `ResBlock1` pair; nine harmonics instead of one) under other names: [`Layout::Mrf`].

use anyhow::{Result, bail};
use tch::Tensor;

use super::config::SynthesizerConfig;
use super::shapes::{check_layer, check_weight, layer_count, weight_shape};
use super::vocoder::Vocoder;
use crate::layers::{Conv1d, ConvOptions, channels_last};
use crate::weights::Weights;

const LRELU_SLOPE: f64 = 0.1;
/// `F.leaky_relu`'s default, which the reference uses before `conv_post`.
const FINAL_LRELU_SLOPE: f64 = 0.01;

/// Where a HiFi-GAN generator's layers are in the state dict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// RVC's: `dec.ups.i`, `dec.resblocks.{stage × blocks + j}.convs1.l` / `convs2.l` (or
    /// `ResBlock2`'s `convs.l`).
    Rvc,
    /// MRF HiFi-GAN's: `dec.upsamples.i`, `dec.mrfs.{stage}.{j}.layers.l.conv1` / `conv2`.
    Mrf,
}

impl Layout {
    /// The layout of `vocoder`'s generator; None for one that is not a HiFi-GAN.
    pub fn of(vocoder: Vocoder) -> Option<Self> {
        match vocoder {
            Vocoder::HifiGan => Some(Self::Rvc),
            Vocoder::MrfHifiGan => Some(Self::Mrf),
            Vocoder::RefineGan => None,
        }
    }

    fn upsamples(self) -> &'static str {
        match self {
            Self::Rvc => "dec.ups",
            Self::Mrf => "dec.upsamples",
        }
    }

    pub fn upsample(self, stage: usize) -> String {
        format!("{}.{stage}", self.upsamples())
    }

    /// Upsampling layers in `w`.
    pub fn stages(self, w: &Weights) -> Result<usize> {
        layer_count(w, self.upsamples())
    }

    /// Residual blocks per stage in `w`, which has `stages` of them.
    pub fn blocks_per_stage(self, w: &Weights, stages: usize) -> Result<usize> {
        let (blocks, per_stage) = match self {
            Self::Rvc => {
                let blocks = layer_count(w, "dec.resblocks")?;
                (blocks, blocks / stages.max(1))
            }
            Self::Mrf => {
                let per_stage = layer_count(w, "dec.mrfs.0")?;
                (layer_count(w, "dec.mrfs")? * per_stage, per_stage)
            }
        };
        if blocks == 0 || per_stage * stages != blocks {
            bail!(
                "{}: {blocks} residual blocks do not split evenly over {stages} upsampling layers",
                w.source().display()
            );
        }
        Ok(per_stage)
    }

    pub fn block(self, stage: usize, j: usize, per_stage: usize) -> String {
        match self {
            Self::Rvc => format!("dec.resblocks.{}", stage * per_stage + j),
            Self::Mrf => format!("dec.mrfs.{stage}.{j}"),
        }
    }

    /// The dilated and the plain convolution of step `l` of a `ResBlock1` block.
    pub fn pair(self, block: &str, l: usize) -> (String, String) {
        match self {
            Self::Rvc => (format!("{block}.convs1.{l}"), format!("{block}.convs2.{l}")),
            Self::Mrf => (
                format!("{block}.layers.{l}.conv1"),
                format!("{block}.layers.{l}.conv2"),
            ),
        }
    }

    /// The steps of block `block` (pairs, or RVC's `ResBlock2` singles).
    pub fn steps(self, w: &Weights, block: &str, resblock: &str) -> Result<usize> {
        match (self, resblock) {
            (Self::Rvc, "1") => layer_count(w, &format!("{block}.convs1")),
            (Self::Rvc, _) => layer_count(w, &format!("{block}.convs")),
            (Self::Mrf, _) => layer_count(w, &format!("{block}.layers")),
        }
    }

    /// `"1"` when block 0 of `w` is made of pairs, `"2"` of single convolutions.
    pub fn resblock_kind(self, w: &Weights) -> &'static str {
        let pairs = self.pair(&self.block(0, 0, 1), 0).0;
        if self == Self::Mrf || w.names().any(|n| n.starts_with(&format!("{pairs}."))) {
            "1"
        } else {
            "2"
        }
    }
}

/// `F.leaky_relu(x, slope)`: tch's `leaky_relu` has no slope, and `prelu` with one shared
/// slope is the same single fused pass.
fn leaky_relu(x: &Tensor, slope: f64) -> Tensor {
    x.prelu(&Tensor::full([1], slope, (x.kind(), x.device())))
}

/// A weight-normalised ConvTranspose1d with an output padding (which `layers` does not take).
struct Upsample {
    weight: Tensor,
    bias: Option<Tensor>,
    stride: i64,
    padding: i64,
    output_padding: i64,
}

impl Upsample {
    fn load(
        w: &Weights,
        prefix: &str,
        in_channels: i64,
        out_channels: i64,
        rate: i64,
    ) -> Result<Self> {
        let kernel_size = weight_shape(w, prefix, 3)?[2];
        check_layer(
            w,
            prefix,
            &[in_channels, out_channels, kernel_size],
            out_channels,
        )?;
        let (padding, output_padding) = if rate % 2 == 0 {
            ((kernel_size - rate) / 2, 0)
        } else {
            (rate / 2 + 1, 1)
        };
        // Output length (L - 1)·rate - 2·padding + kernel + output_padding must be L·rate.
        if kernel_size - rate - 2 * padding + output_padding != 0 {
            bail!(
                "{}: `{prefix}` has a kernel of {kernel_size}, with which rate {rate} does not upsample exactly",
                w.source().display()
            );
        }
        Ok(Self {
            weight: w.weight(prefix)?,
            bias: w.get_opt(&format!("{prefix}.bias")),
            stride: rate,
            padding,
            output_padding,
        })
    }

    /// Over rows `[batch, channels, 1, time]`, as the whole decoder runs.
    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv_transpose2d(
            &self.weight.unsqueeze(2),
            self.bias.as_ref(),
            [1, self.stride],
            [0, self.padding],
            [0, self.output_padding],
            1,
            [1, 1],
        )
    }
}

/// `ResBlock1` (pairs of a dilated and an undilated convolution) or `ResBlock2` (single dilated
/// convolutions), each step residual.
enum ResBlock {
    Pairs(Vec<(Conv1d, Conv1d)>),
    Singles(Vec<Conv1d>),
}

impl ResBlock {
    fn load(
        w: &Weights,
        layout: Layout,
        block: &str,
        kind: &str,
        channels: i64,
        kernel_size: i64,
        dilations: &[i64],
    ) -> Result<Self> {
        let conv = |name: String, dilation: i64| -> Result<Conv1d> {
            check_weight(w, &name, &[channels, channels, kernel_size])?;
            if kernel_size % 2 == 0 {
                bail!(
                    "{}: `{name}` has an even kernel ({kernel_size}); residual blocks need odd ones",
                    w.source().display()
                );
            }
            let options = ConvOptions {
                dilation,
                padding: (kernel_size * dilation - dilation) / 2,
                ..ConvOptions::default()
            };
            Conv1d::load(w, &name, options)
        };
        Ok(if kind == "1" {
            let pairs = dilations.iter().enumerate().map(|(l, &d)| {
                let (dilated, plain) = layout.pair(block, l);
                Ok((conv(dilated, d)?, conv(plain, 1)?))
            });
            Self::Pairs(pairs.collect::<Result<_>>()?)
        } else {
            let singles = dilations
                .iter()
                .enumerate()
                .map(|(l, &d)| conv(format!("{block}.convs.{l}"), d));
            Self::Singles(singles.collect::<Result<_>>()?)
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let mut x = x.shallow_clone();
        match self {
            Self::Pairs(pairs) => {
                for (dilated, plain) in pairs {
                    let xt = dilated.forward_rows(&leaky_relu(&x, LRELU_SLOPE));
                    let mut y = plain.forward_rows(&leaky_relu(&xt, LRELU_SLOPE));
                    y += &x;
                    x = y;
                }
            }
            Self::Singles(convs) => {
                for conv in convs {
                    let mut y = conv.forward_rows(&leaky_relu(&x, LRELU_SLOPE));
                    y += &x;
                    x = y;
                }
            }
        }
        x
    }
}

struct Stage {
    upsample: Upsample,
    /// Brings the sample-rate excitation down to this stage's rate (NSF only).
    noise_conv: Option<Conv1d>,
    resblocks: Vec<ResBlock>,
}

/// HiFi-GAN generator: latent `[batch, inter, frames]` → audio `[batch, 1, frames × hop]`.
pub struct Generator {
    conv_pre: Conv1d,
    cond: Option<Conv1d>,
    stages: Vec<Stage>,
    conv_post: Conv1d,
}

impl Generator {
    /// The generator under `dec` in `layout`; `config` is the effective one (sizes checked
    /// against the weights). With `nsf`, each stage also has the `noise_convs` that inject the
    /// excitation.
    pub fn load(
        w: &Weights,
        layout: Layout,
        config: &SynthesizerConfig,
        nsf: bool,
    ) -> Result<Self> {
        let prefix = "dec";
        let initial = config.upsample_initial_channel;
        check_weight(
            w,
            &format!("{prefix}.conv_pre"),
            &[initial, config.inter_channels, 7],
        )?;
        let rates = &config.upsample_rates;
        let mut stages = Vec::with_capacity(rates.len());
        let mut channels = initial;
        for (i, &rate) in rates.iter().enumerate() {
            let out_channels = channels / 2;
            let upsample = Upsample::load(w, &layout.upsample(i), channels, out_channels, rate)?;
            let noise_conv = if nsf {
                let name = format!("{prefix}.noise_convs.{i}");
                let stride: i64 = rates[i + 1..].iter().product();
                let kernel_size = weight_shape(w, &name, 3)?[2];
                if kernel_size < stride || (kernel_size - stride) % 2 != 0 {
                    bail!(
                        "{}: `{name}` has a kernel of {kernel_size}, which does not downsample exactly by {stride}",
                        w.source().display()
                    );
                }
                check_weight(w, &name, &[out_channels, 1, kernel_size])?;
                let options = ConvOptions {
                    stride,
                    padding: (kernel_size - stride) / 2,
                    ..ConvOptions::default()
                };
                Some(Conv1d::load(w, &name, options)?)
            } else {
                None
            };
            let kernels = config
                .resblock_kernel_sizes
                .iter()
                .zip(&config.resblock_dilation_sizes);
            let per_stage = config.resblock_kernel_sizes.len();
            let resblocks = kernels
                .enumerate()
                .map(|(j, (&kernel_size, dilations))| {
                    ResBlock::load(
                        w,
                        layout,
                        &layout.block(i, j, per_stage),
                        &config.resblock,
                        out_channels,
                        kernel_size,
                        dilations,
                    )
                })
                .collect::<Result<_>>()?;
            stages.push(Stage {
                upsample,
                noise_conv,
                resblocks,
            });
            channels = out_channels;
        }
        check_weight(w, &format!("{prefix}.conv_post"), &[1, channels, 7])?;
        let cond_name = format!("{prefix}.cond");
        let cond = if config.gin_channels > 0 {
            check_weight(w, &cond_name, &[initial, config.gin_channels, 1])?;
            Some(Conv1d::load(w, &cond_name, ConvOptions::default())?)
        } else {
            None
        };
        Ok(Self {
            conv_pre: Conv1d::load(w, &format!("{prefix}.conv_pre"), ConvOptions::padding(3))?,
            cond,
            stages,
            conv_post: Conv1d::load(w, &format!("{prefix}.conv_post"), ConvOptions::padding(3))?,
        })
    }

    /// `x` `[batch, inter, frames]`, speaker condition `g` `[batch, gin, 1]`, and for an NSF
    /// generator the excitation `[batch, 1, frames × hop]`.
    pub fn forward(&self, x: &Tensor, g: Option<&Tensor>, excitation: Option<&Tensor>) -> Tensor {
        let mut x = self.conv_pre.forward_rows(&channels_last_rows(x));
        if let (Some(cond), Some(g)) = (&self.cond, g) {
            x += cond.forward(g).unsqueeze(2);
        }
        let excitation = excitation.map(channels_last_rows);
        for stage in &self.stages {
            x = stage.upsample.forward(&leaky_relu(&x, LRELU_SLOPE));
            if let (Some(noise_conv), Some(excitation)) = (&stage.noise_conv, &excitation) {
                x += noise_conv.forward_rows(excitation);
            }
            let sum = stage
                .resblocks
                .iter()
                .map(|block| block.forward(&x))
                .reduce(|mut sum, y| {
                    sum += y;
                    sum
                });
            if let Some(mut sum) = sum {
                sum /= stage.resblocks.len() as f64;
                x = sum;
            }
        }
        self.conv_post
            .forward_rows(&leaky_relu(&x, FINAL_LRELU_SLOPE))
            .tanh()
            .squeeze_dim(2)
            .contiguous()
    }
}

/// `[batch, channels, time]` → rows `[batch, channels, 1, time]` stored channels-last (time
/// major), the layout the whole decoder runs in.
fn channels_last_rows(x: &Tensor) -> Tensor {
    channels_last(&x.unsqueeze(2))
}
