//! The checkpoint judge: every checkpoint a training saves is scored on the dataset's held-out
//! speech (`dataset::held_out`), on a thread of its own and on the extraction device, while the
//! training goes on; the scores go to `checkpoint_scores`, and `recommend` says which
//! checkpoint to keep. The scores (see `CheckpointScore` and docs/CHECKPOINT_JUDGE.md):
//!
//! - speaker similarity: GE2E (Resemblyzer's) embedding of the converted held-out speech
//!   against the dataset's mean embedding, with the held-out speech's own as the ceiling;
//! - pitch fidelity: the conversion's f0 (read by the dataset's pitch method) against the
//!   input's, RMSE in cents and voicing agreement;
//! - reconstruction: the multi-resolution log-mel distance of the conversion to the real
//!   held-out audio, and the same on as much training audio: their gap is the overtraining sign;
//! - artefacts: the inharmonic energy in voiced frames, the conversion's less the real voice's.
//!
//! A save waits for the judge to finish the previous checkpoint (so every checkpoint is scored
//! and the recommended one is never pruned), which costs the training nothing while the judge
//! is quicker than the epochs between saves. A stop leaves queued checkpoints unscored; the
//! next run of the job scores them first.

mod material;
pub mod recommend;
mod score;
mod sources;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

use anyhow::{Context, Result};
use serde_json::json;
use tch::Device;
use timbre_nn::pipeline::{F0Method, PitchTracker};
use timbre_nn::speaker_encoder::SpeakerEncoder;
use timbre_nn::train::config::TrainingConfig;
use timbre_nn::train::trainer::{checkpoint_steps, checkpoint_synthesizer};

use crate::Notification;
use crate::dataset_layout::Manifest;
use crate::db::checkpoint_scores;
use crate::db::job_events::{self, Level};
use crate::library::Library;
use crate::model_cache::ModelCache;
use crate::pitch::PitchModel;
use crate::settings::JudgeWeights;
use crate::train::files::TrainingFiles;
use material::{Material, Speaker};

/// What the judge found of a training: every scored checkpoint and the recommendation, for the
/// Train page and `timbre train show`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct JudgeReport {
    /// The scored checkpoints, in step order.
    pub scores: Vec<checkpoint_scores::CheckpointScore>,
    /// Each one's weighted score (0..1, `recommend::weighted`), in the same order.
    pub weighted: Vec<f64>,
    /// The best of them by the weighted score; None before the first is scored.
    pub recommendation: Option<recommend::Recommendation>,
    /// The weights of the settings, which the weighted scores are made with.
    pub weights: JudgeWeights,
    /// The weights a new library starts with.
    pub default_weights: JudgeWeights,
}

/// The judge's report on training `training_id`, with the weights of the settings.
pub fn report(library: &Library, training_id: i64) -> Result<JudgeReport> {
    crate::db::trainings::require(&library.conn(), training_id)?;
    let scores = checkpoint_scores::list(&library.conn(), training_id)?;
    let weights = library.settings()?.judge_weights;
    Ok(JudgeReport {
        weighted: scores
            .iter()
            .map(|s| recommend::weighted(s, &weights))
            .collect(),
        recommendation: recommend::recommend(&scores, &weights),
        scores,
        weights,
        default_weights: JudgeWeights::default(),
    })
}

/// The step of the recommended checkpoint of training `training_id`, for an export of the
/// best; an error when none is scored.
pub fn recommended_step(library: &Library, training_id: i64) -> Result<i64> {
    report(library, training_id)?
        .recommendation
        .map(|r| r.step)
        .ok_or_else(|| {
            crate::error::not_found(format!(
                "training {training_id} has no scored checkpoint yet, so none is recommended"
            ))
        })
}

/// What the judge of one training works with.
pub struct JudgeSetup<'env> {
    /// The library the scores and events go to.
    pub library: &'env Library,
    /// The `train` job, whose events the judge's notes join.
    pub job_id: i64,
    /// Row id of the training.
    pub training_id: i64,
    /// The training configuration, to build each checkpoint's generator.
    pub config: &'env TrainingConfig,
    /// Whether the model has pitch.
    pub f0: bool,
    /// The dataset's folder.
    pub dataset_dir: &'env Path,
    /// The dataset's manifest, with its held-out pieces.
    pub manifest: &'env Manifest,
    /// Where the checkpoints and the judge's samples are.
    pub files: &'env TrainingFiles,
    /// Where the judge runs: the extraction device.
    pub device: Device,
    /// The process's model cache, for the pitch model.
    pub models: Arc<ModelCache>,
    /// The models folder, where the speaker encoder and the pitch model are.
    pub models_dir: PathBuf,
    /// The audio files of the request's `judge_sources`.
    pub sources: Vec<PathBuf>,
}

/// A checkpoint to score: its step and generator file.
struct Saved {
    step: i64,
    generator: PathBuf,
}

/// Scored (or given up) checkpoints, against those submitted.
#[derive(Default)]
struct Finished {
    count: Mutex<usize>,
    changed: Condvar,
}

/// The judge's thread and the queue to it (see the module).
pub struct Judge<'scope> {
    sender: Option<Sender<Saved>>,
    submitted: AtomicUsize,
    finished: Arc<Finished>,
    stopping: Arc<AtomicBool>,
    thread: Option<ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> Judge<'scope> {
    /// Starts the judge's thread in `scope`; it reads the held-out material first.
    pub fn start<'env>(scope: &'scope Scope<'scope, 'env>, setup: JudgeSetup<'env>) -> Self {
        let (sender, receiver) = channel();
        let finished = Arc::new(Finished::default());
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (finished, stopping) = (Arc::clone(&finished), Arc::clone(&stopping));
            scope.spawn(move || run(&setup, &receiver, &finished, &stopping))
        };
        Judge {
            sender: Some(sender),
            submitted: AtomicUsize::new(0),
            finished,
            stopping,
            thread: Some(thread),
        }
    }

    /// Queues the checkpoint of `step`.
    pub fn submit(&self, step: i64, generator: PathBuf) {
        if let Some(sender) = &self.sender
            && sender.send(Saved { step, generator }).is_ok()
        {
            self.submitted.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Queues the checkpoints in `dir` that have no scores yet (a run stopped before its judge
    /// finished them), oldest first.
    pub fn submit_unscored(&self, library: &Library, training_id: i64, dir: &Path) -> Result<()> {
        if !dir.is_dir() {
            return Ok(());
        }
        let scored: Vec<i64> = checkpoint_scores::list(&library.conn(), training_id)?
            .iter()
            .map(|s| s.step)
            .collect();
        for step in checkpoint_steps(dir)? {
            if !scored.contains(&step) {
                self.submit(step, dir.join(format!("G_{step}.pth")));
            }
        }
        Ok(())
    }

    /// Waits until every checkpoint submitted is scored (or given up).
    pub fn wait(&self) {
        let target = self.submitted.load(Ordering::SeqCst);
        let mut count = self
            .finished
            .count
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        while *count < target {
            count = self
                .finished
                .changed
                .wait(count)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Judge<'_> {
    /// Skips what is still queued (the next run scores it) and waits for the checkpoint being
    /// scored.
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.sender.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(setup: &JudgeSetup, receiver: &Receiver<Saved>, finished: &Finished, stopping: &AtomicBool) {
    let note = |level: Level, kind: &str, data: serde_json::Value| {
        let _ = job_events::insert(&setup.library.conn(), setup.job_id, level, kind, &data);
    };
    let done = || {
        *finished.count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        finished.changed.notify_all();
    };
    let judge = if setup.manifest.held_out.is_empty() {
        let message = "no held-out speech in this dataset (too small, or prepared before \
                       held-out sets): checkpoints are not scored; prepare the dataset again";
        note(Level::Warn, "judge_off", json!({ "message": message }));
        None
    } else {
        match Prepared::new(setup) {
            Ok((prepared, notes)) => {
                for message in notes {
                    note(Level::Info, "judge_note", json!({ "message": message }));
                }
                Some(prepared)
            }
            Err(error) => {
                let message = format!("checkpoints are not scored: {error:#}");
                note(Level::Warn, "judge_off", json!({ "message": message }));
                None
            }
        }
    };
    for saved in receiver {
        if let Some(judge) = &judge
            && !stopping.load(Ordering::SeqCst)
            && let Err(error) = judge.score(setup, &saved)
        {
            let message = format!("checkpoint of step {}: {error:#}", saved.step);
            note(
                Level::Warn,
                "judge_failed",
                json!({ "step": saved.step, "message": message }),
            );
        }
        done();
    }
}

/// The takes of `setup.sources` ready to convert, their pitch moved to the held-out speech's.
fn read_sources(
    setup: &JudgeSetup,
    material: &Material,
    pitch: Option<&(F0Method, Option<PitchModel>)>,
) -> Result<Vec<material::Piece>> {
    let embedder = setup.manifest.embedder;
    let hubert_file = crate::models_folder::require_embedder(&setup.models_dir, embedder)
        .context("converting the judge's source takes")?;
    let (hubert, _) = setup.models.hubert(&hubert_file, setup.device)?;
    let hubert = hubert.lock();
    let version = embedder.feature_version(setup.manifest.feature_dim);
    let median = sources::median_voiced(
        material
            .held_out
            .iter()
            .flat_map(|p| p.f0.iter().flatten().copied()),
    );
    with_tracker(pitch, |tracker| {
        sources::read(&setup.sources, &hubert, version, tracker.zip(median))
    })
}

/// Runs `f` with the tracker of `pitch` (its network locked meanwhile), or with None for a
/// model without pitch.
fn with_tracker<R>(
    pitch: Option<&(F0Method, Option<PitchModel>)>,
    f: impl FnOnce(Option<&PitchTracker>) -> Result<R>,
) -> Result<R> {
    let Some((method, model)) = pitch else {
        return f(None);
    };
    let held = model.as_ref().map(PitchModel::lock);
    f(Some(&crate::pitch::tracker(*method, held.as_ref())?))
}

/// The material and models, once read.
struct Prepared {
    material: Material,
    pitch: Option<(F0Method, Option<PitchModel>)>,
}

impl Prepared {
    /// The material and the pitch model, and notes on what cannot be scored.
    fn new(setup: &JudgeSetup) -> Result<(Self, Vec<String>)> {
        let mut notes = Vec::new();
        let mut material = Material::read(setup.dataset_dir, setup.manifest)
            .context("reading the held-out pieces")?;
        match crate::models_folder::find_speaker_encoder(&setup.models_dir) {
            Some(path) => {
                let encoder = SpeakerEncoder::load(&path, setup.device)?;
                let root = setup.dataset_dir;
                material.speaker =
                    Speaker::read(encoder, root, setup.manifest, &material.held_out)?;
                if material.speaker.is_none() {
                    notes.push(
                        "speaker similarity is not scored: the speaker encoder finds no speech \
                         in the dataset's pieces"
                            .into(),
                    );
                }
            }
            None => notes.push(format!(
                "speaker similarity needs the speaker encoder in {}: download it on the Models \
                 page (timbre assets download speaker-encoder)",
                setup.models_dir.display()
            )),
        }
        let pitch = match (&setup.manifest.f0_method, setup.f0) {
            (Some(name), true) => {
                let method = F0Method::parse(name)?;
                let model = match crate::pitch::model_file(&setup.models_dir, method)? {
                    Some(file) => PitchModel::load(&setup.models, method, &file, setup.device)?,
                    None => None,
                };
                Some((method, model))
            }
            _ => None,
        };
        if !setup.sources.is_empty() {
            material.sources = read_sources(setup, &material, pitch.as_ref())
                .context("reading the judge's source takes")?;
        }
        Ok((Prepared { material, pitch }, notes))
    }

    fn score(&self, setup: &JudgeSetup, saved: &Saved) -> Result<()> {
        let (model, epoch) =
            checkpoint_synthesizer(setup.config, setup.f0, &saved.generator, setup.device)?;
        let sample = setup.files.judge_sample(saved.step);
        let score = with_tracker(self.pitch.as_ref(), |tracker| {
            score::score(
                &model,
                &self.material,
                tracker,
                (epoch, saved.step),
                &sample,
            )
        })?;
        let library = setup.library;
        checkpoint_scores::insert(&library.conn(), setup.training_id, &score)?;
        library.notify(Notification::CheckpointScored {
            training_id: setup.training_id,
            score,
        });
        Ok(())
    }
}
