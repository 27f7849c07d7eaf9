//! PESTO pitch estimation as pesto-pitch 2.0.1 runs its bundled `mir-1k_g7.ckpt`
//! (`pesto.predict(x, 16000, step_size=10, reduction="alwa")`: pesto/model.py `PESTO`,
//! `Resnet1d`, `ConfidenceClassifier`; pesto/data.py `Preprocessor`; pesto/utils/hcqt.py, nnAudio's
//! variable-Q transform): the log-magnitude CQT of 16 kHz audio every 10 ms, a small 1-D CNN over
//! its bins with a Toeplitz output layer, the softmax's argmax-local weighted average in
//! semitones, and a voicing confidence from the spectrum's energy and flatness.
//!
//! The network's settings (layers, kernel sizes, activation, crop, harmonics, CQT range) are read
//! from the checkpoint's `hparams` and `hcqt_params`. One detail kept on purpose: the reference
//! scales the CQT in decibels by ln 10 / 10 in place before taking its energy, so the encoder
//! sees the natural log of the power, not decibels.

use std::f64::consts::{LN_10, PI};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use crate::checkpoint::{self, Value};
use crate::weights::Weights;

/// Samples per frame at 16 kHz: one pitch per 10 ms, the grid of the other trackers.
pub const HOP: i64 = 160;
const SAMPLE_RATE: f64 = 16_000.0;
/// A frame is voiced at this confidence or above.
pub const VOICED_CONFIDENCE: f32 = 0.5;
/// Frames through the network at once (results per frame do not depend on it).
const FRAMES_PER_RUN: i64 = 1024;
const LAYER_NORM_EPS: f64 = 1e-5;

/// The encoder's activation (`activation_fn`).
#[derive(Debug, Clone, Copy)]
enum Activation {
    Leaky(f64),
    Relu,
    Silu,
}

impl Activation {
    fn forward(self, x: &Tensor) -> Tensor {
        match self {
            // For a slope under 1, max(x, slope · x) is torch's `x > 0 ? x : slope · x`.
            Activation::Leaky(slope) => x.maximum(&(x * slope)),
            Activation::Relu => x.relu(),
            Activation::Silu => x.silu(),
        }
    }
}

/// A convolution's weight and bias.
struct Conv {
    weight: Tensor,
    bias: Tensor,
    padding: i64,
    stride: i64,
}

impl Conv {
    fn load(w: &Weights, prefix: &str, padding: i64, stride: i64) -> Result<Self> {
        Ok(Self {
            weight: w.get(&format!("{prefix}.weight"))?,
            bias: w.get(&format!("{prefix}.bias"))?,
            padding,
            stride,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv1d(
            &self.weight,
            Some(&self.bias),
            [self.stride],
            [self.padding],
            [1],
            1,
        )
    }
}

/// The loaded model.
pub struct Pesto {
    /// `[2 · bins, 1, width]`: the kernels' real parts, then their negated imaginary parts.
    cqt_kernels: Tensor,
    /// `[bins, 1]`: librosa's normalisation, √ of each kernel's length.
    sqrt_lengths: Tensor,
    bins: i64,
    kernel_width: i64,
    /// The bins the encoder sees: `crop.0..crop.1`.
    crop: (i64, i64),
    layer_norm: (Tensor, Tensor),
    first: Conv,
    prefilter: Vec<Conv>,
    residual: bool,
    pointwise: Vec<Conv>,
    activation: Activation,
    toeplitz: Tensor,
    confidence_conv: Conv,
    confidence_linear: (Tensor, Tensor),
    /// The bins the activations roll down by (`round(shift · bins_per_semitone)`).
    roll: i64,
    bins_per_semitone: i64,
    device: Device,
}

fn entry<'a>(dict: &'a Value, key: &str, path: &Path) -> Result<&'a Value> {
    dict.get(key)
        .with_context(|| format!("{}: the checkpoint has no `{key}`", path.display()))
}

fn number(dict: &Value, key: &str, path: &Path) -> Result<f64> {
    let value = entry(dict, key, path)?;
    value
        .as_f64()
        .or_else(|| value.as_i64().map(|i| i as f64))
        .with_context(|| format!("{}: `{key}` is not a number", path.display()))
}

fn integer(dict: &Value, key: &str, path: &Path) -> Result<i64> {
    entry(dict, key, path)?
        .as_i64()
        .with_context(|| format!("{}: `{key}` is not an integer", path.display()))
}

fn flag(dict: &Value, key: &str, path: &Path) -> Result<bool> {
    match entry(dict, key, path)? {
        Value::Bool(b) => Ok(*b),
        _ => bail!("{}: `{key}` is not a bool", path.display()),
    }
}

impl Pesto {
    /// Loads a PESTO checkpoint (pesto-pitch's `mir-1k_g7.ckpt`: `hparams`, `hcqt_params` and a
    /// Lightning `state_dict`) on `device`.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)
            .with_context(|| format!("loading the PESTO model {}", path.display()))?;
        let (Some(hparams), Some(hcqt), Some(state)) = (
            root.get("hparams"),
            root.get("hcqt_params"),
            root.get("state_dict"),
        ) else {
            bail!(
                "{}: not a PESTO checkpoint (it needs hparams, hcqt_params and state_dict)",
                path.display()
            );
        };
        let w = checkpoint::weights_from_dict(state, path)?.to(device, Kind::Float);
        let encoder = entry(hparams, "encoder", path)?;
        let harmonics = entry(hcqt, "harmonics", path)?
            .as_list()
            .unwrap_or_default();
        ensure!(
            harmonics.len() == 1 && harmonics[0].as_i64() == Some(1),
            "{}: a harmonic CQT of several harmonics, which this player does not implement",
            path.display()
        );
        let bins_per_semitone = integer(hcqt, "bins_per_semitone", path)?;
        let bins = integer(hcqt, "n_bins", path)?;
        let (kernels, lengths) = cqt_kernels(
            number(hcqt, "fmin", path)?,
            bins,
            bins_per_semitone,
            flag(hcqt, "center_bins", path)?,
            number(hcqt, "gamma", path)?,
        )
        .with_context(|| format!("{}: its CQT", path.display()))?;
        ensure!(
            flag(hcqt, "center", path)?,
            "{}: an uncentred CQT, which this player does not implement",
            path.display()
        );
        let kernel_width = kernels.size()[2];
        let pitch_shift = entry(hparams, "pitch_shift", path)?;
        let (min_steps, max_steps) = (
            integer(pitch_shift, "min_steps", path)?,
            integer(pitch_shift, "max_steps", path)?,
        );
        let crop = (max_steps, bins + min_steps);
        ensure!(
            min_steps < 0 && 0 <= max_steps && crop.0 < crop.1,
            "{}: a pitch shift of {min_steps}..{max_steps} bins leaves no CQT bins",
            path.display()
        );
        let reduction = entry(hparams, "reduction", path)?
            .as_str()
            .unwrap_or_default();
        ensure!(
            reduction == "alwa",
            "{}: reduction `{reduction}`; this player implements alwa",
            path.display()
        );
        let activation = match entry(encoder, "activation_fn", path)?.as_str() {
            Some("leaky") => {
                let slope = number(encoder, "a_lrelu", path)?;
                ensure!(
                    (0.0..1.0).contains(&slope),
                    "{}: a leaky ReLU slope of {slope}",
                    path.display()
                );
                Activation::Leaky(slope)
            }
            Some("relu") => Activation::Relu,
            Some("silu") => Activation::Silu,
            other => bail!("{}: activation {other:?}", path.display()),
        };
        let kernel = integer(encoder, "prefilt_kernel_size", path)?;
        let prefilter_layers = integer(encoder, "n_prefilt_layers", path)?;
        let prefilter = (0..prefilter_layers - 1)
            .map(|i| Conv::load(&w, &format!("encoder.prefilt_layers.{i}.0"), kernel / 2, 1))
            .collect::<Result<_>>()?;
        let mut pointwise = Vec::new();
        // `conv_layers` holds [conv, activation, dropout] per layer.
        while w.contains(&format!(
            "encoder.conv_layers.{}.weight",
            3 * pointwise.len()
        )) {
            let name = format!("encoder.conv_layers.{}", 3 * pointwise.len());
            pointwise.push(Conv::load(&w, &name, 0, 1)?);
        }
        let toeplitz = w.get("encoder.fc.weight")?;
        let n_in = crop.1 - crop.0;
        let model = Self {
            cqt_kernels: kernels.to_device(device),
            sqrt_lengths: lengths.sqrt().unsqueeze(-1).to_device(device),
            bins,
            kernel_width,
            crop,
            layer_norm: (
                w.get_shaped("encoder.layernorm.weight", &[1, n_in])?,
                w.get_shaped("encoder.layernorm.bias", &[1, n_in])?,
            ),
            first: Conv::load(&w, "encoder.conv1.0", kernel / 2, 1)?,
            prefilter,
            residual: flag(encoder, "residual", path)?,
            pointwise,
            activation,
            toeplitz,
            confidence_conv: Conv::load(&w, "confidence.conv", 0, 3)?,
            confidence_linear: (
                w.get("confidence.linear.weight")?,
                w.get("confidence.linear.bias")?,
            ),
            roll: (f64::from(w.get("shift")?.double_value(&[]) as f32) * bins_per_semitone as f64)
                .round_ties_even() as i64,
            bins_per_semitone,
            device,
        };
        ensure!(
            model.toeplitz.size()[2] - integer(encoder, "output_dim", path)? + 1
                == n_in * model.pointwise.last().map_or(0, |c| c.weight.size()[0]),
            "{}: the output layer does not fit the encoder's width",
            path.display()
        );
        Ok(model)
    }

    /// Where the model runs.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The log-magnitude CQT of frames of the reflect-padded audio `padded`, `[frames, bins]`.
    fn cqt(&self, padded: &Tensor, first: i64, frames: i64) -> Tensor {
        let span = padded.narrow(0, first * HOP, (frames - 1) * HOP + self.kernel_width);
        let real_imag = span
            .view([1, 1, -1])
            .conv1d(&self.cqt_kernels, None::<&Tensor>, [HOP], [0], [1], 1)
            .view([2, self.bins, frames])
            * &self.sqrt_lengths;
        let magnitude = real_imag.get(0).hypot(&real_imag.get(1));
        (magnitude.clamp_min(f64::from(f32::EPSILON)).log10() * 20.0).transpose(0, 1)
    }

    /// The encoder's pitch probabilities `[frames, 128 · bins_per_semitone]` for the CQT's
    /// natural log of power `[frames, bins]`.
    fn encode(&self, log_power: &Tensor) -> Tensor {
        let x = log_power
            .narrow(1, self.crop.0, self.crop.1 - self.crop.0)
            .unsqueeze(1);
        let (weight, bias) = &self.layer_norm;
        let shape = weight.size();
        let x = x.layer_norm(
            shape.as_slice(),
            Some(weight),
            Some(bias),
            LAYER_NORM_EPS,
            false,
        );
        let mut x = self.activation.forward(&self.first.forward(&x));
        for layer in &self.prefilter {
            let y = self.activation.forward(&layer.forward(&x));
            x = if self.residual { y + x } else { y };
        }
        for layer in &self.pointwise {
            x = self.activation.forward(&layer.forward(&x));
        }
        let x = x.flatten(1, -1).unsqueeze(1);
        let padding = self.toeplitz.size()[2] - x.size()[2];
        x.conv1d(&self.toeplitz, None::<&Tensor>, [1], [padding], [1], 1)
            .squeeze_dim(1)
            .softmax(-1, Kind::Float)
    }

    /// The voicing confidence `[frames]` from the CQT's power `[frames, bins]`.
    fn confidence(&self, power: &Tensor) -> Tensor {
        let geometric = power.log().mean_dim(-1, true, Kind::Float).exp();
        let arithmetic = power.mean_dim(-1, true, Kind::Float).clamp_min(1e-8);
        let flatness = geometric / arithmetic;
        let conv = self
            .confidence_conv
            .forward(&power.unsqueeze(1))
            .squeeze_dim(1)
            .relu();
        let (weight, bias) = &self.confidence_linear;
        Tensor::cat(&[conv, flatness], -1)
            .linear(weight, Some(bias))
            .sigmoid()
            .squeeze_dim(-1)
    }

    /// `alwa`: around each frame's most probable bin, the probability-weighted mean of the
    /// neighbouring bins' pitches, in MIDI semitones.
    fn reduce(&self, activations: &Tensor) -> Tensor {
        let bins = activations.size()[1];
        let bps = self.bins_per_semitone;
        let pitches = Tensor::arange(bins, (Kind::Float, self.device)) / bps as f64;
        let window = Tensor::arange_start(1 - bps, bps, (Kind::Int64, self.device));
        let indices = (activations.argmax(-1, true) + window).clamp(0, bins - 1);
        let around = activations.gather(-1, &indices, false);
        let pitch = pitches
            .index_select(0, &indices.flatten(0, -1))
            .view_as(&indices);
        (&around * pitch).sum_dim_intlist(-1, false, Kind::Float)
            / around.sum_dim_intlist(-1, false, Kind::Float)
    }

    /// The network's pitch probabilities per 10 ms frame of 16 kHz `audio`, rolled to absolute
    /// pitch (`[frames, 128 · bins_per_semitone]`), and the frames' confidence `[frames]`, in
    /// runs of frames; `len / 160 + 1` frames in all. Audio shorter than half the CQT's kernel,
    /// which the reference's reflect padding cannot take, is extended with zeros first.
    fn runs(&self, audio: &[f32]) -> Result<Vec<(Tensor, Tensor)>> {
        ensure!(!audio.is_empty(), "the input has no samples");
        let _guard = tch::no_grad_guard();
        let frames = audio.len() as i64 / HOP + 1;
        let half = self.kernel_width / 2;
        let mut samples = audio.to_vec();
        samples.resize(samples.len().max(half as usize + 1), 0.0);
        let padded = Tensor::from_slice(&samples)
            .to_device(self.device)
            .view([1, 1, -1])
            .reflection_pad1d([half, half])
            .view([-1]);
        Ok((0..frames)
            .step_by(FRAMES_PER_RUN as usize)
            .map(|first| {
                let count = FRAMES_PER_RUN.min(frames - first);
                let log_power = self.cqt(&padded, first, count) * (LN_10 / 10.0);
                let confidence = self.confidence(&log_power.exp());
                let activations = self.encode(&log_power).roll([-self.roll], [-1]);
                (activations, confidence)
            })
            .collect())
    }

    /// The network's output for 16 kHz `audio`, as `pesto.predict` returns it.
    pub fn activations(&self, audio: &[f32]) -> Result<Tensor> {
        let runs = self.runs(audio)?;
        Ok(Tensor::cat(
            &runs.iter().map(|(a, _)| a).collect::<Vec<_>>(),
            0,
        ))
    }

    /// Pitch in Hz and confidence per 10 ms frame of 16 kHz `audio`, `len / 160 + 1` frames, as
    /// `pesto.predict` (reduction `alwa`, `convert_to_freq`).
    pub fn predict(&self, audio: &[f32]) -> Result<(Vec<f32>, Vec<f32>)> {
        let (mut hz, mut confidence) = (Vec::new(), Vec::new());
        for (activations, run_confidence) in self.runs(audio)? {
            let semitones = self.reduce(&activations);
            let frequency = ((semitones - 69.0) / 12.0).exp2() * 440.0;
            hz.extend(Vec::<f32>::try_from(frequency.to_device(Device::Cpu))?);
            confidence.extend(Vec::<f32>::try_from(run_confidence.to_device(Device::Cpu))?);
        }
        Ok((hz, confidence))
    }

    /// Hz per 10 ms frame (0 = unvoiced or outside `[fmin, fmax]`), `len / 160 + 1` values.
    pub fn f0(&self, audio_16k: &[f32], fmin: f32, fmax: f32) -> Result<Vec<f32>> {
        let (hz, confidence) = self.predict(audio_16k)?;
        Ok(hz
            .iter()
            .zip(&confidence)
            .map(|(&f, &c)| {
                if c >= VOICED_CONFIDENCE && (fmin..=fmax).contains(&f) {
                    f
                } else {
                    0.0
                }
            })
            .collect())
    }
}

/// nnAudio's `create_cqt_kernels` for one harmonic at 16 kHz with Hann windows and L1
/// normalisation: `[2 · bins, 1, width]` (real parts, then negated imaginary parts, as the
/// reference's convolution weight) and each kernel's length `[bins]`.
fn cqt_kernels(
    fmin: f64,
    bins: i64,
    bins_per_semitone: i64,
    center_bins: bool,
    gamma: f64,
) -> Result<(Tensor, Tensor)> {
    let per_octave = 12.0 * bins_per_semitone as f64;
    let fmin = if center_bins {
        fmin / 2f64.powf((bins_per_semitone - 1) as f64 / (24.0 * bins_per_semitone as f64))
    } else {
        fmin
    };
    let q = 1.0 / (2f64.powf(1.0 / per_octave) - 1.0);
    let alpha = 2f64.powf(1.0 / per_octave) - 1.0;
    let freqs: Vec<f64> = (0..bins)
        .map(|k| fmin * 2f64.powf(k as f64 / per_octave))
        .collect();
    let top = freqs.last().copied().unwrap_or_default();
    ensure!(
        bins > 0 && top <= SAMPLE_RATE / 2.0,
        "its top bin ({top:.1} Hz) is above the Nyquist frequency at 16 kHz"
    );
    let lengths: Vec<f64> = freqs
        .iter()
        .map(|f| (q * SAMPLE_RATE / (f + gamma / alpha)).ceil())
        .collect();
    let max_len = lengths.iter().copied().fold(0.0, f64::max);
    let width = 2f64.powf(max_len.log2().ceil()) as usize;
    let mut real = vec![0f32; bins as usize * width];
    let mut imag = vec![0f32; bins as usize * width];
    for (k, (&freq, &l)) in freqs.iter().zip(&lengths).enumerate() {
        let len = l as usize;
        let start = if len % 2 == 1 {
            (width as f64 / 2.0 - l / 2.0).ceil() as usize - 1
        } else {
            (width as f64 / 2.0 - l / 2.0).ceil() as usize
        };
        let first = (-l / 2.0).floor();
        let sig: Vec<(f64, f64)> = (0..len)
            .map(|n| {
                let window = 0.5 - 0.5 * (2.0 * PI * n as f64 / l).cos();
                let phase = (first + n as f64) * 2.0 * PI * freq / SAMPLE_RATE;
                (window * phase.cos() / l, window * phase.sin() / l)
            })
            .collect();
        let l1: f64 = sig.iter().map(|(re, im)| re.hypot(*im)).sum();
        for (n, (re, im)) in sig.iter().enumerate() {
            real[k * width + start + n] = (re / l1) as f32;
            imag[k * width + start + n] = (-im / l1) as f32;
        }
    }
    let kernels = Tensor::cat(&[Tensor::from_slice(&real), Tensor::from_slice(&imag)], 0).view([
        2 * bins,
        1,
        width as i64,
    ]);
    let lengths: Vec<f32> = lengths.iter().map(|&l| l as f32).collect();
    Ok((kernels, Tensor::from_slice(&lengths)))
}
