//! The building blocks of MSST's `models/scnet/scnet.py` and `models/scnet/separation.py`
//! (commit ccc011a): `ConvolutionModule`, `SDblock` (with its `SDlayer`), the decoder's
//! `FusionLayer` + `SUlayer`, and the separation network's `DualPathRNN` and
//! `FeatureConversion`.

use anyhow::Result;
use tch::{Kind, Tensor};

use super::config::{Band, ScnetModel};
use crate::separation::params::Params;

/// PyTorch's default `eps` of GroupNorm.
const NORM_EPS: f64 = 1e-5;

/// A layer's `weight` and `bias`.
struct Affine {
    weight: Tensor,
    bias: Tensor,
}

impl Affine {
    fn load(p: &Params, weight: &[i64], bias: i64) -> Result<Self> {
        Ok(Self {
            weight: p.tensor("weight", weight)?,
            bias: p.tensor("bias", &[bias])?,
        })
    }

    /// `nn.GroupNorm(1, channels)` on `[batch, channels, …]`.
    fn group_norm(&self, x: &Tensor) -> Tensor {
        x.group_norm(1, Some(&self.weight), Some(&self.bias), NORM_EPS, true)
    }

    /// `nn.Conv1d` with `padding` and `groups`.
    fn conv1d(&self, x: &Tensor, padding: i64, groups: i64) -> Tensor {
        x.conv1d(&self.weight, Some(&self.bias), [1], [padding], [1], groups)
    }

    /// `nn.Conv2d` with `stride` and `padding`.
    fn conv2d(&self, x: &Tensor, stride: [i64; 2], padding: [i64; 2]) -> Tensor {
        x.conv2d(&self.weight, Some(&self.bias), stride, padding, [1, 1], 1)
    }
}

/// One residual layer of `ConvolutionModule`: its `nn.Sequential` at 0, 1, 3, 4 and 6.
struct ConvLayer {
    norm: Affine,
    expand: Affine,
    depthwise: Affine,
    hidden_norm: Affine,
    project: Affine,
}

/// Upstream `ConvolutionModule`: residual 1-d convolutions over time, on `[n, channels, time]`.
struct ConvolutionModule {
    layers: Vec<ConvLayer>,
    kernel: i64,
    hidden: i64,
}

impl ConvolutionModule {
    fn load(p: &Params, m: &ScnetModel, channels: i64, depth: i64) -> Result<Self> {
        let (h, k) = (m.hidden(channels), m.conv_kernel);
        let layers = (0..depth.abs())
            .map(|l| {
                let p = p.at(format!("layers.{l}"));
                Ok(ConvLayer {
                    norm: Affine::load(&p.at("0"), &[channels], channels)?,
                    expand: Affine::load(&p.at("1"), &[2 * h, channels, k], 2 * h)?,
                    depthwise: Affine::load(&p.at("3"), &[h, 1, k], h)?,
                    hidden_norm: Affine::load(&p.at("4"), &[h], h)?,
                    project: Affine::load(&p.at("6"), &[channels, h, 1], channels)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            layers,
            kernel: k,
            hidden: h,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let pad = self.kernel / 2;
        let mut x = x.shallow_clone();
        for layer in &self.layers {
            let y = layer
                .expand
                .conv1d(&layer.norm.group_norm(&x), pad, 1)
                .glu(1);
            let y = layer
                .hidden_norm
                .group_norm(&layer.depthwise.conv1d(&y, pad, self.hidden));
            let y = &y * y.sigmoid();
            x = layer.project.conv1d(&y, 0, 1) + &x;
        }
        x
    }
}

/// Upstream `SDblock`: each band down-sampled along frequency and through its convolution
/// module, then the bands joined and mixed by a 3×3 convolution.
pub(super) struct SdBlock {
    bands: [Band; 3],
    strides: [i64; 3],
    convs: Vec<Affine>,
    modules: Vec<ConvolutionModule>,
    global: Affine,
}

impl SdBlock {
    pub(super) fn load(
        p: &Params,
        m: &ScnetModel,
        bands: [Band; 3],
        in_c: i64,
        c: i64,
    ) -> Result<Self> {
        let mut convs = Vec::new();
        let mut modules = Vec::new();
        for b in 0..3 {
            let shape = [c, in_c, m.band_kernel[b], 1];
            convs.push(Affine::load(
                &p.at(format!("SDlayer.convs.{b}")),
                &shape,
                c,
            )?);
            let p = p.at(format!("conv_modules.{b}"));
            modules.push(ConvolutionModule::load(&p, m, c, m.conv_depths[b])?);
        }
        Ok(Self {
            bands,
            strides: [m.band_stride[0], m.band_stride[1], m.band_stride[2]],
            convs,
            modules,
            global: Affine::load(&p.at("globalconv"), &[c, c, 3, 3], c)?,
        })
    }

    /// `[batch, in_c, bins, time]` → the block's output and its skip, both
    /// `[batch, c, bins', time]`.
    pub(super) fn forward(&self, x: &Tensor) -> (Tensor, Tensor) {
        let bands: Vec<Tensor> = (0..3)
            .map(|b| {
                let band = &self.bands[b];
                let part = x.narrow(2, band.start, band.len).constant_pad_nd([
                    0,
                    0,
                    band.pad[0],
                    band.pad[1],
                ]);
                let y = self.convs[b].conv2d(&part, [self.strides[b], 1], [0, 0]);
                let (n, c, f, t) = y.size4().expect("a 4-d band");
                let y = y.permute([0, 2, 1, 3]).reshape([n * f, c, t]);
                self.modules[b]
                    .forward(&y)
                    .view([n, f, c, t])
                    .permute([0, 2, 1, 3])
                    .gelu("none")
            })
            .collect();
        let skip = Tensor::cat(&bands, 2);
        (self.global.conv2d(&skip, [1, 1], [1, 1]), skip)
    }
}

/// One decoder level: upstream `FusionLayer` and `SUlayer` in their `nn.Sequential`.
pub(super) struct SuBlock {
    bands: [Band; 3],
    strides: [i64; 3],
    fusion: Affine,
    convtrs: Vec<Affine>,
}

impl SuBlock {
    pub(super) fn load(
        p: &Params,
        m: &ScnetModel,
        bands: [Band; 3],
        c: i64,
        out_c: i64,
    ) -> Result<Self> {
        let convtrs = (0..3)
            .map(|b| {
                let shape = [c, out_c, m.band_kernel[b], 1];
                Affine::load(&p.at(format!("1.convtrs.{b}")), &shape, out_c)
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            bands,
            strides: [m.band_stride[0], m.band_stride[1], m.band_stride[2]],
            fusion: Affine::load(&p.at("0.conv"), &[2 * c, 2 * c, 3, 3], 2 * c)?,
            convtrs,
        })
    }

    /// `[batch, c, bins', time]` and the encoder's skip at this level → `[batch, out_c, bins,
    /// time]`.
    pub(super) fn forward(&self, x: &Tensor, skip: &Tensor) -> Tensor {
        let x = x + skip;
        let x = self
            .fusion
            .conv2d(&Tensor::cat(&[&x, &x], 1), [1, 1], [1, 1])
            .glu(1);
        let mut offset = 0;
        let bands: Vec<Tensor> = (0..3)
            .map(|b| {
                let band = &self.bands[b];
                let part = x.narrow(2, offset, band.out);
                offset += band.out;
                let conv = &self.convtrs[b];
                part.conv_transpose2d(
                    &conv.weight,
                    Some(&conv.bias),
                    [self.strides[b], 1],
                    [0, 0],
                    [0, 0],
                    1,
                    [1, 1],
                )
                .narrow(2, band.trim, band.len)
            })
            .collect();
        Tensor::cat(&bands, 2)
    }
}

/// A bidirectional single-layer `nn.LSTM(batch_first=True)`: its flat weights in torch's order
/// (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, then the `_reverse` ones), gates
/// input, forget, cell, output as torch packs them.
struct Lstm {
    params: Vec<Tensor>,
    hidden: i64,
}

impl Lstm {
    fn load(p: &Params, input: i64, hidden: i64) -> Result<Self> {
        let gates = 4 * hidden;
        let mut params = Vec::new();
        for suffix in ["l0", "l0_reverse"] {
            params.push(p.tensor(&format!("weight_ih_{suffix}"), &[gates, input])?);
            params.push(p.tensor(&format!("weight_hh_{suffix}"), &[gates, hidden])?);
            params.push(p.tensor(&format!("bias_ih_{suffix}"), &[gates])?);
            params.push(p.tensor(&format!("bias_hh_{suffix}"), &[gates])?);
        }
        Ok(Self { params, hidden })
    }

    /// `[n, steps, input]` → `[n, steps, 2 × hidden]`, from zero states.
    fn forward(&self, x: &Tensor) -> Tensor {
        let zeros = Tensor::zeros([2, x.size()[0], self.hidden], (x.kind(), x.device()));
        let (out, _, _) = x.lstm(
            &[&zeros, &zeros],
            &self.params.iter().collect::<Vec<_>>(),
            true,
            1,
            0.0,
            false,
            true,
            true,
        );
        out
    }
}

/// Upstream `DualPathRNN`: a bidirectional LSTM along frequency, then one along time, each
/// after a GroupNorm and followed by a linear layer, both residual.
pub(super) struct DualPathRnn {
    norms: [Affine; 2],
    lstms: [Lstm; 2],
    linears: [Affine; 2],
}

impl DualPathRnn {
    pub(super) fn load(p: &Params, channels: i64, expand: i64) -> Result<Self> {
        let hidden = channels * expand;
        let norm = |i| Affine::load(&p.at(format!("norm_layers.{i}")), &[channels], channels);
        let lstm = |i| Lstm::load(&p.at(format!("lstm_layers.{i}")), channels, hidden);
        let linear = |i| {
            let p = p.at(format!("linear_layers.{i}"));
            Affine::load(&p, &[channels, 2 * hidden], channels)
        };
        Ok(Self {
            norms: [norm(0)?, norm(1)?],
            lstms: [lstm(0)?, lstm(1)?],
            linears: [linear(0)?, linear(1)?],
        })
    }

    /// `[batch, channels, bins, time]`, the same shape out.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let (b, c, f, t) = x.size4().expect("a 4-d input");
        let path = |i: usize, x: &Tensor| {
            let y = self.lstms[i].forward(x);
            y.linear(&self.linears[i].weight, Some(&self.linears[i].bias))
        };
        // Along frequency: (b t) f c.
        let y = self.norms[0]
            .group_norm(x)
            .transpose(1, 3)
            .reshape([b * t, f, c]);
        let x = path(0, &y).view([b, t, f, c]).transpose(1, 3) + x;
        // Along time: (b f) t c.
        let y = self.norms[1]
            .group_norm(&x)
            .transpose(1, 2)
            .reshape([b * f, c, t])
            .transpose(1, 2);
        path(1, &y)
            .transpose(1, 2)
            .reshape([b, f, c, t])
            .transpose(1, 2)
            + x
    }
}

/// Upstream `FeatureConversion` of `[batch, channels, bins, time]` in float32: `rfft` along time
/// (orthonormal) with the real and imaginary parts stacked as channels, or, `inverse`, the
/// channel halves as real and imaginary parts back through `irfft`.
pub(super) fn feature_conversion(x: &Tensor, inverse: bool) -> Tensor {
    let x = x.to_kind(Kind::Float);
    if inverse {
        let half = x.size()[1] / 2;
        let spectrum = Tensor::complex(&x.narrow(1, 0, half), &x.narrow(1, half, half));
        spectrum.fft_irfft(None, 3, "ortho")
    } else {
        let spectrum = x.fft_rfft(None, 3, "ortho");
        Tensor::cat(&[spectrum.real(), spectrum.imag()], 1)
    }
}
