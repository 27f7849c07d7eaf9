//! The `cover` job: a song (a take or a file) through vocal isolation, an optional second
//! separation pass on the vocals, conversion of the vocals with a voice (or none: the original
//! vocals pass through) and a remix with the instrumental, limited so nothing clips. Each stage
//! is cached by the content of its inputs and its parameters (`db::cover_stages`), and its
//! results are takes linked to the song in `derived_takes`, so the stems stay in the library and
//! another voice or transpose reruns only the conversion and the remix.

mod conversion;
mod effects;
mod remix;
mod request;
mod separate;
mod song;
mod stages;
mod voice;

pub use request::{CoverRequest, CoverSettings, check, submit};
pub use stages::{Stage, StageReport, StageStatus};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::jobs::Lane;
use crate::db::takes::Take;
use crate::input::AudioInput;
use crate::jobs::{JobContext, JobHandler, JobKind, Need, Needs};
use crate::out_folder;
use crate::separation::{self, Separators};
use crate::voice_engine::{Engine, SharedEngine};

/// The job kind.
pub(crate) const KIND: JobKind = JobKind::Cover;

/// One `cover` job: one song.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoverParams {
    /// The song to cover, a take or a file; a file becomes a take of its own.
    pub song: AudioInput,
    /// How to cover it; its fields sit at the top level of the params.
    #[serde(flatten)]
    pub settings: CoverSettings,
    /// Also write the cover into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// A stem of the cover, as the job reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Stem {
    /// `vocals`, `instrumental`, `lead`, `backing`, `converted`, `processed` (the converted vocals
    /// after the effects) or `cover`.
    pub role: String,
    /// The stem's take in the library.
    pub take: Take,
}

/// What a `cover` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct CoverResult {
    /// Where the song came from.
    pub song: String,
    /// The song's take (for a file, the take it became), which every stem is linked to.
    pub song_take_id: i64,
    /// The finished cover's take.
    pub cover: Take,
    /// The voice's name; None when the vocals passed through unconverted.
    pub voice: Option<String>,
    /// The cover as a conversion of the song (for the Compare page); None without a voice.
    pub conversion_id: Option<i64>,
    /// Every stem the job made or found cached, the cover last.
    pub stems: Vec<Stem>,
    /// Each stage in order: whether it ran, came from the cache or was skipped.
    pub stages: Vec<StageReport>,
    /// What the listener should know (no vocals found, …).
    pub warnings: Vec<String>,
    /// How the result was made, in plain words (mono song, loudness matched by so many dB, …).
    pub notes: Vec<String>,
    /// The copy in `out_dir`, else the file in the store.
    pub output_path: PathBuf,
    /// Wall-clock time the job took, in seconds.
    pub seconds: f64,
}

/// Runs `cover` jobs on the GPU lane through the process's shared voice engine.
pub struct CoverHandler {
    engine: Arc<SharedEngine>,
}

impl CoverHandler {
    /// A handler that separates and converts with `engine`, whose caches outlive each job.
    pub fn new(engine: Arc<SharedEngine>) -> Self {
        Self { engine }
    }
}

impl JobHandler for CoverHandler {
    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Hubert, Need::Device],
            optional: &[Need::Rmvpe, Need::SeparationModel],
        }
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    /// A cut-off cover runs again, finding the stages it finished in the cache.
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: CoverParams = ctx.params()?;
        let result = self
            .engine
            .run(ctx.library(), |engine| self.cover(ctx, &params, engine))?;
        Ok(serde_json::to_value(result)?)
    }

    fn free_caches(&self) {
        self.engine.free();
    }
}

impl CoverHandler {
    fn cover(
        &self,
        ctx: &JobContext,
        params: &CoverParams,
        engine: &mut Engine,
    ) -> Result<CoverResult> {
        let started = Instant::now();
        let library = ctx.library();
        let settings = &params.settings;
        let models_dir = crate::models_folder::of(library)?;
        let separators = Separators::new(self.engine.models(), engine.device());
        let separation = separation::choose_model(&settings.separation, &models_dir)?;
        let second_pass = match &settings.second_pass {
            Some(name) => Some(separation::choose_second_pass(name, &models_dir)?),
            None => None,
        };
        let song = song::song_take(library, &params.song)?;
        let mut stages = stages::Stages::new(ctx, &song);
        let mut notes = Vec::new();
        let mut warnings = Vec::new();
        let split = separate::isolate(&mut stages, &separators, separation.as_ref(), &mut notes)?;
        if let Some(warning) = separate::no_vocals_warning(&song, &split.vocals) {
            warnings.push(warning);
        }
        let (lead, backing) = match &second_pass {
            Some(model) => {
                let (lead, backing) =
                    separate::second_pass(&mut stages, &separators, model, &split.vocals)?;
                (lead, Some(backing))
            }
            None => {
                stages.skip(Stage::SecondPass, "no second pass chosen")?;
                (split.vocals.clone(), None)
            }
        };
        let converted = voice::convert(
            &mut stages,
            engine,
            settings.model_id,
            &settings.options,
            &models_dir,
            &lead,
        )?;
        let processed = effects::apply(&mut stages, settings.effects.as_ref(), &converted.take)?;
        let cover = remix::remix(
            &mut stages,
            &remix::Mix {
                original_vocals: &lead,
                converted: &processed,
                instrumental: &split.instrumental,
                backing: backing.as_ref(),
                settings,
                voice_name: converted.voice.as_deref(),
            },
            &mut notes,
        )?;
        let output_path = match &params.out_dir {
            Some(dir) => out_folder::copy_into(
                &library.take_path(&cover),
                dir,
                &out_folder::conversion_stem(
                    &song.name,
                    &format!(
                        "cover, {}",
                        converted.voice.as_deref().unwrap_or("original vocals")
                    ),
                ),
                settings.format.extension(),
            )?,
            None => library.take_path(&cover),
        };
        let conversion_id = match (settings.model_id, &converted.voice) {
            (Some(model_id), Some(name)) => Some(conversion::record(
                library,
                ctx.job_id(),
                &song,
                &cover,
                (model_id, name),
                settings,
                started.elapsed().as_secs_f64(),
            )?),
            _ => None,
        };
        let mut stems = vec![
            stem("vocals", &split.vocals),
            stem("instrumental", &split.instrumental),
        ];
        if let Some(backing) = &backing {
            stems.push(stem("lead", &lead));
            stems.push(stem("backing", backing));
        }
        if converted.voice.is_some() {
            stems.push(stem("converted", &converted.take));
        }
        if processed.id != converted.take.id {
            stems.push(stem("processed", &processed));
        }
        stems.push(stem("cover", &cover));
        ctx.progress(1.0, format!("{}: cover done", song.name))?;
        Ok(CoverResult {
            song: song::label(&params.song, &song),
            song_take_id: song.id,
            cover,
            voice: converted.voice,
            conversion_id,
            stems,
            stages: stages.into_reports(),
            warnings,
            notes,
            output_path,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

fn stem(role: &str, take: &Take) -> Stem {
    Stem {
        role: role.into(),
        take: take.clone(),
    }
}
