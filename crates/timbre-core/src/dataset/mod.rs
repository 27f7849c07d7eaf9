//! The `dataset` job: takes and files prepared for training as RVC does it, in three stages:
//! slicing (`timbre_audio::dataset::DatasetPreparer`, one input at a time, after an optional
//! enhancement preset), pitch and HuBERT features of each piece. Features come from a persistent
//! cache keyed by the piece's content, the extractor weights and the parameters, so preparing
//! the same audio again (or resuming a cut-off job) computes nothing it already has. The result
//! is `<data dir>/datasets/<id>/` (`dataset_layout`) and the `datasets` row with the report.

pub mod features;
pub mod held_out;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timbre_audio::dataset::{DatasetPreparer, DatasetReport, PrepareConfig};
use timbre_audio::enhance::Preset;
use timbre_audio::{AudioBuffer, DecodeOptions};
use timbre_nn::hubert::{Embedder, FeatureVersion};
use timbre_nn::pipeline::F0Method;

use crate::dataset_layout::{Layout, Manifest, ManifestPiece};
use crate::db::datasets::{self, Dataset, Prepared};
use crate::db::jobs::{Job, Lane};
use crate::input::{self, AudioInput};
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem, Need, Needs};
use crate::library::Library;
use crate::model_cache::ModelCache;
use crate::models_folder::SeparationModel;
use crate::progress::ProgressBridge;
use crate::separation::{self, IsolationMethod, Separators};
use crate::settings::Settings;
use features::{ExtractorFiles, Extractors, FeatureCache};

/// The model rates RVC trains at.
pub const SAMPLE_RATES: [u32; 3] = [32_000, 40_000, 48_000];

/// The job kind.
const KIND: JobKind = JobKind::Dataset;

/// RVC's model generation, which decides the HuBERT features a dataset holds; v2 by default.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum ModelVersion {
    /// 256-dimensional features (`final_proj` of HuBERT's layer 9).
    V1,
    /// 768-dimensional features (HuBERT's last layer).
    #[default]
    V2,
}

impl ModelVersion {
    /// The content features this model generation trains on, of `embedder`: v2 its last
    /// layer; v1 RVC's layer 9 of contentvec, Applio's last layer of the others.
    pub fn features(self, embedder: Embedder) -> FeatureVersion {
        let width = match self {
            ModelVersion::V1 => 256,
            ModelVersion::V2 => 768,
        };
        embedder.feature_version(width)
    }

    /// `v1` or `v2`, as the manifest and the params write it.
    pub fn name(self) -> &'static str {
        match self {
            ModelVersion::V1 => "v1",
            ModelVersion::V2 => "v2",
        }
    }
}

/// A preparation, as the CLI and the app ask for it and as its job runs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct PrepareRequest {
    /// The dataset, by name: created when new, prepared again when it exists.
    pub name: String,
    /// The voice the dataset belongs to; None leaves an existing dataset's voice as it is.
    #[serde(default)]
    pub voice_id: Option<i64>,
    /// The takes and files to slice, in order; at least one.
    pub inputs: Vec<AudioInput>,
    /// The model rate to prepare at, in Hz: 32000, 40000 or 48000; 40000 when absent.
    #[serde(default = "default_rate")]
    pub sample_rate: u32,
    /// Which features to extract; v2 when absent.
    #[serde(default)]
    pub version: ModelVersion,
    /// The content encoder whose features the dataset holds, and so the one the voice trained
    /// on it converts with: contentvec when absent, else one of Applio's from its folder
    /// (`embedders/<name>/` of the models folder); not `custom`.
    #[serde(default)]
    pub embedder: Embedder,
    /// None: a dataset for a model without pitch.
    #[serde(default = "default_f0")]
    pub f0_method: Option<F0Method>,
    /// Vocal isolation of each input first (its vocals are the dataset), before enhancement.
    #[serde(default)]
    pub isolate: Option<IsolationMethod>,
    /// Enhancement applied to each input before slicing.
    #[serde(default)]
    pub enhance: Option<Preset>,
}

fn default_rate() -> u32 {
    40_000
}

fn default_f0() -> Option<F0Method> {
    Some(F0Method::Rmvpe)
}

/// Runs `dataset` jobs on the GPU lane, on the extraction device.
pub struct DatasetHandler {
    extractors: Mutex<Extractors>,
}

impl DatasetHandler {
    /// A handler whose extractors load through the shared `models` cache.
    pub fn new(models: Arc<ModelCache>) -> Self {
        Self {
            extractors: Mutex::new(Extractors::new(models)),
        }
    }
}

impl JobHandler for DatasetHandler {
    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Hubert, Need::Device],
            optional: &[Need::Rmvpe],
        }
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    /// HuBERT (and RMVPE) run here, as in a conversion.
    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    fn runs_on_extraction_device(&self) -> bool {
        true
    }

    /// A device that is not there is not apart: the jobs that use it fail, naming the setting.
    fn extraction_device_apart(&self, settings: &Settings) -> bool {
        crate::devices::Devices::of(settings).is_ok_and(|devices| devices.split())
    }

    /// A cut-off preparation runs again and finds the pieces it finished in the cache.
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: PrepareRequest = ctx.params()?;
        let mut extractors = self.extractors.lock().unwrap_or_else(|p| p.into_inner());
        let result = prepare(ctx.library(), &mut extractors, &params, &|f, message| {
            ctx.progress(f, message)
        })?;
        Ok(serde_json::to_value(result)?)
    }

    fn free_caches(&self) {
        self.extractors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .models()
            .clear();
    }
}

/// What a `dataset` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PrepareResult {
    /// The dataset's row, as prepared.
    pub dataset: Dataset,
    /// The dataset folder, `<data dir>/datasets/<id>/`.
    pub folder: PathBuf,
    /// Number of pieces in the manifest.
    pub pieces: usize,
    /// Total length of the pieces in seconds.
    pub total_seconds: f64,
    /// Width of each feature frame: 256 for v1, 768 for v2.
    pub feature_dim: i64,
    /// Pieces whose features were computed, and those found in the cache.
    pub computed: usize,
    /// Pieces whose features came from the cache.
    pub cached: usize,
    /// What slicing found: lengths, dropped pieces, clipping, pitch range, problems.
    pub report: DatasetReport,
    /// Wall-clock time the job took, in seconds.
    pub seconds: f64,
}

/// Checks the request (rate, name, inputs, the separation model) and queues its job.
pub fn submit(system: &JobSystem, request: PrepareRequest) -> Result<Job> {
    check(&request)?;
    let library = system.library();
    if let Some(method) = &request.isolate {
        separation::choose_model(method, &crate::models_folder::of(library)?)?;
    }
    input::check_all(library, &request.inputs)?;
    let inputs = request
        .inputs
        .into_iter()
        .map(AudioInput::absolute)
        .collect::<Result<_>>()?;
    let request = PrepareRequest { inputs, ..request };
    system.submit(KIND, serde_json::to_value(&request)?)
}

/// Deletes a dataset: its row, its take links and its folder (cached features stay).
pub fn delete(library: &Library, id: i64) -> Result<Dataset> {
    let dataset = library.edit(|conn| datasets::delete(conn, id))?;
    Layout::new(library.data_dir(), id).remove()?;
    Ok(dataset)
}

/// One piece as sliced: where its files are and the key of its features.
struct Sliced {
    entry: ManifestPiece,
    key: String,
}

/// Prepares (or prepares again) the dataset `params` names, a request `submit` checked.
/// `progress` may cancel.
pub fn prepare(
    library: &Library,
    extractors: &mut Extractors,
    params: &PrepareRequest,
    progress: &dyn Fn(f64, String) -> Result<()>,
) -> Result<PrepareResult> {
    let started = Instant::now();
    let settings = library.settings()?;
    extractors.use_device(crate::devices::Devices::of(&settings)?.extraction);
    extractors.models().set_budget_mb(settings.model_cache_mb);
    let models_dir = crate::models_folder::of(library)?;
    let files = extractors.files(&models_dir, params.f0_method, params.embedder)?;
    let isolation = params
        .isolate
        .as_ref()
        .map(|method| separation::choose_model(method, &models_dir))
        .transpose()?;
    let dataset = library.edit(|conn| datasets::ensure(conn, &params.name, params.voice_id))?;
    let layout = Layout::new(library.data_dir(), dataset.id);
    library.edit(|conn| datasets::set_status(conn, dataset.id, datasets::PREPARING))?;
    let stages = Stages {
        files: &files,
        isolation: isolation.as_ref().map(Option::as_ref),
        layout: &layout,
    };
    let outcome = run(library, extractors, params, &stages, progress);
    if outcome.is_err() {
        let status = match layout.read_manifest() {
            Some(_) if dataset.status == datasets::READY => datasets::READY,
            _ => datasets::FAILED,
        };
        library.edit(|conn| datasets::set_status(conn, dataset.id, status))?;
    }
    let Done {
        manifest,
        report,
        take_ids,
        computed,
        cached,
    } = outcome?;
    let total_secs = manifest.audio_seconds(Some(report.sliced_seconds));
    let prepared = library.edit(|conn| {
        datasets::set_prepared(
            conn,
            dataset.id,
            &Prepared {
                params: &serde_json::to_value(params)?,
                report: &serde_json::to_value(&report)?,
                piece_count: manifest.pieces.len(),
                total_secs,
                take_ids: &take_ids,
            },
        )
    })?;
    progress(
        1.0,
        format!("{}: {} pieces", params.name, manifest.pieces.len()),
    )?;
    Ok(PrepareResult {
        dataset: prepared,
        folder: layout.root().to_path_buf(),
        pieces: manifest.pieces.len(),
        total_seconds: total_secs,
        feature_dim: manifest.feature_dim,
        computed,
        cached,
        report,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn check(params: &PrepareRequest) -> Result<()> {
    let invalid = |m: String| Err(crate::error::invalid_input(m));
    if params.name.trim().is_empty() {
        return invalid("a dataset needs a name".into());
    }
    if !SAMPLE_RATES.contains(&params.sample_rate) {
        return invalid(format!(
            "cannot prepare a dataset at {} Hz: use 32000, 40000 or 48000",
            params.sample_rate
        ));
    }
    if params.inputs.is_empty() {
        return invalid("a dataset needs at least one take or file".into());
    }
    Ok(())
}

/// What the stages produced: the committed manifest, the report, the takes used, and how many
/// pieces had their features computed and how many came from the cache.
struct Done {
    manifest: Manifest,
    report: DatasetReport,
    take_ids: Vec<i64>,
    computed: usize,
    cached: usize,
}

/// What the stages work with, settled before they start.
struct Stages<'a> {
    files: &'a ExtractorFiles,
    /// `Some(None)`: the rough isolation; `Some(model)`: that model; `None`: no isolation.
    isolation: Option<Option<&'a SeparationModel>>,
    layout: &'a Layout,
}

fn run(
    library: &Library,
    extractors: &mut Extractors,
    params: &PrepareRequest,
    stages: &Stages<'_>,
    progress: &dyn Fn(f64, String) -> Result<()>,
) -> Result<Done> {
    let (files, layout) = (stages.files, stages.layout);
    layout.create()?;
    let (sliced, mut report, take_ids) =
        slice(library, params, stages, &extractors.separators()?, progress)?;
    let cache = FeatureCache::new(&library.data_dir().join("cache"));
    let mut seen = HashSet::new();
    let todo: Vec<&Sliced> = sliced
        .iter()
        .filter(|p| !cache.contains(&p.key) && seen.insert(p.key.as_str()))
        .collect();
    let (computed, cached) = (todo.len(), sliced.len() - todo.len());
    let read_16k = |piece: &Sliced| -> Result<Vec<f32>> {
        let decoded = timbre_audio::decode_file(
            &layout.path(&piece.entry.wav_16k),
            &DecodeOptions::default(),
        )?;
        Ok(decoded.channels.into_iter().next().unwrap_or_default())
    };
    let mut f0s = Vec::with_capacity(todo.len());
    if let Some(method) = params.f0_method
        && !todo.is_empty()
    {
        let model = extractors.pitch_model(files, method)?;
        let model = model.as_ref().map(|m| m.lock());
        let tracker = crate::pitch::tracker(method, model.as_ref())?;
        for (i, piece) in todo.iter().enumerate() {
            progress(
                0.3 + 0.2 * i as f64 / todo.len() as f64,
                format!("pitch {}/{}", i + 1, todo.len()),
            )?;
            f0s.push(Some(features::pitch(&tracker, &read_16k(piece)?)?));
        }
    }
    f0s.resize(todo.len(), None);
    let version = params.version.features(params.embedder);
    let hubert = match todo.is_empty() {
        true => None,
        false => Some(extractors.hubert(files)?),
    };
    let hubert = hubert.as_ref().map(|h| h.lock());
    for (i, (piece, f0)) in todo.iter().zip(&f0s).enumerate() {
        progress(
            0.5 + 0.45 * i as f64 / todo.len() as f64,
            format!("features {}/{}", i + 1, todo.len()),
        )?;
        let hubert = hubert.as_deref().context("HuBERT is not loaded")?;
        let feats = hubert.features_of(&read_16k(piece)?, version)?;
        cache.store(&piece.key, &feats, f0.as_deref())?;
    }
    drop(todo);
    progress(0.96, "writing the dataset".into())?;
    let mut pieces = Vec::with_capacity(sliced.len());
    let mut feature_dim = 0;
    for mut piece in sliced {
        let cached_file = cache.path(&piece.key);
        layout.add_features(&piece.entry.features, &cached_file)?;
        let (shape, f0_frames) = features::read_shapes(&cached_file)?;
        feature_dim = shape.get(1).copied().unwrap_or(0);
        piece.entry.feature_frames = shape.first().copied().unwrap_or(0);
        piece.entry.f0_frames = f0_frames;
        pieces.push(piece.entry);
    }
    let (pieces, held_out, held_out_report) = held_out::split(pieces, report.sliced_seconds);
    report.held_out = held_out_report;
    let manifest = Manifest {
        sample_rate: params.sample_rate,
        version: params.version.name().into(),
        f0_method: params.f0_method.map(|m| m.name().into()),
        embedder: params.embedder,
        feature_dim,
        pieces,
        held_out,
    };
    layout.commit(&manifest)?;
    Ok(Done {
        manifest,
        report,
        take_ids,
        computed,
        cached,
    })
}

/// The slicing stage: every input decoded (and enhanced), cut into pieces whose two WAVs are
/// written as they come; gives the pieces, the report and the takes used.
fn slice(
    library: &Library,
    params: &PrepareRequest,
    stages: &Stages<'_>,
    separators: &Separators,
    progress: &dyn Fn(f64, String) -> Result<()>,
) -> Result<(Vec<Sliced>, DatasetReport, Vec<i64>)> {
    let (files, layout) = (stages.files, stages.layout);
    let mut preparer = DatasetPreparer::new(params.sample_rate, &PrepareConfig::default())?;
    let max_duration_secs = Some(library.settings()?.max_import_duration_secs);
    let mut sliced: Vec<Sliced> = Vec::new();
    let mut names = HashSet::new();
    let mut take_ids = Vec::new();
    let count = params.inputs.len() as f64;
    for (i, input) in params.inputs.iter().enumerate() {
        let resolved = input.resolve(library)?;
        take_ids.extend(resolved.take.as_ref().map(|take| take.id));
        let (label, path) = (resolved.label(), resolved.path);
        let at = 0.3 * i as f64 / count;
        progress(at, format!("slicing {label}"))?;
        let decoded = timbre_audio::decode_file(&path, &DecodeOptions { max_duration_secs })?;
        let share = 0.3 / count;
        let decoded = match stages.isolation {
            Some(model) => {
                let report = |f, m| progress(at + share * 0.4 * f, m);
                let mut bridge = ProgressBridge::new(&report);
                let mut notes = Vec::new();
                let separated = separation::separate_audio(
                    separators,
                    model,
                    decoded,
                    &mut bridge,
                    &label,
                    &mut notes,
                )?;
                separated.0
            }
            None => decoded,
        };
        let audio = match params.enhance {
            Some(preset) => enhanced(decoded, preset, &label, &|f, m| {
                progress(at + share * (0.4 + 0.4 * f), m)
            })?,
            None => decoded,
        };
        let mono = audio.to_mono();
        drop(audio);
        let samples = mono.channels.first().map_or(&[][..], |c| &c[..]);
        let pieces = preparer.add_file(&label, samples, mono.sample_rate)?;
        if pieces.is_empty() {
            return Err(crate::error::invalid_input(format!(
                "{label}: silence only: nothing above the slicer's -42 dB threshold to train on"
            )));
        }
        for piece in pieces {
            let name = features::samples_sha256(&piece.audio_target_sr)[..24].to_string();
            // The same audio twice (a take given twice) is one piece.
            if !names.insert(name.clone()) {
                continue;
            }
            let entry = ManifestPiece {
                gt_wav: Layout::gt_wav(&name),
                wav_16k: Layout::wav_16k(&name),
                features: String::new(),
                source: label.clone(),
                index: piece.index,
                seconds: piece.audio_target_sr.len() as f64 / f64::from(params.sample_rate),
                feature_frames: 0,
                f0_frames: None,
            };
            layout.write_wav(&entry.gt_wav, &piece.audio_target_sr, params.sample_rate)?;
            layout.write_wav(
                &entry.wav_16k,
                &piece.audio_16k,
                timbre_audio::dataset::FEATURE_RATE,
            )?;
            let key = features::cache_key(
                &features::samples_sha256(&piece.audio_16k),
                files,
                params.version.features(params.embedder),
                params.f0_method,
            );
            let entry = ManifestPiece {
                features: Layout::features(&key),
                ..entry
            };
            sliced.push(Sliced { entry, key });
        }
    }
    Ok((sliced, preparer.finish(), take_ids))
}

/// The enhancement preset over one input, through the enhance job's own functions.
fn enhanced(
    audio: AudioBuffer,
    preset: Preset,
    label: &str,
    progress: &dyn Fn(f64, String) -> Result<()>,
) -> Result<AudioBuffer> {
    let mut bridge = ProgressBridge::new(progress);
    match timbre_audio::enhance::enhance(audio, &preset.options(), &mut |f, step| {
        bridge.report(f, format!("enhancing {label}: {step}"))
    }) {
        Ok((audio, _)) => Ok(audio),
        Err(err) => Err(bridge.error(err).context(label.to_string())),
    }
}
