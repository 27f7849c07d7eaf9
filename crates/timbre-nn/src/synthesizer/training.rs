//! Training the synthesizer with the modules that run inference: the generator's parameters are
//! the variables of a `tch::nn::VarStore` named as the reference's `state_dict()`
//! (`dec.ups.0.weight_g`, …), and every forward builds the modules from them, so weight-normalised
//! layers compute `g · v / ‖v‖` inside autograd. The forward is
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/infer_pack/models.py`
//! `SynthesizerTrnMs256NSFsid.forward` (and the 768 and `_nono` variants) with `commons.py`
//! `rand_slice_segments`/`slice_segments`; checkpoints load as `infer/lib/train/utils.py` and
//! rvc-next's `load_pretrained_generator` load them.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use tch::{Device, Kind, Tensor, nn};

use super::generator_checkpoint::{GeneratorKind, first_few, generator_state};
use super::noise::{NoiseSource, TrainingDraw, TrainingNoise};
use super::parameters::initial_parameters;
use super::posterior::PosteriorEncoder;
use super::{Inputs, Metadata, ModelInfo, Synthesizer, SynthesizerConfig, Vocoder};
use crate::checkpoint::{self, Value};
use crate::weights::Weights;

/// An RVC generator being trained: its parameters and the training forward.
pub struct TrainableSynthesizer {
    vars: nn::VarStore,
    /// The variables of `vars` in the reference's `state_dict()` order (also the order of its
    /// `parameters()`, which optimizer states follow).
    parameters: Vec<(String, Tensor)>,
    info: ModelInfo,
    /// Named in errors: the checkpoint loaded last, or what the parameters are.
    source: PathBuf,
}

/// One batch as RVC's collate gives it: the inputs of the reference's `net_g(...)`.
pub struct TrainingBatch<'a> {
    /// Content features `[batch, frames, feature_dim]` with their lengths `[batch]`.
    pub phone: &'a Tensor,
    /// Valid frames of each item of `phone` `[batch]` (int64).
    pub phone_lengths: &'a Tensor,
    /// For a pitch model: coarse pitch classes and f0 in Hz (0 = unvoiced), both
    /// `[batch, frames]`. Ignored by a model without pitch.
    pub pitch: Option<&'a Tensor>,
    /// For a pitch model: f0 `[batch, frames]` in Hz (float, 0 = unvoiced).
    pub pitchf: Option<&'a Tensor>,
    /// Linear spectrograms `[batch, spec_channels, spec frames]` with their lengths `[batch]`,
    /// each at least `segment_size` frames.
    pub spec: &'a Tensor,
    /// Valid frames of each item of `spec` `[batch]` (int64).
    pub spec_lengths: &'a Tensor,
    /// Speaker ids `[batch]`.
    pub sid: &'a Tensor,
}

/// The reference's `(o, ids_slice, x_mask, y_mask, (z, z_p, m_p, logs_p, m_q, logs_q))`.
#[derive(Debug)]
pub struct TrainingOutput {
    /// The rendered slices `[batch, 1, segment_size × hop]`.
    pub audio: Tensor,
    /// Where each slice starts, in spec frames `[batch]` (int64).
    pub ids_slice: Tensor,
    /// Masks of the phone frames `[batch, 1, frames]` and of the spec frames
    /// `[batch, 1, spec frames]`.
    pub x_mask: Tensor,
    /// Mask of the spec frames `[batch, 1, spec frames]`: 1 within each item's length, else 0.
    pub y_mask: Tensor,
    /// The posterior's sample `[batch, inter, spec frames]` and its image through the flow.
    pub z: Tensor,
    /// `z` through the flow, in the prior's space `[batch, inter, spec frames]`.
    pub z_p: Tensor,
    /// The prior's mean and log-scale `[batch, inter, frames]`.
    pub m_p: Tensor,
    /// The prior's log-scale `[batch, inter, frames]`.
    pub logs_p: Tensor,
    /// The posterior's mean and log-scale `[batch, inter, spec frames]`.
    pub m_q: Tensor,
    /// The posterior's log-scale `[batch, inter, spec frames]`.
    pub logs_q: Tensor,
}

impl TrainableSynthesizer {
    /// A fresh generator for `config`, `version` "v1" (256-d features) or "v2" (768-d), with
    /// an NSF decoder driven by pitch when `f0`, initialised as the reference initialises one
    /// (from libtorch's generator: `tch::manual_seed` repeats it).
    pub fn new(
        config: &SynthesizerConfig,
        version: &str,
        f0: bool,
        device: Device,
    ) -> Result<Self> {
        let feature_dim = match version {
            "v1" => 256,
            "v2" => 768,
            _ => bail!("version {version:?}: RVC generators are \"v1\" or \"v2\""),
        };
        check_config(config)?;
        let vars = nn::VarStore::new(device);
        let parameters = initial_parameters(config, feature_dim, f0)
            .into_iter()
            .map(|(name, initial)| {
                let mut path = vars.root();
                let mut parts: Vec<&str> = name.split('.').collect();
                let leaf = parts.pop().expect("names are not empty");
                for part in parts {
                    path = path / part;
                }
                let variable = path.var_copy(leaf, &initial);
                (name, variable)
            })
            .collect();
        let info = ModelInfo {
            version: version.to_string(),
            sample_rate: config.sr,
            f0,
            speakers: config.spk_embed_dim,
            feature_dim,
            hop: config.hop(),
            vocoder: Vocoder::HifiGan,
            energy: false,
            config: config.clone(),
            config_mismatches: Vec::new(),
            metadata: Metadata::default(),
        };
        let source = PathBuf::from(format!("{} (new)", GeneratorKind::of_info(&info)));
        let model = Self {
            vars,
            parameters,
            info,
            source,
        };
        // Building the modules checks what the config sets and the loaders rely on (odd
        // kernels, exact upsampling).
        model.modules()?;
        Ok(model)
    }

    /// The model's description: its config, version, rate and pitch use.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Device the parameters live on.
    pub fn device(&self) -> Device {
        self.vars.device()
    }

    /// The store holding the parameters, for an optimizer.
    pub fn var_store(&self) -> &nn::VarStore {
        &self.vars
    }

    /// The parameters (the store's variables) by name, in the reference's `state_dict()` and
    /// `parameters()` order.
    pub fn parameters(&self) -> &[(String, Tensor)] {
        &self.parameters
    }

    /// The state dict as the reference's `net_g.state_dict()`: its names, its order, detached
    /// tensors sharing the parameters' storage. `G_<step>.pth` is `{"model": this, …}`.
    pub fn state_dict(&self) -> Vec<(String, Tensor)> {
        self.parameters
            .iter()
            .map(|(name, tensor)| (name.clone(), tensor.detach()))
            .collect()
    }

    /// Loads a generator training checkpoint (`{"model": state_dict, …}`: a pretrained base
    /// such as `f0G40k.pth`, or a `G_<step>.pth`) by name.
    pub fn load_checkpoint(&mut self, path: &Path) -> Result<()> {
        let root = checkpoint::read_torch_file(path)?;
        self.load_checkpoint_value(&root, path)
    }

    /// [`Self::load_checkpoint`] from a checkpoint already read; `source` names the file in
    /// errors. Weight norm's `parametrizations.weight.original0/1` names are read as
    /// `weight_g`/`weight_v`; a speaker embedding of another size gives the rows both have, as
    /// the reference does. Nothing changes unless every tensor fits.
    pub fn load_checkpoint_value(&mut self, root: &Value, source: &Path) -> Result<()> {
        let file = source.display();
        let mut tensors = generator_state(root, source)?;
        let ours = GeneratorKind::of_info(&self.info);
        GeneratorKind::of_state(&tensors, source)?.check_fits(&ours, source)?;
        let (mut missing, mut misshapen, mut loads) = (Vec::new(), Vec::new(), Vec::new());
        for (name, variable) in &self.parameters {
            let Some(tensor) = tensors.remove(name) else {
                missing.push(name.as_str());
                continue;
            };
            let (theirs, wanted) = (tensor.size(), variable.size());
            if theirs == wanted {
                loads.push((variable.shallow_clone(), tensor));
            } else if name == "emb_g.weight" && theirs.len() == 2 && theirs[1] == wanted[1] {
                let rows = theirs[0].min(wanted[0]);
                loads.push((variable.narrow(0, 0, rows), tensor.narrow(0, 0, rows)));
            } else {
                misshapen.push(format!(
                    "`{name}` is {theirs:?} in the file, {wanted:?} here"
                ));
            }
        }
        if !missing.is_empty() {
            bail!(
                "{file}: {} of this model's tensors are missing, such as {}",
                missing.len(),
                first_few(&missing)
            );
        }
        if !misshapen.is_empty() {
            bail!(
                "{file}: {} tensors have other shapes than this model's ({ours}): {}",
                misshapen.len(),
                first_few(&misshapen)
            );
        }
        if !tensors.is_empty() {
            let mut extra: Vec<&str> = tensors.keys().map(String::as_str).collect();
            extra.sort_unstable();
            bail!(
                "{file}: {} tensors are not this model's, such as {}",
                extra.len(),
                first_few(&extra)
            );
        }
        tch::no_grad(|| {
            for (mut variable, tensor) in loads {
                variable.copy_(&tensor);
            }
        });
        self.source = source.to_path_buf();
        Ok(())
    }

    /// The reference's training forward `net_g(phone, phone_lengths, pitch, pitchf, spec,
    /// spec_lengths, sid)`: the prior from the features, the posterior from the spectrogram,
    /// the flow of its sample, and the audio of one random `segment_size`-frame slice of it.
    /// Gradients reach every parameter.
    pub fn forward(
        &self,
        batch: &TrainingBatch<'_>,
        noise: TrainingNoise,
    ) -> Result<TrainingOutput> {
        let (model, posterior_encoder) = self.modules()?;
        let inputs =
            model.checked_inputs(batch.phone, batch.phone_lengths, batch.pitch, batch.pitchf)?;
        let (spec, spec_lengths, sid) = self.checked_training_inputs(batch, &inputs)?;
        let shapes: Vec<Vec<i64>> = self
            .training_draws(spec.size()[0], spec.size()[2])
            .into_iter()
            .map(|draw| draw.shape)
            .collect();
        let mut noise = NoiseSource::training(noise, &shapes)?;
        Ok(model.train_forward(
            &posterior_encoder,
            &inputs,
            &spec,
            &spec_lengths,
            &sid,
            &mut noise,
        ))
    }

    /// The random draws a training forward of `batch_size` items padded to `spec_frames` makes,
    /// in order (see [`TrainingNoise::Given`]).
    pub fn training_draws(&self, batch_size: i64, spec_frames: i64) -> Vec<TrainingDraw> {
        let config = &self.info.config;
        let mut draws = vec![
            TrainingDraw {
                shape: vec![batch_size, config.inter_channels, spec_frames],
                normal: true,
                per_item: true,
            },
            TrainingDraw {
                shape: vec![batch_size],
                normal: false,
                per_item: true,
            },
        ];
        // A pitch model's harmonic source, whose layer's inputs are its sines.
        let source = self
            .parameters
            .iter()
            .find(|(name, _)| name == "dec.m_source.l_linear.weight");
        if let Some((_, weight)) = source {
            let harmonics = weight.size()[1];
            let samples = config.segment_size * self.info.hop;
            draws.push(TrainingDraw {
                shape: vec![1, 1, harmonics],
                normal: false,
                per_item: false,
            });
            draws.push(TrainingDraw {
                shape: vec![batch_size, samples, harmonics],
                normal: true,
                per_item: true,
            });
        }
        draws
    }

    /// An inference model on a copy of the current weights (for previews).
    pub fn synthesizer(&self) -> Result<Synthesizer> {
        tch::no_grad(|| {
            let copies = self
                .parameters
                .iter()
                .map(|(name, tensor)| (name.clone(), tensor.detach().copy()))
                .collect();
            let weights = Weights::new(copies, &self.source);
            Synthesizer::build(self.info.clone(), &weights, self.device())
        })
    }

    /// The modules on the live parameters: run in grad mode, they compute the weight-normalised
    /// weights inside autograd, so they serve one forward.
    fn modules(&self) -> Result<(Synthesizer, PosteriorEncoder)> {
        let tensors = self
            .parameters
            .iter()
            .map(|(name, tensor)| (name.clone(), tensor.shallow_clone()))
            .collect();
        let weights = Weights::new(tensors, &self.source);
        let config = &self.info.config;
        let posterior_encoder = PosteriorEncoder::load(
            &weights,
            "enc_q",
            config.spec_channels,
            config.inter_channels,
            config.gin_channels,
        )?;
        let model = Synthesizer::build(self.info.clone(), &weights, self.device())?;
        Ok((model, posterior_encoder))
    }

    /// The spectrograms, their lengths and the speaker ids on the model's device, checked
    /// against the features.
    fn checked_training_inputs(
        &self,
        batch: &TrainingBatch<'_>,
        inputs: &Inputs,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let config = &self.info.config;
        let device = self.device();
        let batch_size = inputs.phone.size()[0];
        let shape = batch.spec.size();
        if shape.len() != 3 || shape[0] != batch_size || shape[1] != config.spec_channels {
            bail!(
                "spec must be [{batch_size}, {}, frames] (batch, spectrogram bins, frames); got shape {shape:?}",
                config.spec_channels
            );
        }
        let spec = batch.spec.to_device(device).to_kind(Kind::Float);
        if !bool::try_from(spec.isfinite().all())? {
            bail!("the spectrograms contain NaN or infinite values");
        }
        let lengths = batch
            .spec_lengths
            .to_device(device)
            .to_kind(Kind::Int64)
            .reshape([-1]);
        if lengths.size() != [batch_size] {
            bail!(
                "spec_lengths must hold one length per batch item ({batch_size}); got shape {:?}",
                batch.spec_lengths.size()
            );
        }
        let (shortest, longest) = (
            lengths.min().int64_value(&[]),
            lengths.max().int64_value(&[]),
        );
        let segment = config.segment_size;
        if shortest < segment || longest > shape[2] {
            bail!(
                "spec_lengths must lie in {segment}..={} (a slice is segment_size = {segment} frames); got {shortest}..={longest}",
                shape[2]
            );
        }
        if inputs.pitchf.is_some() && longest > inputs.phone.size()[1] {
            bail!(
                "the f0 must cover the spectrogram frames: spec_lengths reach {longest}, pitchf has {} frames",
                inputs.phone.size()[1]
            );
        }
        let sid = batch
            .sid
            .to_device(device)
            .to_kind(Kind::Int64)
            .reshape([-1]);
        if sid.size() != [batch_size] {
            bail!(
                "sid must hold one speaker id per batch item ({batch_size}); got shape {:?}",
                batch.sid.size()
            );
        }
        let (lowest, highest) = (sid.min().int64_value(&[]), sid.max().int64_value(&[]));
        if lowest < 0 || highest >= self.info.speakers {
            bail!(
                "speaker ids must lie in 0..{}; got {lowest}..={highest}",
                self.info.speakers
            );
        }
        Ok((spec, lengths, sid))
    }
}

impl Synthesizer {
    fn train_forward(
        &self,
        posterior_encoder: &PosteriorEncoder,
        inputs: &Inputs,
        spec: &Tensor,
        spec_lengths: &Tensor,
        sid: &Tensor,
        noise: &mut NoiseSource,
    ) -> TrainingOutput {
        let g = self.emb_g.forward(sid).unsqueeze(-1);
        let (m_p, logs_p, x_mask) =
            self.enc_p
                .forward(&inputs.phone, inputs.pitch.as_ref(), None, &inputs.lengths);
        let posterior = posterior_encoder.forward(spec, spec_lengths, Some(&g), noise);
        let z_p = self.flow.forward(&posterior.z, &posterior.mask, Some(&g));
        let segment = self.info.config.segment_size;
        let ids_slice = random_slice_starts(spec_lengths, segment, noise);
        let z_slice = slice_segments(&posterior.z, &ids_slice, segment);
        let excitation = match (&self.source, &inputs.pitchf) {
            (Some(source), Some(f0)) => {
                let f0 = slice_segments(f0, &ids_slice, segment);
                Some(source.forward(&f0, self.info.hop, noise))
            }
            _ => None,
        };
        let audio = self.dec.forward(&z_slice, &g, excitation.as_ref(), noise);
        TrainingOutput {
            audio,
            ids_slice,
            x_mask,
            y_mask: posterior.mask,
            z: posterior.z,
            z_p,
            m_p,
            logs_p,
            m_q: posterior.mean,
            logs_q: posterior.log_scale,
        }
    }
}

/// The reference's `rand_slice_segments` starts: uniform in `0..=length − segment` per item,
/// computed as it computes them (a float32 product, truncated).
fn random_slice_starts(lengths: &Tensor, segment: i64, noise: &mut NoiseSource) -> Tensor {
    let uniform = noise.uniform(&[lengths.size()[0]], lengths.device());
    let positions = (lengths - (segment - 1)).to_kind(Kind::Float);
    (uniform * positions).to_kind(Kind::Int64)
}

/// `segment` steps of the last dimension of `x` `[batch, …, time]` from `starts[b]` `[batch]`
/// (int64) for each item: the reference's `slice_segments`/`slice_segments2` (the loss slices
/// the mel spectrogram by `ids_slice` and the audio by `ids_slice × hop`).
pub fn slice_segments(x: &Tensor, starts: &Tensor, segment: i64) -> Tensor {
    let mut shape = x.size();
    let rank = shape.len();
    *shape.last_mut().expect("x has a time dimension") = segment;
    let steps = Tensor::arange(segment, (Kind::Int64, x.device()));
    let mut index_shape = vec![1; rank];
    index_shape[0] = -1;
    index_shape[rank - 1] = segment;
    let index = (starts.view([-1, 1]) + steps.unsqueeze(0))
        .view(index_shape.as_slice())
        .expand(shape.as_slice(), false);
    x.gather(rank as i64 - 1, &index, false)
}

/// Refuses configs the reference cannot build or the modules cannot run.
fn check_config(config: &SynthesizerConfig) -> Result<()> {
    let positive = [
        ("spec_channels", config.spec_channels),
        ("segment_size", config.segment_size),
        ("inter_channels", config.inter_channels),
        ("hidden_channels", config.hidden_channels),
        ("filter_channels", config.filter_channels),
        ("n_heads", config.n_heads),
        ("n_layers", config.n_layers),
        ("kernel_size", config.kernel_size),
        ("spk_embed_dim", config.spk_embed_dim),
        ("gin_channels", config.gin_channels),
    ];
    if let Some((name, value)) = positive.iter().find(|(_, value)| *value <= 0) {
        bail!("config: {name} is {value}; it must be positive");
    }
    if config.inter_channels % 2 != 0 || config.hidden_channels % config.n_heads != 0 {
        bail!(
            "config: inter_channels ({}) must be even and hidden_channels ({}) a multiple of n_heads ({})",
            config.inter_channels,
            config.hidden_channels,
            config.n_heads
        );
    }
    let stages = config.upsample_rates.len();
    if stages == 0 || config.upsample_kernel_sizes.len() != stages {
        bail!(
            "config: {} upsample_rates for {} upsample_kernel_sizes",
            stages,
            config.upsample_kernel_sizes.len()
        );
    }
    if config.upsample_initial_channel % (1 << stages) != 0 {
        bail!(
            "config: upsample_initial_channel ({}) must halve {stages} times",
            config.upsample_initial_channel
        );
    }
    let convs_per_block = match config.resblock.as_str() {
        "1" => 3,
        "2" => 2,
        other => bail!("config: resblock {other:?} is neither \"1\" nor \"2\""),
    };
    let blocks_fit = !config.resblock_kernel_sizes.is_empty()
        && config.resblock_dilation_sizes.len() == config.resblock_kernel_sizes.len()
        && config
            .resblock_dilation_sizes
            .iter()
            .all(|d| d.len() == convs_per_block);
    if !blocks_fit {
        bail!(
            "config: resblock {} takes {convs_per_block} dilations for each of the resblock_kernel_sizes {:?}; got {:?}",
            config.resblock,
            config.resblock_kernel_sizes,
            config.resblock_dilation_sizes
        );
    }
    Ok(())
}
