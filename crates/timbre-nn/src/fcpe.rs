//! FCPE pitch estimation as RVC and Applio run it: torchfcpe 0.0.4's bundled `fcpe_c_v001.pt`
//! through `spawn_bundled_infer_model(...).infer(audio, sr=16000, decoder_mode="local_argmax",
//! threshold=0.006)`. Matches rvc-next 0.2.16 `engine/f0/fcpe_model.py` (a port of torchfcpe
//! equal to it bit for bit): `Wav2Mel` (log-mel, 128 Slaney bands, 0–8000 Hz, an STFT of 1024
//! without centring, padded as torchfcpe pads), `CFNaiveMelPE` with its convolution-only conformer
//! (`conv_only: true`; the attention branch never runs for this model) and the local-argmax
//! decoder over 360 cent bins.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;
use tch::{Device, Kind, Tensor};

use crate::checkpoint::{self, Value};
use crate::layers::{Conv1d, ConvOptions, GroupNorm, LayerNorm, Linear};
use crate::rmvpe::{MelScale, mel_filterbank};
use crate::weights::Weights;

/// Samples per frame at 16 kHz: one f0 value per 10 ms, as every pitch method gives.
pub const HOP: i64 = 160;
/// RVC's voicing threshold on the peak of the posterior.
pub const THRESHOLD: f64 = 0.006;
/// Bins on either side of the peak that the local-argmax decoder averages.
const LOCAL_RADIUS: i64 = 4;

/// `config_dict.mel` of the checkpoint.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct MelConfig {
    /// Sample rate of the input audio in Hz; only 16000 is supported.
    pub sr: u32,
    /// Mel bands of the log-mel input (128 for the bundled model).
    pub num_mels: i64,
    /// STFT size in samples; gives `n_fft / 2 + 1` frequency bins.
    pub n_fft: i64,
    /// Periodic Hann window length, in samples.
    pub win_size: i64,
    /// Samples between frames; only 160 (10 ms at 16 kHz) is supported.
    pub hop_size: i64,
    /// Lowest frequency of the mel filterbank, in Hz.
    pub fmin: f64,
    /// Highest frequency of the mel filterbank, in Hz.
    pub fmax: f64,
}

/// `config_dict.model` of the checkpoint.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ModelConfig {
    /// Model class (upstream `type`); only `CFNaiveMelPE` is supported.
    #[serde(rename = "type")]
    pub kind: String,
    /// Pitch bins of the posterior (360), the length of `cent_table`.
    pub out_dims: i64,
    /// Width of the encoder layers.
    pub hidden_dims: i64,
    /// Conformer encoder layers.
    pub n_layers: i64,
    /// Pitch of the cent table's first bin, in Hz (the table itself is read from the weights).
    pub f0_min: f64,
    /// Pitch of the cent table's last bin, in Hz.
    pub f0_max: f64,
    /// Whether the encoder layers are convolution-only, without attention; must be true.
    #[serde(default)]
    pub conv_only: bool,
    /// Whether the model adds upstream's harmonic embedding; must be false.
    #[serde(default)]
    pub use_harmonic_emb: bool,
}

/// `config_dict` of a torchfcpe checkpoint: the mel front end and the network.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Config {
    /// The mel front end's settings (`config_dict.mel`).
    pub mel: MelConfig,
    /// The network's settings (`config_dict.model`).
    pub model: ModelConfig,
}

/// `ConformerConvModule` inside a residual (`CFNEncoderLayer` with `conv_only`).
struct ConvLayer {
    norm: LayerNorm,
    pointwise_in: Conv1d,
    depthwise: Conv1d,
    pointwise_out: Conv1d,
}

impl ConvLayer {
    fn load(w: &Weights, prefix: &str) -> Result<Self> {
        let net = format!("{prefix}.conformer.net");
        let depthwise_prefix = format!("{net}.4.conv");
        let shape = w.shape(&format!("{depthwise_prefix}.weight"))?;
        ensure!(
            shape.len() == 3,
            "{depthwise_prefix}: not a 1-D convolution"
        );
        let (channels, kernel) = (shape[0], shape[2]);
        Ok(Self {
            norm: LayerNorm::load(w, &format!("{net}.0"), 1e-5)?,
            pointwise_in: Conv1d::load(w, &format!("{net}.2"), ConvOptions::default())?,
            depthwise: Conv1d::load(
                w,
                &depthwise_prefix,
                ConvOptions {
                    padding: kernel / 2,
                    groups: channels,
                    ..ConvOptions::default()
                },
            )?,
            pointwise_out: Conv1d::load(w, &format!("{net}.6"), ConvOptions::default())?,
        })
    }

    /// `[batch, frames, dim]` in and out.
    fn forward(&self, x: &Tensor) -> Tensor {
        let y = self.norm.forward(x).transpose(1, 2);
        let y = self.pointwise_in.forward(&y).glu(1);
        let y = self.depthwise.forward(&y).silu();
        let y = self.pointwise_out.forward(&y).transpose(1, 2);
        x + y
    }
}

/// A loaded FCPE model and its mel front end.
pub struct Fcpe {
    config: Config,
    window: Tensor,
    /// `[num_mels, n_fft / 2 + 1]`.
    filterbank: Tensor,
    input_conv: Conv1d,
    input_norm: GroupNorm,
    input_out: Conv1d,
    layers: Vec<ConvLayer>,
    norm: LayerNorm,
    output: Linear,
    /// `[out_dims]`: each bin's pitch in cents above 10 Hz.
    cent_table: Tensor,
    device: Device,
}

impl Fcpe {
    /// Loads a torchfcpe checkpoint (`config_dict` and `model`) on `device` in float32.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)
            .with_context(|| format!("loading the FCPE model {}", path.display()))?;
        let (Some(config), Some(state)) = (root.get("config_dict"), root.get("model")) else {
            bail!(
                "{}: not an FCPE checkpoint (it has no `config_dict` and `model`)",
                path.display()
            );
        };
        let config = read_config(config)
            .with_context(|| format!("{}: reading its `config_dict`", path.display()))?;
        let model = &config.model;
        if model.kind != "CFNaiveMelPE" || !model.conv_only || model.use_harmonic_emb {
            bail!(
                "{}: only the convolution-only CFNaiveMelPE that torchfcpe bundles is supported \
                 (this one is {}, conv_only {})",
                path.display(),
                model.kind,
                model.conv_only
            );
        }
        let weights = checkpoint::weights_from_dict(state, path)?.to(device, Kind::Float);
        Self::from_weights(config, &weights, device)
    }

    fn from_weights(config: Config, w: &Weights, device: Device) -> Result<Self> {
        let mel = &config.mel;
        ensure!(
            mel.sr == 16_000 && mel.hop_size == HOP,
            "FCPE runs on 16 kHz audio with a hop of {HOP} (this model: {} Hz, hop {})",
            mel.sr,
            mel.hop_size
        );
        let filterbank = mel_filterbank(
            mel.sr,
            mel.n_fft,
            mel.num_mels,
            mel.fmin,
            mel.fmax,
            MelScale::Slaney,
        );
        let bins = mel.n_fft / 2 + 1;
        let layers = (0..config.model.n_layers)
            .map(|i| ConvLayer::load(w, &format!("net.encoder_layers.{i}")))
            .collect::<Result<Vec<_>>>()?;
        let cent_table = w.get_shaped("cent_table", &[config.model.out_dims])?;
        Ok(Self {
            window: Tensor::hann_window_periodic(mel.win_size, true, (Kind::Float, device)),
            filterbank: Tensor::from_slice(&filterbank)
                .view([mel.num_mels, bins])
                .to_device(device),
            input_conv: Conv1d::load(w, "input_stack.0", ConvOptions::padding(1))?,
            input_norm: GroupNorm::load(w, "input_stack.1", 4, 1e-5)?,
            input_out: Conv1d::load(w, "input_stack.3", ConvOptions::padding(1))?,
            layers,
            norm: LayerNorm::load(w, "norm", 1e-5)?,
            output: Linear::load(w, "output_proj")?,
            cent_table,
            device,
            config,
        })
    }

    /// The device the weights are on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The checkpoint's `config_dict`.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The log-mel of 16 kHz mono audio, `[1, samples / hop + 1, num_mels]`, as `Wav2Mel`.
    pub fn mel(&self, audio_16k: &[f32]) -> Tensor {
        let mel = &self.config.mel;
        let audio = Tensor::from_slice(audio_16k).to_device(self.device);
        let samples = audio_16k.len() as i64;
        let (win, hop) = (mel.win_size, mel.hop_size);
        let pad_left = (win - hop) / 2;
        let pad_right = ((win - hop + 1) / 2).max(win - samples - pad_left);
        let mode = if pad_right < samples {
            "reflect"
        } else {
            "constant"
        };
        let padded = audio
            .view([1, 1, samples])
            .pad([pad_left, pad_right], mode, None)
            .view([1, -1]);
        let spectrum = padded.stft(
            mel.n_fft,
            hop,
            win,
            Some(&self.window),
            false,
            true,
            true,
            false,
        );
        let magnitude = (spectrum.real().square() + spectrum.imag().square() + 1e-9).sqrt();
        let energies = self.filterbank.matmul(&magnitude);
        let log_mel = energies.clamp_min(1e-5).log().transpose(-1, -2);
        let frames = samples / hop + 1;
        let have = log_mel.size()[1];
        if frames > have {
            Tensor::cat(&[&log_mel, &log_mel.narrow(1, have - 1, 1)], 1)
        } else {
            log_mel.narrow(1, 0, frames)
        }
    }

    /// The posterior over pitch bins, `[1, frames, out_dims]`, for a log-mel.
    pub fn latent(&self, mel: &Tensor) -> Tensor {
        let x = self.input_conv.forward(&mel.transpose(-1, -2));
        let x = self.input_norm.forward(&x).leaky_relu();
        let mut x = self.input_out.forward(&x).transpose(-1, -2);
        for layer in &self.layers {
            x = layer.forward(&x);
        }
        self.output.forward(&self.norm.forward(&x)).sigmoid()
    }

    /// F0 in Hz per 10 ms frame (`samples / 160 + 1` values), 0 where the peak of the
    /// posterior is at or under `threshold`: the local-argmax decoder.
    pub fn f0(&self, audio_16k: &[f32], threshold: f64) -> Result<Vec<f32>> {
        let _guard = tch::no_grad_guard();
        let latent = tch::autocast(false, || self.latent(&self.mel(audio_16k)));
        let (confidence, peak) = latent.max_dim(-1, true);
        let out_dims = self.config.model.out_dims;
        let offsets =
            Tensor::arange_start(-LOCAL_RADIUS, LOCAL_RADIUS + 1, (Kind::Int64, self.device));
        let window = (peak + offsets.view([1, 1, -1])).clamp(0, out_dims - 1);
        let frames = latent.size()[1];
        let cents = self
            .cent_table
            .view([1, 1, -1])
            .expand([1, frames, out_dims], false)
            .gather(-1, &window, false);
        let weights = latent.gather(-1, &window, false);
        let cents = (cents * &weights).sum_dim_intlist(-1, true, Kind::Float)
            / weights.sum_dim_intlist(-1, true, Kind::Float);
        let f0 = (cents / 1200.0).exp2() * 10.0;
        let f0 = f0.masked_fill(&confidence.le(threshold), 0.0);
        Ok(Vec::<f32>::try_from(
            f0.flatten(0, -1).to_device(Device::Cpu),
        )?)
    }
}

fn read_config(value: &Value) -> Result<Config> {
    serde_json::from_value(to_json(value)?).context("not FCPE's config")
}

/// The plain data of a pickled config (dicts, lists, text, numbers, booleans) as JSON.
fn to_json(value: &Value) -> Result<serde_json::Value> {
    use serde_json::Value as Json;
    Ok(match value {
        Value::None => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => Json::from(*f),
        Value::Str(s) => Json::String(s.clone()),
        Value::List(items) | Value::Tuple(items) => {
            Json::Array(items.iter().map(to_json).collect::<Result<_>>()?)
        }
        Value::Dict(entries) => {
            let mut map = serde_json::Map::new();
            for (key, item) in entries {
                let key = key.as_str().context("a config key that is not text")?;
                map.insert(key.to_string(), to_json(item)?);
            }
            Json::Object(map)
        }
        other => bail!("a config value that is not plain data: {other:?}"),
    })
}
