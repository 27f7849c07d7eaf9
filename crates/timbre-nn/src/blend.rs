//! Voice blending: a new RVC inference model as the weighted sum of two or more compatible ones,
//! as RVC's `infer/lib/train/process_ckpt.py` `merge` and Applio's voice blender do (rvc-next
//! 0.2.16 `engine/models/merge.py`): the models must agree on version, sample rate and pitch
//! guidance and hold the same tensors; each tensor is summed in float32 and stored in float16;
//! speaker tables of different sizes keep the rows all have. The rest of the file (`config`,
//! `sr`, `f0`, `version`, and any metadata) comes from the first model, with `info` replaced.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Kind, Tensor};

use crate::checkpoint::{self, Value, write_torch_file};
use crate::synthesizer::{ModelInfo, check_model};

const SPEAKER_TABLE: &str = "emb_g.weight";

/// Writes the blend of `models` (each a `.pth` and its weight; the weights are normalised to sum
/// to 1) to `out`, atomically, with `info` as its `info` entry. Refuses incompatible models with
/// a message naming the difference.
pub fn blend_models(models: &[(&Path, f64)], info: &str, out: &Path) -> Result<()> {
    ensure!(models.len() >= 2, "a blend needs at least two models");
    let weights: Vec<f64> = models.iter().map(|(_, weight)| *weight).collect();
    let total = check_weights(&weights)?;
    let infos = models
        .iter()
        .map(|(path, _)| check_model(path))
        .collect::<Result<Vec<_>>>()?;
    for ((path, _), model_info) in models.iter().zip(&infos).skip(1) {
        check_compatible(models[0].0, &infos[0], path, model_info)?;
    }
    let roots = models
        .iter()
        .map(|(path, _)| checkpoint::read_torch_file(path))
        .collect::<Result<Vec<_>>>()?;
    let first = models[0].0;
    let names: Vec<String> = weight_entries(&roots[0], first)?
        .iter()
        .map(|(name, _)| {
            name.as_str()
                .map(str::to_string)
                .context("a tensor name that is not text")
        })
        .collect::<Result<_>>()?;
    let mut blended = Vec::with_capacity(names.len());
    for name in &names {
        let tensors = roots
            .iter()
            .zip(models)
            .map(|(root, (path, _))| tensor(root, path, name))
            .collect::<Result<Vec<_>>>()?;
        let rows = tensors.iter().map(|t| t.size()[0]).min().unwrap_or(0);
        let mut sum: Option<Tensor> = None;
        for (tensor, (path, weight)) in tensors.iter().zip(models) {
            let tensor = if name == SPEAKER_TABLE {
                tensor.narrow(0, 0, rows)
            } else {
                ensure!(
                    tensor.size() == tensors[0].size(),
                    "{}: `{name}` has shape {:?} where {} has {:?}: the models differ in structure",
                    path.display(),
                    tensor.size(),
                    first.display(),
                    tensors[0].size()
                );
                tensor.shallow_clone()
            };
            let part = tensor.to_kind(Kind::Float) * (weight / total);
            sum = Some(match sum {
                Some(sum) => sum + part,
                None => part,
            });
        }
        let sum = sum.context("no tensors to blend")?.to_kind(Kind::Half);
        // The models' own weights are finite (`check_model`), but a float32 model's may lie
        // beyond what the blend's float16 holds.
        ensure!(
            bool::try_from(sum.isfinite().all())?,
            "the blend's `{name}` has values beyond float16's range (±65504): the models cannot \
             blend into a usable one"
        );
        blended.push((Value::Str(name.clone()), Value::Tensor(sum)));
    }
    for (root, (path, _)) in roots.iter().zip(models).skip(1) {
        let count = weight_entries(root, path)?.len();
        ensure!(
            count == names.len(),
            "{} has {count} tensors and {} has {}: the models differ in structure",
            path.display(),
            first.display(),
            names.len()
        );
    }
    let mut roots = roots.into_iter();
    let entries = root_entries(roots.next().context("no first model")?, first)?
        .into_iter()
        .filter(|(key, _)| key.as_str() != Some("info"))
        .map(|(key, value)| match key.as_str() {
            Some("weight") => (key, Value::Dict(std::mem::take(&mut blended))),
            _ => (key, value),
        })
        .chain([(Value::Str("info".into()), Value::Str(info.to_string()))])
        .collect();
    write_torch_file(out, &Value::ordered_dict(entries))
}

/// Refuses blend weights that are not finite numbers of 0 or more, or whose sum is not a finite
/// number above 0 (the weights are divided by it: an infinite sum would make every weight 0, a
/// silent model). Returns the sum.
pub fn check_weights(weights: &[f64]) -> Result<f64> {
    for &weight in weights {
        ensure!(
            weight.is_finite(),
            "weight {} is not a finite number: blend weights are numbers of 0 or more",
            shown(weight)
        );
        ensure!(
            weight >= 0.0,
            "weight {} is negative: blend weights are 0 or more",
            shown(weight)
        );
    }
    let total: f64 = weights.iter().sum();
    let listed = || {
        weights
            .iter()
            .map(|&w| shown(w))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ensure!(
        total.is_finite(),
        "the weights {} add up to more than a number holds: use smaller ones (only their \
         ratios matter)",
        listed()
    );
    ensure!(
        total > 0.0,
        "the weights {} add up to 0: at least one must be above 0",
        listed()
    );
    Ok(total)
}

/// A weight as the user would have typed it: `-1`, `0.25`, and `1e308` rather than its 309
/// digits.
fn shown(weight: f64) -> String {
    if weight == 0.0 || (1e-6..1e16).contains(&weight.abs()) {
        weight.to_string()
    } else {
        format!("{weight:e}")
    }
}

fn check_compatible(first: &Path, a: &ModelInfo, path: &Path, b: &ModelInfo) -> Result<()> {
    let (name_a, name_b) = (first.display(), path.display());
    if a.version != b.version {
        bail!(
            "{name_a} is an RVC {} model and {name_b} an RVC {} one: only models of the same \
             version blend",
            a.version,
            b.version
        );
    }
    if a.sample_rate != b.sample_rate {
        bail!(
            "{name_a} is a {} Hz model and {name_b} a {} Hz one: only models of the same sample \
             rate blend",
            a.sample_rate,
            b.sample_rate
        );
    }
    if a.f0 != b.f0 {
        let pitch = |f0: bool| if f0 { "takes pitch" } else { "takes no pitch" };
        bail!(
            "{name_a} {} and {name_b} {}: only models that agree on pitch guidance blend",
            pitch(a.f0),
            pitch(b.f0)
        );
    }
    Ok(())
}

/// The entries of a checkpoint's root dict (plain or OrderedDict), owned.
fn root_entries(root: Value, source: &Path) -> Result<Vec<(Value, Value)>> {
    match root {
        Value::Dict(entries) => Ok(entries),
        Value::Object {
            state: Some(state), ..
        } => match *state {
            Value::Dict(entries) => Ok(entries),
            _ => bail!("{}: not an RVC voice model", source.display()),
        },
        _ => bail!("{}: not an RVC voice model", source.display()),
    }
}

fn weight_entries<'a>(root: &'a Value, source: &Path) -> Result<&'a [(Value, Value)]> {
    root.get("weight")
        .and_then(Value::as_dict)
        .with_context(|| {
            format!(
                "{}: no `weight` dict: not an RVC voice model",
                source.display()
            )
        })
}

fn tensor(root: &Value, source: &Path, name: &str) -> Result<Tensor> {
    weight_entries(root, source)?
        .iter()
        .find(|(key, _)| key.as_str() == Some(name))
        .and_then(|(_, value)| value.as_tensor())
        .map(Tensor::shallow_clone)
        .with_context(|| {
            format!(
                "{}: no tensor `{name}`: the models differ in structure",
                source.display()
            )
        })
}
