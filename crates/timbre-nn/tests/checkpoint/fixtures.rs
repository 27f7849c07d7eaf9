//! Every checkpoint of the fixture sets (`RVC_PARITY_DIR`, `SEPARATION_PARITY_DIR`) reads, with
//! metadata that agrees with the manifests and with the tensors, whatever the sizes of the set.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value as Json;
use tch::{Kind, Tensor};
use timbre_nn::checkpoint::{Value, load_state_dict, read_torch_file};
use timbre_nn::weights::Weights;
use timbre_test_support::{rvc_parity_fixtures, separation_fixtures};

/// A fixture set's manifest and the folder its paths are relative to.
fn manifest(root: PathBuf) -> Result<(PathBuf, Json)> {
    let path = root.join("manifest.json");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok((root, serde_json::from_str(&text)?))
}

/// A path a manifest names: relative to its folder, or an absolute one from the machine that
/// made the fixtures, found by its trailing components.
fn resolve(root: &Path, named: &str) -> Result<PathBuf> {
    let named = Path::new(named);
    if named.is_relative() || named.exists() {
        return Ok(root.join(named));
    }
    let parts: Vec<_> = named.components().collect();
    (1..parts.len())
        .map(|skip| root.join(parts[skip..].iter().collect::<PathBuf>()))
        .find(|candidate| candidate.exists())
        .with_context(|| format!("{} not found inside {}", named.display(), root.display()))
}

/// Every tensor of a state dict is usable: floating ones finite.
fn check_weights(weights: &Weights) -> Result<()> {
    ensure!(
        !weights.is_empty(),
        "{}: no tensors",
        weights.source().display()
    );
    for name in weights.names() {
        let t = weights.get(name)?;
        if t.is_floating_point() {
            ensure!(
                bool::try_from(t.isfinite().all())?,
                "{}: `{name}` is not finite",
                weights.source().display()
            );
        }
    }
    Ok(())
}

/// RVC inference files: config list, `sr`, `f0`, `version` and `info` agree with the manifest,
/// and the weights have the dtype the manifest names.
fn check_synthesizer(root: &Path, case: &Json) -> Result<()> {
    let path = resolve(root, case["model"].as_str().context("no model")?)?;
    let checkpoint = read_torch_file(&path)?;
    let config = checkpoint
        .get("config")
        .and_then(Value::as_list)
        .context("no config list")?;
    let sr = case["sr"].as_i64().context("no sr")?;
    ensure!(
        config.last().and_then(Value::as_i64) == Some(sr),
        "config ends in {:?}, not {sr}",
        config.last()
    );
    ensure!(config.len() >= 17, "config has {} items", config.len());
    match checkpoint.get("sr") {
        Some(Value::Str(text)) => ensure!(*text == format!("{}k", sr / 1000), "sr `{text}`"),
        other => ensure!(other.and_then(Value::as_i64) == Some(sr), "sr {other:?}"),
    }
    ensure!(
        checkpoint.get("f0").and_then(Value::as_i64) == case["f0"].as_i64(),
        "f0 {:?}",
        checkpoint.get("f0")
    );
    ensure!(
        checkpoint.get("version").and_then(Value::as_str) == case["version"].as_str(),
        "version"
    );
    ensure!(
        checkpoint
            .get("info")
            .is_none_or(|info| info.as_str().is_some()),
        "info is not text"
    );
    let weights = load_state_dict(&path)?;
    check_weights(&weights)?;
    let kind = match case["weights_dtype"].as_str() {
        Some("float16") => Kind::Half,
        Some("float32") => Kind::Float,
        other => bail!("weights_dtype {other:?}"),
    };
    for name in weights.names() {
        ensure!(
            weights.get(name)?.kind() == kind,
            "`{name}` is not {kind:?}"
        );
    }
    Ok(())
}

/// The fairseq HuBERT: `args` and `cfg` (omegaconf) read as values consistent with the tensors
/// under `model`, which hold bit for bit the tensors of the transformers copy of the model.
fn check_hubert(root: &Path, case: &Json) -> Result<()> {
    let path = resolve(root, case["fairseq"].as_str().context("no fairseq")?)?;
    let checkpoint = read_torch_file(&path)?;
    if let Some(args @ Value::Object { class, .. }) = checkpoint.get("args") {
        let attributes = args.as_dict().unwrap_or_default();
        ensure!(
            class == "argparse.Namespace" && !attributes.is_empty(),
            "args {args:?}"
        );
    }
    let model_cfg = checkpoint
        .get("cfg")
        .and_then(|c| c.get("model"))
        .context("no cfg.model")?;
    let weights = load_state_dict(&path)?;
    check_weights(&weights)?;
    let layers = weights
        .names()
        .filter_map(|n| {
            n.strip_prefix("encoder.layers.")?
                .split('.')
                .next()?
                .parse::<i64>()
                .ok()
        })
        .max();
    ensure!(
        model_cfg.get("encoder_layers").and_then(Value::as_i64) == layers.map(|l| l + 1),
        "encoder_layers"
    );
    let embed = weights.shape("encoder.layer_norm.weight")?;
    ensure!(
        model_cfg.get("encoder_embed_dim").and_then(Value::as_i64) == Some(embed[0]),
        "encoder_embed_dim"
    );

    let hf_dir = resolve(root, case["hf_dir"].as_str().context("no hf_dir")?)?;
    let hf = Weights::from_safetensors(&hf_dir.join("model.safetensors"))?;
    let ours: Vec<Tensor> = weights
        .names()
        .map(|n| weights.get(n))
        .collect::<Result<_>>()?;
    for name in hf.names() {
        let theirs = hf.get(name)?;
        let found = ours
            .iter()
            .any(|t| t.size() == theirs.size() && t.kind() == theirs.kind() && t.equal(&theirs));
        ensure!(
            found,
            "transformers tensor `{name}` has no bit-identical tensor in {}",
            path.display()
        );
    }
    Ok(())
}

#[test]
fn every_fixture_checkpoint_reads() {
    let sets = [rvc_parity_fixtures(), separation_fixtures()];
    let mut failures = Vec::new();
    for set in sets {
        let (root, manifest) = manifest(set).unwrap();
        for case in manifest["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().unwrap_or("?");
            let checked = match case["kind"].as_str() {
                Some("synthesizer") => check_synthesizer(&root, case),
                Some("hubert") => check_hubert(&root, case),
                _ => Ok(()),
            };
            let checkpoints = ["model", "fairseq"]
                .into_iter()
                .filter_map(|key| case[key].as_str())
                .filter(|p| [".pt", ".pth", ".ckpt"].iter().any(|ext| p.ends_with(ext)));
            let read = checkpoints
                .map(|p| check_weights(&load_state_dict(&resolve(&root, p)?)?))
                .collect::<Result<Vec<_>>>();
            match checked.and(read) {
                Ok(n) => println!("{name}: {} checkpoint(s) read", n.len()),
                Err(e) => failures.push(format!("{name}: {e:#}")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
