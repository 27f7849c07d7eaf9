//! The `train` job: trains the RVC model a `trainings` row describes on its prepared dataset,
//! on the GPU lane. It checks the dataset (ready, enough audio, still what the training
//! started on), picks the device, precision and batch size, then runs sessions
//! (`session::Session`) until the epochs are done, each resuming from the newest checkpoint:
//! a rerun after a crash or a stop, and a smaller batch after running out of memory, all
//! continue from there. At the end it exports the inference model, trains the index of the
//! dataset's features, and imports both into the library for the dataset's voice.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tch::Device;
use timbre_nn::device::Precision;
use timbre_nn::train::trainer::{Trainer, export_checkpoint, generator_checkpoint};

use super::batch_size;
use super::data::TrainingData;
use super::export;
use super::files::TrainingFiles;
use super::judge::{Judge, JudgeSetup};
use super::ranks::{self, Ranks};
use super::request::{KIND, TrainParams, check_amount, plan_of, ready_dataset};
use super::session::{Ending, EpochProfile, Session, Setup, TRAINING_SHARE};
use super::worker;
use crate::db::job_events::Level;
use crate::db::jobs::Lane;
use crate::db::models::Model;
use crate::db::trainings::{self, Training};
use crate::devices::{self, Devices};
use crate::error::ErrorReport;
use crate::jobs::{Failure, JobContext, JobHandler, JobKind, Need, Needs, classify};
use crate::model_cache::ModelCache;

/// Single-speaker models, as RVC trains them.
pub(super) const SPEAKER_ID: i64 = 0;

/// Runs `train` jobs on the GPU lane; a cut-off one resumes from its newest checkpoint.
pub struct TrainHandler {
    models: Arc<ModelCache>,
}

impl TrainHandler {
    /// A handler whose checkpoint judge loads its pitch model through `models`.
    pub fn new(models: Arc<ModelCache>) -> Self {
        Self { models }
    }
}

impl JobHandler for TrainHandler {
    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Device],
            optional: &[Need::PretrainedBases, Need::SpeakerEncoder],
        }
    }

    fn kind(&self) -> JobKind {
        KIND
    }

    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    /// A cut-off run continues from its newest checkpoint.
    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let TrainParams { training_id } = ctx.params()?;
        let outcome = train(ctx, &self.models, training_id);
        if let Err(error) = &outcome {
            let (status, message) = match classify(error) {
                Failure::Cancelled => (trainings::STOPPED, None),
                _ => (
                    trainings::FAILED,
                    Some(ErrorReport::from_anyhow(error).message),
                ),
            };
            ctx.library()
                .edit(|conn| trainings::set_ended(conn, training_id, status, message.as_deref()))?;
        }
        Ok(serde_json::to_value(outcome?)?)
    }
}

/// What a `train` job gives.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrainResult {
    /// The training's row as it ended (done).
    pub training: Training,
    /// The trained model, in the library.
    pub model: Model,
    /// The training's folder, `<data dir>/trainings/<id>`.
    pub folder: PathBuf,
    /// Epochs trained in all, earlier runs' included.
    pub epochs: i64,
    /// Training steps (batches) taken in all, earlier runs' included.
    pub global_step: i64,
    /// Feature rows in the model's index.
    pub index_vectors: usize,
    /// Wall-clock seconds this run of the job took, exporting and the index included.
    pub seconds: f64,
}

/// How long a free page stays with the allocator while a training runs
/// (`timbre_audio::memory::decay_free_memory`).
const FREE_PAGE_DECAY_MS: i64 = 1000;

fn train(ctx: &JobContext, models: &Arc<ModelCache>, id: i64) -> Result<TrainResult> {
    let started = Instant::now();
    let _decaying = timbre_audio::memory::decay_free_memory(FREE_PAGE_DECAY_MS);
    let library = ctx.library();
    let training = trainings::require(&library.conn(), id)?;
    let plan = plan_of(&training)?;
    let dataset_id = training.dataset_id.ok_or_else(|| {
        crate::error::invalid_input(format!("training {id}: its dataset was deleted"))
    })?;
    let (dataset, manifest) = ready_dataset(library, dataset_id)?;
    plan.check_dataset(&dataset, &manifest)?;
    if let Some(warning) = check_amount(&dataset, &manifest)? {
        ctx.event(Level::Warn, "little_audio", &json!({ "message": warning }))?;
    }
    let config = plan.config()?;
    let dataset_dir = crate::dataset_layout::folder(library, dataset.id);
    let devices = Devices::of(&library.settings()?)?;
    let training_devices = ranks::devices_of(&plan.request.devices)?;
    let device = training_devices.first().copied().unwrap_or(devices.main);
    let data = Arc::new(
        TrainingData::open_with(&dataset_dir, SPEAKER_ID, config.data)?
            .compute_spectrograms_on(devices.extraction),
    );
    if devices.split() {
        let data =
            json!({ "training": devices::name(device), "data": devices::name(devices.extraction) });
        ctx.event(Level::Info, "devices", &data)?;
    }
    let precision = Precision::default_for(device)?;
    let device_names = ranks::devices_name(&training_devices, device);
    library.edit(|conn| trainings::set_running(conn, id, &device_names, precision.name()))?;
    let pretrained = plan.pretrained_files(library)?;
    if !pretrained.missing.is_empty() {
        let message = "no pretrained base model: training from scratch needs many more epochs \
                       (put RVC's pretrained files in the models folder)";
        let missing = &pretrained.missing;
        ctx.event(
            Level::Warn,
            "no_pretrained",
            &json!({ "message": message, "missing": missing }),
        )?;
    }
    let batch_size = match training.batch_size {
        Some(size) => size,
        None => {
            let free = match device {
                Device::Cuda(index) => batch_size::free_gpu_memory(index),
                _ => None,
            };
            batch_size::automatic(device, free)
        }
    };
    library.edit(|conn| trainings::set_batch_size(conn, id, batch_size))?;
    let files = TrainingFiles::new(library.data_dir(), id, &training.name);
    let ranks = Ranks::start(library.data_dir(), id, &training_devices, &files)?;
    let batch_size = match &ranks {
        Some(ranks) => {
            let shared = worker::share_batch_size(ranks.group(), device, batch_size)?;
            let data = json!({ "ranks": ranks.group().world(), "devices": device_names });
            ctx.event(Level::Info, "data_parallel", &data)?;
            shared
        }
        None => batch_size,
    };
    let judge_setup = JudgeSetup {
        library,
        job_id: ctx.job_id(),
        training_id: id,
        config: &config,
        f0: plan.f0,
        dataset_dir: &dataset_dir,
        manifest: data.manifest(),
        files: &files,
        device: devices.extraction,
        models: Arc::clone(models),
        models_dir: crate::models_folder::of(library)?,
        sources: plan
            .request
            .judge_sources
            .iter()
            .map(|input| Ok(input.resolve(library)?.path))
            .collect::<Result<_>>()?,
    };
    std::thread::scope(|scope| {
        let judge = Judge::start(scope, judge_setup);
        let setup = Setup {
            ctx,
            training_id: id,
            plan: &plan,
            config: &config,
            data: &data,
            files: &files,
            device,
            precision,
            pretrained: &pretrained,
            judge: &judge,
            group: ranks.as_ref().map(Ranks::group),
        };
        let (trainer, converged) =
            run_sessions(&setup, &training, batch_size).map_err(|error| match &ranks {
                Some(ranks) => ranks.explain(error),
                None => error,
            })?;
        judge.wait();
        let end = End {
            training: &training,
            voice_id: dataset.voice_id,
            data: &data,
            dataset_dir: &dataset_dir,
            files: &files,
            converged,
        };
        finish(ctx, &end, &trainer, started)
    })
}

/// Sessions until the epochs are done (or the judge's recommendation settled, whose step is
/// given), each after an out-of-memory one at half the batch.
fn run_sessions(
    setup: &Setup,
    training: &Training,
    mut batch_size: i64,
) -> Result<(Trainer, Option<i64>)> {
    let (ctx, id) = (setup.ctx, setup.training_id);
    let library = ctx.library();
    let mut profiles: Vec<EpochProfile> = training
        .profile
        .clone()
        .and_then(|p| serde_json::from_value(p).ok())
        .unwrap_or_default();
    loop {
        let mut session = Session::start(setup, batch_size, profiles)?;
        match session.run()? {
            Ending::Finished => return Ok((session.into_trainer(), None)),
            Ending::Converged { step } => return Ok((session.into_trainer(), Some(step))),
            Ending::OutOfMemory(error) => {
                profiles = session.profiles().to_vec();
                let step = session.trainer().global_step();
                drop(session);
                let error = ErrorReport::from_anyhow(&error).message;
                let smaller = batch_size::halved(batch_size);
                ctx.event(
                    Level::Warn,
                    "out_of_memory",
                    &json!({
                        "batch_size": batch_size,
                        "halved_to": smaller.as_ref().ok(),
                        "step": step,
                        "error": error,
                    }),
                )?;
                batch_size = smaller?;
                library.edit(|conn| trainings::set_batch_size(conn, id, batch_size))?;
            }
        }
    }
}

/// What the end of a training needs besides the trainer.
struct End<'a> {
    training: &'a Training,
    voice_id: Option<i64>,
    data: &'a TrainingData,
    dataset_dir: &'a Path,
    files: &'a TrainingFiles,
    /// The judge's recommended step when the training stopped there: that checkpoint is the
    /// model.
    converged: Option<i64>,
}

/// Exports the model, trains the index and puts both into the library.
fn finish(ctx: &JobContext, end: &End, trainer: &Trainer, started: Instant) -> Result<TrainResult> {
    let (library, training, files) = (ctx.library(), end.training, end.files);
    ctx.progress(TRAINING_SHARE, "exporting the model")?;
    match end.converged {
        Some(step) => {
            let checkpoint = generator_checkpoint(&files.checkpoints(), Some(step))?;
            export_checkpoint(
                trainer.config(),
                trainer.f0(),
                &checkpoint,
                &files.model(),
                &training.name,
            )?;
        }
        None => trainer.export(&files.model(), &training.name)?,
    }
    ctx.progress(TRAINING_SHARE + 0.01, "training the index")?;
    let vectors = export::write_index(end.dataset_dir, end.data.manifest(), &files.index())?;
    ctx.progress(0.99, "adding the model to the library")?;
    let model = export::import(
        library,
        training,
        end.voice_id,
        &files.model(),
        &training.name,
    )?;
    library.edit(|conn| trainings::set_done(conn, training.id, model.id))?;
    let done = trainings::require(&library.conn(), training.id)?;
    ctx.progress(1.0, format!("trained {}", training.name))?;
    Ok(TrainResult {
        training: done,
        model,
        folder: files.root().to_path_buf(),
        epochs: trainer.epoch(),
        global_step: trainer.global_step(),
        index_vectors: vectors,
        seconds: started.elapsed().as_secs_f64(),
    })
}
