//! The RMVPE network, `E2E` of RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/rmvpe.py`: a deep U-Net (`DeepUnet`: Encoder, Intermediate, Decoder of
//! `ConvBlockRes` blocks) over the log-mel image, a 3-channel convolution, a BiGRU and a sigmoid
//! classifier over pitch bins of 20 cents. The constructor arguments are inferred from the
//! tensor names and shapes of the state dict.

use anyhow::{Result, bail, ensure};
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::gru::BiGru;
use crate::layers::{BatchNorm, Conv2d, Linear, channels_last};
use crate::weights::Weights;

/// torch.nn.BatchNorm2d's default.
const BATCH_NORM_EPS: f64 = 1e-5;

/// The arguments of upstream's `E2E(n_blocks, n_gru, kernel_size, en_de_layers, inter_layers,
/// in_channels, en_out_channels)`, plus the sizes upstream fixes in code (128 mels, 256 GRU
/// units, 360 classes, 3 channels out of `cnn`, 3×3 convolutions), all as found in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `ConvBlockRes` blocks in every encoder, intermediate and decoder level.
    pub n_blocks: usize,
    /// BiGRU layers; 0 for upstream's variant with a linear classifier only.
    pub n_gru: usize,
    /// Average pooling of each encoder level over (time, mel), and stride of each decoder level.
    /// Pooling has no weights, so this is upstream's `(2, 2)` rather than read from the file.
    pub kernel_size: [i64; 2],
    /// Encoder levels, and as many decoder levels; each encoder level pools by `kernel_size`.
    pub en_de_layers: usize,
    /// Intermediate levels between the encoder and the decoder.
    pub inter_layers: usize,
    /// Channels into the first encoder level (1: the log-mel image).
    pub in_channels: i64,
    /// Channels out of the first encoder level; each further level doubles them.
    pub en_out_channels: i64,
    /// Mel bands of the input log-mel (128).
    pub n_mels: i64,
    /// Hidden units per direction of the BiGRU (256); 0 without one.
    pub gru_hidden: i64,
    /// Pitch bins of the salience (360, 20 cents apart).
    pub n_class: i64,
    /// Channels out of `cnn`, flattened with the mels into the classifier's input (3).
    pub cnn_out_channels: i64,
    /// Kernel of the square convolutions (of `ConvBlockRes`, the decoders' upsampling and `cnn`).
    pub conv_kernel: i64,
}

/// How many consecutive indices `0, 1, …` appear as `{prefix}.{i}.…` in the tensor names.
fn count_indexed(w: &Weights, prefix: &str) -> usize {
    (0..)
        .take_while(|i| {
            w.names()
                .any(|name| name.starts_with(&format!("{prefix}.{i}.")))
        })
        .count()
}

impl Config {
    /// Reads the architecture off an `E2E` state dict.
    pub fn infer(w: &Weights) -> Result<Config> {
        let source = w.source().display();
        let first_conv = "unet.encoder.layers.0.conv.0.conv.0.weight";
        if !w.contains(first_conv) || !w.contains("cnn.weight") {
            bail!("{source}: not an RMVPE model (no `{first_conv}` or `cnn.weight`)");
        }
        let en_de_layers = count_indexed(w, "unet.encoder.layers");
        let decoders = count_indexed(w, "unet.decoder.layers");
        ensure!(
            decoders == en_de_layers,
            "{source}: {en_de_layers} encoder levels but {decoders} decoder levels"
        );
        let [en_out_channels, in_channels, conv_kernel, _] = four(w, first_conv)?;
        let n_gru = (0..)
            .take_while(|l| w.contains(&format!("fc.0.gru.weight_ih_l{l}")))
            .count();
        let (classifier, features, gru_hidden) = if n_gru > 0 {
            let hidden = w.shape("fc.0.gru.weight_hh_l0")?[1];
            ("fc.1.weight", w.shape("fc.0.gru.weight_ih_l0")?[1], hidden)
        } else {
            ("fc.0.weight", w.shape("fc.0.weight")?[1], 0)
        };
        let cnn_out_channels = w.shape("cnn.weight")?[0];
        ensure!(
            cnn_out_channels > 0 && features % cnn_out_channels == 0,
            "{source}: {features} features into the classifier do not split over {cnn_out_channels} channels of `cnn`"
        );
        ensure!(
            conv_kernel % 2 == 1,
            "{source}: `{first_conv}` has an even kernel ({conv_kernel}); RMVPE's are odd"
        );
        let kernel_size: [i64; 2] = [2, 2];
        let n_mels = features / cnn_out_channels;
        let mel_pooling = kernel_size[1].checked_pow(en_de_layers as u32);
        ensure!(
            mel_pooling.is_some_and(|pooling| n_mels % pooling == 0),
            "{source}: {n_mels} mel bins cannot be pooled by {} over {en_de_layers} levels",
            kernel_size[1]
        );
        Ok(Config {
            n_blocks: count_indexed(w, "unet.encoder.layers.0.conv"),
            n_gru,
            kernel_size,
            en_de_layers,
            inter_layers: count_indexed(w, "unet.intermediate.layers"),
            in_channels,
            en_out_channels,
            n_mels,
            gru_hidden,
            n_class: w.shape(classifier)?[0],
            cnn_out_channels,
            conv_kernel,
        })
    }

    /// The number of frames the network's input must be a multiple of: upstream pads to a
    /// multiple of 32, which the pooling of every encoder level must also divide.
    pub fn frame_multiple(&self) -> i64 {
        let pooled = self.kernel_size[0].pow(self.en_de_layers as u32);
        lcm(32, pooled)
    }

    /// How many frames of input on either side reach one output frame through the convolutions
    /// and pooling (the BiGRU sees the whole sequence on top of that).
    pub fn receptive_radius(&self) -> i64 {
        let half = self.conv_kernel / 2;
        let convs_per_level = 2 * self.n_blocks as i64;
        let pool = self.kernel_size[0];
        let mut scale = 1;
        let mut radius = 0;
        for _ in 0..self.en_de_layers {
            radius += convs_per_level * half * scale + (pool - 1) * scale;
            scale *= pool;
        }
        radius += self.inter_layers as i64 * convs_per_level * half * scale;
        for _ in 0..self.en_de_layers {
            radius += half * scale;
            scale /= pool;
            radius += convs_per_level * half * scale;
        }
        radius + half
    }
}

fn lcm(a: i64, b: i64) -> i64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

fn four(w: &Weights, name: &str) -> Result<[i64; 4]> {
    let shape = w.shape(name)?;
    match shape[..] {
        [a, b, c, d] => Ok([a, b, c, d]),
        _ => bail!(
            "{}: tensor `{name}` has shape {shape:?}, expected 4 dimensions",
            w.source().display()
        ),
    }
}

/// Fails, naming the file and tensor, unless `name` has exactly `shape`.
fn expect_shape(w: &Weights, name: &str, shape: &[i64]) -> Result<()> {
    w.get_shaped(name, shape).map(drop)
}

fn conv2d(w: &Weights, prefix: &str, shape: [i64; 4], stride: [i64; 2]) -> Result<Conv2d> {
    expect_shape(w, &format!("{prefix}.weight"), &shape)?;
    let padding = shape[2] / 2;
    Conv2d::load(w, prefix, stride, [padding, padding])
}

/// `ConvBlockRes`: two conv–BN–ReLU stages plus a residual, through a 1×1 convolution when the
/// channel count changes.
struct ConvBlockRes {
    /// Each with its batch norm folded in.
    conv1: Conv2d,
    conv2: Conv2d,
    shortcut: Option<Conv2d>,
}

impl ConvBlockRes {
    fn load(
        w: &Weights,
        prefix: &str,
        in_channels: i64,
        out_channels: i64,
        kernel: i64,
    ) -> Result<Self> {
        let shortcut = if in_channels != out_channels {
            Some(conv2d(
                w,
                &format!("{prefix}.shortcut"),
                [out_channels, in_channels, 1, 1],
                [1, 1],
            )?)
        } else {
            None
        };
        Ok(Self {
            conv1: conv2d(
                w,
                &format!("{prefix}.conv.0"),
                [out_channels, in_channels, kernel, kernel],
                [1, 1],
            )?
            .with_batch_norm(&BatchNorm::load(
                w,
                &format!("{prefix}.conv.1"),
                BATCH_NORM_EPS,
            )?),
            conv2: conv2d(
                w,
                &format!("{prefix}.conv.3"),
                [out_channels, out_channels, kernel, kernel],
                [1, 1],
            )?
            .with_batch_norm(&BatchNorm::load(
                w,
                &format!("{prefix}.conv.4"),
                BATCH_NORM_EPS,
            )?),
            shortcut,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let x = channels_last(x);
        let h = self.conv1.forward(&x).relu_();
        let mut h = self.conv2.forward(&h).relu_();
        match &self.shortcut {
            Some(shortcut) => h += shortcut.forward(&x),
            None => h += &x,
        }
        h
    }
}

/// The `ConvBlockRes` chain of a `ResEncoderBlock` (its pooling is the encoder's).
struct ResBlocks(Vec<ConvBlockRes>);

impl ResBlocks {
    fn load(
        w: &Weights,
        prefix: &str,
        config: &Config,
        in_channels: i64,
        out_channels: i64,
    ) -> Result<Self> {
        let blocks = (0..config.n_blocks)
            .map(|b| {
                let block_in = if b == 0 { in_channels } else { out_channels };
                ConvBlockRes::load(
                    w,
                    &format!("{prefix}.{b}"),
                    block_in,
                    out_channels,
                    config.conv_kernel,
                )
            })
            .collect::<Result<_>>()?;
        Ok(Self(blocks))
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        self.0
            .iter()
            .fold(x.shallow_clone(), |x, block| block.forward(&x))
    }
}

/// torch.nn.ConvTranspose2d without bias, as the decoders use it, followed by its batch norm
/// (folded in: the bias is the norm's shift).
struct ConvTranspose2d {
    weight: Tensor,
    bias: Tensor,
    stride: [i64; 2],
    padding: [i64; 2],
    output_padding: [i64; 2],
}

impl ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv_transpose2d(
            &self.weight,
            Some(&self.bias),
            self.stride,
            self.padding,
            self.output_padding,
            1,
            [1, 1],
        )
    }
}

/// `ResDecoderBlock`: upsampling by the pooling factor, then the skip connection joins.
struct ResDecoderBlock {
    upsample: ConvTranspose2d,
    blocks: ResBlocks,
}

impl ResDecoderBlock {
    fn load(w: &Weights, prefix: &str, config: &Config, in_channels: i64) -> Result<Self> {
        let out_channels = in_channels / 2;
        let kernel = config.conv_kernel;
        let stride = config.kernel_size;
        let weight = w.get_shaped(
            &format!("{prefix}.conv1.0.weight"),
            &[in_channels, out_channels, kernel, kernel],
        )?;
        // Upstream's output padding, which makes each level exactly `stride` times longer.
        let output_padding = if stride == [1, 2] { [0, 1] } else { [1, 1] };
        let norm = BatchNorm::load(w, &format!("{prefix}.conv1.1"), BATCH_NORM_EPS)?;
        let (scale, shift) = norm.scale_and_shift();
        Ok(Self {
            upsample: ConvTranspose2d {
                weight: weight * scale.view([1, -1, 1, 1]),
                bias: shift,
                stride,
                padding: [kernel / 2, kernel / 2],
                output_padding,
            },
            blocks: ResBlocks::load(
                w,
                &format!("{prefix}.conv2"),
                config,
                2 * out_channels,
                out_channels,
            )?,
        })
    }

    fn forward(&self, x: &Tensor, skip: &Tensor) -> Tensor {
        let up = self.upsample.forward(x).relu_();
        self.blocks.forward(&Tensor::cat(&[&up, skip], 1))
    }
}

/// `E2E`: log-mel `[batch, n_mels, frames]` → salience `[batch, frames, n_class]`.
pub struct E2E {
    config: Config,
    input_norm: BatchNorm,
    encoders: Vec<ResBlocks>,
    intermediate: Vec<ResBlocks>,
    decoders: Vec<ResDecoderBlock>,
    cnn: Conv2d,
    gru: Option<BiGru>,
    classifier: Linear,
    kind: Kind,
}

impl E2E {
    /// Builds the network from an `E2E` state dict under upstream names, with the sizes in
    /// `config`.
    pub fn load(w: &Weights, config: Config) -> Result<Self> {
        let unet = w.sub("unet");
        let mut channels = config.en_out_channels;
        let mut in_channels = config.in_channels;
        let mut encoders = Vec::with_capacity(config.en_de_layers);
        for level in 0..config.en_de_layers {
            encoders.push(ResBlocks::load(
                &unet,
                &format!("encoder.layers.{level}.conv"),
                &config,
                in_channels,
                channels,
            )?);
            in_channels = channels;
            channels *= 2;
        }
        let mut intermediate = Vec::with_capacity(config.inter_layers);
        for layer in 0..config.inter_layers {
            let layer_in = if layer == 0 { in_channels } else { channels };
            intermediate.push(ResBlocks::load(
                &unet,
                &format!("intermediate.layers.{layer}.conv"),
                &config,
                layer_in,
                channels,
            )?);
        }
        let mut decoders = Vec::with_capacity(config.en_de_layers);
        for level in 0..config.en_de_layers {
            decoders.push(ResDecoderBlock::load(
                &unet,
                &format!("decoder.layers.{level}"),
                &config,
                channels,
            )?);
            channels /= 2;
        }
        let k = config.conv_kernel;
        let cnn = conv2d(w, "cnn", [config.cnn_out_channels, channels, k, k], [1, 1])?;
        let features = config.cnn_out_channels * config.n_mels;
        let (gru, classifier) = if config.n_gru > 0 {
            let gru = BiGru::load(w, "fc.0.gru", config.n_gru, features, config.gru_hidden)?;
            expect_shape(w, "fc.1.weight", &[config.n_class, 2 * config.gru_hidden])?;
            (Some(gru), Linear::load(w, "fc.1")?)
        } else {
            expect_shape(w, "fc.0.weight", &[config.n_class, features])?;
            (None, Linear::load(w, "fc.0")?)
        };
        let kind = w.get("cnn.weight")?.kind();
        Ok(Self {
            input_norm: BatchNorm::load(&unet, "encoder.bn", BATCH_NORM_EPS)?,
            encoders,
            intermediate,
            decoders,
            cnn,
            gru,
            classifier,
            kind,
            config,
        })
    }

    /// The architecture it was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The floating kind of the weights, which the input is converted to.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// `mel` `[batch, n_mels, frames]` with `frames` a multiple of [`Config::frame_multiple`];
    /// returns `[batch, frames, n_class]` in the weights' kind.
    pub fn forward(&self, mel: &Tensor) -> Tensor {
        let pool = self.config.kernel_size;
        let mut x = self
            .input_norm
            .forward(&mel.to_kind(self.kind).transpose(-1, -2).unsqueeze(1));
        let mut skips = Vec::with_capacity(self.encoders.len());
        for encoder in &self.encoders {
            let out = encoder.forward(&x);
            x = out.avg_pool2d(pool, pool, [0, 0], false, true, None::<i64>);
            skips.push(out);
        }
        for layer in &self.intermediate {
            x = layer.forward(&x);
        }
        for (decoder, skip) in self.decoders.iter().zip(skips.iter().rev()) {
            x = decoder.forward(&x, skip);
        }
        let features = self.cnn.forward(&x).transpose(1, 2).flatten(2, 3);
        let features = match &self.gru {
            Some(gru) => gru.forward(&features),
            None => features,
        };
        self.classifier.forward(&features).sigmoid()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use tch::Device;

    use super::*;

    /// A state dict laid out as upstream's `E2E(n_blocks, n_gru, (2, 2), levels, inters, 1,
    /// en_out)` saves it, with zero weights and unit variances.
    pub(in crate::rmvpe) fn synthetic(
        n_blocks: usize,
        n_gru: usize,
        levels: usize,
        inters: usize,
        en_out: i64,
        n_mels: i64,
    ) -> Weights {
        let mut tensors = HashMap::new();
        let mut add = |name: String, shape: &[i64]| {
            let fill = if name.ends_with("running_var") {
                1.0
            } else {
                0.0
            };
            tensors.insert(name, Tensor::full(shape, fill, (Kind::Float, Device::Cpu)));
        };
        let norm = |add: &mut dyn FnMut(String, &[i64]), prefix: String, c: i64| {
            for part in ["weight", "bias", "running_mean", "running_var"] {
                add(format!("{prefix}.{part}"), &[c]);
            }
        };
        let res = |add: &mut dyn FnMut(String, &[i64]), prefix: String, cin: i64, cout: i64| {
            for b in 0..n_blocks {
                let bin = if b == 0 { cin } else { cout };
                add(format!("{prefix}.{b}.conv.0.weight"), &[cout, bin, 3, 3]);
                norm(add, format!("{prefix}.{b}.conv.1"), cout);
                add(format!("{prefix}.{b}.conv.3.weight"), &[cout, cout, 3, 3]);
                norm(add, format!("{prefix}.{b}.conv.4"), cout);
                if bin != cout {
                    add(format!("{prefix}.{b}.shortcut.weight"), &[cout, bin, 1, 1]);
                    add(format!("{prefix}.{b}.shortcut.bias"), &[cout]);
                }
            }
        };
        norm(&mut add, "unet.encoder.bn".into(), 1);
        let (mut cin, mut c) = (1, en_out);
        for l in 0..levels {
            res(&mut add, format!("unet.encoder.layers.{l}.conv"), cin, c);
            (cin, c) = (c, c * 2);
        }
        for l in 0..inters {
            res(
                &mut add,
                format!("unet.intermediate.layers.{l}.conv"),
                if l == 0 { cin } else { c },
                c,
            );
        }
        for l in 0..levels {
            add(
                format!("unet.decoder.layers.{l}.conv1.0.weight"),
                &[c, c / 2, 3, 3],
            );
            norm(&mut add, format!("unet.decoder.layers.{l}.conv1.1"), c / 2);
            res(&mut add, format!("unet.decoder.layers.{l}.conv2"), c, c / 2);
            c /= 2;
        }
        add("cnn.weight".into(), &[3, c, 3, 3]);
        add("cnn.bias".into(), &[3]);
        for l in 0..n_gru {
            let input = if l == 0 { 3 * n_mels } else { 512 };
            for d in ["", "_reverse"] {
                add(format!("fc.0.gru.weight_ih_l{l}{d}"), &[768, input]);
                add(format!("fc.0.gru.weight_hh_l{l}{d}"), &[768, 256]);
                add(format!("fc.0.gru.bias_ih_l{l}{d}"), &[768]);
                add(format!("fc.0.gru.bias_hh_l{l}{d}"), &[768]);
            }
        }
        let (name, input) = if n_gru > 0 {
            ("fc.1", 512)
        } else {
            ("fc.0", 3 * n_mels)
        };
        add(format!("{name}.weight"), &[360, input]);
        add(format!("{name}.bias"), &[360]);
        Weights::new(tensors, "synthetic.pt")
    }

    #[test]
    fn infers_the_real_architecture() {
        let config = Config::infer(&synthetic(4, 1, 5, 4, 16, 128)).unwrap();
        let expected = Config {
            n_blocks: 4,
            n_gru: 1,
            kernel_size: [2, 2],
            en_de_layers: 5,
            inter_layers: 4,
            in_channels: 1,
            en_out_channels: 16,
            n_mels: 128,
            gru_hidden: 256,
            n_class: 360,
            cnn_out_channels: 3,
            conv_kernel: 3,
        };
        assert_eq!(config, expected);
        assert_eq!(config.frame_multiple(), 32);
    }

    #[test]
    fn infers_and_runs_a_smaller_variant() {
        let w = synthetic(1, 2, 3, 2, 2, 16);
        let config = Config::infer(&w).unwrap();
        assert_eq!(
            (
                config.n_blocks,
                config.n_gru,
                config.en_de_layers,
                config.inter_layers
            ),
            (1, 2, 3, 2)
        );
        assert_eq!((config.en_out_channels, config.n_mels), (2, 16));
        assert_eq!(config.frame_multiple(), 32);
        let model = E2E::load(&w, config).unwrap();
        let out = model.forward(&Tensor::zeros([1, 16, 64], (Kind::Float, Device::Cpu)));
        assert_eq!(out.size(), [1, 64, 360]);
        // Zero weights and biases leave the sigmoid at one half.
        assert!((out - 0.5).abs().max().double_value(&[]) < 1e-6);
    }

    #[test]
    fn infers_the_variant_without_gru() {
        let config = Config::infer(&synthetic(2, 0, 2, 1, 4, 32)).unwrap();
        assert_eq!((config.n_gru, config.n_mels, config.n_class), (0, 32, 360));
    }

    #[test]
    fn rejects_other_models_and_inconsistent_shapes() {
        let other = Weights::new(
            HashMap::from([(
                "enc_p.emb_phone.weight".to_string(),
                Tensor::zeros([4, 4], (Kind::Float, Device::Cpu)),
            )]),
            "G.pth",
        );
        let message = Config::infer(&other).unwrap_err().to_string();
        assert!(
            message.contains("G.pth") && message.contains("not an RMVPE model"),
            "{message}"
        );

        let w = synthetic(2, 1, 3, 2, 4, 16);
        let mut config = Config::infer(&w).unwrap();
        config.en_out_channels = 8;
        let message = E2E::load(&w, config).err().unwrap().to_string();
        assert!(
            message.contains("synthetic.pt") && message.contains("shape"),
            "{message}"
        );

        let message = Config::infer(&synthetic(1, 1, 3, 1, 2, 12))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("12 mel bins cannot be pooled"),
            "{message}"
        );
    }

    #[test]
    fn receptive_radius_of_a_single_level() {
        let mut config = Config::infer(&synthetic(1, 1, 1, 1, 2, 16)).unwrap();
        // Encoder: 2 convs + pooling; intermediate: 2 convs at scale 2; decoder: upsampling at
        // scale 2 then 2 convs; cnn.
        assert_eq!(config.receptive_radius(), 2 + 1 + 4 + 2 + 2 + 1);
        config.kernel_size = [1, 2];
        assert_eq!(config.frame_multiple(), 32);
    }
}
