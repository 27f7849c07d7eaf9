//! The cover's effects stage: the chain the user chose over the converted vocals, before the
//! remix (so the loudness match sees the processed vocals), read, processed and written block by
//! block, so a long song's vocals are never held whole. Cached by the converted vocals' content
//! and the chain, so other effects rerun this stage and the remix only.

use anyhow::{Context, Result};
use serde_json::json;
use timbre_audio::effects::EffectChain;
use timbre_audio::{AudioBuffer, DecodeOptions, SampleFormat, WavStreamWriter};

use super::stages::{Made, Stage, Stages, temp_file};
use crate::db::takes::Take;
use crate::hashing;

/// Frames processed at a time.
const BLOCK_FRAMES: usize = 1 << 16;

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
        let mut reader =
            timbre_audio::open_blocks(&library.take_path(converted), &DecodeOptions::default())?;
        let (rate, channels) = (reader.sample_rate(), reader.info().channels);
        let mut stream = chain.stream(rate, usize::from(channels))?;
        let file = temp_file(library, "effects", "wav")?;
        let mut wav = WavStreamWriter::create(&file, rate, channels, SampleFormat::Float32)?;
        let total = converted.frames.max(1) as f64;
        let mut done = 0;
        while let Some(block) = reader.next_block(BLOCK_FRAMES)? {
            done += block.frames();
            wav.write(&AudioBuffer::new(rate, stream.push(block.channels)))?;
            progress(done as f64 / total, "applying the effects".into())?;
        }
        wav.write(&AudioBuffer::new(rate, stream.finish()))?;
        wav.finish()?;
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
