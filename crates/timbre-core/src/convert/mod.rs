//! The `convert` job: one input (a take or a file) through one voice model, the result saved as
//! a conversion in the library (and optionally also written to a folder). Runs on the GPU lane;
//! the engine behind it keeps models and analyses cached between jobs.

mod request;

pub use crate::model_cache::CacheUse;
pub use request::{ConvertRequest, ConvertResult, check, submit};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timbre_audio::analysis;
use timbre_audio::effects::EffectChain;
use timbre_audio::export::Tags;
use timbre_nn::pipeline::ConvertOptions;

use crate::db::conversions::{self, NewConversion};
use crate::db::jobs::Lane;
use crate::db::models;
use crate::input::AudioInput;
use crate::jobs::{JobContext, JobHandler, JobKind, Need, Needs};
use crate::library::Library;
use crate::out_folder;
use crate::output_format::OutputFormat;
use crate::store::ObjectKey;
use crate::voice_engine::{Engine, SharedEngine, load_input, output, run_engine};

/// The job kind.
pub(crate) const KIND: JobKind = JobKind::Convert;

/// One `convert` job: one input through one model.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct ConvertParams {
    /// The take or file to convert.
    pub input: AudioInput,
    /// Id of the voice model in the library's `models` table.
    pub model_id: i64,
    /// The UI sets and reads the voice's part; the offline ones keep their defaults.
    #[serde(default)]
    #[ts(as = "timbre_nn::voice::VoiceParams")]
    pub options: ConvertOptions,
    /// How the result is encoded; 16-bit WAV unless given.
    #[serde(default)]
    pub format: OutputFormat,
    /// Also write the result into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// Absent (not null) when off, so the parameters of a plain conversion are as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub effects: Option<EffectChain>,
}

/// Runs `convert` jobs on the GPU lane through the process's shared voice engine.
pub struct ConvertHandler {
    engine: Arc<SharedEngine>,
}

impl ConvertHandler {
    /// A handler that converts with `engine`, whose caches outlive each job.
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

    fn kind(&self) -> JobKind {
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
