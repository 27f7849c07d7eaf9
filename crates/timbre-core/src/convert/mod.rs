//! The `convert` job: one input (a take or a file) through one voice model, the result saved as
//! a conversion in the library (and optionally also written to a folder). Runs on the GPU lane;
//! the engine behind it keeps models and analyses cached between jobs.

pub(crate) mod engine;
pub mod model_import;
pub(crate) mod output;
mod request;

pub use crate::model_cache::CacheUse;
pub use engine::Engine;
pub use request::{ConvertRequest, ConvertResult, check, check_options, submit};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timbre_audio::effects::EffectChain;
use timbre_audio::export::Tags;
use timbre_audio::resample::StreamResampler;
use timbre_audio::{DecodeOptions, analysis};
use timbre_nn::device::Precision;
use timbre_nn::pipeline::ConvertOptions;

use crate::db::conversions::{self, NewConversion};
use crate::db::jobs::Lane;
use crate::db::models;
use crate::input::AudioInput;
use crate::jobs::{JobContext, JobHandler, Need, Needs};
use crate::library::Library;
use crate::model_cache::{ModelCache, StoredFile};
use crate::out_folder;
use crate::output_format::OutputFormat;
use crate::store::ObjectKey;

/// The job kind.
pub(crate) const KIND: &str = "convert";

/// One `convert` job: one input through one model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConvertParams {
    pub input: AudioInput,
    pub model_id: i64,
    #[serde(default)]
    pub options: ConvertOptions,
    #[serde(default)]
    pub format: OutputFormat,
    /// Also write the result into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// Absent (not null) when off, so the parameters of a plain conversion are as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<EffectChain>,
}

/// The process's one conversion engine, shared by the convert and cover jobs so that both keep
/// their analyses in one cache; one job at a time runs it.
pub struct SharedEngine {
    models: Arc<ModelCache>,
    slot: Mutex<Option<Engine>>,
}

impl SharedEngine {
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

pub struct ConvertHandler {
    engine: Arc<SharedEngine>,
}

impl ConvertHandler {
    pub fn new(engine: Arc<SharedEngine>) -> Self {
        Self { engine }
    }
}

impl JobHandler for ConvertHandler {
    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Hubert, Need::Device],
            optional: &[Need::Rmvpe],
        }
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    /// A conversion that was cut off simply runs again (its analysis is cached on disk).
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: ConvertParams = ctx.params()?;
        let library = ctx.library();
        let models_dir = crate::models_folder::of(library)?;
        let result = self.engine.run(library, |engine| {
            convert(
                library,
                engine,
                &params,
                &models_dir,
                ctx.job_id(),
                &mut |f, message| ctx.progress(f, message),
            )
        })?;
        Ok(serde_json::to_value(result)?)
    }

    fn free_caches(&self) {
        self.engine.free();
    }
}

/// Where the input came from, its content hash and length; [`load_input`] gives its audio beside.
pub(crate) struct Input {
    pub(crate) sha256: String,
    pub(crate) seconds: f64,
    take_id: Option<i64>,
    path: PathBuf,
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

/// Runs one conversion and saves it; `progress` may cancel.
pub fn convert(
    library: &Library,
    engine: &mut Engine,
    params: &ConvertParams,
    models_dir: &Path,
    job_id: i64,
    progress: &mut dyn FnMut(f64, String) -> Result<()>,
) -> Result<ConvertResult> {
    let started = Instant::now();
    let model = models::require(&library.conn(), params.model_id)?;
    let decode_range = timbre_nn::profile::range("decode");
    let (input, audio_16k) = load_input(
        library,
        &params.input,
        library.settings()?.max_import_duration_secs,
    )?;
    drop(decode_range);
    progress(0.02, format!("{} with {}", input.name, model.name))?;
    let label = format!("{} with {}", input.name, model.name);
    let mut output = output::OutputFile::new(
        params.format,
        params.effects.clone(),
        &library.store().tmp_dir(),
    )?;
    let outcome = run_engine(
        library,
        engine,
        &model,
        &input,
        audio_16k,
        &params.options,
        models_dir,
        &mut output,
        &mut |f| progress(0.02 + 0.93 * f, label.clone()),
    )?;
    let rendered = outcome.rendered;
    let _range = timbre_nn::profile::range("encode and store");
    let mut recorded = serde_json::to_value(&params.options)?;
    if let (Some(chain), Some(fields)) = (&params.effects, recorded.as_object_mut()) {
        fields.insert("effects".into(), serde_json::to_value(chain)?);
    }
    let file = output.finish(&Tags {
        title: format!("{} ({})", input.name, model.name),
        artist: model.name.clone(),
        comment: recorded.to_string(),
    })?;
    // The last point where a cancellation applies: from here the result is copied out, stored
    // and recorded, the row last, so a failure on the way leaves no conversion behind.
    progress(1.0, format!("{label}: done"))?;
    let copied_to = match &params.out_dir {
        Some(dir) => Some(out_folder::copy_into(
            file.path(),
            dir,
            &out_folder::conversion_stem(&input.name, &model.name),
            params.format.extension(),
        )?),
        None => None,
    };
    let stored = library
        .store()
        .ingest_file(file.path(), params.format.extension())?;
    drop(file);
    let seconds_taken = started.elapsed().as_secs_f64();
    let saved = library.edit(|conn| {
        let earlier = conversions::for_job(conn, job_id)?.into_iter().next();
        let id = conversions::save_for_job(
            conn,
            &NewConversion {
                job_id: Some(job_id),
                model_id: model.id,
                model_name: model.name.clone(),
                input_take_id: input.take_id,
                input_path: Some(input.path.display().to_string()),
                input_sha256: input.sha256.clone(),
                params: recorded,
                sha256: stored.sha256.clone(),
                format: params.format.extension().into(),
                sample_rate: rendered.sample_rate,
                duration_secs: rendered.samples as f64 / f64::from(rendered.sample_rate),
                peak_dbfs: analysis::to_dbfs(rendered.peak) as f64,
                seconds_taken,
            },
        )?;
        Ok((conversions::require(conn, id)?, earlier))
    });
    let (conversion, earlier) = match saved {
        Ok(saved) => saved,
        Err(err) => {
            // Nothing names the result: let it go (what a failed discard leaves, a sweep
            // of the store removes).
            let _ = library.discard(stored);
            return Err(err);
        }
    };
    // An earlier run of this job recorded another result, which its row no longer names.
    if let Some(earlier) =
        earlier.filter(|e| (&e.sha256, &e.format) != (&stored.sha256, &stored.ext))
    {
        library.release_objects(&[ObjectKey::new(earlier.sha256, earlier.format)])?;
    }
    Ok(ConvertResult {
        conversion,
        output_path: copied_to.unwrap_or(stored.path),
        input_seconds: input.seconds,
        seconds: seconds_taken,
        analysis_seconds: outcome.analysis_secs,
        render_seconds: outcome.render_secs,
        analysis_cache: outcome.analysis_cache,
        voice_cache: outcome.voice_cache,
    })
}

/// Converts `input` with `model` into `sink`; a failure names the model's stored files.
#[allow(clippy::too_many_arguments)]
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
