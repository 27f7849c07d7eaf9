//! The cover's effects stage: the chain the user chose over the converted vocals, before the
//! remix (so the loudness match sees the processed vocals). Cached by the converted vocals'
//! content and the chain, so other effects rerun this stage and the remix only.

use anyhow::{Context, Result};
use serde_json::json;
use timbre_audio::effects::EffectChain;
use timbre_audio::{DecodeOptions, SampleFormat};

use super::stages::{Made, Stage, Stages, temp_file};
use crate::db::takes::Take;
use crate::hashing;

/// The vocals with the effects, or the converted vocals themselves when there are none.
pub(super) fn apply(
    stages: &mut Stages,
    chain: Option<&EffectChain>,
    converted: &Take,
) -> Result<Take> {
    let Some(chain) = chain.filter(|chain| !chain.effects.is_empty()) else {
        stages.skip(Stage::Effects, "no effects chosen")?;
        return Ok(converted.clone());
    };
    let key = hashing::cache_key(&[
        "cover-effects",
        &converted.sha256,
        &serde_json::to_string(chain)?,
    ]);
    let library = stages.library();
    let name = format!("{} (vocals with effects)", stages.song.name);
    let mut takes = stages.cached_or_run(Stage::Effects, &key, &["processed"], |progress| {
        let mut audio =
            timbre_audio::decode_file(&library.take_path(converted), &DecodeOptions::default())?;
        progress(0.2, "applying the effects".into())?;
        chain.apply(&mut audio)?;
        let file = temp_file(library, "effects", "wav")?;
        timbre_audio::write_wav(&file, &audio, SampleFormat::Float32)?;
        Ok(vec![Made {
            role: "processed",
            operation: "cover_effects",
            name,
            file,
            format: "wav",
            params: json!({ "effects": chain, "converted_take_id": converted.id }),
        }])
    })?;
    takes
        .remove("processed")
        .context("the effects stage left no take")
}
