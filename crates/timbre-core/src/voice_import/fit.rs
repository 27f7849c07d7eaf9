//! Whether the models folder's HuBERT gives the content features an imported voice takes: said
//! at import, with what to get, rather than by the voice's first conversion failing.

use std::path::Path;

use timbre_nn::hubert::{FeatureVersion, FeatureWidths};
use timbre_nn::synthesizer::ModelInfo;

use crate::models_folder;

/// For each voice (its library name and what it takes) whose features the HuBERT in
/// `models_dir` does not give, what is wrong and what to get. Nothing without a HuBERT: every
/// voice needs one, and the first-run check and the conversion name it.
pub(super) fn embedder_warnings(models_dir: &Path, voices: &[(String, &ModelInfo)]) -> Vec<String> {
    let Some(hubert) = models_folder::find_hubert(models_dir) else {
        return Vec::new();
    };
    let widths = match FeatureWidths::of_file(&hubert) {
        Ok(widths) => widths,
        Err(err) => {
            return vec![format!(
                "{}: cannot be read to check the voices' features: {err:#}",
                hubert.display()
            )];
        }
    };
    voices
        .iter()
        .filter_map(|(name, info)| {
            let takes = info.feature_dim;
            match widths.of_version(FeatureVersion::of_voice(takes)) {
                Some(gives) if gives == takes => None,
                Some(gives) => Some(format!(
                    "{name} takes {takes}-d content features but {} gives {gives}-d ones: get \
                     RVC's HuBERT (hubert_base.pt, on the Models page or `timbre assets download \
                     hubert`) before converting with it",
                    hubert.display()
                )),
                None => Some(format!(
                    "{name} is an RVC v1 voice, whose features come from HuBERT's final_proj, \
                     which {} lacks: get RVC's HuBERT (hubert_base.pt, on the Models page or \
                     `timbre assets download hubert`) before converting with it",
                    hubert.display()
                )),
            }
        })
        .collect()
}
