//! The building blocks of MSST's `models/mdx23c_tfc_tdf_v3.py` (commit ccc011a): the norms of
//! `get_norm`, the activations of `get_act`, the `nn.Sequential(norm, act, op)` steps every
//! layer is, and `TFC_TDF`, the residual blocks at each scale of the U-Net.

use anyhow::Result;
use tch::Tensor;

use super::config::{Act, Norm};
use crate::separation::params::Params;

/// PyTorch's default `eps` of BatchNorm2d, InstanceNorm2d and GroupNorm.
const NORM_EPS: f64 = 1e-5;

/// One of upstream's norm modules, loaded.
enum NormLayer {
    Batch {
        weight: Tensor,
        bias: Tensor,
        mean: Tensor,
        var: Tensor,
    },
    Instance {
        weight: Tensor,
        bias: Tensor,
    },
    Group {
        groups: i64,
        weight: Tensor,
        bias: Tensor,
    },
    Identity,
}

impl NormLayer {
    fn load(p: &Params, norm: Norm, channels: i64) -> Result<Self> {
        let affine = || -> Result<(Tensor, Tensor)> {
            Ok((
                p.tensor("weight", &[channels])?,
                p.tensor("bias", &[channels])?,
            ))
        };
        Ok(match norm {
            Norm::Batch => {
                let (weight, bias) = affine()?;
                p.skip_if_present("num_batches_tracked");
                Self::Batch {
                    weight,
                    bias,
                    mean: p.tensor("running_mean", &[channels])?,
                    var: p.tensor("running_var", &[channels])?,
                }
            }
            Norm::Instance => {
                let (weight, bias) = affine()?;
                Self::Instance { weight, bias }
            }
            Norm::Group(groups) => {
                let (weight, bias) = affine()?;
                Self::Group {
                    groups,
                    weight,
                    bias,
                }
            }
            Norm::Identity => Self::Identity,
        })
    }

    /// `[batch, channels, …]`, normalised per channel (evaluation mode).
    fn forward(&self, x: &Tensor) -> Tensor {
        match self {
            Self::Batch {
                weight,
                bias,
                mean,
                var,
            } => x.batch_norm(
                Some(weight),
                Some(bias),
                Some(mean),
                Some(var),
                false,
                0.0,
                NORM_EPS,
                true,
            ),
            Self::Instance { weight, bias } => x.instance_norm(
                Some(weight),
                Some(bias),
                None::<&Tensor>,
                None,
                true,
                0.0,
                NORM_EPS,
                true,
            ),
            Self::Group {
                groups,
                weight,
                bias,
            } => x.group_norm(*groups, Some(weight), Some(bias), NORM_EPS, true),
            Self::Identity => x.shallow_clone(),
        }
    }
}

impl Act {
    /// The activation of `x`, elementwise.
    pub(super) fn forward(self, x: &Tensor) -> Tensor {
        match self {
            Self::Gelu => x.gelu("none"),
            Self::Relu => x.relu(),
            // x for x > 0, else alpha · (eˣ − 1).
            Self::Elu(alpha) => x.clamp_min(0.0) + x.clamp_max(0.0).expm1() * alpha,
        }
    }
}

/// What a step applies after its norm and activation; every one is bias-free.
#[derive(Clone, Copy)]
pub(super) enum Op {
    /// `nn.Conv2d` with the same kernel-derived stride and padding on both axes as given.
    Conv { stride: [i64; 2], padding: [i64; 2] },
    /// `nn.ConvTranspose2d` with stride equal to its kernel.
    ConvTranspose { stride: [i64; 2] },
    /// `nn.Linear` along the last axis.
    Linear,
}

/// Upstream's `nn.Sequential(norm, act, op)` at `p`: the norm at `0`, the op's weight at `2`.
pub(super) struct Step {
    norm: NormLayer,
    op: Op,
    weight: Tensor,
}

impl Step {
    pub(super) fn load(
        p: &Params,
        net: &Design,
        channels: i64,
        op: Op,
        weight: &[i64],
    ) -> Result<Self> {
        Ok(Self {
            norm: NormLayer::load(&p.at("0"), net.norm, channels)?,
            weight: p.at("2").tensor("weight", weight)?,
            op,
        })
    }

    pub(super) fn forward(&self, x: &Tensor, act: Act) -> Tensor {
        let x = act.forward(&self.norm.forward(x));
        match self.op {
            Op::Conv { stride, padding } => {
                x.conv2d(&self.weight, None::<&Tensor>, stride, padding, [1, 1], 1)
            }
            Op::ConvTranspose { stride } => x.conv_transpose2d(
                &self.weight,
                None::<&Tensor>,
                stride,
                [0, 0],
                [0, 0],
                1,
                [1, 1],
            ),
            Op::Linear => x.linear(&self.weight, None::<&Tensor>),
        }
    }
}

/// What every block is built from, as the config gives it.
pub(super) struct Design {
    /// `model.norm`.
    pub(super) norm: Norm,
    /// `model.scale`: `[time, frequency]`.
    pub(super) scale: [i64; 2],
    /// `model.num_blocks_per_scale`.
    pub(super) blocks: i64,
    /// `model.bottleneck_factor`.
    pub(super) bottleneck: i64,
}

/// One residual block of upstream's `TFC_TDF`.
struct Block {
    tfc1: Step,
    tdf1: Step,
    tdf2: Step,
    tfc2: Step,
    shortcut: Tensor,
}

/// Upstream's `TFC_TDF`: `num_blocks_per_scale` blocks on `[batch, channels, time, bins]`.
pub(super) struct TfcTdf {
    blocks: Vec<Block>,
}

impl TfcTdf {
    pub(super) fn load(p: &Params, net: &Design, mut in_c: i64, c: i64, bins: i64) -> Result<Self> {
        let conv3 = || Op::Conv {
            stride: [1, 1],
            padding: [1, 1],
        };
        let narrow = bins / net.bottleneck;
        let blocks = (0..net.blocks)
            .map(|i| {
                let p = p.at(format!("blocks.{i}"));
                let block = Block {
                    tfc1: Step::load(&p.at("tfc1"), net, in_c, conv3(), &[c, in_c, 3, 3])?,
                    tdf1: Step::load(&p.at("tdf"), net, c, Op::Linear, &[narrow, bins])?,
                    tdf2: Step {
                        norm: NormLayer::load(&p.at("tdf.3"), net.norm, c)?,
                        weight: p.at("tdf.5").tensor("weight", &[bins, narrow])?,
                        op: Op::Linear,
                    },
                    tfc2: Step::load(&p.at("tfc2"), net, c, conv3(), &[c, c, 3, 3])?,
                    shortcut: p.at("shortcut").tensor("weight", &[c, in_c, 1, 1])?,
                };
                in_c = c;
                Ok(block)
            })
            .collect::<Result<_>>()?;
        Ok(Self { blocks })
    }

    pub(super) fn forward(&self, x: &Tensor, act: Act) -> Tensor {
        let mut x = x.shallow_clone();
        for block in &self.blocks {
            let s = x.conv2d(&block.shortcut, None::<&Tensor>, [1, 1], [0, 0], [1, 1], 1);
            x = block.tfc1.forward(&x, act);
            x = &x + block.tdf2.forward(&block.tdf1.forward(&x, act), act);
            x = block.tfc2.forward(&x, act) + s;
        }
        x
    }
}
