//! Parity with the reference Python implementations on the fixture sets of `../shared/fixtures`
//! (or the folders named by `RVC_PARITY_DIR` / `SEPARATION_PARITY_DIR`) and on the Applio,
//! MDX23C and SCNet sets beside these tests (`tests/data/applio-parity`,
//! `tests/data/mdx23c-parity`, `tests/data/scnet-parity`, or `APPLIO_PARITY_DIR`,
//! `MDX23C_PARITY_DIR`, `SCNET_PARITY_DIR`): every case of each manifest runs by its `kind` and
//! prints what it measured against its tolerance. A case that cannot run fails the test, as does
//! an unknown kind.

mod compare;
mod hubert;
mod index;
mod mdx23c;
mod pipeline;
mod rmvpe;
mod separation;
mod synthesizer;
mod synthesizer_training;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value as Json;
use timbre_nn::device::Precision;
use timbre_test_support::{
    applio_parity_fixtures, mdx23c_parity_fixtures, rvc_parity_fixtures, scnet_parity_fixtures,
    separation_fixtures,
};

/// One manifest case with its fixture folder, so checkers can resolve the files it names.
pub struct Case<'a> {
    pub json: &'a Json,
    pub root: &'a Path,
}

impl Case<'_> {
    pub fn name(&self) -> &str {
        self.json["name"].as_str().unwrap_or("(unnamed)")
    }

    pub fn str(&self, key: &str) -> Result<&str> {
        self.json[key]
            .as_str()
            .with_context(|| format!("case {}: `{key}` is missing", self.name()))
    }

    /// A file the case names: relative to the fixture folder; an absolute path from the machine
    /// that made the fixtures is found by its trailing components inside the folder.
    pub fn path(&self, key: &str) -> Result<PathBuf> {
        let named = Path::new(self.str(key)?);
        if named.is_relative() {
            return Ok(self.root.join(named));
        }
        if named.exists() {
            return Ok(named.to_path_buf());
        }
        let parts: Vec<_> = named.components().collect();
        (1..parts.len())
            .map(|skip| self.root.join(parts[skip..].iter().collect::<PathBuf>()))
            .find(|candidate| candidate.exists())
            .with_context(|| {
                format!(
                    "case {}: {} not found, nor inside {}",
                    self.name(),
                    named.display(),
                    self.root.display()
                )
            })
    }

    pub fn tolerance(&self, key: &str) -> Result<f64> {
        self.json["tolerance"][key]
            .as_f64()
            .with_context(|| format!("case {}: tolerance `{key}` is missing", self.name()))
    }

    /// The io tensors of the case.
    pub fn io(&self) -> Result<Io> {
        let path = self.path("io")?;
        let tensors = tch::Tensor::read_safetensors(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Io { tensors, path })
    }

    /// Another case of the same manifest of `kind` (the pipeline case uses the set's HuBERT and
    /// RMVPE when it does not name them).
    pub fn sibling<'m>(&self, manifest: &'m Json, kind: &str) -> Result<&'m Json> {
        manifest["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["kind"] == kind)
            .with_context(|| {
                format!(
                    "case {}: the manifest has no `{kind}` case to take its model from",
                    self.name()
                )
            })
    }
}

pub struct Io {
    tensors: Vec<(String, tch::Tensor)>,
    path: PathBuf,
}

impl Io {
    pub fn get(&self, name: &str) -> Result<tch::Tensor> {
        self.tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.shallow_clone())
            .with_context(|| format!("{}: no tensor `{name}`", self.path.display()))
    }

    pub fn get_opt(&self, name: &str) -> Option<tch::Tensor> {
        self.get(name).ok()
    }
}

/// Where the models run: the machine's default device (CUDA when there is one) and precision,
/// as the app's jobs choose them, so a GPU machine checks the GPU path.
pub fn device() -> tch::Device {
    timbre_nn::device::default_device().expect("TIMBRE_DEVICE")
}

pub fn precision() -> Precision {
    Precision::default_for(device()).expect("TIMBRE_PRECISION")
}

/// A checker runs one case and returns what it measured, or fails with why.
type Checker = fn(&Case, &Json) -> Result<String>;

/// `autocast`: run the checkers in the precision's autocast (the conversion models); the
/// separators instead load their weights in the precision's dtype.
fn run_manifest(dir: &Path, checker_for: fn(&str) -> Option<Checker>, autocast: bool) {
    let manifest_path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest_path.display()));
    let manifest: Json =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest_path.display()));
    let cases = manifest["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no cases", manifest_path.display()));
    assert!(!cases.is_empty(), "{}: no cases", manifest_path.display());
    let mut failures = Vec::new();
    for json in cases {
        let case = Case { json, root: dir };
        let kind = json["kind"].as_str().unwrap_or("(no kind)");
        let outcome = match checker_for(kind) {
            Some(check) if autocast => precision().autocast(|| check(&case, &manifest)),
            Some(check) => check(&case, &manifest),
            None => Err(anyhow::anyhow!("unknown kind `{kind}`")),
        };
        match outcome {
            Ok(measured) => println!("parity {} ({kind}): ok: {measured}", case.name()),
            Err(e) => {
                println!("parity {} ({kind}): FAILED: {e:#}", case.name());
                failures.push(format!("{}: {e:#}", case.name()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn rvc_checker(kind: &str) -> Option<Checker> {
    Some(match kind {
        "synthesizer" => synthesizer::check,
        "hubert" => hubert::check,
        "rmvpe" => rmvpe::check,
        "index" => index::check,
        "pipeline" => pipeline::check,
        _ => return None,
    })
}

#[test]
fn rvc_parity() {
    tch::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get() as i32));
    run_manifest(&rvc_parity_fixtures(), rvc_checker, true);
}

/// Voices with Applio's other vocoders, made with Applio's own code by
/// `tests/data/applio-parity/make_fixtures.py` in the rvc-parity format.
#[test]
fn applio_parity() {
    tch::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get() as i32));
    run_manifest(&applio_parity_fixtures(), rvc_checker, true);
}

fn separation_checker(kind: &str) -> Option<Checker> {
    Some(match kind {
        "bs_roformer" | "mel_band_roformer" => separation::check,
        "mdx23c" | "scnet" => mdx23c::check,
        _ => return None,
    })
}

#[test]
fn separation_parity() {
    tch::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get() as i32));
    run_manifest(&separation_fixtures(), separation_checker, false);
}

/// MDX23C separators made with MSST's own code by `tests/data/mdx23c-parity/make_fixtures.py`
/// in the separation format.
#[test]
fn mdx23c_parity() {
    tch::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get() as i32));
    run_manifest(&mdx23c_parity_fixtures(), separation_checker, false);
}

/// SCNet separators made with MSST's own code by `tests/data/scnet-parity/make_fixtures.py` in
/// the separation format.
#[test]
fn scnet_parity() {
    tch::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get() as i32));
    run_manifest(&scnet_parity_fixtures(), separation_checker, false);
}

/// Keeps the result type of checkers in one place.
pub fn fail<T>(message: String) -> Result<T> {
    bail!(message)
}
