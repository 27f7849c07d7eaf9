//! The voice conversion engine as the jobs use it: the process's one engine (models and
//! analyses cached between jobs, shared by the convert and cover jobs), an input loaded as
//! 16 kHz mono with its content hash, a conversion run against a model of the library with its
//! stored files named in errors, the options checked, and the encoded output file.

mod engine;
pub(crate) mod output;

pub use engine::Engine;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use timbre_audio::DecodeOptions;
use timbre_audio::resample::StreamResampler;
use timbre_nn::device::Precision;
use timbre_nn::pipeline::ConvertOptions;

use crate::db::models;
use crate::error::check_range;
use crate::input::AudioInput;
use crate::library::Library;
use crate::model_cache::{ModelCache, StoredFile};
use crate::model_import;

/// The process's one conversion engine, shared by the convert and cover jobs so that both keep
/// their analyses in one cache; one job at a time runs it.
pub struct SharedEngine {
    models: Arc<ModelCache>,
    slot: Mutex<Option<Engine>>,
}

impl SharedEngine {
    /// The shared engine over `models`; the engine itself is made on the first run.
    pub fn new(models: Arc<ModelCache>) -> Arc<SharedEngine> {
        Arc::new(SharedEngine {
            models,
            slot: Mutex::new(None),
        })
    }

    pub(crate) fn models(&self) -> &Arc<ModelCache> {
        &self.models
    }

    /// Runs `work` on the engine for the device the settings name now (a new one when it
    /// changed), with the model cache's budget re-read.
    pub(crate) fn run<T>(
        &self,
        library: &Library,
        work: impl FnOnce(&mut Engine) -> Result<T>,
    ) -> Result<T> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let settings = library.settings()?;
        let device = crate::devices::Devices::of(&settings)?.main;
        if slot.as_ref().is_none_or(|e| e.device() != device) {
            *slot = None;
            let precision = Precision::default_for(device)?;
            *slot = Some(Engine::new(
                device,
                precision,
                self.models.clone(),
                &library.data_dir().join("cache"),
            ));
        }
        self.models.set_budget_mb(settings.model_cache_mb);
        work(
            slot.as_mut()
                .context("the conversion engine is not ready")?,
        )
    }

    /// Empties the model cache and the analyses kept in memory.
    pub(crate) fn free(&self) {
        self.models.clear();
        if let Some(engine) = self.slot.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            engine.free();
        }
    }
}

/// Where the input came from, its content hash and length; [`load_input`] gives its audio beside.
pub(crate) struct Input {
    pub(crate) sha256: String,
    pub(crate) seconds: f64,
    pub(crate) take_id: Option<i64>,
    pub(crate) path: PathBuf,
    pub(crate) name: String,
}

/// The input and its audio as 16 kHz mono.
pub(crate) fn load_input(
    library: &Library,
    input: &AudioInput,
    max_duration_secs: f64,
) -> Result<(Input, Vec<f32>)> {
    let resolved = input.resolve(library)?;
    let sha256 = match &resolved.take {
        Some(take) => take.sha256.clone(),
        None => crate::hashing::content_sha256(&resolved.path)?,
    };
    let (path, take_id, name) = (resolved.path, resolved.take.map(|t| t.id), resolved.name);
    let audio_16k = decode_16k_mono(&path, max_duration_secs)?;
    if audio_16k.len() < 1_600 {
        return Err(crate::error::invalid_input(format!(
            "{}: {:.0} ms of audio is too short to convert (at least 0.1 s is needed)",
            path.display(),
            audio_16k.len() as f64 / 16.0
        )));
    }
    let input = Input {
        sha256,
        seconds: audio_16k.len() as f64 / 16_000.0,
        take_id,
        path,
        name,
    };
    Ok((input, audio_16k))
}

/// The file as 16 kHz mono, decoded, mixed down and resampled block by block, so only the
/// result is held whole (the same samples as resampling the whole decoded file).
fn decode_16k_mono(path: &Path, max_duration_secs: f64) -> Result<Vec<f32>> {
    const RATE: u32 = 16_000;
    let options = DecodeOptions {
        max_duration_secs: Some(max_duration_secs),
    };
    let mut reader = timbre_audio::open_blocks(path, &options)?;
    let mut audio = Vec::new();
    let mut resampler: Option<StreamResampler> = None;
    while let Some(block) = reader.next_block(1 << 16)? {
        let mono = block.to_mono();
        let samples = mono.channels.first().map_or(&[][..], |c| &c[..]);
        if resampler.is_none() {
            resampler = Some(StreamResampler::new(mono.sample_rate, RATE)?);
        }
        if let Some(resampler) = &mut resampler {
            resampler.push(samples, &mut audio)?;
        }
    }
    if let Some(resampler) = resampler {
        resampler.finish(&mut audio)?;
    }
    Ok(audio)
}

/// Converts `input` with `model` into `sink`; a failure names the model's stored files.
#[expect(clippy::too_many_arguments)]
pub(crate) fn run_engine(
    library: &Library,
    engine: &mut Engine,
    model: &models::Model,
    input: &Input,
    audio_16k: Vec<f32>,
    options: &ConvertOptions,
    models_dir: &Path,
    sink: &mut dyn timbre_nn::pipeline::OutputSink,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<engine::Outcome> {
    let weights_path = library
        .store()
        .object_path(&model.weights_sha256, models::WEIGHTS_EXT);
    let index_path = model
        .index_sha256
        .as_ref()
        .map(|sha| library.store().object_path(sha, models::INDEX_EXT));
    let extractor = crate::models_folder::require_voice_embedder(models_dir, &model.metadata)
        .with_context(|| model.name.clone())?;
    let request = engine::Request {
        input_sha256: &input.sha256,
        audio_16k,
        voice: StoredFile {
            sha256: &model.weights_sha256,
            path: &weights_path,
            name: &model.name,
        },
        index: model
            .index_sha256
            .as_deref()
            .zip(index_path.as_deref())
            .map(|(sha256, path)| StoredFile {
                sha256,
                path,
                name: &model.name,
            }),
        options,
        models_dir,
        extractor: &extractor,
    };
    engine.convert(request, sink, progress).map_err(|e| {
        // Typed before the paths are replaced, which keeps only the error's kind.
        let e = crate::torch_errors::typed(e);
        let model_label = model_import::describe_model(model);
        let mut stored = vec![(weights_path.as_path(), model_label.clone())];
        stored.extend(
            index_path
                .as_deref()
                .map(|index| (index, format!("the index of {model_label}"))),
        );
        model_import::name_stored_files(e, &stored)
    })
}

/// Refuses options outside their ranges, naming the option.
pub fn check_options(options: &ConvertOptions) -> Result<()> {
    options
        .voice
        .check()
        .map_err(|e| crate::error::invalid_input(e.to_string()))?;
    if let Some(rate) = options.resample_rate {
        // The render leaves the model's rate alone below 16 kHz.
        check_range("resample_rate", rate, 16_000, 192_000)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use timbre_audio::{AudioBuffer, SampleFormat};

    #[test]
    fn the_input_decoded_block_by_block_equals_the_whole_file_resampled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stereo.wav");
        let frames = 44_100 * 4 + 123;
        let channel =
            |f: f32| -> Vec<f32> { (0..frames).map(|i| 0.4 * (i as f32 * f).sin()).collect() };
        let stereo = AudioBuffer::new(44_100, vec![channel(0.031), channel(0.017)]);
        timbre_audio::write_wav(&path, &stereo, SampleFormat::Int16).unwrap();
        let decoded = timbre_audio::decode_file(&path, &Default::default()).unwrap();
        let whole = timbre_audio::resample(&decoded.to_mono(), 16_000).unwrap();
        let streamed = super::decode_16k_mono(&path, 3600.0).unwrap();
        assert_eq!(streamed, whole.channels[0]);
    }
}
