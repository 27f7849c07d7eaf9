//! The HuBERT / ContentVec content-feature extractor RVC conditions its voices on, from a
//! transformers folder or a fairseq checkpoint. Matches huggingface/transformers
//! `src/transformers/models/hubert/modeling_hubert.py` (HubertModel) and facebookresearch/fairseq
//! `fairseq/models/hubert/hubert.py` with `fairseq/models/wav2vec/wav2vec2.py`
//! (ConvFeatureExtractionModel, TransformerEncoder, TransformerSentenceEncoderLayer); the
//! features are those of RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/modules/vc/pipeline.py` and `infer/hubert.py`: v1 = final_proj(layer 9), v2 = the
//! last layer; and Applio's v1 of its other embedders ([`Embedder`]), final_proj of the last.

mod config;
mod conv_layers;
mod embedder;
mod encoder;
mod fairseq;
mod network;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail, ensure};
use tch::{Device, Kind, Tensor};

use config::StatedConfig;
pub use config::{FeatExtractNorm, HubertConfig};
pub use conv_layers::{ConvLayerSpec, parse_conv_feature_layers};
pub use embedder::{Embedder, UnknownEmbedder};
use fairseq::fairseq_parts;
use network::Network;

use crate::checkpoint::{Value, read_torch_file, weights_from_dict};
use crate::weights::Weights;

/// Which content features an RVC voice was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureVersion {
    /// `final_proj` of encoder layer 9 (256 wide for the real models).
    V1,
    /// `final_proj` of the last encoder layer: Applio's v1 (`rvc/infer/pipeline.py`), for the
    /// v1 voices of its other embedders.
    V1LastLayer,
    /// The last encoder layer (768 wide for the real models).
    V2,
}

impl FeatureVersion {
    /// The features a voice whose `emb_phone` takes `feature_dim` wide ones was trained on: RVC
    /// tells v1 from v2 by that width alone.
    pub fn of_voice(feature_dim: i64) -> Self {
        if feature_dim == 256 {
            Self::V1
        } else {
            Self::V2
        }
    }
}

/// The widths of the features a HuBERT file gives, read without building the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureWidths {
    /// `final_proj`'s, when the file has one.
    pub v1: Option<i64>,
    /// The last layer's.
    pub v2: i64,
}

impl FeatureWidths {
    /// What the file at `path` (as [`Hubert::load`] takes it) gives.
    pub fn of_file(path: &Path) -> Result<Self> {
        let parts = read_parts(path)?;
        Ok(Self {
            v1: parts
                .weights
                .contains("final_proj.weight")
                .then_some(parts.config.classifier_proj_size),
            v2: parts.config.hidden_size,
        })
    }

    /// The width of `version`'s features; None for v1 when the file has no `final_proj`.
    pub fn of_version(&self, version: FeatureVersion) -> Option<i64> {
        match version {
            FeatureVersion::V1 | FeatureVersion::V1LastLayer => self.v1,
            FeatureVersion::V2 => Some(self.v2),
        }
    }
}

/// The encoder layer whose output RVC v1 projects.
const V1_LAYER: usize = 9;

/// A loaded HuBERT / ContentVec feature extractor, on its device in its kind.
pub struct Hubert {
    config: HubertConfig,
    normalize_input: bool,
    source: PathBuf,
    device: Device,
    kind: Kind,
    /// The tensors `network` holds (shared, not copied), for its float16 cast.
    weights: Weights,
    network: Network,
    /// `network` cast whole to float16, made at the first call under CUDA's fp16 autocast.
    half: OnceCell<Network>,
}

/// What a file gives before the model is built on its device: the settled config, whether
/// input audio is normalised, and the tensors under transformers' names.
struct Parts {
    config: HubertConfig,
    normalize_input: bool,
    weights: Weights,
}

impl Hubert {
    /// A transformers folder, a weight file inside one (its `config.json` beside it), or a
    /// fairseq checkpoint (`hubert_base.pt`, ContentVec's `checkpoint_best_legacy_500.pt`),
    /// with its weights on `device` in float32.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        Self::load_as(path, device, Kind::Float)
    }

    /// [`Hubert::load`] with the weights in `kind` (half precision on CUDA); audio must then
    /// come in that kind.
    pub fn load_as(path: &Path, device: Device, kind: Kind) -> Result<Self> {
        Self::build(read_parts(path)?, device, kind)
    }

    /// A fairseq checkpoint already read by [`read_torch_file`] from `source`.
    pub fn from_fairseq_checkpoint(
        checkpoint: &Value,
        source: &Path,
        device: Device,
    ) -> Result<Self> {
        Self::build(fairseq_parts(checkpoint, source)?, device, Kind::Float)
    }

    fn build(parts: Parts, device: Device, kind: Kind) -> Result<Self> {
        let Parts {
            config,
            normalize_input,
            weights,
        } = parts;
        let weights = weights.to(device, kind);
        Ok(Self {
            network: Network::build(&weights, &config)?,
            config,
            normalize_input,
            source: weights.source().to_path_buf(),
            device,
            kind,
            weights,
            half: OnceCell::new(),
        })
    }

    /// Runs `f` on the layers and the audio in the precision this call runs in: a float32
    /// model on CUDA under fp16 autocast runs as a float16 model with autocast off (as RVC
    /// runs it), everything else as it is.
    fn run<T>(&self, audio: &Tensor, f: impl FnOnce(&Network, &Tensor) -> T) -> Result<T> {
        let whole_half =
            self.kind == Kind::Float && self.device.is_cuda() && timbre_torch_ext::cuda_autocast();
        if !whole_half {
            return Ok(tch::no_grad(|| f(&self.network, audio)));
        }
        if self.half.get().is_none() {
            // Outside autocast: under it, the weight norm's `norm` runs in float32 and the
            // folded positional-convolution weight would come out float32.
            let half = timbre_torch_ext::without_cuda_autocast(|| {
                Network::cast(&self.weights, &self.config, Kind::Half)
            })?;
            let _ = self.half.set(half);
        }
        let network = self.half.get().expect("set above");
        Ok(timbre_torch_ext::without_cuda_autocast(|| {
            tch::no_grad(|| f(network, &audio.to_kind(Kind::Half)))
        }))
    }

    /// The device the weights are on; audio must be there.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The architecture settings, settled against the tensors.
    pub fn config(&self) -> &HubertConfig {
        &self.config
    }

    /// Feature frames for `samples` of 16 kHz audio (320 samples a frame, less the edges).
    pub fn frame_count(&self, samples: i64) -> i64 {
        self.config.frame_count(samples)
    }

    /// The output of encoder layer `layer` (1-based: transformers' `hidden_states[layer]`,
    /// fairseq's `output_layer`) for 16 kHz audio `[batch, samples]` on the model's device and
    /// kind: `[batch, frames, hidden_size]`. Later layers are not run.
    pub fn hidden_states_at(&self, audio: &Tensor, layer: usize) -> Result<Tensor> {
        self.checked_audio(audio, layer)?;
        self.run(audio, |network, audio| {
            network.hidden_states_at(audio, self.normalize_input, layer)
        })
    }

    /// Refuses a layer the model lacks and audio it cannot take.
    fn checked_audio(&self, audio: &Tensor, layer: usize) -> Result<()> {
        let layers = self.config.num_hidden_layers as usize;
        ensure!(
            (1..=layers).contains(&layer),
            "HuBERT layer {layer} asked for; this model has layers 1 to {layers}"
        );
        let size = audio.size();
        ensure!(
            size.len() == 2,
            "HuBERT takes audio shaped [batch, samples], got {size:?}"
        );
        ensure!(
            audio.device() == self.device && audio.kind() == self.kind,
            "audio is {:?} on {:?}, the HuBERT weights are {:?} on {:?}",
            audio.kind(),
            audio.device(),
            self.kind,
            self.device
        );
        let minimum = self.config.min_samples();
        ensure!(
            size[1] >= minimum,
            "{} samples of audio are too short for HuBERT, which needs at least {minimum}",
            size[1]
        );
        Ok(())
    }

    /// The features of one mono 16 kHz signal, `[frames, dim]` on the CPU ([`Hubert::features`]
    /// without gradients).
    pub fn features_of(&self, audio_16k: &[f32], version: FeatureVersion) -> Result<Tensor> {
        let _guard = tch::no_grad_guard();
        let audio = Tensor::from_slice(audio_16k)
            .view([1, -1])
            .to_device(self.device());
        Ok(self
            .features(&audio, version)?
            .squeeze_dim(0)
            .to_device(tch::Device::Cpu))
    }

    /// RVC's content features for audio `[batch, samples]`: `[batch, frames, 256]` for v1,
    /// `[batch, frames, 768]` for v2 (the real models' widths).
    pub fn features(&self, audio: &Tensor, version: FeatureVersion) -> Result<Tensor> {
        // In float16 the last layer gives float16; callers and caches get the model's kind.
        let features = match version {
            FeatureVersion::V1 | FeatureVersion::V1LastLayer => {
                if self.network.final_proj.is_none() {
                    bail!(
                        "{}: has no final_proj, so it cannot give RVC v1 features",
                        self.source.display()
                    )
                }
                let layer = match version {
                    FeatureVersion::V1 => V1_LAYER,
                    _ => self.config.num_hidden_layers as usize,
                };
                self.checked_audio(audio, layer)?;
                self.run(audio, |network, audio| {
                    let hidden = network.hidden_states_at(audio, self.normalize_input, layer);
                    let final_proj = network.final_proj.as_ref().expect("checked above");
                    final_proj.forward(&hidden)
                })?
            }
            FeatureVersion::V2 => {
                self.hidden_states_at(audio, self.config.num_hidden_layers as usize)?
            }
        };
        Ok(features.to_kind(self.kind))
    }
}

/// Picks the reader by what `path` is.
fn read_parts(path: &Path) -> Result<Parts> {
    if path.is_dir() {
        return read_transformers_dir(path);
    }
    ensure!(path.is_file(), "{}: no such file or folder", path.display());
    let folder = path.parent().unwrap_or(Path::new("."));
    if path.file_name().is_some_and(|name| name == "config.json") {
        return read_transformers_dir(folder);
    }
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    if extension == "safetensors" || extension == "bin" {
        let config_json = folder.join("config.json");
        ensure!(
            config_json.is_file(),
            "{}: a transformers HuBERT weight file needs the config.json of its folder beside it",
            path.display()
        );
        return read_transformers(&config_json, path, folder);
    }
    fairseq_parts(&read_torch_file(path)?, path)
}

fn read_transformers_dir(dir: &Path) -> Result<Parts> {
    let weights_file = transformers_weights_file(dir)?;
    read_transformers(&dir.join("config.json"), &weights_file, dir)
}

/// The weights file of a transformers HuBERT-family folder (`model.safetensors`, else
/// `pytorch_model.bin`, beside `config.json`), or an error naming the folder and what it lacks.
pub fn transformers_weights_file(dir: &Path) -> Result<PathBuf> {
    let lacks = |what: &str| {
        anyhow!(
            "{}: not a transformers HuBERT folder: it has no {what} (it needs config.json and \
             model.safetensors or pytorch_model.bin)",
            dir.display()
        )
    };
    if !dir.join("config.json").is_file() {
        return Err(lacks("config.json"));
    }
    ["model.safetensors", "pytorch_model.bin"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| lacks("weights file"))
}

fn read_transformers(config_json: &Path, weights_file: &Path, folder: &Path) -> Result<Parts> {
    let text = std::fs::read_to_string(config_json)
        .with_context(|| format!("{}: unreadable", config_json.display()))?;
    let stated = StatedConfig::from_json(&text, config_json)?;
    let weights = match weights_file.extension().and_then(|e| e.to_str()) {
        Some("safetensors") => Weights::from_safetensors(weights_file)?,
        _ => weights_from_dict(&read_torch_file(weights_file)?, weights_file)?,
    };
    let weights = strip_model_prefix(weights);
    let config = stated.settle(&weights, config_json)?;
    Ok(Parts {
        config,
        normalize_input: read_do_normalize(folder)?,
        weights,
    })
}

/// `do_normalize` of the folder's `preprocessor_config.json` (transformers' default true when
/// the file leaves it out); no file means no normalisation, as for hubert_base and ContentVec.
fn read_do_normalize(folder: &Path) -> Result<bool> {
    let path = folder.join("preprocessor_config.json");
    if !path.is_file() {
        return Ok(false);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{}: unreadable", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", path.display()))?;
    match &json["do_normalize"] {
        serde_json::Value::Null => Ok(true),
        serde_json::Value::Bool(b) => Ok(*b),
        other => bail!(
            "{}: `do_normalize` is {other}, expected true or false",
            path.display()
        ),
    }
}

/// Weights saved from a transformers head model (`HubertForCTC`, …) sit under `hubert.`.
fn strip_model_prefix(weights: Weights) -> Weights {
    if !weights.contains("hubert.feature_extractor.conv_layers.0.conv.weight") {
        return weights;
    }
    let tensors = weights
        .names()
        .filter_map(|name| {
            Some((
                name.strip_prefix("hubert.").unwrap_or(name).to_string(),
                weights.get_opt(name)?,
            ))
        })
        .collect();
    Weights::new(tensors, weights.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTH: i64 = 16;
    const CONV: i64 = 8;
    const FFN: i64 = 24;
    const LAYERS: i64 = 10;
    const POS_KERNEL: i64 = 4;
    const POS_GROUPS: i64 = 2;
    const PROJ: i64 = 12;

    fn tiny_config() -> HubertConfig {
        HubertConfig {
            hidden_size: WIDTH,
            num_hidden_layers: LAYERS,
            num_attention_heads: 2,
            intermediate_size: FFN,
            conv_dim: vec![CONV; 3],
            conv_kernel: vec![10, 3, 2],
            conv_stride: vec![5, 2, 2],
            num_conv_pos_embeddings: POS_KERNEL,
            num_conv_pos_embedding_groups: POS_GROUPS,
            classifier_proj_size: PROJ,
            ..HubertConfig::default()
        }
    }

    /// Random tensors of a tiny group-norm HuBERT, each under its transformers and its fairseq name.
    fn tiny_tensors() -> Vec<(String, String, Tensor)> {
        tch::manual_seed(7);
        let mut named: Vec<(String, String, Vec<i64>)> = Vec::new();
        let mut add =
            |hf: String, fairseq: String, shape: &[i64]| named.push((hf, fairseq, shape.to_vec()));
        for (i, (inputs, kernel)) in [(1, 10), (CONV, 3), (CONV, 2)].into_iter().enumerate() {
            add(
                format!("feature_extractor.conv_layers.{i}.conv.weight"),
                format!("feature_extractor.conv_layers.{i}.0.weight"),
                &[CONV, inputs, kernel],
            );
        }
        for p in ["weight", "bias"] {
            add(
                format!("feature_extractor.conv_layers.0.layer_norm.{p}"),
                format!("feature_extractor.conv_layers.0.2.{p}"),
                &[CONV],
            );
            add(
                format!("feature_projection.layer_norm.{p}"),
                format!("layer_norm.{p}"),
                &[CONV],
            );
            add(
                format!("encoder.layer_norm.{p}"),
                format!("encoder.layer_norm.{p}"),
                &[WIDTH],
            );
        }
        add(
            "feature_projection.projection.weight".into(),
            "post_extract_proj.weight".into(),
            &[WIDTH, CONV],
        );
        add(
            "feature_projection.projection.bias".into(),
            "post_extract_proj.bias".into(),
            &[WIDTH],
        );
        add(
            "encoder.pos_conv_embed.conv.parametrizations.weight.original0".into(),
            "encoder.pos_conv.0.weight_g".into(),
            &[1, 1, POS_KERNEL],
        );
        add(
            "encoder.pos_conv_embed.conv.parametrizations.weight.original1".into(),
            "encoder.pos_conv.0.weight_v".into(),
            &[WIDTH, WIDTH / POS_GROUPS, POS_KERNEL],
        );
        add(
            "encoder.pos_conv_embed.conv.bias".into(),
            "encoder.pos_conv.0.bias".into(),
            &[WIDTH],
        );
        for l in 0..LAYERS {
            let (hf, fs) = (format!("encoder.layers.{l}"), format!("encoder.layers.{l}"));
            for proj in ["q_proj", "k_proj", "v_proj", "out_proj"] {
                add(
                    format!("{hf}.attention.{proj}.weight"),
                    format!("{fs}.self_attn.{proj}.weight"),
                    &[WIDTH, WIDTH],
                );
                add(
                    format!("{hf}.attention.{proj}.bias"),
                    format!("{fs}.self_attn.{proj}.bias"),
                    &[WIDTH],
                );
            }
            for p in ["weight", "bias"] {
                add(
                    format!("{hf}.layer_norm.{p}"),
                    format!("{fs}.self_attn_layer_norm.{p}"),
                    &[WIDTH],
                );
                add(
                    format!("{hf}.final_layer_norm.{p}"),
                    format!("{fs}.final_layer_norm.{p}"),
                    &[WIDTH],
                );
            }
            add(
                format!("{hf}.feed_forward.intermediate_dense.weight"),
                format!("{fs}.fc1.weight"),
                &[FFN, WIDTH],
            );
            add(
                format!("{hf}.feed_forward.intermediate_dense.bias"),
                format!("{fs}.fc1.bias"),
                &[FFN],
            );
            add(
                format!("{hf}.feed_forward.output_dense.weight"),
                format!("{fs}.fc2.weight"),
                &[WIDTH, FFN],
            );
            add(
                format!("{hf}.feed_forward.output_dense.bias"),
                format!("{fs}.fc2.bias"),
                &[WIDTH],
            );
        }
        add(
            "final_proj.weight".into(),
            "final_proj.weight".into(),
            &[PROJ, WIDTH],
        );
        add("final_proj.bias".into(), "final_proj.bias".into(), &[PROJ]);
        named
            .into_iter()
            .map(|(hf, fs, shape)| {
                (
                    hf,
                    fs,
                    Tensor::randn(shape.as_slice(), (Kind::Float, Device::Cpu)) * 0.3,
                )
            })
            .collect()
    }

    fn tiny_model(weights: Weights) -> Hubert {
        Hubert::build(
            Parts {
                config: tiny_config(),
                normalize_input: false,
                weights,
            },
            Device::Cpu,
            Kind::Float,
        )
        .unwrap()
    }

    fn transformers_weights(tensors: &[(String, String, Tensor)]) -> Weights {
        Weights::new(
            tensors
                .iter()
                .map(|(hf, _, t)| (hf.clone(), t.shallow_clone()))
                .collect(),
            "tiny/model.safetensors",
        )
    }

    fn str_key(key: &str) -> Value {
        Value::Str(key.into())
    }

    fn omegaconf(entries: Vec<(&str, Value)>) -> Value {
        let node = |v: Value| Value::Object {
            class: "omegaconf.nodes.AnyNode".into(),
            args: vec![],
            state: Some(Box::new(Value::Dict(vec![(str_key("_val"), v)]))),
        };
        let content = entries
            .into_iter()
            .map(|(k, v)| {
                (
                    str_key(k),
                    if matches!(v, Value::Object { .. }) {
                        v
                    } else {
                        node(v)
                    },
                )
            })
            .collect();
        Value::Object {
            class: "omegaconf.dictconfig.DictConfig".into(),
            args: vec![],
            state: Some(Box::new(Value::Dict(vec![(
                str_key("_content"),
                Value::Dict(content),
            )]))),
        }
    }

    fn fairseq_checkpoint(tensors: &[(String, String, Tensor)], encoder_layers: i64) -> Value {
        let model = Value::Dict(
            tensors
                .iter()
                .map(|(_, fs, t)| (str_key(fs), Value::Tensor(t.shallow_clone())))
                .collect(),
        );
        let model_cfg = omegaconf(vec![
            ("encoder_layers", Value::Int(encoder_layers)),
            ("encoder_attention_heads", Value::Int(2)),
            (
                "conv_feature_layers",
                Value::Str("[(8,10,5)] + [(8,3,2)] + [(8,2,2)]".into()),
            ),
            ("extractor_mode", Value::Str("default".into())),
            ("conv_pos", Value::Int(POS_KERNEL)),
        ]);
        let task_cfg = omegaconf(vec![("normalize", Value::Bool(false))]);
        let cfg = omegaconf(vec![("model", model_cfg), ("task", task_cfg)]);
        Value::Dict(vec![
            (str_key("args"), Value::None),
            (str_key("cfg"), cfg),
            (str_key("model"), model),
        ])
    }

    #[test]
    fn fairseq_names_load_into_the_same_model() {
        let tensors = tiny_tensors();
        let from_transformers = tiny_model(transformers_weights(&tensors));
        let from_fairseq = Hubert::from_fairseq_checkpoint(
            &fairseq_checkpoint(&tensors, LAYERS),
            Path::new("tiny.pt"),
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(from_fairseq.config(), &tiny_config());

        let audio = Tensor::randn([2, 3000], (Kind::Float, Device::Cpu));
        for version in [FeatureVersion::V1, FeatureVersion::V2] {
            let ours = from_fairseq.features(&audio, version).unwrap();
            let theirs = from_transformers.features(&audio, version).unwrap();
            let width = if version == FeatureVersion::V1 {
                PROJ
            } else {
                WIDTH
            };
            assert_eq!(ours.size(), [2, from_fairseq.frame_count(3000), width]);
            assert!(
                ours.allclose(&theirs, 1e-5, 1e-6, false),
                "{version:?} differs"
            );
        }
    }

    #[test]
    fn a_config_that_contradicts_the_tensors_is_an_error() {
        let tensors = tiny_tensors();
        let err = Hubert::from_fairseq_checkpoint(
            &fairseq_checkpoint(&tensors, 12),
            Path::new("tiny.pt"),
            Device::Cpu,
        )
        .err()
        .unwrap();
        let message = format!("{err:#}");
        assert!(
            message.contains("tiny.pt") && message.contains("num_hidden_layers"),
            "{message}"
        );
    }

    #[test]
    fn rejects_layers_out_of_range_and_short_or_misshapen_audio() {
        let model = tiny_model(transformers_weights(&tiny_tensors()));
        let audio = Tensor::zeros([1, 1000], (Kind::Float, Device::Cpu));
        assert!(model.hidden_states_at(&audio, 0).is_err());
        assert!(model.hidden_states_at(&audio, LAYERS as usize + 1).is_err());
        assert_eq!(
            model.hidden_states_at(&audio, 3).unwrap().size(),
            [1, model.frame_count(1000), WIDTH]
        );
        let short = Tensor::zeros([1, 20], (Kind::Float, Device::Cpu));
        assert!(
            model
                .hidden_states_at(&short, 1)
                .unwrap_err()
                .to_string()
                .contains("too short")
        );
        let flat = Tensor::zeros([1000], (Kind::Float, Device::Cpu));
        assert!(model.hidden_states_at(&flat, 1).is_err());
        let double = Tensor::zeros([1, 1000], (Kind::Double, Device::Cpu));
        assert!(model.hidden_states_at(&double, 1).is_err());
    }

    #[test]
    fn names_an_rvc_voice_model_given_as_hubert() {
        let voice = Value::Dict(vec![
            (str_key("weight"), Value::Dict(vec![])),
            (str_key("config"), Value::List(vec![])),
            (str_key("version"), Value::Str("v2".into())),
        ]);
        let err =
            Hubert::from_fairseq_checkpoint(&voice, Path::new("voices/alto.pth"), Device::Cpu)
                .err()
                .unwrap();
        assert_eq!(
            err.to_string(),
            "voices/alto.pth: this is an RVC voice model, not a HuBERT/ContentVec feature extractor"
        );
    }

    #[test]
    fn names_an_rmvpe_model_given_as_hubert() {
        let rmvpe = Value::Dict(vec![(
            str_key("unet.encoder.bn.weight"),
            Value::Tensor(Tensor::ones([1], (Kind::Float, Device::Cpu))),
        )]);
        let err = Hubert::from_fairseq_checkpoint(&rmvpe, Path::new("rmvpe.pt"), Device::Cpu)
            .err()
            .unwrap();
        assert!(err.to_string().contains("RMVPE pitch model"), "{err}");
    }

    #[test]
    fn a_weight_file_without_its_config_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hubert.safetensors");
        std::fs::write(&file, b"not used").unwrap();
        let err = Hubert::load(&file, Device::Cpu).err().unwrap();
        assert!(err.to_string().contains("config.json"), "{err}");
        let missing = Hubert::load(&dir.path().join("absent.pt"), Device::Cpu)
            .err()
            .unwrap();
        assert!(missing.to_string().contains("no such file"), "{missing}");
    }
}
