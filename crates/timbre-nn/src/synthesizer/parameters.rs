//! The generator's parameters as the reference creates them: RVC-Project/Retrieval-based-Voice-
//! Conversion-WebUI `infer/lib/infer_pack/models.py` `SynthesizerTrnMs256NSFsid` /
//! `SynthesizerTrnMs768NSFsid` and their `_nono` variants, named and ordered as their
//! `state_dict()` and initialised as a fresh model is.
//!
//! torch's defaults throughout: Linear and Conv weights and biases uniform within ±1/√fan_in
//! (`kaiming_uniform_(a=√5)`), embeddings N(0, 1), layer norms 1 and 0; the attention's query, key
//! and value weights Xavier-uniform and its relative embeddings N(0, 1/√head_channels); the flow's
//! `post` convolutions zero. Weight-normalised layers start with `g = ‖v‖`. RVC's `init_weights`
//! (normal(0, 0.01) on the decoder's `ups` and residual blocks) changes nothing: it writes the
//! cached `weight` that weight_norm recomputes from `g` and `v` before every forward.

use tch::{Device, Kind, Tensor};

use super::config::SynthesizerConfig;

/// The attention's relative positions reach ±10 frames (`attentions.Encoder`'s `window_size`).
const WINDOW_SIZE: i64 = 10;
/// RVC's coarse pitch classes.
pub(super) const PITCH_CLASSES: i64 = 256;
/// The flow: 4 coupling layers of 3 WaveNet layers; the posterior encoder: 16 WaveNet layers; all
/// with kernels of 5.
const FLOWS: i64 = 4;
const FLOW_WAVENET_LAYERS: i64 = 3;
const POSTERIOR_WAVENET_LAYERS: i64 = 16;
const WAVENET_KERNEL: i64 = 5;

/// The parameters of a fresh generator, in the reference's `state_dict()` order, on the CPU.
pub fn initial_parameters(
    config: &SynthesizerConfig,
    feature_dim: i64,
    f0: bool,
) -> Vec<(String, Tensor)> {
    let mut p = Parameters::default();
    // SynthesizerTrnMs768NSFsid replaces the 256-d text encoder after building the rest, which
    // moves `enc_p` to the end of its state dict.
    if feature_dim == 256 {
        p.text_encoder(config, feature_dim, f0);
    }
    p.generator(config, f0);
    p.posterior_encoder(config);
    p.flow(config);
    p.push(
        "emb_g.weight",
        randn(&[config.spk_embed_dim, config.gin_channels], 1.0),
    );
    if feature_dim != 256 {
        p.text_encoder(config, feature_dim, f0);
    }
    p.0
}

#[derive(Default)]
struct Parameters(Vec<(String, Tensor)>);

const CPU_FLOAT: (Kind, Device) = (Kind::Float, Device::Cpu);

fn uniform(shape: &[i64], bound: f64) -> Tensor {
    Tensor::rand(shape, CPU_FLOAT) * (2.0 * bound) - bound
}

fn randn(shape: &[i64], std: f64) -> Tensor {
    Tensor::randn(shape, CPU_FLOAT) * std
}

/// torch's default bound for a layer whose weight has `fan_in` inputs per output.
fn default_bound(fan_in: i64) -> f64 {
    1.0 / (fan_in as f64).sqrt()
}

impl Parameters {
    fn push(&mut self, name: &str, tensor: Tensor) {
        self.0.push((name.to_string(), tensor));
    }

    fn linear(&mut self, prefix: &str, inputs: i64, outputs: i64) {
        let bound = default_bound(inputs);
        self.push(
            &format!("{prefix}.weight"),
            uniform(&[outputs, inputs], bound),
        );
        self.push(&format!("{prefix}.bias"), uniform(&[outputs], bound));
    }

    /// A Conv1d `[out, in, kernel]`, with or without a bias.
    fn conv(&mut self, prefix: &str, shape: [i64; 3], bias: bool) {
        self.conv_within(prefix, shape, default_bound(shape[1] * shape[2]), bias);
    }

    /// A Conv1d whose weight is uniform within ±`weight_bound` (its bias as torch's default).
    fn conv_within(&mut self, prefix: &str, shape: [i64; 3], weight_bound: f64, bias: bool) {
        self.push(&format!("{prefix}.weight"), uniform(&shape, weight_bound));
        if bias {
            let bound = default_bound(shape[1] * shape[2]);
            self.push(&format!("{prefix}.bias"), uniform(&[shape[0]], bound));
        }
    }

    /// A weight-normalised Conv1d `[out, in, kernel]` (or ConvTranspose1d `[in, out, kernel]`,
    /// `bias_size` = out): `bias`, `weight_g`, `weight_v` as torch orders them.
    fn normed(&mut self, prefix: &str, shape: [i64; 3], bias_size: i64) {
        let bound = default_bound(shape[1] * shape[2]);
        let v = uniform(&shape, bound);
        let g = v.norm_scalaropt_dim(2, [1, 2], true);
        self.push(&format!("{prefix}.bias"), uniform(&[bias_size], bound));
        self.push(&format!("{prefix}.weight_g"), g);
        self.push(&format!("{prefix}.weight_v"), v);
    }

    fn text_encoder(&mut self, config: &SynthesizerConfig, feature_dim: i64, f0: bool) {
        let hidden = config.hidden_channels;
        let head_channels = hidden / config.n_heads;
        self.linear("enc_p.emb_phone", feature_dim, hidden);
        if f0 {
            self.push(
                "enc_p.emb_pitch.weight",
                randn(&[PITCH_CLASSES, hidden], 1.0),
            );
        }
        let layers = 0..config.n_layers;
        for i in layers.clone() {
            let prefix = format!("enc_p.encoder.attn_layers.{i}");
            let relative = [1, 2 * WINDOW_SIZE + 1, head_channels];
            let std = 1.0 / (head_channels as f64).sqrt();
            self.push(&format!("{prefix}.emb_rel_k"), randn(&relative, std));
            self.push(&format!("{prefix}.emb_rel_v"), randn(&relative, std));
            // Xavier-uniform: fan_in and fan_out are both `hidden`.
            let xavier = (6.0 / (2 * hidden) as f64).sqrt();
            for name in ["conv_q", "conv_k", "conv_v"] {
                let conv = format!("{prefix}.{name}");
                self.conv_within(&conv, [hidden, hidden, 1], xavier, true);
            }
            self.conv(&format!("{prefix}.conv_o"), [hidden, hidden, 1], true);
        }
        let layer_norms = |p: &mut Self, group: &str| {
            for i in layers.clone() {
                let prefix = format!("enc_p.encoder.{group}.{i}");
                p.push(
                    &format!("{prefix}.gamma"),
                    Tensor::ones([hidden], CPU_FLOAT),
                );
                p.push(
                    &format!("{prefix}.beta"),
                    Tensor::zeros([hidden], CPU_FLOAT),
                );
            }
        };
        layer_norms(self, "norm_layers_1");
        for i in layers.clone() {
            let (prefix, filter, kernel) = (
                format!("enc_p.encoder.ffn_layers.{i}"),
                config.filter_channels,
                config.kernel_size,
            );
            self.conv(&format!("{prefix}.conv_1"), [filter, hidden, kernel], true);
            self.conv(&format!("{prefix}.conv_2"), [hidden, filter, kernel], true);
        }
        layer_norms(self, "norm_layers_2");
        self.conv("enc_p.proj", [2 * config.inter_channels, hidden, 1], true);
    }

    fn generator(&mut self, config: &SynthesizerConfig, f0: bool) {
        let rates = &config.upsample_rates;
        let channels = |i: usize| config.upsample_initial_channel >> i;
        if f0 {
            self.linear("dec.m_source.l_linear", 1, 1);
            for i in 0..rates.len() {
                let stride: i64 = rates[i + 1..].iter().product();
                let kernel = if i + 1 < rates.len() { 2 * stride } else { 1 };
                self.conv(
                    &format!("dec.noise_convs.{i}"),
                    [channels(i + 1), 1, kernel],
                    true,
                );
            }
        }
        self.conv(
            "dec.conv_pre",
            [channels(0), config.inter_channels, 7],
            true,
        );
        for (i, &kernel) in config.upsample_kernel_sizes.iter().enumerate() {
            let shape = [channels(i), channels(i + 1), kernel];
            self.normed(&format!("dec.ups.{i}"), shape, channels(i + 1));
        }
        let blocks = config
            .resblock_kernel_sizes
            .iter()
            .zip(&config.resblock_dilation_sizes);
        let mut index = 0;
        for stage in 0..rates.len() {
            let ch = channels(stage + 1);
            for (&kernel, dilations) in blocks.clone() {
                let groups: &[&str] = if config.resblock == "1" {
                    &["convs1", "convs2"]
                } else {
                    &["convs"]
                };
                for group in groups {
                    for j in 0..dilations.len() {
                        let name = format!("dec.resblocks.{index}.{group}.{j}");
                        self.normed(&name, [ch, ch, kernel], ch);
                    }
                }
                index += 1;
            }
        }
        self.conv("dec.conv_post", [1, channels(rates.len()), 7], false);
        self.conv("dec.cond", [channels(0), config.gin_channels, 1], true);
    }

    fn wavenet(&mut self, prefix: &str, hidden: i64, layers: i64, gin_channels: i64) {
        for i in 0..layers {
            let name = format!("{prefix}.in_layers.{i}");
            self.normed(&name, [2 * hidden, hidden, WAVENET_KERNEL], 2 * hidden);
        }
        for i in 0..layers {
            let out = if i + 1 < layers { 2 * hidden } else { hidden };
            let name = format!("{prefix}.res_skip_layers.{i}");
            self.normed(&name, [out, hidden, 1], out);
        }
        let cond = [2 * hidden * layers, gin_channels, 1];
        self.normed(&format!("{prefix}.cond_layer"), cond, cond[0]);
    }

    fn posterior_encoder(&mut self, config: &SynthesizerConfig) {
        let hidden = config.hidden_channels;
        self.conv("enc_q.pre", [hidden, config.spec_channels, 1], true);
        self.wavenet(
            "enc_q.enc",
            hidden,
            POSTERIOR_WAVENET_LAYERS,
            config.gin_channels,
        );
        self.conv("enc_q.proj", [2 * config.inter_channels, hidden, 1], true);
    }

    fn flow(&mut self, config: &SynthesizerConfig) {
        let (hidden, half) = (config.hidden_channels, config.inter_channels / 2);
        for i in 0..FLOWS {
            // Flows 1, 3, … are the weightless channel flips.
            let prefix = format!("flow.flows.{}", 2 * i);
            self.conv(&format!("{prefix}.pre"), [hidden, half, 1], true);
            self.wavenet(
                &format!("{prefix}.enc"),
                hidden,
                FLOW_WAVENET_LAYERS,
                config.gin_channels,
            );
            let post = format!("{prefix}.post");
            self.push(
                &format!("{post}.weight"),
                Tensor::zeros([half, hidden, 1], CPU_FLOAT),
            );
            self.push(&format!("{post}.bias"), Tensor::zeros([half], CPU_FLOAT));
        }
    }
}
