//! Starting, stopping and resuming trainings: what the CLI and the app ask for, checked before a
//! `train` job is queued, so mistakes show at once rather than when the GPU lane gets to them.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_nn::hubert::Embedder;
use timbre_nn::synthesizer::check_generator_checkpoint;
use timbre_nn::train::config::{ModelConfig, TrainingConfig};

use super::pretrained::{Pretrained, PretrainedFiles};
use crate::dataset_layout::{MIN_TRAINING_SECONDS, Manifest};
use crate::db::datasets::{self, Dataset};
use crate::db::jobs::{self as job_rows, JobState};
use crate::db::trainings::{self, Training};
use crate::jobs::{JobKind, JobSystem};
use crate::library::Library;

/// The job kind.
pub const KIND: JobKind = JobKind::Train;

/// What a queued `train` job carries: the training row it runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrainParams {
    /// Id of the `trainings` row.
    pub training_id: i64,
}

/// Less than this trains, with a warning: ten minutes or more give a good model.
pub const ADVISED_SECONDS: f64 = 600.0;

/// A training as the CLI and the app ask for it; every field but `dataset_id` has a default.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct TrainRequest {
    /// The dataset to train on; it must be prepared.
    pub dataset_id: i64,
    /// The model's name; the dataset's by default.
    #[serde(default)]
    pub name: Option<String>,
    /// Epochs to train in all (at least 1).
    #[serde(default = "default_epochs")]
    pub epochs: i64,
    /// A checkpoint every this many epochs (and at the end).
    #[serde(default = "default_save_every")]
    pub save_every: i64,
    /// Checkpoint pairs kept.
    #[serde(default = "default_keep")]
    pub keep_checkpoints: i64,
    /// None: from the GPU's free memory, 4 on the CPU.
    #[serde(default)]
    pub batch_size: Option<i64>,
    /// Where the starting weights come from; RVC's base models, when found, by default.
    #[serde(default)]
    pub pretrained: Pretrained,
    /// A preview every this many epochs (and at the end); `save_every` by default.
    #[serde(default)]
    pub preview_every: Option<i64>,
    /// Stop when the judge's recommended checkpoint has not changed for this many saves (at
    /// least 1), and make the recommended checkpoint the model; None (the default) trains
    /// every epoch asked for.
    #[serde(default)]
    pub patience_saves: Option<i64>,
    /// Takes or files of another speaker (the user's own voice, say) that the checkpoint judge
    /// converts with every checkpoint, for `source_similarity`; none by default.
    #[serde(default)]
    pub judge_sources: Vec<crate::input::AudioInput>,
    /// The devices to train on together (`cuda:0`, `cuda:1`, …), one worker process each; none:
    /// the `device` setting's.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Another model than RVC's (tests train tiny ones): its generator's `sr` and
    /// `spec_channels` must be the dataset's, its upsampling one hop per frame; the training
    /// slice is its `segment_size` frames. Not offered in the app or the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(skip)]
    pub model_config: Option<ModelConfig>,
}

fn default_epochs() -> i64 {
    TrainRequest::DEFAULT_EPOCHS
}

fn default_save_every() -> i64 {
    TrainRequest::DEFAULT_SAVE_EVERY
}

fn default_keep() -> i64 {
    TrainRequest::DEFAULT_KEEP_CHECKPOINTS
}

impl TrainRequest {
    /// RVC's usual run.
    pub const DEFAULT_EPOCHS: i64 = 200;
    /// Epochs between checkpoints by default.
    pub const DEFAULT_SAVE_EVERY: i64 = 10;
    /// Checkpoint pairs kept by default.
    pub const DEFAULT_KEEP_CHECKPOINTS: i64 = 3;

    /// A request for `dataset_id` with every default.
    pub fn new(dataset_id: i64) -> Self {
        serde_json::from_value(serde_json::json!({ "dataset_id": dataset_id }))
            .expect("every other field has a default")
    }

    /// Epochs between previews: `preview_every`, else `save_every`.
    pub fn preview_every(&self) -> i64 {
        self.preview_every.unwrap_or(self.save_every)
    }
}

/// A training's `params`: the request and what the dataset fixed when it started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrainingPlan {
    /// The request as started, its `name` filled in.
    #[serde(flatten)]
    pub request: TrainRequest,
    /// The RVC version of the dataset, and so of the model: `v1` or `v2`.
    pub version: String,
    /// The dataset's and the model's sample rate, in Hz.
    pub sample_rate: u32,
    /// Whether the dataset has pitch, and so the model is trained with it.
    pub f0: bool,
    /// The content encoder of the dataset's features (contentvec for plans made before it was
    /// recorded), written into the exported model.
    #[serde(default)]
    pub embedder: Embedder,
}

impl TrainingPlan {
    /// The pretrained bases this plan loads, found in the library's models folder.
    pub fn pretrained_files(&self, library: &Library) -> Result<PretrainedFiles> {
        let models_dir = crate::models_folder::of(library)?;
        self.request
            .pretrained
            .resolve(&models_dir, &self.version, self.sample_rate, self.f0)
    }

    fn of(request: TrainRequest, manifest: &Manifest) -> Self {
        Self {
            request,
            version: manifest.version.clone(),
            sample_rate: manifest.sample_rate,
            f0: manifest.f0_method.is_some(),
            embedder: manifest.embedder,
        }
    }

    /// RVC's configuration for this model, with the request's generator when it has one.
    pub fn config(&self) -> Result<TrainingConfig> {
        let mut config = TrainingConfig::rvc(&self.version, self.sample_rate)?;
        config.embedder = self.embedder;
        match &self.request.model_config {
            Some(model) => config
                .with_model(model.clone())
                .map_err(|e| crate::error::invalid_input(format!("model_config: {e:#}"))),
            None => Ok(config),
        }
    }

    /// The features a model of this version takes.
    pub fn feature_dim(&self) -> i64 {
        if self.version == "v1" { 256 } else { 768 }
    }

    /// The dataset still as it was when the training started (it may have been prepared
    /// again since, at another rate or version).
    pub fn check_dataset(&self, dataset: &Dataset, manifest: &Manifest) -> Result<()> {
        let f0 = manifest.f0_method.is_some();
        if (manifest.version.as_str(), manifest.sample_rate, f0)
            != (self.version.as_str(), self.sample_rate, self.f0)
        {
            return Err(crate::error::invalid_input(format!(
                "dataset {} \"{}\" was prepared again as a {} {} Hz dataset {} pitch; this \
                 training is of a {} {} Hz model {} pitch: start a new training",
                dataset.id,
                dataset.name,
                manifest.version,
                manifest.sample_rate,
                if f0 { "with" } else { "without" },
                self.version,
                self.sample_rate,
                if self.f0 { "with" } else { "without" },
            )));
        }
        if manifest.feature_dim != self.feature_dim() {
            return Err(crate::error::invalid_input(format!(
                "dataset {} \"{}\" holds {}-d features but a {} model takes {}-d ones: \
                 prepare it again with RVC's HuBERT (hubert_base.pt)",
                dataset.id,
                dataset.name,
                manifest.feature_dim,
                self.version,
                self.feature_dim()
            )));
        }
        Ok(())
    }
}

/// The dataset, prepared, and its manifest; errors say what to do.
pub fn ready_dataset(library: &Library, dataset_id: i64) -> Result<(Dataset, Manifest)> {
    let dataset = datasets::require(&library.conn(), dataset_id)?;
    if dataset.status != datasets::READY {
        return Err(crate::error::invalid_input(format!(
            "dataset {} \"{}\" is {}: prepare it first (timbre dataset prepare)",
            dataset.id, dataset.name, dataset.status
        )));
    }
    let manifest =
        crate::dataset_layout::manifest(library.data_dir(), dataset.id).with_context(|| {
            format!(
                "dataset {} \"{}\": its folder has no readable manifest",
                dataset.id, dataset.name
            )
        })?;
    Ok((dataset, manifest))
}

/// Refuses less than a minute of audio; `Some(warning)` under ten minutes.
pub fn check_amount(dataset: &Dataset, manifest: &Manifest) -> Result<Option<String>> {
    let sliced = dataset
        .report
        .as_ref()
        .and_then(|r| r["sliced_seconds"].as_f64());
    let seconds = manifest.audio_seconds(sliced);
    let minutes = |s: f64| format!("{}:{:02}", (s / 60.0).floor(), (s % 60.0).floor());
    if seconds < MIN_TRAINING_SECONDS {
        return Err(crate::error::invalid_input(format!(
            "dataset {} \"{}\" holds {} of audio; training needs at least {} (ten minutes or \
             more for a good model)",
            dataset.id,
            dataset.name,
            minutes(seconds),
            minutes(MIN_TRAINING_SECONDS)
        )));
    }
    Ok((seconds < ADVISED_SECONDS).then(|| {
        format!(
            "only {} of audio: the model will be rough; ten minutes or more give a good one",
            minutes(seconds)
        )
    }))
}

/// `TIMBRE_TRAIN_MODEL_CONFIG`: a JSON model config (a [`ModelConfig`]) for every training
/// whose request names none. The GUI's end-to-end test trains a tiny model through the app this
/// way; nothing else sets it.
fn model_from_env() -> Result<Option<ModelConfig>> {
    let Some(path) = std::env::var_os("TIMBRE_TRAIN_MODEL_CONFIG") else {
        return Ok(None);
    };
    let path = std::path::PathBuf::from(path);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        crate::error::invalid_input(format!(
            "TIMBRE_TRAIN_MODEL_CONFIG: reading {}: {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        crate::error::invalid_input(format!(
            "TIMBRE_TRAIN_MODEL_CONFIG: {} is not a model config: {e}",
            path.display()
        ))
    })
}

/// Creates a training and queues its job. The request is checked first (a pretrained
/// generator of another kind is refused as the trainer would refuse it), then the amount of
/// audio.
pub fn start_training(system: &JobSystem, mut request: TrainRequest) -> Result<Training> {
    let library = system.library();
    if request.model_config.is_none() {
        request.model_config = model_from_env()?;
    }
    check_numbers(&request)?;
    super::ranks::training_devices(&request.devices)?;
    crate::input::check_all(library, &request.judge_sources)?;
    request.judge_sources = std::mem::take(&mut request.judge_sources)
        .into_iter()
        .map(crate::input::AudioInput::absolute)
        .collect::<Result<_>>()?;
    let (dataset, manifest) = ready_dataset(library, request.dataset_id)?;
    let name = request
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(&dataset.name)
        .to_string();
    let plan = TrainingPlan::of(
        TrainRequest {
            name: Some(name.clone()),
            ..request
        },
        &manifest,
    );
    plan.check_dataset(&dataset, &manifest)?;
    plan.config()?;
    let pretrained = plan.pretrained_files(library)?;
    if let Some(generator) = &pretrained.generator {
        check_generator_checkpoint(generator, &plan.version, plan.sample_rate, plan.f0)
            .map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
    }
    check_amount(&dataset, &manifest)?;
    let training = library.edit(|conn| {
        trainings::insert(
            conn,
            &name,
            dataset.id,
            &serde_json::to_value(&plan)?,
            plan.request.epochs,
            plan.request.batch_size,
        )
    })?;
    queue(system, training.id)
}

fn check_numbers(request: &TrainRequest) -> Result<()> {
    let at_least_one = [
        ("epochs", Some(request.epochs)),
        ("save_every", Some(request.save_every)),
        ("keep_checkpoints", Some(request.keep_checkpoints)),
        ("batch_size", request.batch_size),
        ("preview_every", request.preview_every),
        ("patience_saves", request.patience_saves),
    ];
    for (name, value) in at_least_one {
        if value.is_some_and(|v| v < 1) {
            return Err(crate::error::invalid_input(format!(
                "{name} must be at least 1, not {}",
                value.unwrap_or_default()
            )));
        }
    }
    Ok(())
}

fn queue(system: &JobSystem, training_id: i64) -> Result<Training> {
    let job = system.submit(KIND, serde_json::to_value(TrainParams { training_id })?)?;
    system
        .library()
        .edit(|conn| trainings::set_queued(conn, training_id, job.id))
}

/// Stops a queued or running training; a running one saves a checkpoint first, so `resume`
/// continues from where it stopped.
pub fn stop_training(system: &JobSystem, id: i64) -> Result<Training> {
    let library = system.library();
    let training = trainings::require(&library.conn(), id)?;
    let job_id = match (training.status.as_str(), training.job_id) {
        (trainings::QUEUED | trainings::RUNNING, Some(job_id)) => job_id,
        (status, _) => {
            return Err(crate::error::invalid_input(format!(
                "training {id} is {status}: there is nothing to stop"
            )));
        }
    };
    if system.cancel(job_id)?.state == JobState::Cancelled {
        library.edit(|conn| trainings::set_ended(conn, id, trainings::STOPPED, None))?;
    }
    trainings::require(&library.conn(), id)
}

/// Queues a stopped or failed training again, or lets the workers take one whose job waits
/// after the app stopped while it ran; either continues from its last checkpoint.
pub fn resume_training(system: &JobSystem, id: i64) -> Result<Training> {
    let library = system.library();
    let training = trainings::require(&library.conn(), id)?;
    let job = training
        .job_id
        .map(|job_id| job_rows::require(&library.conn(), job_id))
        .transpose()?;
    match (training.status.as_str(), job) {
        (trainings::STOPPED | trainings::FAILED, _) => queue(system, id),
        (trainings::DONE, _) => Err(crate::error::invalid_input(format!(
            "training {id} is done and its model is in the library: start a new training to \
             train another"
        ))),
        (_, Some(job)) if job.state == JobState::Queued && job.recovered => {
            system.resume(job.id)?;
            trainings::require(&library.conn(), id)
        }
        (_, Some(job)) if job.state == JobState::Queued => {
            Err(crate::error::invalid_input(format!(
                "training {id} is already queued (job {}): it starts when a worker is free \
                 (the app's, or `timbre jobs run`)",
                job.id
            )))
        }
        (status, Some(job)) => Err(crate::error::invalid_input(format!(
            "training {id} is {status} (job {}, in another process): \
             `timbre train stop {id}` stops it",
            job.id
        ))),
        (status, None) => Err(crate::error::invalid_input(format!(
            "training {id} is {status} and has no job to resume"
        ))),
    }
}

/// The plan a training row holds.
pub fn plan_of(training: &Training) -> Result<TrainingPlan> {
    serde_json::from_value(training.params.clone()).map_err(|e| {
        crate::error::invalid_input(format!(
            "training {} has invalid parameters: {e}",
            training.id
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_training_waiting_after_a_crash_resumes_and_others_say_where_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let library = std::sync::Arc::new(Library::open(dir.path()).unwrap());
        let system = JobSystem::new(
            library.clone(),
            crate::handlers::job_handlers(&Default::default()),
        );
        let system = system.unwrap();
        let training = library.edit(|conn| {
            let dataset = datasets::ensure(conn, "Set", None)?;
            trainings::insert(conn, "Alto", dataset.id, &serde_json::json!({}), 3, None)
        });
        let id = training.unwrap().id;
        let job_id = queue(&system, id).unwrap().job_id.unwrap();
        let queued = resume_training(&system, id).unwrap_err().to_string();
        assert!(queued.contains("already queued (job "), "{queued}");
        // The process running it dies: the job waits to be resumed or dropped.
        let conn = library.conn();
        job_rows::claim(&conn, job_rows::Claim::Id(job_id), "dead").unwrap();
        job_rows::recover_from_dead_worker(&conn, "dead", &|_| true).unwrap();
        drop(conn);
        assert_eq!(system.waiting_after_crash().unwrap().len(), 1);
        let resumed = resume_training(&system, id).unwrap();
        assert_eq!(
            (resumed.status.as_str(), resumed.job_id),
            ("queued", Some(job_id))
        );
        assert!(system.waiting_after_crash().unwrap().is_empty());
        let conn = library.conn();
        job_rows::claim(&conn, job_rows::Claim::Id(job_id), library.process_id()).unwrap();
        drop(conn);
        let running = resume_training(&system, id).unwrap_err().to_string();
        assert!(
            running.contains(&format!("is running (job {job_id}")) && running.contains("stop"),
            "{running}"
        );
    }

    #[test]
    fn a_request_has_rvcs_defaults_and_refuses_zeroes() {
        let request = TrainRequest::new(3);
        assert_eq!(
            (request.epochs, request.save_every, request.keep_checkpoints),
            (200, 10, 3)
        );
        assert_eq!((request.batch_size, request.preview_every()), (None, 10));
        assert_eq!(request.pretrained, Pretrained::Auto);
        assert!(check_numbers(&request).is_ok());
        let zero = TrainRequest {
            batch_size: Some(0),
            ..request
        };
        let err = check_numbers(&zero).unwrap_err().to_string();
        assert!(err.contains("batch_size must be at least 1"), "{err}");
        let json = serde_json::to_value(TrainRequest::new(3)).unwrap();
        assert!(json.get("model_config").is_none(), "{json}");
    }

    #[test]
    fn the_amount_of_audio_is_refused_under_a_minute_and_warned_under_ten() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open(&dir.path().join("library.sqlite3")).unwrap();
        let dataset = datasets::ensure(&conn, "Alto", None).unwrap();
        let manifest = |seconds: &[f64]| Manifest {
            sample_rate: 40_000,
            version: "v2".into(),
            f0_method: Some("rmvpe".into()),
            embedder: Default::default(),
            feature_dim: 768,
            pieces: seconds
                .iter()
                .map(|&s| crate::dataset_layout::ManifestPiece {
                    gt_wav: String::new(),
                    wav_16k: String::new(),
                    features: String::new(),
                    source: String::new(),
                    index: 0,
                    seconds: s,
                    feature_frames: 0,
                    f0_frames: None,
                })
                .collect(),
            held_out: vec![],
        };
        let err = check_amount(&dataset, &manifest(&[20.0, 22.5])).unwrap_err();
        assert!(
            err.to_string()
                .contains("holds 0:42 of audio; training needs at least 1:00"),
            "{err}"
        );
        let warning = check_amount(&dataset, &manifest(&[300.0, 61.0])).unwrap();
        assert!(warning.unwrap().contains("only 6:01 of audio"));
        assert_eq!(check_amount(&dataset, &manifest(&[600.0])).unwrap(), None);
        // Pieces overlap: 18 pieces of 3.7 s hold 66.6 s, but the slicer kept 61.2 s of audio,
        // and 17 of them (62.9 s) with one dropped as too loud hold less than the slicer kept.
        let sliced = |secs: f64| Dataset {
            report: Some(serde_json::json!({ "sliced_seconds": secs })),
            ..dataset.clone()
        };
        let under = check_amount(&sliced(59.5), &manifest(&[3.7; 18])).unwrap_err();
        assert!(under.to_string().contains("holds 0:59 of audio"), "{under}");
        let warning = check_amount(&sliced(61.2), &manifest(&[3.7; 18]))
            .unwrap()
            .unwrap();
        assert!(warning.contains("only 1:01 of audio"), "{warning}");
        let warning = check_amount(&sliced(70.0), &manifest(&[3.7; 17]))
            .unwrap()
            .unwrap();
        assert!(warning.contains("only 1:02 of audio"), "{warning}");

        let plan = TrainingPlan::of(TrainRequest::new(dataset.id), &manifest(&[60.0]));
        assert_eq!((plan.version.as_str(), plan.f0), ("v2", true));
        let mut other = manifest(&[60.0]);
        other.sample_rate = 32_000;
        let err = plan
            .check_dataset(&dataset, &other)
            .unwrap_err()
            .to_string();
        assert!(err.contains("prepared again as a v2 32000 Hz"), "{err}");
        other = manifest(&[60.0]);
        other.feature_dim = 64;
        let err = plan
            .check_dataset(&dataset, &other)
            .unwrap_err()
            .to_string();
        assert!(err.contains("64-d features"), "{err}");
    }
}
