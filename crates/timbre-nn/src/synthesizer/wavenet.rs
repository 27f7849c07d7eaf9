//! The WaveNet of the flow's coupling layers and of the posterior encoder:
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/modules.py` `WN`.

use anyhow::{Result, bail};
use tch::Tensor;

use super::shapes::{check_weight, layer_count, weight_shape};
use crate::layers::{Conv1d, ConvOptions};
use crate::weights::Weights;

/// WaveNet-style stack of gated dilated convolutions with a speaker condition.
pub struct WaveNet {
    in_layers: Vec<Conv1d>,
    res_skip_layers: Vec<Conv1d>,
    cond_layer: Option<Conv1d>,
    hidden_channels: i64,
}

impl WaveNet {
    /// RVC builds every WN (the flow's and the posterior encoder's) with dilation rate 1, which
    /// the weights cannot show.
    pub fn load(w: &Weights, prefix: &str, hidden: i64, gin_channels: i64) -> Result<Self> {
        let n_layers = layer_count(w, &format!("{prefix}.in_layers"))?;
        if n_layers == 0 || layer_count(w, &format!("{prefix}.res_skip_layers"))? != n_layers {
            bail!(
                "{}: `{prefix}` needs as many res_skip_layers as in_layers (at least one)",
                w.source().display()
            );
        }
        let mut in_layers = Vec::with_capacity(n_layers);
        let mut res_skip_layers = Vec::with_capacity(n_layers);
        for i in 0..n_layers {
            let name = format!("{prefix}.in_layers.{i}");
            let kernel_size = weight_shape(w, &name, 3)?[2];
            if kernel_size % 2 == 0 {
                bail!(
                    "{}: `{name}` has an even kernel ({kernel_size}); WaveNet layers need odd ones",
                    w.source().display()
                );
            }
            check_weight(w, &name, &[2 * hidden, hidden, kernel_size])?;
            in_layers.push(Conv1d::load(
                w,
                &name,
                ConvOptions::padding((kernel_size - 1) / 2),
            )?);
            let name = format!("{prefix}.res_skip_layers.{i}");
            let out = if i + 1 < n_layers { 2 * hidden } else { hidden };
            check_weight(w, &name, &[out, hidden, 1])?;
            res_skip_layers.push(Conv1d::load(w, &name, ConvOptions::default())?);
        }
        let cond_name = format!("{prefix}.cond_layer");
        let cond_layer = if gin_channels > 0 {
            check_weight(
                w,
                &cond_name,
                &[2 * hidden * n_layers as i64, gin_channels, 1],
            )?;
            Some(Conv1d::load(w, &cond_name, ConvOptions::default())?)
        } else {
            None
        };
        Ok(Self {
            in_layers,
            res_skip_layers,
            cond_layer,
            hidden_channels: hidden,
        })
    }

    pub fn forward(&self, x: &Tensor, x_mask: &Tensor, g: Option<&Tensor>) -> Tensor {
        let hidden = self.hidden_channels;
        let condition = match (&self.cond_layer, g) {
            (Some(cond_layer), Some(g)) => Some(cond_layer.forward(g)),
            _ => None,
        };
        let last = self.in_layers.len() - 1;
        let mut x = x.shallow_clone();
        let mut output = x.zeros_like();
        for (i, (in_layer, res_skip_layer)) in
            self.in_layers.iter().zip(&self.res_skip_layers).enumerate()
        {
            let mut x_in = in_layer.forward(&x);
            if let Some(condition) = &condition {
                x_in += condition.narrow(1, 2 * hidden * i as i64, 2 * hidden);
            }
            let acts = x_in.narrow(1, 0, hidden).tanh() * x_in.narrow(1, hidden, hidden).sigmoid();
            let res_skip = res_skip_layer.forward(&acts);
            if i < last {
                x = (x + res_skip.narrow(1, 0, hidden)) * x_mask;
                output += res_skip.narrow(1, hidden, hidden);
            } else {
                output += res_skip;
            }
        }
        output * x_mask
    }
}
