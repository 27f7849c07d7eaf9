//! The band-split core both RoFormers share, as in ZFTurbo/Music-Source-Separation-Training
//! `models/bs_roformer/bs_roformer.py` and `mel_band_roformer.py`: BandSplit, the axial
//! (time, then frequency) transformer stack, and MaskEstimator.

use anyhow::Result;
use tch::Tensor;

use super::params::Params;
use super::transformer::{Dims, RmsNorm, Transformer};
use crate::layers::Linear;

/// Per band: RMSNorm then Linear to `dim` (`to_features.{b}.0`, `.1`).
pub(super) struct BandSplit {
    bands: Vec<(RmsNorm, Linear)>,
    widths: Vec<i64>,
}

impl BandSplit {
    /// `widths`: features per band (bins × channels × 2 for real and imaginary parts).
    pub(super) fn load(p: &Params, dim: i64, widths: &[i64]) -> Result<Self> {
        let bands = widths
            .iter()
            .enumerate()
            .map(|(b, &width)| {
                let band = p.at(format!("to_features.{b}"));
                Ok((
                    RmsNorm::load(&band.at(0), width)?,
                    band.linear("1", width, dim, true)?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            bands,
            widths: widths.to_vec(),
        })
    }

    /// `[batch, time, Σ widths]` → `[batch, time, bands, dim]`.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let features: Vec<Tensor> = x
            .split_with_sizes(self.widths.as_slice(), -1)
            .iter()
            .zip(&self.bands)
            .map(|(band, (norm, linear))| linear.forward(&norm.forward(band)))
            .collect();
        Tensor::stack(&features, -2)
    }
}

/// Per band: an MLP with tanh between its layers, then a GLU halving it back to the band's width
/// (`to_freqs.{b}.0.{2i}`).
pub(super) struct MaskEstimator {
    bands: Vec<Vec<Linear>>,
}

impl MaskEstimator {
    /// `layers`: the MLP's linear layers (upstream: `depth` for BS, `depth + 1` for Mel-Band).
    pub(super) fn load(
        p: &Params,
        dim: i64,
        hidden: i64,
        layers: i64,
        widths: &[i64],
    ) -> Result<Self> {
        let bands = widths
            .iter()
            .enumerate()
            .map(|(b, &width)| {
                let mlp = p.at(format!("to_freqs.{b}.0"));
                (0..layers)
                    .map(|i| {
                        let input = if i == 0 { dim } else { hidden };
                        let output = if i == layers - 1 { width * 2 } else { hidden };
                        mlp.linear(&(2 * i).to_string(), input, output, true)
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(Self { bands })
    }

    /// `[batch, time, bands, dim]` → `[batch, time, Σ widths]`.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let masks: Vec<Tensor> = x
            .unbind(-2)
            .iter()
            .zip(&self.bands)
            .map(|(features, mlp)| {
                let mut h = features.shallow_clone();
                for (i, linear) in mlp.iter().enumerate() {
                    h = linear.forward(&h);
                    if i + 1 < mlp.len() {
                        h = h.tanh();
                    }
                }
                h.glu(-1)
            })
            .collect();
        Tensor::cat(&masks, -1)
    }
}

/// One layer of the axial stack (`layers.{i}`): an optional linear-attention transformer over
/// all time-frequency tokens, then a transformer along time and one along frequency.
struct AxialLayer {
    linear: Option<Transformer>,
    time: Transformer,
    freq: Transformer,
}

pub(super) struct AxialDepths {
    pub depth: i64,
    pub linear: i64,
    pub time: i64,
    pub freq: i64,
}

pub(super) struct AxialTransformer {
    layers: Vec<AxialLayer>,
    /// Each layer's input gets the outputs of all earlier layers added (`skip_connection`).
    skip_connection: bool,
}

impl AxialTransformer {
    pub(super) fn load(
        p: &Params,
        dims: &Dims,
        depths: &AxialDepths,
        norm_output: bool,
        skip_connection: bool,
    ) -> Result<Self> {
        let layers = (0..depths.depth)
            .map(|i| {
                let layer = p.at(format!("layers.{i}"));
                let offset = (depths.linear > 0) as i64;
                let linear = if depths.linear > 0 {
                    Some(Transformer::load_linear(
                        &layer.at(0),
                        dims,
                        depths.linear,
                        norm_output,
                    )?)
                } else {
                    None
                };
                Ok(AxialLayer {
                    linear,
                    time: Transformer::load(&layer.at(offset), dims, depths.time, norm_output)?,
                    freq: Transformer::load(&layer.at(offset + 1), dims, depths.freq, norm_output)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            layers,
            skip_connection,
        })
    }

    /// `x`: `[batch, time, bands, dim]`.
    pub(super) fn forward(&self, x: &Tensor) -> Tensor {
        let size = x.size();
        let (batch, time, bands, dim) = (size[0], size[1], size[2], size[3]);
        let mut x = x.shallow_clone();
        let mut outputs: Vec<Tensor> = Vec::new();
        for layer in &self.layers {
            if let Some(linear) = &layer.linear {
                x = linear
                    .forward(&x.reshape([batch, time * bands, dim]))
                    .reshape([batch, time, bands, dim]);
            }
            // Out of place: `outputs` shares storage with earlier values of `x`.
            x = outputs.iter().fold(x, |sum, earlier| sum + earlier);
            // b t f d -> (b f) t d
            let along_time = x.permute([0, 2, 1, 3]).reshape([batch * bands, time, dim]);
            let along_time = layer
                .time
                .forward(&along_time)
                .reshape([batch, bands, time, dim]);
            // b f t d -> (b t) f d
            let along_freq = along_time
                .permute([0, 2, 1, 3])
                .reshape([batch * time, bands, dim]);
            x = layer
                .freq
                .forward(&along_freq)
                .reshape([batch, time, bands, dim]);
            if self.skip_connection {
                outputs.push(x.shallow_clone());
            }
        }
        x
    }
}
