//! The RVC voice models (v1/v2, with and without pitch) from the community `.pth` files:
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/models.py`
//! `SynthesizerTrnMs256NSFsid`, `SynthesizerTrnMs768NSFsid` and their `_nono` variants, loaded
//! as `infer/modules/vc/modules.py` does (speaker count from `emb_g.weight`, class from
//! `version` and `f0`), IAHispano/Applio `rvc/lib/algorithm/synthesizers.py` files with each
//! of its vocoders ([`Vocoder`]: HiFi-GAN, MRF HiFi-GAN, RefineGAN), and PhamHuynhAnh16/
//! Vietnamese-RVC's energy-conditioned ones (`main/library/algorithm/synthesizers.py`
//! `Synthesizer(energy=True)`, see [`ModelInfo::energy`]). The same modules train (the
//! HiFi-GAN ones): [`TrainableSynthesizer`] keeps the generator's parameters under the
//! reference's state-dict names and runs the training forward with the posterior encoder.

mod attentions;
mod checks;
mod config;
mod decoder_sizes;
mod flow;
mod generator;
mod generator_checkpoint;
mod info;
mod inputs;
mod noise;
mod nsf;
mod parameters;
mod posterior;
mod refinegan;
mod shapes;
#[cfg(test)]
mod tests;
mod text_encoder;
mod training;
#[cfg(test)]
mod training_tests;
mod vocoder;
mod wavenet;

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

pub use checks::check_model;
pub use config::{SynthesizerConfig, parse_sample_rate};
pub use generator_checkpoint::check_generator_checkpoint;
pub use info::{Metadata, ModelInfo};
pub use noise::{Noise, TrainingDraw, TrainingNoise};
pub use training::{TrainableSynthesizer, TrainingBatch, TrainingOutput, slice_segments};
pub use vocoder::Vocoder;

use crate::checkpoint::{self, Value};
use crate::hubert::{Embedder, UnknownEmbedder};
use crate::layers::Embedding;
use crate::weights::Weights;
use attentions::EncoderSizes;
use flow::ResidualCouplingBlock;
use generator::{Generator, Layout};
use inputs::Inputs;
use noise::NoiseSource;
use nsf::HarmonicSource;
use refinegan::RefineGan;
use text_encoder::TextEncoder;

/// The prior's noise scale in RVC's `infer`.
const PRIOR_NOISE_SCALE: f64 = 0.66666;
/// Frames before a window the flow still sees (RVC realtime's `skip_head - 24`).
const FLOW_CONTEXT: i64 = 24;

/// The frames a windowed synthesis returns: `return_length` frames from `skip_head`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First feature frame returned, at least 0.
    pub skip_head: i64,
    /// Feature frames returned from `skip_head` on, at least 1.
    pub return_length: i64,
}

/// An RVC synthesizer ready for inference.
pub struct Synthesizer {
    info: ModelInfo,
    emb_g: Embedding,
    enc_p: TextEncoder,
    flow: ResidualCouplingBlock,
    dec: Decoder,
    /// The NSF excitation, for models driven by pitch.
    source: Option<HarmonicSource>,
    device: Device,
}

/// The decoder of a [`Vocoder`]: a HiFi-GAN in either layout, or RefineGAN.
enum Decoder {
    HifiGan(Generator),
    RefineGan(RefineGan),
}

impl Decoder {
    fn load(w: &Weights, info: &ModelInfo, device: Device) -> Result<Self> {
        let config = &info.config;
        Ok(match Layout::of(info.vocoder) {
            Some(layout) => Self::HifiGan(Generator::load(w, layout, config, info.f0)?),
            None => Self::RefineGan(RefineGan::load(
                w,
                config.inter_channels,
                config.gin_channels,
                &config.upsample_rates,
                device,
            )?),
        })
    }

    fn forward(
        &self,
        x: &Tensor,
        g: &Tensor,
        excitation: Option<&Tensor>,
        noise: &mut NoiseSource,
    ) -> Tensor {
        match (self, excitation) {
            (Self::HifiGan(generator), _) => generator.forward(x, Some(g), excitation),
            (Self::RefineGan(generator), Some(excitation)) => {
                generator.forward(x, excitation, Some(g), noise)
            }
            (Self::RefineGan(_), None) => unreachable!("RefineGAN voices are driven by pitch"),
        }
    }
}

/// Reads what the library shows about a voice model file, refusing files that are not RVC
/// inference models with a vocoder this player implements.
pub fn read_model_info(path: &Path) -> Result<ModelInfo> {
    let root = checkpoint::read_torch_file(path)?;
    let weights = model_weights(&root, path)?;
    check_supported(&root, &weights)?;
    ModelInfo::from_weights(&root, &weights)
}

impl Synthesizer {
    /// Loads an RVC inference `.pth` onto `device` in float32.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)?;
        Self::from_checkpoint(&root, path, device)
    }

    /// Builds the model from a checkpoint already read; `source` names the file in errors.
    pub fn from_checkpoint(root: &Value, source: &Path, device: Device) -> Result<Self> {
        let weights = model_weights(root, source)?;
        check_supported(root, &weights)?;
        let weights = weights.to(Device::Cpu, Kind::Float).to(device, Kind::Float);
        let info = ModelInfo::from_weights(root, &weights)?;
        Self::build(info, &weights, device)
    }

    /// The modules of the model `info` describes from `weights` (on `device`); weight-normalised
    /// layers are computed from their `g` and `v` here, inside autograd when they need gradients.
    fn build(info: ModelInfo, weights: &Weights, device: Device) -> Result<Self> {
        let config = &info.config;
        let sizes = EncoderSizes {
            hidden_channels: config.hidden_channels,
            filter_channels: config.filter_channels,
            n_heads: config.n_heads,
            n_layers: config.n_layers,
            kernel_size: config.kernel_size,
        };
        let enc_p =
            TextEncoder::load(weights, "enc_p", &sizes, config.inter_channels, info.energy)?;
        let source_module = if info.f0 {
            Some(HarmonicSource::load(weights, info.vocoder, config.sr)?)
        } else {
            None
        };
        Ok(Self {
            emb_g: Embedding::load(weights, "emb_g")?,
            enc_p,
            flow: ResidualCouplingBlock::load(
                weights,
                "flow",
                config.inter_channels,
                config.gin_channels,
            )?,
            dec: Decoder::load(weights, &info, device)?,
            source: source_module,
            device,
            info,
        })
    }

    /// What the model file describes: version, rate, pitch use, sizes and metadata.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Device the weights live on and synthesis runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// RVC's `net_g.infer`: content features `phone` `[batch, frames, feature_dim]` with their
    /// `phone_lengths` `[batch]`, and for a pitch model the coarse pitch classes `pitch`
    /// `[batch, frames]` and the f0 `pitchf` `[batch, frames]` in Hz (0 = unvoiced), speaker
    /// `sid` → audio `[batch, 1, frames × hop]` at the model's sample rate. Pitch inputs given
    /// to a model without pitch are ignored. An energy-conditioned model needs
    /// [`Synthesizer::infer_stretched`], which takes the energy.
    pub fn infer(
        &self,
        phone: &Tensor,
        phone_lengths: &Tensor,
        pitch: Option<&Tensor>,
        pitchf: Option<&Tensor>,
        sid: i64,
        noise: Noise,
    ) -> Result<Tensor> {
        self.infer_window(phone, phone_lengths, pitch, pitchf, sid, noise, None)
    }

    /// [`Synthesizer::infer`] of only the frames `window` names, as RVC's realtime
    /// `net_g.infer(…, skip_head, return_length, return_length)` does: the prior encoder runs
    /// over every frame, the flow over the window and the 24 frames before it, the decoder over
    /// the window alone (its excitation starts at the window's first frame). Audio
    /// `[batch, 1, return_length × hop]`; `None` is the whole input.
    #[expect(clippy::too_many_arguments)]
    pub fn infer_window(
        &self,
        phone: &Tensor,
        phone_lengths: &Tensor,
        pitch: Option<&Tensor>,
        pitchf: Option<&Tensor>,
        sid: i64,
        noise: Noise,
        window: Option<Window>,
    ) -> Result<Tensor> {
        self.infer_stretched(
            phone,
            phone_lengths,
            pitch,
            pitchf,
            None,
            sid,
            noise,
            window,
            None,
        )
    }

    /// [`Synthesizer::infer_window`] with the decoder's input and the pitch excitation
    /// stretched by linear interpolation to `decoder_frames` frames, as RVC's
    /// `infer(…, return_length2)` does for the formant shift: audio
    /// `[batch, 1, decoder_frames × hop]`. `None` stretches nothing. `energy` `[batch, frames]`
    /// is each frame's RMS for an energy-conditioned model (Vietnamese-RVC's
    /// `infer(…, energy)`), ignored by the others.
    #[expect(clippy::too_many_arguments)]
    pub fn infer_stretched(
        &self,
        phone: &Tensor,
        phone_lengths: &Tensor,
        pitch: Option<&Tensor>,
        pitchf: Option<&Tensor>,
        energy: Option<&Tensor>,
        sid: i64,
        noise: Noise,
        window: Option<Window>,
        decoder_frames: Option<i64>,
    ) -> Result<Tensor> {
        if let Some(frames) = decoder_frames {
            ensure!(
                frames >= 1,
                "the decoder cannot be stretched to {frames} frames"
            );
        }
        if !(0..self.info.speakers).contains(&sid) {
            bail!(
                "speaker id {sid} is out of range: the model has {} speaker(s)",
                self.info.speakers
            );
        }
        let mut inputs = self.checked_inputs(phone, phone_lengths, pitch, pitchf)?;
        inputs.energy = self.checked_energy(energy, &inputs)?;
        if let Some(window) = window {
            let frames = inputs.phone.size()[1];
            if window.skip_head < 0
                || window.return_length < 1
                || window.skip_head + window.return_length > frames
            {
                bail!(
                    "frames {}..{} asked for; the input has {frames}",
                    window.skip_head,
                    window.skip_head + window.return_length
                );
            }
        }
        Ok(tch::no_grad(|| {
            self.run(
                &inputs,
                sid,
                &mut NoiseSource::new(noise),
                window,
                decoder_frames,
            )
        }))
    }

    fn run(
        &self,
        inputs: &Inputs,
        sid: i64,
        noise: &mut NoiseSource,
        window: Option<Window>,
        decoder_frames: Option<i64>,
    ) -> Tensor {
        let device = inputs.phone.device();
        let batch = inputs.phone.size()[0];
        let speaker = Tensor::full([batch], sid, (Kind::Int64, device));
        let g = self.emb_g.forward(&speaker).unsqueeze(-1);
        let (mut mean, mut log_scale, mut x_mask) = self.enc_p.forward(
            &inputs.phone,
            inputs.pitch.as_ref(),
            inputs.energy.as_ref(),
            &inputs.lengths,
        );
        let mut pitchf = inputs.pitchf.as_ref().map(Tensor::shallow_clone);
        // The flow sees FLOW_CONTEXT frames before the window; the decoder only the window.
        let flow_head = window.map_or(0, |w| (w.skip_head - FLOW_CONTEXT).max(0));
        if flow_head > 0 {
            let kept = mean.size()[2] - flow_head;
            mean = mean.narrow(2, flow_head, kept);
            log_scale = log_scale.narrow(2, flow_head, kept);
            x_mask = x_mask.narrow(2, flow_head, kept);
        }
        let prior_noise = noise.normal(&mean.size(), device) * PRIOR_NOISE_SCALE;
        let z_p = (mean + log_scale.exp() * prior_noise) * &x_mask;
        let mut z = self.flow.reverse(&z_p, &x_mask, Some(&g));
        if let Some(w) = window {
            z = z.narrow(2, w.skip_head - flow_head, w.return_length);
            x_mask = x_mask.narrow(2, w.skip_head - flow_head, w.return_length);
            pitchf = pitchf.map(|f0| f0.narrow(1, w.skip_head, w.return_length));
        }
        let mut excitation = match (&self.source, &pitchf) {
            (Some(source), Some(f0)) => Some(source.forward(f0, self.info.hop, noise)),
            _ => None,
        };
        let mut decoder_input = z * &x_mask;
        if let Some(frames) = decoder_frames {
            let stretch = |x: &Tensor, len: i64| {
                if x.size()[2] == len {
                    x.shallow_clone()
                } else {
                    x.upsample_linear1d([len], false, None)
                }
            };
            excitation = excitation.map(|e| stretch(&e, frames * self.info.hop));
            decoder_input = stretch(&decoder_input, frames);
        }
        self.dec
            .forward(&decoder_input, &g, excitation.as_ref(), noise)
    }
}

/// The `weight` dict of an RVC inference model, or an error saying what the file is instead.
fn model_weights(root: &Value, source: &Path) -> Result<Weights> {
    let file = source.display();
    let Some(entries) = root.as_dict() else {
        bail!(
            "{file}: not an RVC voice model: the file holds a single {}, not a dict of entries",
            value_kind(root)
        );
    };
    if let Some(weight) = root.get("weight") {
        let weights = checkpoint::weights_from_dict(weight, source).with_context(|| {
            format!("{file}: the `weight` entry of an RVC model must be a dict of tensors")
        })?;
        if weights.is_empty() {
            bail!("{file}: the `weight` dict holds no tensors");
        }
        return Ok(weights);
    }
    let keys: Vec<&str> = entries.iter().filter_map(|(k, _)| k.as_str()).collect();
    let model_keys: Vec<&str> = match root.get("model").and_then(Value::as_dict) {
        Some(model) => model.iter().filter_map(|(k, _)| k.as_str()).collect(),
        None => Vec::new(),
    };
    let any_key = |names: &[&str], prefixes: &[&str]| {
        names
            .iter()
            .any(|k| prefixes.iter().any(|p| k.starts_with(p)))
    };
    if any_key(&model_keys, &["feature_extractor.", "encoder.layers."]) {
        bail!(
            "{file}: this is a HuBERT/ContentVec feature extractor checkpoint (fairseq), not a voice model"
        );
    }
    if keys.contains(&"model") && any_key(&keys, &["optimizer", "iteration", "learning_rate"]) {
        if any_key(&model_keys, &["discriminators."]) {
            bail!(
                "{file}: this is a discriminator training checkpoint (D_*.pth), not a voice model; export the voice model from the matching G_*.pth"
            );
        }
        bail!(
            "{file}: this is a training checkpoint (G_*.pth: `model` weights with optimizer state), not a voice model; \
             export the small inference model from it (RVC: the ckpt tab's \"extract small model\"; Applio: Train → Export Model) and load that .pth"
        );
    }
    if any_key(&keys, &["unet.encoder.", "unet.decoder."]) && any_key(&keys, &["fc."]) {
        bail!("{file}: this is an RMVPE pitch extractor, not a voice model");
    }
    if keys.contains(&"emb_g.weight") {
        bail!(
            "{file}: holds bare synthesizer weights without RVC's `config`/`version`/`f0` entries; export it as an RVC inference model"
        );
    }
    let shown: Vec<&str> = keys.iter().take(8).copied().collect();
    bail!(
        "{file}: not an RVC voice model: no `weight` entry (its entries: {})",
        shown.join(", ")
    )
}

/// Refuses models whose decoder or content features this player does not implement.
fn check_supported(root: &Value, weights: &Weights) -> Result<()> {
    let file = weights.source().display();
    if let Some(entry) = root.get("vocoder").and_then(Value::as_str)
        && Vocoder::from_entry(entry).is_none()
    {
        bail!(
            "{file}: the model uses the {entry} vocoder, which this player does not implement (it plays HiFi-GAN, MRF HiFi-GAN and RefineGAN voices)"
        );
    }
    let vocoder = Vocoder::of_weights(weights)?;
    if vocoder != Vocoder::HifiGan && !weights.contains("enc_p.emb_pitch.weight") {
        bail!("{file}: a {vocoder} voice without pitch guidance, which Applio cannot train either");
    }
    if let Err(UnknownEmbedder(embedder)) =
        Embedder::of_entry(root.get("embedder_model").and_then(Value::as_str))
    {
        bail!(
            "{file}: the model was trained on the features of the {embedder} embedder, which this \
             player does not know (it knows {} and custom folders); converting with another's \
             would make it sound wrong",
            Embedder::ALL.map(Embedder::name).join(", ")
        );
    }
    Ok(())
}

fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Float(_) => "number",
        Value::Str(_) | Value::Bytes(_) => "string",
        Value::List(_) | Value::Tuple(_) => "list",
        Value::Dict(_) => "dict",
        Value::Tensor(_) => "tensor",
        Value::Object { .. } => "object",
        Value::Global(_) => "class reference",
    }
}

/// Audio a synthesizer gave (`[batch, 1, samples]`, any float kind, any device) as float
/// samples on the CPU.
pub fn samples(audio: &Tensor) -> Result<Vec<f32>> {
    Ok(Vec::<f32>::try_from(
        audio
            .flatten(0, -1)
            .to_kind(Kind::Float)
            .to_device(tch::Device::Cpu),
    )?)
}
