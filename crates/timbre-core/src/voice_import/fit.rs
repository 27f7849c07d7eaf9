//! Whether the models folder's HuBERT gives the content features an imported voice takes: said
//! at import, with what to get, rather than by the voice's first conversion failing.

use std::path::Path;

use timbre_nn::hubert::{Embedder, FeatureWidths};
use timbre_nn::synthesizer::ModelInfo;

use crate::models_folder;

/// For each voice (its library name and what it takes) whose features the extractor of its
/// embedder in `models_dir` does not give, what is wrong and what to get. Nothing for a
/// contentvec voice without a HuBERT: every voice needs one, and the first-run check and the
/// conversion name it; a voice of another embedder is told to download it.
pub(super) fn embedder_warnings(models_dir: &Path, voices: &[(String, &ModelInfo)]) -> Vec<String> {
    let mut said = std::collections::HashSet::new();
    voices
        .iter()
        .filter_map(|(name, info)| {
            let embedder = info.embedder().ok()?;
            let Some(extractor) = models_folder::find_embedder(models_dir, embedder) else {
                return match embedder {
                    Embedder::Contentvec => None,
                    Embedder::Custom => Some(format!(
                        "{name} was trained on a custom embedder: choose its folder (`timbre \
                         models embedder {name} --folder DIR`) before converting with it"
                    )),
                    _ => Some(format!(
                        "{name} was trained on the {embedder} embedder's features: download them \
                         (`timbre assets download {}`, or Download on the Convert page) before \
                         converting with it",
                        models_folder::embedder_assets(embedder).join(" ")
                    )),
                };
            };
            let widths = match FeatureWidths::of_file(&extractor) {
                Ok(widths) => widths,
                Err(err) => {
                    return Some(format!(
                        "{}: cannot be read to check the voices' features: {err:#}",
                        extractor.display()
                    ));
                }
            };
            let takes = info.feature_dim;
            let get = match embedder {
                Embedder::Contentvec => "RVC's HuBERT (hubert_base.pt, on the Models page or \
                                         `timbre assets download hubert`)"
                    .to_string(),
                other => format!("the {other} embedder Applio ships"),
            };
            match widths.of_version(info.feature_version().ok()?) {
                Some(gives) if gives == takes => None,
                Some(gives) => Some(format!(
                    "{name} takes {takes}-d content features but {} gives {gives}-d ones: get \
                     {get} before converting with it",
                    extractor.display()
                )),
                None => Some(format!(
                    "{name} is an RVC v1 voice, whose features come from HuBERT's final_proj, \
                     which {} lacks: get {get} before converting with it",
                    extractor.display()
                )),
            }
        })
        // An extractor that cannot be read is said once, not once per voice.
        .filter(|warning| said.insert(warning.clone()))
        .collect()
}
