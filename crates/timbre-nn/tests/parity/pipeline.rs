//! The whole conversion against the reference pipeline's int16 output.

use anyhow::{Context, Result, ensure};
use serde_json::Value as Json;
use tch::{Kind, Tensor};
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::pipeline::{self, Chunking, ConvertOptions, F0Method, PitchTracker};
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::synthesizer::Synthesizer;
use timbre_nn::voice::VoiceParams;

use super::Case;
use super::compare::snr_db;

pub fn check(case: &Case, manifest: &Json) -> Result<String> {
    let params = &case.json["params"];
    let number = |key: &str| {
        params[key]
            .as_f64()
            .with_context(|| format!("params.{key} is missing"))
    };
    let io = case.io()?;
    let input = Vec::<f32>::try_from(io.get("input")?.to_kind(Kind::Float))?;
    let expected = io.get("output_int16")?.to_kind(Kind::Float);

    let model = Synthesizer::load(&case.path("model")?, super::device())?;
    let version = if model.info().feature_dim == 256 {
        FeatureVersion::V1
    } else {
        FeatureVersion::V2
    };
    let hubert_path = match case.json.get("hubert") {
        Some(_) => case.path("hubert")?,
        None => sibling_file(case, manifest, "hubert", "fairseq")?,
    };
    let hubert = Hubert::load(&hubert_path, super::device())?;
    let f0_method = F0Method::parse(params["f0_method"].as_str().unwrap_or("rmvpe"))?;
    let rmvpe = match f0_method {
        F0Method::Rmvpe => Some(Rmvpe::load(
            &match case.json.get("rmvpe") {
                Some(_) => case.path("rmvpe")?,
                None => sibling_file(case, manifest, "rmvpe", "model")?,
            },
            super::device(),
        )?),
        _ => None,
    };
    let tracker = match (&rmvpe, f0_method) {
        (Some(model), _) => PitchTracker::Rmvpe(model),
        (None, F0Method::Pm) => PitchTracker::Pm,
        (None, _) => PitchTracker::Yin,
    };
    let index = match case.json.get("index") {
        Some(_) => Some(IvfFlatIndex::read(&case.path("index")?)?),
        None => None,
    };
    let resample = number("resample_sr").unwrap_or(0.0) as u32;
    let options = ConvertOptions {
        voice: VoiceParams {
            speaker_id: case.json["sid"].as_i64().unwrap_or(0),
            transpose: number("f0_up_key")? as f32,
            f0_method,
            index_rate: number("index_rate")? as f32,
            protect: number("protect")? as f32,
            rms_mix_rate: number("rms_mix_rate")? as f32,
            ..VoiceParams::default()
        },
        resample_rate: (resample > 0).then_some(resample),
        chunking: Chunking {
            x_pad: number("x_pad")?,
            x_query: number("x_query")?,
            x_center: number("x_center")?,
            x_max: number("x_max")?,
        },
        ..ConvertOptions::default()
    };
    let with_pitch = model.info().f0.then_some(&tracker);
    let analysis = pipeline::analyze(
        input.clone(),
        &hubert,
        version,
        with_pitch,
        options.chunking,
        &mut |_| Ok(()),
    )?;
    let converted = pipeline::render(&analysis, &model, index.as_ref(), &options, &mut |_| Ok(()))?;
    let ours = Tensor::from_slice(&pipeline::to_int16(&converted.samples)).to_kind(Kind::Float);
    ensure!(
        ours.size() == expected.size(),
        "{} samples, reference {:?}",
        ours.size()[0],
        expected.size()
    );
    let snr = snr_db(&ours, &expected)?;
    let tolerance = case.tolerance("snr_db_min")?;
    ensure!(snr >= tolerance, "SNR {snr:.1} dB below {tolerance} dB");
    Ok(format!(
        "{} samples at {} Hz, SNR {snr:.1} dB (min {tolerance} dB)",
        converted.samples.len(),
        converted.sample_rate
    ))
}

/// The file `key` of the set's (first) case of `kind`.
fn sibling_file(case: &Case, manifest: &Json, kind: &str, key: &str) -> Result<std::path::PathBuf> {
    let sibling = Case {
        json: case.sibling(manifest, kind)?,
        root: case.root,
    };
    sibling.path(key)
}
