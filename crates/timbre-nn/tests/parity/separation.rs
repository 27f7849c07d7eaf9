//! BS-RoFormer and Mel-Band RoFormer: one forward pass on the first chunk of the mix
//! (`chunk_output`) and the overlap-add separation of the whole mix (`demix_vocals`).

use anyhow::{Context, Result};
use serde_json::Value as Json;
use timbre_nn::separation::{ModelType, Separator};

use super::Case;
use super::compare::max_abs;

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let kind: ModelType = case.str("kind")?.parse()?;
    let device = super::device();
    let separator = Separator::load_on(
        &case.path("model")?,
        &case.path("config")?,
        Some(kind),
        device,
        super::precision().weight_kind(),
    )?;
    let tolerance = case.tolerance("max_abs")?;
    let io = case.io()?;
    let mix = io.get("mix")?;

    let chunk_size = separator.config().chunk_size().min(mix.size()[1]);
    let ours = separator
        .model()
        .forward(&mix.narrow(1, 0, chunk_size).unsqueeze(0).to_device(device))?;
    let reference = io.get("chunk_output")?;
    // Upstream drops the stem axis of a one-stem model; ours keeps it.
    let ours = if reference.dim() + 1 == ours.dim() && ours.size()[1] == 1 {
        ours.squeeze_dim(1)
    } else {
        ours
    };
    let chunk_error = max_abs(&ours, &reference).context("chunk_output")?;

    let vocals = separator.vocals(&mix, |_, _| true)?;
    let demix_error = max_abs(&vocals, &io.get("demix_vocals")?).context("demix_vocals")?;

    let measured = format!(
        "chunk_output max_abs {chunk_error:.2e}, demix_vocals max_abs {demix_error:.2e} (tol {tolerance:.0e})"
    );
    if chunk_error > tolerance || demix_error > tolerance {
        return super::fail(format!("out of tolerance: {measured}"));
    }
    Ok(measured)
}

/// The configs of the vocals, karaoke and de-reverb RoFormers people use (as rvc-next ships them)
/// pass every check of ours, and their stems say their task.
#[test]
fn the_community_roformer_configs_load_with_their_tasks() {
    use timbre_nn::separation::{SeparationConfig, VoiceTask};
    for (file, task) in [
        (
            "model_bs_roformer_ep_317_sdr_12.9755.yaml",
            VoiceTask::Vocals,
        ),
        (
            "model_bs_roformer_ep_368_sdr_12.9628.yaml",
            VoiceTask::Vocals,
        ),
        (
            "config_mel_band_roformer_karaoke.yaml",
            VoiceTask::LeadVocal,
        ),
        (
            "dereverb_mel_band_roformer_anvuew.yaml",
            VoiceTask::DeReverb,
        ),
    ] {
        let path = timbre_test_support::rvc_next_separation_config(file);
        let config = SeparationConfig::from_path(&path).unwrap_or_else(|e| panic!("{file}: {e:#}"));
        let stems = config.stems().unwrap();
        assert_eq!(
            VoiceTask::of_stems(&stems).map(|(t, _)| t),
            Some(task),
            "{file}: {stems:?}"
        );
    }
}
