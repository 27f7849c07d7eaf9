//! The `isolate` job: vocals and instrumental from a mix, saved as two takes linked to it. With a
//! RoFormer checkpoint in the models folder (`separation/<name>.ckpt` + `<name>.yaml`) the model
//! separates; without one, the weight-free rough preview (`timbre_audio::isolate`) does, and the
//! result and the take names say so. With `enhance` set, the vocals then go through
//! `timbre_audio::enhance` (the Clean page's isolation + enhancement in one job).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use timbre_audio::enhance::{EnhanceOptions, EnhanceReport, enhance};
use timbre_audio::{AudioBuffer, analysis};

use crate::db::jobs::Lane;
use crate::derived::{Derived, Output, SavedTake, Source};
use crate::input::AudioInput;
use crate::jobs::{JobContext, JobHandler, JobKind, Need, Needs};
use crate::model_cache::ModelCache;
use crate::models_folder::SeparationModel;
use crate::output_format::OutputFormat;
use crate::progress::ProgressBridge;
use crate::separation::{IsolationMethod, Separators, choose_model, separate_audio};

/// The job kind.
pub(crate) const KIND: JobKind = JobKind::Isolate;

/// The params of an `isolate` job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IsolateParams {
    /// The mix to separate, a take or a file; a take is never modified, a file becomes a take.
    pub input: AudioInput,
    /// Which separator to use; `Auto` (the first model found, else the rough preview) when absent.
    #[serde(default)]
    pub method: IsolationMethod,
    /// Separate only this many seconds from the middle of the input, to judge the result
    /// quickly (UVR's sample mode).
    #[serde(default)]
    pub preview_secs: Option<f64>,
    /// Then enhance the vocals with these options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enhance: Option<EnhanceOptions>,
    /// How the results are encoded in the store; 32-bit float WAV unless given.
    #[serde(default = "super::default_format")]
    pub format: OutputFormat,
    /// Also copy the results into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// What an `isolate` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct IsolateResult {
    /// Where the input came from.
    pub source: String,
    /// The take the input is (for a file, the take it became), which both results are linked to.
    pub source_take_id: i64,
    /// The vocals, then the instrumental.
    pub takes: Vec<SavedTake>,
    /// What separated: `Rough` or the `Model` of that name.
    pub method: IsolationMethod,
    /// Whether the weight-free rough preview separated, because no model was chosen or found.
    pub rough_preview: bool,
    /// How the separation was done, in plain words; for the rough preview, how to get a real one.
    pub description: String,
    /// What enhancing the vocals did; None when enhancement was not asked for.
    pub enhance_report: Option<EnhanceReport>,
    /// Things the user should know about the result (mono or silent input, a short input, …).
    pub notes: Vec<String>,
    /// Wall-clock time the job took, in seconds.
    pub seconds: f64,
}

/// Runs `isolate` jobs on the GPU lane, with separation models from the shared model cache.
pub struct IsolateHandler {
    models: Arc<ModelCache>,
}

impl IsolateHandler {
    /// A handler that loads separation models through `models`.
    pub fn new(models: Arc<ModelCache>) -> Self {
        Self { models }
    }
}

impl JobHandler for IsolateHandler {
    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Device],
            optional: &[Need::SeparationModel],
        }
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    /// Separation models run one at a time; the rough preview shares their lane (a job's lane
    /// is fixed by its kind).
    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    /// Nothing is saved before the end, so a cut-off run simply runs again.
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: IsolateParams = ctx.params()?;
        let library = ctx.library();
        let started = Instant::now();
        let settings = library.settings()?;
        self.models.set_budget_mb(settings.model_cache_mb);
        let separators =
            Separators::new(&self.models, crate::devices::Devices::of(&settings)?.main);
        let model = choose_model(&params.method, &crate::models_folder::of(library)?)?;
        let mut notes = Vec::new();
        let share = if params.enhance.is_some() { 0.7 } else { 0.9 };
        let streamed = match (&model, &params.enhance) {
            (Some(model), None) => {
                let report_progress = |f: f64, message: String| ctx.progress(share * f, message);
                let mut bridge = ProgressBridge::new(&report_progress);
                separators.separate_streamed(library, model, &params, &mut bridge, &mut notes)?
            }
            _ => None,
        };
        let (source, vocals, accompaniment, enhance_report) = match streamed {
            Some((source, files)) => (
                source,
                Output::File(files.vocals),
                Output::File(files.instrumental),
                None,
            ),
            None => {
                let (source, vocals, accompaniment, report) =
                    separate_in_memory(ctx, &separators, &params, model.as_ref(), &mut notes)?;
                (
                    source,
                    Output::Audio(vocals),
                    Output::Audio(accompaniment),
                    report,
                )
            }
        };

        let label = source.name.clone();
        let mut qualifiers = Vec::new();
        if model.is_none() {
            qualifiers.push("rough preview".to_string());
        }
        if let Some(secs) = params.preview_secs {
            qualifiers.push(format!("{secs} s sample"));
        }
        let name = |part: &str| {
            let enhanced = params.enhance.is_some() && part == "vocals";
            let all: Vec<&str> = std::iter::once(part)
                .chain(enhanced.then_some("enhanced"))
                .chain(qualifiers.iter().map(String::as_str))
                .collect();
            format!("{} ({})", source.name, all.join(", "))
        };
        let results = vec![
            Derived {
                operation: "isolate_vocals",
                name: name("vocals"),
                audio: vocals,
            },
            Derived {
                operation: "isolate_instrumental",
                name: name("instrumental"),
                audio: accompaniment,
            },
        ];
        let method = match &model {
            Some(model) => IsolationMethod::Model(model.name.clone()),
            None => IsolationMethod::Rough,
        };
        let link_params = json!({
            "method": method,
            "preview_secs": params.preview_secs,
            "enhance": params.enhance,
        });
        let source_label = source.label();
        let (source_take_id, mut saved) = crate::derived::save(
            library,
            source,
            results,
            &link_params,
            ctx.job_id(),
            params.format,
            || ctx.check_cancelled(),
        )?;
        if let Some(dir) = &params.out_dir {
            crate::derived::copy_out(library, &mut saved, dir)?;
        }
        ctx.progress(1.0, format!("{label}: isolated"))?;
        Ok(serde_json::to_value(IsolateResult {
            source: source_label,
            source_take_id,
            takes: saved,
            method,
            rough_preview: model.is_none(),
            description: match &model {
                Some(model) => format!("separated by the model {}", model.name),
                None => "rough preview without a separation model (stereo centre + REPET-SIM); \
                         put a RoFormer .ckpt and .yaml in the models folder's separation/ for \
                         a real separation"
                    .to_string(),
            },
            enhance_report,
            notes,
            seconds: started.elapsed().as_secs_f64(),
        })?)
    }

    fn free_caches(&self) {
        self.models.clear();
    }
}

/// The whole input decoded and separated in memory: the rough preview, and vocals to be
/// enhanced.
fn separate_in_memory(
    ctx: &JobContext,
    separators: &Separators,
    params: &IsolateParams,
    model: Option<&SeparationModel>,
    notes: &mut Vec<String>,
) -> Result<(Source, AudioBuffer, AudioBuffer, Option<EnhanceReport>)> {
    let library = ctx.library();
    let share = if params.enhance.is_some() { 0.7 } else { 0.9 };
    let (source, audio) = Source::load(library, &params.input)?;
    let audio = match params.preview_secs {
        Some(secs) => middle(audio, secs, notes),
        None => audio,
    };
    if model.is_none() && audio.channels.len() == 1 {
        notes.push("mono input: no stereo centre to use, repetition alone separates".into());
    }
    if analysis::peak(&audio) == 0.0 {
        notes.push("the input is silent: so are both results".to_string());
    }
    let report_progress = |f: f64, message: String| ctx.progress(share * f, message);
    let mut bridge = ProgressBridge::new(&report_progress);
    let label = source.name.clone();
    let separated = separate_audio(separators, model, audio, &mut bridge, &label, notes);
    let separated = separated.and_then(|(vocals, accompaniment)| {
        let Some(options) = &params.enhance else {
            return Ok((vocals, accompaniment, None));
        };
        let report_progress = |f: f64, m: String| ctx.progress(share + (0.9 - share) * f, m);
        let mut bridge = ProgressBridge::new(&report_progress);
        let (vocals, report) = enhance(vocals, options, &mut |f, step| {
            bridge.report(f, format!("{label}: {step}"))
        })
        .map_err(|err| bridge.error(err))?;
        notes.extend(report.notes.iter().cloned());
        Ok((vocals, accompaniment, Some(report)))
    });
    match separated {
        Ok((vocals, accompaniment, report)) => Ok((source, vocals, accompaniment, report)),
        Err(err) => {
            let source_label = source.label();
            source.discard(library)?;
            Err(err.context(source_label))
        }
    }
}

/// The middle `secs` of `audio`.
fn middle(mut audio: AudioBuffer, secs: f64, notes: &mut Vec<String>) -> AudioBuffer {
    let wanted = (secs.max(0.0) * f64::from(audio.sample_rate)).round() as usize;
    let frames = audio.frames();
    if wanted >= frames {
        notes.push(format!(
            "the input is only {:.1} s long: all of it was separated",
            audio.duration_secs()
        ));
        return audio;
    }
    let start = (frames - wanted) / 2;
    for channel in &mut audio.channels {
        channel.truncate(start + wanted);
        channel.drain(..start);
    }
    audio
}
