//! RVC's multi-period discriminator, trainable: rvc_next 0.2.16 `engine/models/synthesizer.py`
//! `MultiPeriodDiscriminator` (v1: periods 2, 3, 5, 7, 11, 17), `MultiPeriodDiscriminatorV2`
//! (v2: adds 23 and 37), `DiscriminatorS` and `DiscriminatorP`, with `use_spectral_norm=False`
//! (every RVC config), so every convolution is under `torch.nn.utils.weight_norm`. The
//! parameters carry the reference's state-dict names and order, so `D_<step>.pth` and the
//! pretrained `f0D40k.pth` load and save by name.

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use tch::Tensor;
use tch::nn::{self, Init};

use crate::weights::Weights;

const LRELU_SLOPE: f64 = 0.1;

/// Which of RVC's two discriminators: v1 models train against periods up to 17, v2 up to 37.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscriminatorVersion {
    /// `MultiPeriodDiscriminator`: the scale discriminator and periods 2, 3, 5, 7, 11 and 17.
    V1,
    /// `MultiPeriodDiscriminatorV2`: v1's sub-discriminators plus periods 23 and 37.
    V2,
}

impl DiscriminatorVersion {
    fn periods(self) -> &'static [i64] {
        match self {
            DiscriminatorVersion::V1 => &[2, 3, 5, 7, 11, 17],
            DiscriminatorVersion::V2 => &[2, 3, 5, 7, 11, 17, 23, 37],
        }
    }

    fn name(self) -> &'static str {
        match self {
            DiscriminatorVersion::V1 => "v1",
            DiscriminatorVersion::V2 => "v2",
        }
    }
}

/// How wide the discriminator's layers are: RVC's, or each layer's channels and groups divided
/// by a power of two up to 16. Only tests train narrower ones: RVC's ~50 M parameters, their
/// AdamW moments and their 600 MiB checkpoints would cost them minutes, and the code they run
/// is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct DiscriminatorWidth {
    divisor: i64,
}

impl DiscriminatorWidth {
    /// RVC's own widths (divisor 1).
    pub const RVC: DiscriminatorWidth = DiscriminatorWidth { divisor: 1 };

    /// RVC's widths divided by `divisor`: 1, 2, 4, 8 or 16 (beyond, the first layers would
    /// have less than one channel).
    pub fn divided_by(divisor: i64) -> Result<DiscriminatorWidth> {
        if !(1..=16).contains(&divisor) || divisor.count_ones() != 1 {
            bail!("a discriminator width divisor of {divisor}: use 1, 2, 4, 8 or 16");
        }
        Ok(DiscriminatorWidth { divisor })
    }

    /// How many times narrower than RVC's each layer is: 1, 2, 4, 8 or 16.
    pub fn divisor(self) -> i64 {
        self.divisor
    }

    /// `shape` this much narrower: the waveform's one channel in and the one score out stay.
    fn narrow(self, shape: ConvShape) -> ConvShape {
        let narrow = |channels: i64| {
            if channels == 1 {
                1
            } else {
                (channels / self.divisor).max(1)
            }
        };
        ConvShape {
            in_channels: narrow(shape.in_channels),
            out_channels: narrow(shape.out_channels),
            groups: (shape.groups / self.divisor).max(1),
            ..shape
        }
    }
}

impl Default for DiscriminatorWidth {
    fn default() -> Self {
        DiscriminatorWidth::RVC
    }
}

impl TryFrom<i64> for DiscriminatorWidth {
    type Error = anyhow::Error;

    fn try_from(divisor: i64) -> Result<Self> {
        DiscriminatorWidth::divided_by(divisor)
    }
}

impl From<DiscriminatorWidth> for i64 {
    fn from(width: DiscriminatorWidth) -> i64 {
        width.divisor
    }
}

/// What `MultiPeriodDiscriminator::forward` returns, one entry per sub-discriminator (the
/// scale discriminator first, then the periods in order).
pub struct DiscriminatorOutput {
    /// Scores of the real audio, `[batch, n]` (the reference's `y_d_rs`).
    pub real_scores: Vec<Tensor>,
    /// Scores of the generated audio (`y_d_gs`).
    pub generated_scores: Vec<Tensor>,
    /// Every layer's activations on the real audio, the last being the scores before they are
    /// flattened (`fmap_rs`).
    pub real_features: Vec<Vec<Tensor>>,
    /// The same on the generated audio (`fmap_gs`).
    pub generated_features: Vec<Vec<Tensor>>,
}

/// A Conv1d, or a Conv2d with a `(k, 1)` kernel, under `weight_norm(dim=0)`.
struct WeightNormConv {
    bias: Tensor,
    weight_g: Tensor,
    weight_v: Tensor,
    stride: i64,
    padding: i64,
    groups: i64,
}

/// The shape of one convolution: `kernel` runs along time (the rows, for a period's 2-d view).
#[derive(Clone, Copy)]
struct ConvShape {
    in_channels: i64,
    out_channels: i64,
    kernel: i64,
    stride: i64,
    groups: i64,
}

impl WeightNormConv {
    /// Fresh parameters as torch makes them: the Conv's kaiming-uniform(a=√5) weight and uniform
    /// bias, both within ±1/√fan_in, then weight_norm's `g = ‖v‖`. Registered under `path` as
    /// `bias`, `weight_g`, `weight_v` (the reference's order) and appended to `parameters`.
    fn new(
        path: &nn::Path,
        prefix: &str,
        shape: ConvShape,
        two_d: bool,
        parameters: &mut Vec<(String, Tensor)>,
    ) -> Self {
        let mut weight_shape = vec![
            shape.out_channels,
            shape.in_channels / shape.groups,
            shape.kernel,
        ];
        if two_d {
            weight_shape.push(1);
        }
        let fan_in = (shape.in_channels / shape.groups * shape.kernel) as f64;
        let bound = 1.0 / fan_in.sqrt();
        let uniform = Init::Uniform {
            lo: -bound,
            up: bound,
        };
        let direction = Tensor::empty(weight_shape.as_slice(), (path.kind(), path.device()))
            .uniform_(-bound, bound);
        let magnitude = norm_except_first(&direction);
        let bias = path.var("bias", &[shape.out_channels], uniform);
        let weight_g = path.var_copy("weight_g", &magnitude);
        let weight_v = path.var_copy("weight_v", &direction);
        for (name, tensor) in [
            ("bias", &bias),
            ("weight_g", &weight_g),
            ("weight_v", &weight_v),
        ] {
            parameters.push((format!("{prefix}.{name}"), tensor.shallow_clone()));
        }
        Self {
            bias,
            weight_g,
            weight_v,
            stride: shape.stride,
            padding: (shape.kernel - 1) / 2,
            groups: shape.groups,
        }
    }

    /// `g · v / ‖v‖`, recomputed from the parameters so gradients reach `weight_g` and
    /// `weight_v` (torch's `_weight_norm`, as the reference's forward pre-hook calls it).
    fn weight(&self) -> Tensor {
        Tensor::internal_weight_norm(&self.weight_v, &self.weight_g, 0)
    }

    fn forward(&self, x: &Tensor, weight: &Tensor) -> Tensor {
        if weight.dim() == 4 {
            x.conv2d(
                weight,
                Some(&self.bias),
                [self.stride, 1],
                [self.padding, 0],
                [1, 1],
                self.groups,
            )
        } else {
            x.conv1d(
                weight,
                Some(&self.bias),
                [self.stride],
                [self.padding],
                [1],
                self.groups,
            )
        }
    }
}

/// The L2 norm over every dimension but the first, kept as size-1 dimensions.
fn norm_except_first(v: &Tensor) -> Tensor {
    let dims: Vec<i64> = (1..v.dim() as i64).collect();
    v.norm_scalaropt_dim(2, dims.as_slice(), true)
}

/// `F.leaky_relu(x, slope)`: tch's `leaky_relu` has no slope; `prelu` with one shared slope
/// computes the same and differentiates the same with respect to `x`.
fn leaky_relu(x: &Tensor) -> Tensor {
    x.prelu(&Tensor::full([1], LRELU_SLOPE, (x.kind(), x.device())))
}

/// `DiscriminatorS` (on the waveform, `period` None) or `DiscriminatorP(period)` (on its
/// `[time / period, period]` view): leaky-ReLU'd convolutions, then `conv_post`.
struct SubDiscriminator {
    period: Option<i64>,
    convs: Vec<WeightNormConv>,
    conv_post: WeightNormConv,
}

const SCALE_LAYERS: [ConvShape; 6] = [
    conv(1, 16, 15, 1, 1),
    conv(16, 64, 41, 4, 4),
    conv(64, 256, 41, 4, 16),
    conv(256, 1024, 41, 4, 64),
    conv(1024, 1024, 41, 4, 256),
    conv(1024, 1024, 5, 1, 1),
];
const PERIOD_LAYERS: [ConvShape; 5] = [
    conv(1, 32, 5, 3, 1),
    conv(32, 128, 5, 3, 1),
    conv(128, 512, 5, 3, 1),
    conv(512, 1024, 5, 3, 1),
    conv(1024, 1024, 5, 1, 1),
];

const fn conv(
    in_channels: i64,
    out_channels: i64,
    kernel: i64,
    stride: i64,
    groups: i64,
) -> ConvShape {
    ConvShape {
        in_channels,
        out_channels,
        kernel,
        stride,
        groups,
    }
}

impl SubDiscriminator {
    fn new(
        path: &nn::Path,
        prefix: &str,
        period: Option<i64>,
        width: DiscriminatorWidth,
        parameters: &mut Vec<(String, Tensor)>,
    ) -> Self {
        let layers: &[ConvShape] = if period.is_some() {
            &PERIOD_LAYERS
        } else {
            &SCALE_LAYERS
        };
        let two_d = period.is_some();
        let convs_path = path / "convs";
        let convs = layers
            .iter()
            .enumerate()
            .map(|(i, &shape)| {
                WeightNormConv::new(
                    &(&convs_path / i),
                    &format!("{prefix}.convs.{i}"),
                    width.narrow(shape),
                    two_d,
                    parameters,
                )
            })
            .collect();
        let conv_post = WeightNormConv::new(
            &(path / "conv_post"),
            &format!("{prefix}.conv_post"),
            width.narrow(conv(1024, 1, 3, 1, 1)),
            two_d,
            parameters,
        );
        Self {
            period,
            convs,
            conv_post,
        }
    }

    fn weights(&self) -> Vec<Tensor> {
        self.convs
            .iter()
            .chain([&self.conv_post])
            .map(WeightNormConv::weight)
            .collect()
    }

    /// The scores `[batch, n]` and every layer's activations of `x` `[batch, 1, time]`, with the
    /// layers' effective `weights`.
    fn forward(&self, x: &Tensor, weights: &[Tensor]) -> (Tensor, Vec<Tensor>) {
        let mut x = match self.period {
            Some(period) => {
                let (batch, channels, time) = x.size3().expect("a [batch, 1, time] waveform");
                let padding = (period - time % period) % period;
                let padded = if padding > 0 {
                    x.pad([0, padding], "reflect", None)
                } else {
                    x.shallow_clone()
                };
                padded.view([batch, channels, (time + padding) / period, period])
            }
            None => x.shallow_clone(),
        };
        let mut features = Vec::with_capacity(self.convs.len() + 1);
        for (layer, weight) in self.convs.iter().zip(weights) {
            x = leaky_relu(&layer.forward(&x, weight));
            features.push(x.shallow_clone());
        }
        let scores = self.conv_post.forward(&x, &weights[self.convs.len()]);
        features.push(scores.shallow_clone());
        (scores.flatten(1, -1), features)
    }
}

/// RVC's discriminator: `DiscriminatorS` then one `DiscriminatorP` per period of `version`.
pub struct MultiPeriodDiscriminator {
    version: DiscriminatorVersion,
    discriminators: Vec<SubDiscriminator>,
    /// Every parameter by its state-dict name, in the order of the reference's `parameters()`.
    parameters: Vec<(String, Tensor)>,
}

impl MultiPeriodDiscriminator {
    /// A freshly initialised discriminator whose variables live under `path` (named as the
    /// reference's state dict, below `path`'s own prefix).
    pub fn new(path: &nn::Path, version: DiscriminatorVersion, width: DiscriminatorWidth) -> Self {
        let mut parameters = Vec::new();
        let root = path / "discriminators";
        let periods = std::iter::once(None).chain(version.periods().iter().copied().map(Some));
        let discriminators = periods
            .enumerate()
            .map(|(i, period)| {
                SubDiscriminator::new(
                    &(&root / i),
                    &format!("discriminators.{i}"),
                    period,
                    width,
                    &mut parameters,
                )
            })
            .collect();
        Self {
            version,
            discriminators,
            parameters,
        }
    }

    /// The parameters in the order of the reference's `net_d.parameters()`, which is the order
    /// torch's optimizer state dict numbers them in.
    pub fn parameters(&self) -> Vec<Tensor> {
        self.parameters
            .iter()
            .map(|(_, p)| p.shallow_clone())
            .collect()
    }

    /// The reference's `net_d.state_dict()`: names, order and tensors (detached, sharing the
    /// parameters' storage), for `checkpoint::write_torch_file`.
    pub fn state_dict(&self) -> Vec<(String, Tensor)> {
        self.parameters
            .iter()
            .map(|(name, p)| (name.clone(), p.detach()))
            .collect()
    }

    /// Copies a state dict into the parameters, by name, converting dtype and device. Like
    /// torch's strict `load_state_dict`, every parameter must be there with its shape and no
    /// other tensor may be; errors name the file (a v1 discriminator's state given to a v2 one
    /// says so).
    pub fn load_weights(&self, weights: &Weights) -> Result<()> {
        self.check_names(weights)?;
        for (name, parameter) in &self.parameters {
            let source = weights.get_shaped(name, &parameter.size())?;
            tch::no_grad(|| parameter.shallow_clone().f_copy_(&source))?;
        }
        Ok(())
    }

    fn check_names(&self, weights: &Weights) -> Result<()> {
        let ours: BTreeSet<&str> = self.parameters.iter().map(|(n, _)| n.as_str()).collect();
        let theirs: BTreeSet<&str> = weights.names().collect();
        let missing: Vec<&str> = ours.difference(&theirs).copied().collect();
        let unexpected: Vec<&str> = theirs.difference(&ours).copied().collect();
        if missing.is_empty() && unexpected.is_empty() {
            return Ok(());
        }
        let file_count = theirs
            .iter()
            .filter_map(|name| {
                name.strip_prefix("discriminators.")?
                    .split('.')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .collect::<BTreeSet<_>>()
            .len();
        let list = |names: &[&str]| {
            let shown: Vec<&str> = names.iter().take(3).copied().collect();
            let more = if names.len() > 3 { ", …" } else { "" };
            let noun = if names.len() == 1 {
                "tensor"
            } else {
                "tensors"
            };
            format!("{} {noun} ({}{more})", names.len(), shown.join(", "))
        };
        let mut problems = Vec::new();
        if !missing.is_empty() {
            problems.push(format!("missing {}", list(&missing)));
        }
        if !unexpected.is_empty() {
            problems.push(format!("unexpected {}", list(&unexpected)));
        }
        bail!(
            "{}: not a {} discriminator's state (the file has {file_count} sub-discriminators; v1 has 7, v2 9): {}",
            weights.source().display(),
            self.version.name(),
            problems.join("; ")
        )
    }

    /// Scores and feature maps of the real audio `y` and the generated `y_hat`, both
    /// `[batch, 1, time]`, by every sub-discriminator (the reference's `forward(y, y_hat)`).
    pub fn forward(&self, y: &Tensor, y_hat: &Tensor) -> DiscriminatorOutput {
        let mut output = DiscriminatorOutput {
            real_scores: Vec::with_capacity(self.discriminators.len()),
            generated_scores: Vec::with_capacity(self.discriminators.len()),
            real_features: Vec::with_capacity(self.discriminators.len()),
            generated_features: Vec::with_capacity(self.discriminators.len()),
        };
        for discriminator in &self.discriminators {
            // Both inputs share one computation of the normalised weights.
            let weights = discriminator.weights();
            let (real_scores, real_features) = discriminator.forward(y, &weights);
            let (generated_scores, generated_features) = discriminator.forward(y_hat, &weights);
            output.real_scores.push(real_scores);
            output.generated_scores.push(generated_scores);
            output.real_features.push(real_features);
            output.generated_features.push(generated_features);
        }
        output
    }
}
