//! Editing the descriptive entries of an RVC inference `.pth` (what RVC's "modify model info"
//! and Applio's model information do): `model_name`, `author`, `description` and `info` are set
//! (or added) and every other entry, the weights included, is written back unchanged.

use std::path::Path;

use anyhow::{Result, bail};

use crate::checkpoint::{self, Value, write_torch_file};

/// The entries to set; None leaves an entry as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, ts_rs::TS)]
pub struct InfoEdits {
    /// The model's display name (`model_name`).
    pub model_name: Option<String>,
    /// Who made the model (`author`).
    pub author: Option<String>,
    /// Free-text description of the model (`description`).
    pub description: Option<String>,
    /// RVC's training summary (`info`, e.g. "300epoch").
    pub info: Option<String>,
}

/// Writes `source` (an RVC inference model) to `out` with `edits` applied, atomically.
pub fn write_edited(source: &Path, edits: &InfoEdits, out: &Path) -> Result<()> {
    crate::synthesizer::check_model(source)?;
    let root = checkpoint::read_torch_file(source)?;
    let (mut entries, ordered) = match root {
        Value::Dict(entries) => (entries, false),
        Value::Object {
            state: Some(state), ..
        } => match *state {
            Value::Dict(entries) => (entries, true),
            _ => bail!("{}: not an RVC voice model", source.display()),
        },
        _ => bail!("{}: not an RVC voice model", source.display()),
    };
    let set = [
        ("model_name", &edits.model_name),
        ("author", &edits.author),
        ("description", &edits.description),
        ("info", &edits.info),
    ];
    for (key, value) in set {
        let Some(value) = value else { continue };
        let value = Value::Str(value.clone());
        match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
            Some((_, existing)) => *existing = value,
            None => entries.push((Value::Str(key.to_string()), value)),
        }
    }
    let root = if ordered {
        Value::ordered_dict(entries)
    } else {
        Value::Dict(entries)
    };
    write_torch_file(out, &root)
}
