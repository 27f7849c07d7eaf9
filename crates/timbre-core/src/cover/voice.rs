//! The cover's conversion stage: the (lead) vocals through the voice with every conversion
//! option, by the convert job's engine (its analysis cache included); or, with no voice, the
//! vocals pass through as they are, to hear the remix of the original.

use anyhow::{Context, Result};
use serde_json::json;
use timbre_audio::export::Tags;
use timbre_nn::pipeline::ConvertOptions;

use super::stages::{Made, Stage, Stages};
use crate::db::models;
use crate::db::takes::Take;
use crate::hashing;
use crate::input::AudioInput;
use crate::output_format::OutputFormat;
use crate::voice_engine::{Engine, load_input, output::OutputFile, run_engine};

pub(super) struct Converted {
    pub take: Take,
    /// The voice's name; None for the passthrough.
    pub voice: Option<String>,
}

pub(super) fn convert(
    stages: &mut Stages,
    engine: &mut Engine,
    model_id: Option<i64>,
    options: &ConvertOptions,
    models_dir: &std::path::Path,
    vocals: &Take,
) -> Result<Converted> {
    let Some(model_id) = model_id else {
        stages.skip(Stage::Convert, "no voice: the vocals pass through")?;
        return Ok(Converted {
            take: vocals.clone(),
            voice: None,
        });
    };
    let library = stages.library();
    let model = models::require(&library.conn(), model_id)?;
    let hubert = crate::models_folder::require_voice_embedder(models_dir, &model.metadata)
        .with_context(|| model.name.clone())?;
    let pitch = crate::pitch::model_file(models_dir, options.voice.f0_method)
        .ok()
        .flatten()
        .map(|path| hashing::identity(&path))
        .transpose()?;
    let key = hashing::cache_key(&[
        "cover-convert",
        &vocals.sha256,
        &model.weights_sha256,
        model.index_sha256.as_deref().unwrap_or("-"),
        &serde_json::to_string(options)?,
        &hashing::identity(&hubert)?,
        pitch.as_deref().unwrap_or("-"),
        &format!("{:?}", engine.device()),
    ]);
    let song_name = stages.song.name.clone();
    let mut takes = stages.cached_or_run(Stage::Convert, &key, &["converted"], |progress| {
        let max_secs = library.settings()?.max_import_duration_secs;
        let (input, audio_16k) = load_input(library, &AudioInput::Take(vocals.id), max_secs)?;
        let mut output = OutputFile::new(OutputFormat::WavFloat, None, &library.store().tmp_dir())?;
        let label = format!("with {}", model.name);
        run_engine(
            library,
            engine,
            &model,
            &input,
            audio_16k,
            options,
            models_dir,
            &mut output,
            &mut |f| progress(f, label.clone()),
        )?;
        let name = format!("{song_name} (vocals, {})", model.name);
        let tags = Tags {
            title: name.clone(),
            artist: model.name.clone(),
            comment: serde_json::to_string(options)?,
        };
        Ok(vec![Made {
            role: "converted",
            operation: "cover_converted_vocals",
            name,
            file: output.finish(&tags)?.into_temp_path(),
            format: "wav",
            params: json!({ "model_id": model.id, "model_name": model.name, "options": options }),
        }])
    })?;
    Ok(Converted {
        take: takes
            .remove("converted")
            .context("the conversion stage left no take")?,
        voice: Some(model.name),
    })
}
