//! What the library shows about a voice model: the model's version, rate, pitch use, speakers
//! and sizes, and the metadata RVC (`info`) and IAHispano/Applio
//! (`rvc/train/process/extract_model.py`: epoch, step, model_name, author, embedder_model,
//! vocoder, …) write beside the weights. Whether a voice is conditioned on energy is decided as
//! PhamHuynhAnh16/Vietnamese-RVC's `main/inference/conversion/convert.py` decides it: by the
//! checkpoint's `energy` entry (`rms_extract` in the files of bf78e6f, which read that name).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::config::{SynthesizerConfig, effective_config};
use super::shapes::weight_shape;
use super::vocoder::Vocoder;
use crate::checkpoint::Value;
use crate::hubert::{Embedder, FeatureVersion};
use crate::weights::Weights;

/// What the library shows about a voice model, read without building it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelInfo {
    /// "v1" (256-d HuBERT features) or "v2" (768-d): the file's `version`, else from the features.
    pub version: String,
    /// Rate in Hz of the audio it synthesizes (config `sr`).
    pub sample_rate: u32,
    /// Whether the model is driven by pitch (an NSF generator) or not (a `_nono` model).
    pub f0: bool,
    /// Number of speaker ids it embeds (`spk_embed_dim`).
    pub speakers: i64,
    /// Width of the content features it takes: 256 (v1) or 768 (v2).
    pub feature_dim: i64,
    /// Output samples per feature frame.
    pub hop: i64,
    /// The decoder, as its weights are laid out (info stored before vocoders were told apart
    /// describes HiFi-GAN voices).
    #[serde(default)]
    pub vocoder: Vocoder,
    /// Whether the prior encoder takes each frame's RMS (Vietnamese-RVC's `emb_energy`): the
    /// file's `energy` entry is true and it has the weights. Weights without a true entry are
    /// left unused, as the fork leaves them (noted in `config_mismatches`).
    #[serde(default)]
    pub energy: bool,
    /// The config as the model uses it: sizes the weights determine come from the weights.
    pub config: SynthesizerConfig,
    /// Where the file's own `config`/`version`/`f0` disagree with its weights.
    pub config_mismatches: Vec<String>,
    /// The descriptive entries written beside the weights.
    pub metadata: Metadata,
}

/// The descriptive entries RVC and Applio write beside the weights.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metadata {
    /// RVC's free-text `info`, usually the epochs trained ("300epoch").
    pub info: Option<String>,
    /// The name the model was trained under (Applio).
    pub model_name: Option<String>,
    /// Epochs trained; the leading number of a text such as "300epoch" counts too.
    pub epoch: Option<i64>,
    /// Training steps taken (Applio).
    pub step: Option<i64>,
    /// The author named in Applio's settings (`model_author`).
    pub author: Option<String>,
    /// The content encoder the features come from, such as "contentvec" (Applio).
    pub embedder_model: Option<String>,
    /// The decoder Applio trained, such as "HiFi-GAN" or "RefineGAN".
    pub vocoder: Option<String>,
    /// When the file was written, as ISO 8601 text (Applio).
    pub creation_date: Option<String>,
    /// Applio's SHA-256 hex digest of the name, epoch, step, rate, version and config.
    pub model_hash: Option<String>,
    /// Applio's overtraining detector's note.
    pub overtrain_info: Option<String>,
    /// Total duration of the training audio in seconds (Applio; the misspelled `dataset_lenght`
    /// is read too).
    pub dataset_length: Option<f64>,
    /// Number of speakers in the training set (Applio).
    pub speakers_id: Option<i64>,
    /// Any other scalar entries (a fork's additions), rendered as text.
    pub other: BTreeMap<String, String>,
}

/// Entries that are not metadata: the model itself and the flags read into `ModelInfo`.
const STRUCTURAL_KEYS: [&str; 5] = ["weight", "config", "sr", "f0", "version"];

impl Metadata {
    /// Reads the metadata from a checkpoint's root dict; missing or non-scalar entries are None.
    pub fn from_checkpoint(root: &Value) -> Self {
        let text = |key: &str| root.get(key).and_then(scalar_text);
        let mut other = BTreeMap::new();
        let known = [
            "info",
            "model_name",
            "epoch",
            "step",
            "author",
            "embedder_model",
            "vocoder",
            "creation_date",
            "model_hash",
            "overtrain_info",
            "dataset_length",
            "dataset_lenght",
            "speakers_id",
        ];
        for (key, value) in root.as_dict().unwrap_or_default() {
            let Some(key) = key.as_str() else { continue };
            if STRUCTURAL_KEYS.contains(&key) || known.contains(&key) {
                continue;
            }
            if let Some(text) = scalar_text(value) {
                other.insert(key.to_string(), text);
            }
        }
        Self {
            info: text("info"),
            model_name: text("model_name"),
            epoch: root.get("epoch").and_then(leading_int),
            step: root.get("step").and_then(leading_int),
            author: text("author"),
            embedder_model: text("embedder_model"),
            vocoder: text("vocoder"),
            creation_date: text("creation_date"),
            model_hash: text("model_hash"),
            overtrain_info: text("overtrain_info"),
            dataset_length: root
                .get("dataset_length")
                .or(root.get("dataset_lenght"))
                .and_then(Value::as_f64),
            speakers_id: root.get("speakers_id").and_then(Value::as_i64),
            other,
        }
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// 7, or "7epoch" as some exporters write the epoch.
fn leading_int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        Value::Str(s) => {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        }
        _ => None,
    }
}

impl ModelInfo {
    /// The encoder whose features the voice was trained on; an error naming the entry when it
    /// is none this player knows (which loading already refuses).
    pub fn embedder(&self) -> Result<Embedder> {
        Ok(Embedder::of_entry(self.metadata.embedder_model.as_deref())?)
    }

    /// The content features the voice takes: its embedder's, v1 or v2 by their width.
    pub fn feature_version(&self) -> Result<FeatureVersion> {
        Ok(self.embedder()?.feature_version(self.feature_dim))
    }

    /// The model's description from the checkpoint's entries and the shapes of its `weight`s.
    pub fn from_weights(root: &Value, weights: &Weights) -> Result<Self> {
        let source = weights.source().display().to_string();
        let items = root.get("config").and_then(Value::as_list);
        let Some(items) = items else {
            bail!("{source}: no `config` list beside the weights: not an RVC inference model")
        };
        let stated =
            SynthesizerConfig::from_list(items).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let mut mismatches = Vec::new();
        let vocoder = Vocoder::of_weights(weights)?;
        let entry = root.get("vocoder").and_then(Value::as_str);
        if let Some(named) = entry.and_then(Vocoder::from_entry)
            && named != vocoder
        {
            mismatches.push(format!(
                "vocoder: the file says {named}, its weights are {vocoder}'s"
            ));
        }
        let config = effective_config(&stated, weights, vocoder, &mut mismatches)?;

        let feature_dim = weight_shape(weights, "enc_p.emb_phone", 2)?[1];
        let version_of_features = match feature_dim {
            256 => Some("v1"),
            768 => Some("v2"),
            _ => None,
        };
        let stated_version = root.get("version").and_then(Value::as_str);
        let version = match (stated_version, version_of_features) {
            (Some(stated), Some(derived)) if stated != derived => {
                mismatches.push(format!("version: the file says {stated}, its {feature_dim}-d features make it {derived}"));
                derived.to_string()
            }
            (Some(stated), _) => stated.to_string(),
            (None, derived) => derived.unwrap_or("v1").to_string(),
        };

        let f0 = weights.contains("enc_p.emb_pitch.weight");
        if f0 != weights.names().any(|n| n.starts_with("dec.m_source.")) {
            bail!(
                "{source}: the text encoder and the generator disagree on whether the model takes pitch (enc_p.emb_pitch vs dec.m_source)"
            );
        }
        if let Some(stated_f0) = root.get("f0").and_then(Value::as_i64)
            && (stated_f0 != 0) != f0
        {
            mismatches.push(format!(
                "f0: the file says {stated_f0}, its weights {} pitch",
                if f0 { "take" } else { "take no" }
            ));
        }

        let energy = energy_conditioned(root, weights, &mut mismatches)?;

        Ok(Self {
            version,
            sample_rate: config.sr,
            f0,
            speakers: config.spk_embed_dim,
            feature_dim,
            hop: config.hop(),
            vocoder,
            energy,
            config,
            config_mismatches: mismatches,
            metadata: Metadata::from_checkpoint(root),
        })
    }
}

/// Vietnamese-RVC's `energy = cpt.get("energy", False)` (bf78e6f: `"rms_extract"`), its
/// truthiness as Python's; the weights must be there for a true entry, where the fork would
/// build the embedding at random (`load_state_dict(strict=False)`).
fn energy_conditioned(
    root: &Value,
    weights: &Weights,
    mismatches: &mut Vec<String>,
) -> Result<bool> {
    let entry = root.get("energy").or(root.get("rms_extract"));
    let stated = entry.is_some_and(truthy);
    let has_weights = weights.contains("enc_p.emb_energy.weight");
    if stated && !has_weights {
        bail!(
            "{}: the `energy` entry says the model is conditioned on energy (Vietnamese-RVC), but \
             it has no `enc_p.emb_energy` weights: the file is incomplete",
            weights.source().display()
        );
    }
    if has_weights && !stated {
        mismatches.push(format!(
            "energy: the file has `enc_p.emb_energy` weights but {}; it converts without \
             energy, as Vietnamese-RVC converts it",
            if entry.is_some() {
                "its `energy` entry is false"
            } else {
                "no `energy` entry"
            }
        ));
    }
    Ok(stated)
}

/// Python's `bool(value)` for the scalars and containers a checkpoint entry holds.
fn truthy(value: &Value) -> bool {
    match value {
        Value::None => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::Bytes(b) => !b.is_empty(),
        Value::List(items) | Value::Tuple(items) => !items.is_empty(),
        Value::Dict(entries) => !entries.is_empty(),
        Value::Tensor(_) | Value::Object { .. } | Value::Global(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_reads_rvc_and_applio_entries() {
        let root = Value::Dict(vec![
            (Value::Str("weight".into()), Value::Dict(vec![])),
            (Value::Str("info".into()), Value::Str("300epoch".into())),
            (Value::Str("epoch".into()), Value::Str("300epoch".into())),
            (Value::Str("step".into()), Value::Int(12000)),
            (Value::Str("f0".into()), Value::Bool(true)),
            (Value::Str("author".into()), Value::None),
            (Value::Str("vocoder".into()), Value::Str("HiFi-GAN".into())),
            (Value::Str("energy".into()), Value::Bool(false)),
        ]);
        let metadata = Metadata::from_checkpoint(&root);
        assert_eq!(metadata.info.as_deref(), Some("300epoch"));
        assert_eq!(metadata.epoch, Some(300));
        assert_eq!(metadata.step, Some(12000));
        assert_eq!(metadata.author, None);
        assert_eq!(metadata.vocoder.as_deref(), Some("HiFi-GAN"));
        assert_eq!(
            metadata.other.get("energy").map(String::as_str),
            Some("false")
        );
        assert!(!metadata.other.contains_key("f0"));
    }
}
