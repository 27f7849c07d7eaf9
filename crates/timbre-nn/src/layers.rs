//! The torch.nn layers the models share, for inference: each `load`s its tensors by the upstream
//! prefix and computes what the torch layer computes. Weight-normalised layers are folded at load.

use anyhow::Result;
use tch::Tensor;

use crate::weights::Weights;

/// torch.nn.Linear.
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    /// Loads `{prefix}.weight` (weight norm folded) and the optional `{prefix}.bias`.
    pub fn load(w: &Weights, prefix: &str) -> Result<Self> {
        Ok(Self {
            weight: w.weight(prefix)?,
            bias: w.get_opt(&format!("{prefix}.bias")),
        })
    }

    /// Input width: the weight's second size (`[out, in]`).
    pub fn in_features(&self) -> i64 {
        self.weight.size()[1]
    }

    /// `[…, in]` → `[…, out]`: `x · weightᵀ + bias`.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.linear(&self.weight, self.bias.as_ref())
    }
}

/// Stride, padding, dilation and groups of a convolution.
#[derive(Debug, Clone, Copy)]
pub struct ConvOptions {
    /// Step between output positions, in input positions.
    pub stride: i64,
    /// Zeros added on each side (for a transposed convolution, torch's meaning: trimmed from the
    /// output).
    pub padding: i64,
    /// Spacing between kernel taps (1: adjacent).
    pub dilation: i64,
    /// Channel groups; input and output channels must divide by it.
    pub groups: i64,
}

impl Default for ConvOptions {
    fn default() -> Self {
        Self {
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
        }
    }
}

impl ConvOptions {
    /// The defaults (stride 1, dilation 1, one group) with this zero padding.
    pub fn padding(padding: i64) -> Self {
        Self {
            padding,
            ..Self::default()
        }
    }
}

/// torch.nn.Conv1d (weight `[out, in / groups, kernel]`).
pub struct Conv1d {
    weight: Tensor,
    bias: Option<Tensor>,
    options: ConvOptions,
}

impl Conv1d {
    /// Loads `{prefix}.weight` (weight norm folded) and the optional `{prefix}.bias`, applied with
    /// `options`.
    pub fn load(w: &Weights, prefix: &str, options: ConvOptions) -> Result<Self> {
        Ok(Self {
            weight: w.weight(prefix)?,
            bias: w.get_opt(&format!("{prefix}.bias")),
            options,
        })
    }

    /// Output channels: the weight's first size.
    pub fn out_channels(&self) -> i64 {
        self.weight.size()[0]
    }

    /// Input channels: the weight's second size times the groups.
    pub fn in_channels(&self) -> i64 {
        self.weight.size()[1] * self.options.groups
    }

    /// Kernel size: the weight's last size.
    pub fn kernel_size(&self) -> i64 {
        self.weight.size()[2]
    }

    /// `[batch, in_channels, time]` → `[batch, out_channels, time']`, as torch's conv1d.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let o = self.options;
        x.conv1d(
            &self.weight,
            self.bias.as_ref(),
            [o.stride],
            [o.padding],
            [o.dilation],
            o.groups,
        )
    }

    /// The same convolution over rows `[batch, channels, 1, time]` (as a conv2d), which keeps a
    /// [`channels_last`] input channels-last.
    pub fn forward_rows(&self, x: &Tensor) -> Tensor {
        let o = self.options;
        x.conv2d(
            &self.weight.unsqueeze(2),
            self.bias.as_ref(),
            [1, o.stride],
            [0, o.padding],
            [1, o.dilation],
            o.groups,
        )
    }
}

/// torch.nn.ConvTranspose1d (weight `[in, out / groups, kernel]`).
pub struct ConvTranspose1d {
    weight: Tensor,
    bias: Option<Tensor>,
    options: ConvOptions,
}

impl ConvTranspose1d {
    /// Loads `{prefix}.weight` (weight norm folded) and the optional `{prefix}.bias`, applied with
    /// `options`.
    pub fn load(w: &Weights, prefix: &str, options: ConvOptions) -> Result<Self> {
        Ok(Self {
            weight: w.weight(prefix)?,
            bias: w.get_opt(&format!("{prefix}.bias")),
            options,
        })
    }

    /// Output channels: the weight's second size times the groups.
    pub fn out_channels(&self) -> i64 {
        self.weight.size()[1] * self.options.groups
    }

    /// Kernel size: the weight's last size.
    pub fn kernel_size(&self) -> i64 {
        self.weight.size()[2]
    }

    /// `[batch, in_channels, time]` → `[batch, out_channels, time']`, as torch's conv_transpose1d
    /// (no output padding).
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let o = self.options;
        x.conv_transpose1d(
            &self.weight,
            self.bias.as_ref(),
            [o.stride],
            [o.padding],
            [0],
            o.groups,
            [o.dilation],
        )
    }
}

/// torch.nn.Conv2d with the same stride, padding and dilation on both axes.
pub struct Conv2d {
    weight: Tensor,
    bias: Option<Tensor>,
    stride: [i64; 2],
    padding: [i64; 2],
}

impl Conv2d {
    /// Loads `{prefix}.weight` (weight norm folded) and the optional `{prefix}.bias`; `stride` and
    /// `padding` are `[height, width]`.
    pub fn load(w: &Weights, prefix: &str, stride: [i64; 2], padding: [i64; 2]) -> Result<Self> {
        Ok(Self {
            weight: w.weight(prefix)?,
            bias: w.get_opt(&format!("{prefix}.bias")),
            stride,
            padding,
        })
    }

    /// Output channels: the weight's first size.
    pub fn out_channels(&self) -> i64 {
        self.weight.size()[0]
    }

    /// Input channels: the weight's second size (one group).
    pub fn in_channels(&self) -> i64 {
        self.weight.size()[1]
    }

    /// This convolution followed by `norm` (evaluation mode), as one convolution: saves the
    /// normalisation's pass over every output.
    pub fn with_batch_norm(self, norm: &BatchNorm) -> Self {
        let (scale, shift) = norm.scale_and_shift();
        let bias = match &self.bias {
            Some(bias) => bias * &scale + shift,
            None => shift,
        };
        Self {
            weight: &self.weight * scale.view([-1, 1, 1, 1]),
            bias: Some(bias),
            ..self
        }
    }

    /// `[batch, in, height, width]` → `[batch, out, height', width']`, dilation 1, one group.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.conv2d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            [1, 1],
            1,
        )
    }
}

/// `x` `[n, c, h, w]` stored channels-last (NHWC); free when it already is. oneDNN's CPU
/// convolutions run up to twice as fast on this layout and keep it in their outputs, so a
/// network converts once and stays in it.
pub fn channels_last(x: &Tensor) -> Tensor {
    x.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

/// torch.nn.LayerNorm over the last dimension.
pub struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl LayerNorm {
    /// Loads `{prefix}.weight` and `{prefix}.bias`, normalising with `eps`.
    pub fn load(w: &Weights, prefix: &str, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: w.get(&format!("{prefix}.weight"))?,
            bias: w.get(&format!("{prefix}.bias"))?,
            eps,
        })
    }

    /// Normalises over the trailing dimensions the weight spans; the shape is unchanged.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let dim = self.weight.size();
        x.layer_norm(
            dim.as_slice(),
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
            true,
        )
    }
}

/// torch.nn.GroupNorm.
pub struct GroupNorm {
    weight: Tensor,
    bias: Tensor,
    groups: i64,
    eps: f64,
}

impl GroupNorm {
    /// Loads `{prefix}.weight` and `{prefix}.bias`, normalising over `groups` channel groups with
    /// `eps`.
    pub fn load(w: &Weights, prefix: &str, groups: i64, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: w.get(&format!("{prefix}.weight"))?,
            bias: w.get(&format!("{prefix}.bias"))?,
            groups,
            eps,
        })
    }

    /// `[batch, channels, …]` normalised per group of channels; the shape is unchanged.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.group_norm(
            self.groups,
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
            true,
        )
    }
}

/// torch.nn.BatchNorm1d/2d in evaluation mode (running statistics).
pub struct BatchNorm {
    weight: Tensor,
    bias: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    eps: f64,
}

impl BatchNorm {
    /// Loads `{prefix}.weight`, `.bias`, `.running_mean` and `.running_var`, normalising with
    /// `eps`.
    pub fn load(w: &Weights, prefix: &str, eps: f64) -> Result<Self> {
        let get = |name: &str| w.get(&format!("{prefix}.{name}"));
        Ok(Self {
            weight: get("weight")?,
            bias: get("bias")?,
            running_mean: get("running_mean")?,
            running_var: get("running_var")?,
            eps,
        })
    }

    /// Per channel, `(scale, shift)` with `forward(x) = x · scale + shift`.
    pub fn scale_and_shift(&self) -> (Tensor, Tensor) {
        let scale = &self.weight / (&self.running_var + self.eps).sqrt();
        let shift = &self.bias - &self.running_mean * &scale;
        (scale, shift)
    }

    /// `[batch, channels, …]` normalised per channel by the running statistics; the shape is
    /// unchanged.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.batch_norm(
            Some(&self.weight),
            Some(&self.bias),
            Some(&self.running_mean),
            Some(&self.running_var),
            false,
            0.0,
            self.eps,
            true,
        )
    }
}

/// torch.nn.Embedding.
pub struct Embedding {
    weight: Tensor,
}

impl Embedding {
    /// Loads the table `{prefix}.weight`, `[num_embeddings, dim]`.
    pub fn load(w: &Weights, prefix: &str) -> Result<Self> {
        Ok(Self {
            weight: w.get(&format!("{prefix}.weight"))?,
        })
    }

    /// Rows of the table: ids run from 0 to this, exclusive.
    pub fn num_embeddings(&self) -> i64 {
        self.weight.size()[0]
    }

    /// The table's rows for integer `ids` of any shape: `[…ids' shape, dim]`.
    pub fn forward(&self, ids: &Tensor) -> Tensor {
        Tensor::embedding(&self.weight, ids, -1, false, false)
    }
}
