//! Kind `hubert`: one HuBERT as a transformers folder (`hf_dir`) and as a fairseq checkpoint
//! (`fairseq`), each through our loader, against the reference RVC v1 and v2 features.

use anyhow::{Context, Result};
use serde_json::Value as Json;
use timbre_nn::hubert::{FeatureVersion, Hubert};

use super::Case;
use super::compare::max_abs;

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let tolerance = case.tolerance("max_abs")?;
    let io = case.io()?;
    let audio = io.get("audio_16k")?.to_device(super::device());
    let references = [
        (FeatureVersion::V1, "v1", io.get("feats_v1")?),
        (FeatureVersion::V2, "v2", io.get("feats_v2")?),
    ];
    let mut measured = Vec::new();
    let mut within = true;
    for (key, label) in [("hf_dir", "transformers"), ("fairseq", "fairseq")] {
        let path = case.path(key)?;
        let model = Hubert::load(&path, super::device())
            .with_context(|| format!("loading the {label} HuBERT"))?;
        for (version, name, reference) in &references {
            let ours = model
                .features(&audio, *version)
                .with_context(|| format!("{label} {name} features"))?;
            let diff =
                max_abs(&ours, reference).with_context(|| format!("{label} {name} features"))?;
            within &= diff <= tolerance;
            measured.push(format!("{label} {name} {diff:.1e}"));
        }
    }
    let line = format!("max_abs {} (tol {tolerance:e})", measured.join(", "));
    if within {
        Ok(line)
    } else {
        super::fail(format!("out of tolerance: {line}"))
    }
}
