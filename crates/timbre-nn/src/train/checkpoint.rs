//! RVC's training checkpoints, `G_<step>.pth` and `D_<step>.pth`, as rvc_next 0.2.16
//! `engine/train/loop.py` `save_checkpoint` writes them and `load_checkpoint` reads them: a dict
//! of `model` (the state dict), `iteration` (the epoch), `optimizer` (its `state_dict()`) and
//! `learning_rate` (the config's initial rate, not the decayed one). Pretrained files such as
//! `f0D40k.pth` may hold `model` alone.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Result, anyhow};
use tch::Tensor;

use crate::checkpoint::{Value, read_torch_file, write_torch_file};
use crate::weights::Weights;

/// What a training checkpoint holds.
pub struct TrainingCheckpoint {
    /// The state dict, weight-norm pairs named `weight_g`/`weight_v` whichever way they were
    /// saved.
    pub model: Weights,
    /// `iteration`: the epoch the checkpoint was saved after; None when absent (a pretrained file).
    pub iteration: Option<i64>,
    /// `learning_rate`: the config's initial rate, not the decayed one; None when absent.
    pub learning_rate: Option<f64>,
    /// For `AdamW::load_state_dict`.
    pub optimizer: Option<Value>,
    /// Keys beyond RVC's four (rvc-next adds `scaler`, the fp16 loss scaler's state), in order.
    pub extra: Vec<(String, Value)>,
}

/// Reads a training checkpoint; errors name the file.
pub fn read_training_checkpoint(path: &Path) -> Result<TrainingCheckpoint> {
    let root = read_torch_file(path)?;
    let not_a_checkpoint = || anyhow!("{}: not a dict: not a training checkpoint", path.display());
    let entries = match root {
        Value::Dict(entries) => entries,
        Value::Object {
            state: Some(state), ..
        } => match *state {
            Value::Dict(entries) => entries,
            _ => return Err(not_a_checkpoint()),
        },
        _ => return Err(not_a_checkpoint()),
    };
    let (mut model, mut iteration, mut learning_rate, mut optimizer) = (None, None, None, None);
    let mut extra = Vec::new();
    for (key, value) in entries {
        match key.as_str() {
            Some("model") => model = Some(value),
            Some("iteration") => iteration = value.as_i64(),
            Some("learning_rate") => learning_rate = value.as_f64(),
            Some("optimizer") => optimizer = Some(value),
            Some(other) => extra.push((other.to_string(), value)),
            None => {}
        }
    }
    let model = model.as_ref().and_then(Value::as_dict).ok_or_else(|| {
        anyhow!(
            "{}: no `model` state dict: not a training checkpoint",
            path.display()
        )
    })?;
    let tensors: HashMap<String, Tensor> = model
        .iter()
        .filter_map(|(name, tensor)| {
            Some((
                legacy_weight_norm_name(name.as_str()?),
                tensor.as_tensor()?.shallow_clone(),
            ))
        })
        .collect();
    Ok(TrainingCheckpoint {
        model: Weights::new(tensors, path),
        iteration,
        learning_rate,
        optimizer,
        extra,
    })
}

/// torch's newer weight-norm names (`….parametrizations.weight.original0/1`, which Applio
/// saves) as RVC's `weight_g`/`weight_v` (the reference's `legacy_weight_norm`).
fn legacy_weight_norm_name(name: &str) -> String {
    if let Some(layer) = name.strip_suffix(".parametrizations.weight.original0") {
        format!("{layer}.weight_g")
    } else if let Some(layer) = name.strip_suffix(".parametrizations.weight.original1") {
        format!("{layer}.weight_v")
    } else {
        name.to_string()
    }
}

/// Writes a training checkpoint as RVC's `save_checkpoint` does (its keys, in its order),
/// atomically: `model` is the module's state dict in its order, `optimizer` its
/// `AdamW::state_dict()`, `learning_rate` the config's rate and `iteration` the epoch; `extra`
/// keys follow them (RVC's loaders read only the four).
pub fn write_training_checkpoint(
    path: &Path,
    model: &[(String, Tensor)],
    optimizer: Value,
    learning_rate: f64,
    iteration: i64,
    extra: Vec<(String, Value)>,
) -> Result<()> {
    let text = |s: &str| Value::Str(s.to_string());
    let state_dict = model
        .iter()
        .map(|(name, tensor)| {
            (
                Value::Str(name.clone()),
                Value::Tensor(tensor.shallow_clone()),
            )
        })
        .collect();
    let mut entries = vec![
        (text("model"), Value::ordered_dict(state_dict)),
        (text("iteration"), Value::Int(iteration)),
        (text("optimizer"), optimizer),
        (text("learning_rate"), Value::Float(learning_rate)),
    ];
    entries.extend(
        extra
            .into_iter()
            .map(|(key, value)| (Value::Str(key), value)),
    );
    let value = Value::Dict(entries);
    write_torch_file(path, &value)
}
