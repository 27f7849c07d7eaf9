//! Reading a generator training checkpoint (`G_<step>.pth`, or a pretrained base such as
//! `f0G40k.pth`): its state dict under RVC's names, and which generator it holds (version, rate,
//! pitch), so a file for another model is refused by name before any tensor is copied.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use anyhow::{Result, bail};
use tch::Tensor;

use super::ModelInfo;
use crate::checkpoint::{self, Value};
use crate::weights::WEIGHT_NORM_NAMES;

/// The `model` state dict of a generator training checkpoint, with weight norm under
/// `weight_g`/`weight_v`, or an error saying what the file is instead.
pub(super) fn generator_state(root: &Value, source: &Path) -> Result<HashMap<String, Tensor>> {
    let file = source.display();
    let Some(model) = root.get("model").filter(|m| m.as_dict().is_some()) else {
        if root.get("weight").is_some() && root.get("config").is_some() {
            bail!(
                "{file}: this is an RVC inference model, which has no posterior encoder to train; use a pretrained generator (such as f0G40k.pth) or a G_<step>.pth checkpoint"
            );
        }
        let keys: Vec<&str> = root
            .as_dict()
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, _)| k.as_str())
            .take(8)
            .collect();
        bail!(
            "{file}: not a generator checkpoint: no `model` state dict (its entries: {})",
            keys.join(", ")
        );
    };
    let weights = checkpoint::weights_from_dict(model, source)?;
    let [(g, v), (g_alias, v_alias)] = WEIGHT_NORM_NAMES;
    let mut tensors = HashMap::with_capacity(weights.len());
    for name in weights.names() {
        let renamed = match (name.strip_suffix(g_alias), name.strip_suffix(v_alias)) {
            (Some(layer), _) => format!("{layer}{g}"),
            (_, Some(layer)) => format!("{layer}{v}"),
            _ => name.to_string(),
        };
        tensors.insert(renamed, weights.get(name)?);
    }
    if tensors.keys().any(|k| k.starts_with("discriminators.")) {
        bail!(
            "{file}: this is a discriminator checkpoint (D_*.pth, f0D*.pth); a generator (G) is needed here"
        );
    }
    Ok(tensors)
}

/// Refuses a generator checkpoint that is not a `version` generator at `sample_rate` with pitch
/// or without (`f0`), with the message loading it into such a model gives, without building
/// one (a training checks its pretrained file before it is queued).
pub fn check_generator_checkpoint(
    path: &Path,
    version: &str,
    sample_rate: u32,
    f0: bool,
) -> Result<()> {
    let root = checkpoint::read_torch_file(path)?;
    let ours = GeneratorKind {
        version: version.to_string(),
        sample_rate: Some(sample_rate),
        f0,
    };
    GeneratorKind::of_state(&generator_state(&root, path)?, path)?.check_fits(&ours, path)
}

/// RVC's standard generators, by what their weights show: the upsampling kernels and the
/// spectrogram bins (`enc_q.pre`'s inputs).
const STANDARD_RATES: [(&[i64], i64, u32); 5] = [
    (&[16, 16, 4, 4, 4], 513, 32000),  // v1 32k
    (&[20, 16, 4, 4], 513, 32000),     // v2 32k
    (&[16, 16, 4, 4], 1025, 40000),    // v1 and v2 40k
    (&[16, 16, 4, 4, 4], 1025, 48000), // v1 48k
    (&[24, 20, 4, 4], 1025, 48000),    // v2 48k
];

/// What a generator is, as errors name it.
pub(super) struct GeneratorKind {
    pub(super) version: String,
    /// Unknown for a generator whose upsampling is none of RVC's standard ones.
    pub(super) sample_rate: Option<u32>,
    pub(super) f0: bool,
}

impl GeneratorKind {
    pub(super) fn of_info(info: &ModelInfo) -> Self {
        Self {
            version: info.version.clone(),
            sample_rate: Some(info.sample_rate),
            f0: info.f0,
        }
    }

    /// Refuses a checkpoint of this kind for a model of kind `ours`; `file` names it.
    pub(super) fn check_fits(&self, ours: &GeneratorKind, file: &Path) -> Result<()> {
        let rate_differs = self
            .sample_rate
            .is_some_and(|sr| Some(sr) != ours.sample_rate);
        if self.version != ours.version || self.f0 != ours.f0 || rate_differs {
            bail!(
                "{}: this is {self}; the model being trained is {ours}",
                file.display()
            );
        }
        Ok(())
    }

    pub(super) fn of_state(tensors: &HashMap<String, Tensor>, source: &Path) -> Result<Self> {
        let shape = |name: &str| tensors.get(name).map(Tensor::size);
        let Some(phone) = shape("enc_p.emb_phone.weight").filter(|s| s.len() == 2) else {
            bail!(
                "{}: the `model` state dict is not an RVC generator's (it has no enc_p.emb_phone.weight)",
                source.display()
            );
        };
        let version = match phone[1] {
            256 => "v1".to_string(),
            768 => "v2".to_string(),
            other => format!("{other}-d"),
        };
        let kernels: Vec<i64> = (0..)
            .map_while(|i| shape(&format!("dec.ups.{i}.weight_v")))
            .map(|s| s.last().copied().unwrap_or(0))
            .collect();
        let bins = shape("enc_q.pre.weight").and_then(|s| s.get(1).copied());
        let sample_rate = STANDARD_RATES
            .iter()
            .find(|(k, b, _)| *k == kernels.as_slice() && Some(*b) == bins)
            .map(|&(_, _, sr)| sr);
        Ok(Self {
            version,
            sample_rate,
            f0: tensors.contains_key("enc_p.emb_pitch.weight"),
        })
    }
}

impl fmt::Display for GeneratorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self
            .sample_rate
            .map(|sr| format!(" {}", rate_name(sr)))
            .unwrap_or_default();
        let pitch = if self.f0 { "with" } else { "without" };
        write!(f, "a {}{rate} generator {pitch} pitch", self.version)
    }
}

/// 40000 → "40k", 44100 → "44.1k", as RVC names rates.
fn rate_name(sample_rate: u32) -> String {
    format!("{}k", f64::from(sample_rate) / 1000.0)
}

pub(super) fn first_few<T: fmt::Display>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(4).map(ToString::to_string).collect();
    let more = if items.len() > 4 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}
