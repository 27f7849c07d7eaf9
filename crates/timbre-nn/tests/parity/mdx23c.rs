//! MDX23C and SCNet: one forward pass on the first chunk of the mix (`chunk_output`) and MSST's
//! overlap-add separation of the whole mix into every stem (`demix`), each as a signal-to-noise
//! ratio against MSST's own output. The architecture is told from the files, as the app tells it,
//! and must be the case's `kind`.

use anyhow::{Context, Result};
use serde_json::Value as Json;
use timbre_nn::separation::{ModelType, Separator};

use super::Case;
use super::compare::snr_db;

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let device = super::device();
    let separator = Separator::load_on(
        &case.path("model")?,
        &case.path("config")?,
        None,
        device,
        super::precision().weight_kind(),
    )?;
    let kind: ModelType = case.str("kind")?.parse()?;
    if separator.model().model_type() != kind {
        return super::fail(format!(
            "loaded as {}, the case is {kind}",
            separator.model().model_type()
        ));
    }
    let stems: Vec<&str> = case.json["stems"]
        .as_array()
        .context("`stems` is missing")?
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    if separator.stems() != stems {
        return super::fail(format!(
            "stems {:?}, the case has {stems:?}",
            separator.stems()
        ));
    }
    let bound = case.tolerance("snr_db_min")?;
    let io = case.io()?;
    let mix = io.get("mix")?;

    let chunk_size = separator.config().chunk_size();
    let ours = separator
        .model()
        .forward(&mix.narrow(1, 0, chunk_size).unsqueeze(0).to_device(device))?;
    let chunk_snr = snr_db(&ours, &io.get("chunk_output")?).context("chunk_output")?;

    let demixed = separator.demix(&mix, |_, _| true)?;
    let demix_snr = snr_db(&demixed, &io.get("demix")?).context("demix")?;

    let measured = format!(
        "chunk_output SNR {chunk_snr:.1} dB, demix SNR {demix_snr:.1} dB (bound {bound:.0} dB)"
    );
    if chunk_snr < bound || demix_snr < bound {
        return super::fail(format!("out of tolerance: {measured}"));
    }
    Ok(measured)
}
