//! RVC synthesizer parity: `net_g.infer(phone, phone_lengths, pitch, pitchf, sid)` of the case's
//! `.pth` with every random draw zero, against the reference audio.

use anyhow::{Context, Result};
use serde_json::Value as Json;
use timbre_nn::synthesizer::{Noise, Synthesizer};

use super::{Case, compare};

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let model_path = case.path("model")?;
    let model = Synthesizer::load(&model_path, super::device())?;
    let info = model.info();
    if let Some(sr) = case.json["sr"].as_u64()
        && sr != u64::from(info.sample_rate)
    {
        return super::fail(format!(
            "the case says {sr} Hz, the model reads as {} Hz",
            info.sample_rate
        ));
    }
    if let Some(f0) = case.json["f0"].as_i64()
        && (f0 != 0) != info.f0
    {
        return super::fail(format!(
            "the case says f0 {f0}, the model reads as f0 {}",
            info.f0
        ));
    }
    if let Some(vocoder) = case.json["vocoder"].as_str()
        && vocoder != info.vocoder.name()
    {
        return super::fail(format!(
            "the case says the {vocoder} vocoder, the model reads as {}",
            info.vocoder
        ));
    }
    if let Some(version) = case.json["version"].as_str()
        && version != info.version
    {
        return super::fail(format!(
            "the case says {version}, the model reads as {}",
            info.version
        ));
    }

    let io = case.io()?;
    let sid = io.get("sid")?.int64_value(&[0]);
    let (pitch, pitchf) = (io.get_opt("pitch"), io.get_opt("pitchf"));
    let audio = model
        .infer(
            &io.get("phone")?,
            &io.get("phone_lengths")?,
            pitch.as_ref(),
            pitchf.as_ref(),
            sid,
            Noise::None,
        )
        .with_context(|| format!("running {}", model_path.display()))?;
    let expected = io.get("audio")?;
    let max_abs = compare::max_abs(&audio, &expected)?;
    let snr = compare::snr_db(&audio, &expected)?;
    let (max_abs_tol, snr_min) = (case.tolerance("max_abs")?, case.tolerance("snr_db_min")?);
    let line = format!(
        "{} {} {} Hz f0 {}: max_abs {max_abs:.2e} (tol {max_abs_tol:.0e}), snr {snr:.1} dB (min {snr_min})",
        info.version, info.vocoder, info.sample_rate, info.f0
    );
    if max_abs > max_abs_tol || snr < snr_min {
        super::fail(line)
    } else {
        Ok(line)
    }
}
