//! The `enhance` job: one input through `timbre_audio::enhance`, saved as a take linked to it.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use timbre_audio::enhance::{EnhanceOptions, EnhanceReport, enhance};

use crate::derived::{Derived, SavedTake, Source};
use crate::input::AudioInput;
use crate::jobs::{JobContext, JobHandler, JobKind};
use crate::output_format::OutputFormat;
use crate::progress::ProgressBridge;

/// The job kind.
pub(crate) const KIND: JobKind = JobKind::Enhance;

/// The params of an `enhance` job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnhanceParams {
    /// The take or file to enhance; a take is never modified, a file becomes a take of its own.
    pub input: AudioInput,
    /// Which steps run and how; absent fields take the training preset's values.
    #[serde(default)]
    pub options: EnhanceOptions,
    /// How the result is encoded in the store; 32-bit float WAV unless given.
    #[serde(default = "super::default_format")]
    pub format: OutputFormat,
    /// Also copy the result into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// What an `enhance` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct EnhanceResult {
    /// Where the input came from.
    pub source: String,
    /// The take the input is (for a file, the take it became), which the result is linked to.
    pub source_take_id: i64,
    /// The saved result: one `enhance` take.
    pub takes: Vec<SavedTake>,
    /// What each enhancement step did (loudness, noise removed, pauses trimmed, …).
    pub report: EnhanceReport,
    /// Steps that had nothing to work on, in plain words, for the user.
    pub notes: Vec<String>,
    /// Wall-clock time the job took, in seconds.
    pub seconds: f64,
}

/// Runs `enhance` jobs: the input decoded and enhanced in memory, saved as a take linked to it.
pub struct EnhanceHandler;

impl JobHandler for EnhanceHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    /// Nothing is saved before the end, so a cut-off run simply runs again.
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: EnhanceParams = ctx.params()?;
        let library = ctx.library();
        let started = Instant::now();
        let (source, audio) = Source::load(library, &params.input)?;
        let report_progress = |f: f64, message: String| ctx.progress(0.95 * f, message);
        let mut bridge = ProgressBridge::new(&report_progress);
        let label = source.name.clone();
        let processed = enhance(audio, &params.options, &mut |f, step| {
            bridge.report(f, format!("{label}: {step}"))
        });
        let (enhanced, report) = match processed {
            Ok(done) => done,
            Err(err) => {
                let source_label = source.label();
                source.discard(library)?;
                return Err(bridge.error(err).context(source_label));
            }
        };
        let result = Derived {
            operation: "enhance",
            name: format!("{} (enhanced)", source.name),
            audio: crate::derived::Output::Audio(enhanced),
        };
        let link_params = json!({ "options": params.options });
        let source_label = source.label();
        let (source_take_id, mut saved) = crate::derived::save(
            library,
            source,
            vec![result],
            &link_params,
            ctx.job_id(),
            params.format,
            || ctx.check_cancelled(),
        )?;
        if let Some(dir) = &params.out_dir {
            crate::derived::copy_out(library, &mut saved, dir)?;
        }
        ctx.progress(1.0, format!("{label}: enhanced"))?;
        Ok(serde_json::to_value(EnhanceResult {
            source: source_label,
            source_take_id,
            takes: saved,
            notes: report.notes.clone(),
            report,
            seconds: started.elapsed().as_secs_f64(),
        })?)
    }
}
