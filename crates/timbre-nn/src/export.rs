//! The small inference `.pth` RVC exports from a trained generator, as
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI `infer/lib/train/process_ckpt.py`
//! `savee` writes it: an OrderedDict of `weight` (a dict of the generator's fp16 tensors, the
//! posterior encoder `enc_q` dropped), `config` (the 18 constructor arguments), `info`, `sr`,
//! `f0` and `version`, in that order; a voice we trained also carries the entries IAHispano/Applio
//! `rvc/train/process/extract_model.py` writes after them (`epoch`, `step`, `creation_date`,
//! `model_hash`, `overtrain_info`, `dataset_length`, `model_name`, `author`, `embedder_model`,
//! `speakers_id`, `vocoder`), so that Applio and the tools that read its entries know it.

use std::path::Path;

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use sha2::{Digest, Sha256};

use crate::checkpoint::{Value, write_torch_file};
use crate::hubert::Embedder;
use crate::synthesizer::{SynthesizerConfig, Vocoder, parse_sample_rate};

/// What RVC writes beside the weights.
#[derive(Debug, Clone)]
pub struct RvcModelMeta<'a> {
    /// The synthesizer's constructor arguments (`config`).
    pub config: &'a SynthesizerConfig,
    /// As RVC spells it: "32k", "40k", "48k".
    pub sr: &'a str,
    /// Whether the generator takes pitch (an NSF model).
    pub f0: bool,
    /// "v1" or "v2".
    pub version: &'a str,
    /// RVC writes "<epoch>epoch".
    pub info: &'a str,
    /// The content encoder the voice was trained on: beside contentvec (RVC's, which RVC's
    /// files do not name), written as Applio's `embedder_model` entry.
    pub embedder: Embedder,
    /// A voice trained here: Applio's entries too.
    pub trained: Option<Trained<'a>>,
}

/// What a voice trained here says of its training, in Applio's entries.
#[derive(Debug, Clone, Copy)]
pub struct Trained<'a> {
    /// Epochs trained.
    pub epoch: i64,
    /// Optimizer steps taken.
    pub step: i64,
    /// The voice's name (Applio's `model_name`).
    pub model_name: &'a str,
}

/// Writes the inference model of the generator `state_dict` (names as the reference's
/// `net_g.state_dict()`, in its order) to `path`, atomically. Refuses metadata that disagrees
/// with the weights, since the file would load as another model than the one trained.
pub fn export_rvc_model(
    path: &Path,
    state_dict: &[(String, Tensor)],
    meta: &RvcModelMeta<'_>,
) -> Result<()> {
    let value = rvc_model_value(state_dict, meta)
        .map_err(|e| anyhow::anyhow!("{}: cannot export: {e:#}", path.display()))?;
    write_torch_file(path, &value)
}

/// The value tree `export_rvc_model` writes.
pub fn rvc_model_value(state_dict: &[(String, Tensor)], meta: &RvcModelMeta<'_>) -> Result<Value> {
    check_meta(state_dict, meta)?;
    let weight = state_dict
        .iter()
        .filter(|(name, _)| !name.contains("enc_q"))
        .map(|(name, tensor)| {
            let half = tensor.f_to_kind(Kind::Half)?;
            Ok((Value::Str(name.clone()), Value::Tensor(half)))
        })
        .collect::<Result<Vec<_>>>()?;
    let text = |s: &str| Value::Str(s.to_string());
    let mut entries = vec![
        (text("weight"), Value::Dict(weight)),
        (text("config"), Value::List(config_list(meta.config))),
        (text("info"), text(meta.info)),
        (text("sr"), text(meta.sr)),
        (text("f0"), Value::Int(i64::from(meta.f0))),
        (text("version"), text(meta.version)),
    ];
    match meta.trained {
        Some(trained) => entries.extend(applio_entries(meta, &trained)),
        None if meta.embedder != Embedder::Contentvec => {
            entries.push((text("embedder_model"), text(meta.embedder.name())));
        }
        None => {}
    }
    Ok(Value::ordered_dict(entries))
}

/// Applio's entries after RVC's, as `extract_model` writes them: its `model_hash` is the
/// SHA-256 of `"{name}-{epoch}-{step}-{sr}-{version}-{config}"` (the config as Python prints the
/// list); what it knows and we do not (its overtraining detector's summary, the dataset's length
/// from its `model_info.json`, the author of its settings) is None, as Applio writes it then.
fn applio_entries(meta: &RvcModelMeta<'_>, trained: &Trained<'_>) -> Vec<(Value, Value)> {
    let text = |s: &str| Value::Str(s.to_string());
    let config = python_repr(&Value::List(config_list(meta.config)));
    let hashed = format!(
        "{}-{}-{}-{}-{}-{config}",
        trained.model_name, trained.epoch, trained.step, meta.sr, meta.version
    );
    let created = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let hash: String = Sha256::digest(hashed.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    vec![
        (text("epoch"), Value::Int(trained.epoch)),
        (text("step"), Value::Int(trained.step)),
        (text("creation_date"), text(&created)),
        (text("model_hash"), text(&hash)),
        (text("overtrain_info"), Value::None),
        (text("dataset_length"), Value::None),
        (text("model_name"), text(trained.model_name)),
        (text("author"), Value::None),
        (text("embedder_model"), text(meta.embedder.name())),
        (text("speakers_id"), Value::Int(1)),
        (text("vocoder"), text(Vocoder::HifiGan.name())),
    ]
}

/// How Python's `repr` writes the ints, floats, strings and lists of a config.
fn python_repr(value: &Value) -> String {
    match value {
        Value::Int(n) => n.to_string(),
        Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e16 => format!("{x:.1}"),
        Value::Float(x) => x.to_string(),
        Value::Str(s) => format!("'{s}'"),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        _ => String::new(),
    }
}

/// The 18-item `config` list, in the order `SynthesizerConfig::from_list` reads it.
pub fn config_list(config: &SynthesizerConfig) -> Vec<Value> {
    let ints = |values: &[i64]| Value::List(values.iter().map(|&v| Value::Int(v)).collect());
    // RVC's JSON configs give `p_dropout: 0`, which json.load makes an int.
    let p_dropout = if config.p_dropout.fract() == 0.0 && config.p_dropout.abs() < 1e15 {
        Value::Int(config.p_dropout as i64)
    } else {
        Value::Float(config.p_dropout)
    };
    vec![
        Value::Int(config.spec_channels),
        Value::Int(config.segment_size),
        Value::Int(config.inter_channels),
        Value::Int(config.hidden_channels),
        Value::Int(config.filter_channels),
        Value::Int(config.n_heads),
        Value::Int(config.n_layers),
        Value::Int(config.kernel_size),
        p_dropout,
        Value::Str(config.resblock.clone()),
        ints(&config.resblock_kernel_sizes),
        Value::List(
            config
                .resblock_dilation_sizes
                .iter()
                .map(|d| ints(d))
                .collect(),
        ),
        ints(&config.upsample_rates),
        Value::Int(config.upsample_initial_channel),
        ints(&config.upsample_kernel_sizes),
        Value::Int(config.spk_embed_dim),
        Value::Int(config.gin_channels),
        Value::Int(i64::from(config.sr)),
    ]
}

fn check_meta(state_dict: &[(String, Tensor)], meta: &RvcModelMeta<'_>) -> Result<()> {
    if parse_sample_rate(meta.sr) != Some(meta.config.sr) {
        bail!(
            "sr {:?} is not the config's sample rate {}",
            meta.sr,
            meta.config.sr
        );
    }
    let tensor = |name: &str| state_dict.iter().find(|(n, _)| n == name).map(|(_, t)| t);
    let Some(phone) = tensor("enc_p.emb_phone.weight") else {
        bail!("the state dict has no enc_p.emb_phone.weight: not an RVC generator");
    };
    let features = match meta.version {
        "v1" => 256,
        "v2" => 768,
        other => bail!("version {other:?} is neither \"v1\" nor \"v2\""),
    };
    if phone.size().get(1) != Some(&features) {
        bail!(
            "a {} model takes {features}-d features; enc_p.emb_phone.weight is {:?}",
            meta.version,
            phone.size()
        );
    }
    if tensor("enc_p.emb_pitch.weight").is_some() != meta.f0 {
        bail!(
            "f0 is {} but the generator {} pitch",
            meta.f0,
            if meta.f0 { "takes no" } else { "takes" }
        );
    }
    if let Some((name, tensor)) = state_dict.iter().find(|(_, t)| !t.is_floating_point()) {
        bail!(
            "`{name}` is a {:?} tensor; a generator's are floating point",
            tensor.kind()
        );
    }
    Ok(())
}
