//! One trainer at one batch size: built from the last checkpoint (or the pretrained bases), it
//! runs the remaining epochs: batches from the producer threads, a step each, losses recorded
//! every few steps, checkpoints and previews as asked, a profile per epoch. A stop saves the
//! current state first; a step that runs out of memory ends the session so that the job can
//! start another with a smaller batch from the last checkpoint.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;
use tch::Device;
use timbre_nn::device::Precision;
use timbre_nn::train::config::TrainingConfig;
use timbre_nn::train::trainer::{StepLosses, Trainer};
use timbre_torch_ext::distributed::ProcessGroup;

use super::batch_size::is_out_of_memory;
use super::data::TrainingData;
use super::files::TrainingFiles;
use super::judge::{Judge, recommend};
use super::pretrained::PretrainedFiles;
use super::producer::{BatchProducer, ProducerOptions, Profile, training_threads};
use super::request::TrainingPlan;
use super::sampler::Shard;
use super::step::guarded_step;
use super::worker::shard_of;
use crate::Notification;
use crate::db::job_events::Level;
use crate::db::training_metrics::{self, TrainingMetric};
use crate::db::{checkpoint_scores, training_previews, trainings};
use crate::jobs::JobContext;
use crate::monitor::UtilizationSampler;

/// A metrics row every this many steps, and at the end of each epoch.
const METRICS_EVERY: i64 = 10;
/// How often the training GPU's utilisation is read.
const GPU_SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// Waiting on data beyond this share of an epoch means the device starved.
const STARVED_SHARE: f64 = 0.1;
/// Training proper is this share of the job's progress; exporting and the index the rest.
pub const TRAINING_SHARE: f64 = 0.95;

/// What a session works with, settled before it starts.
pub struct Setup<'a> {
    /// The `train` job's context: the library, progress, events and cancellation.
    pub ctx: &'a JobContext<'a>,
    /// Id of the `trainings` row.
    pub training_id: i64,
    /// The training's request and what its dataset fixed.
    pub plan: &'a TrainingPlan,
    /// The training configuration, from [`TrainingPlan::config`].
    pub config: &'a TrainingConfig,
    /// The dataset, shared with the producer threads.
    pub data: &'a Arc<TrainingData>,
    /// Where checkpoints, previews and exports go.
    pub files: &'a TrainingFiles,
    /// The device the trainer steps on.
    pub device: Device,
    /// The precision the steps run in.
    pub precision: Precision,
    /// The bases to start from when there is no checkpoint to resume.
    pub pretrained: &'a PretrainedFiles,
    /// Scores every checkpoint saved.
    pub judge: &'a Judge<'a>,
    /// The process group when this is rank 0 of a data-parallel training.
    pub group: Option<&'a Arc<ProcessGroup>>,
}

impl Setup<'_> {
    fn shard(&self) -> Shard {
        self.group.map_or(Shard::ALONE, |group| shard_of(group))
    }
}

/// How a session that did not fail came to its end.
pub enum Ending {
    /// Every epoch of the plan ran; the last is checkpointed.
    Finished,
    /// A step ran out of memory; nothing was saved after the last checkpoint.
    OutOfMemory(anyhow::Error),
    /// The judge's recommended checkpoint, this step's, did not change for the request's
    /// `patience_saves`: the training stops there.
    Converged {
        /// The recommended checkpoint's step.
        step: i64,
    },
}

/// Where one epoch's time went.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, ts_rs::TS)]
pub struct EpochProfile {
    /// The epoch, counted from 1.
    pub epoch: i64,
    /// The batch size it ran at.
    pub batch_size: i64,
    /// Batches (training steps) in the epoch.
    pub batches: usize,
    /// The epoch's wall-clock seconds.
    pub seconds: f64,
    /// In the training steps (forward, backward, optimizers).
    pub step_secs: f64,
    /// Copying batches to the device.
    #[serde(default)]
    pub to_device_secs: f64,
    /// Producer threads reading pieces and spectrograms, summed over threads.
    pub load_secs: f64,
    /// Producer threads padding items into batches, summed over threads.
    pub assemble_secs: f64,
    /// The trainer waiting for a batch.
    pub waited_secs: f64,
    /// The trainer waited for batches over a tenth of the epoch: loading held the device back.
    pub starved: bool,
    /// The training GPU's mean utilisation over the epoch (NVML); None on the CPU.
    #[serde(default)]
    pub gpu_percent: Option<f64>,
    /// Within the steps, averaging the gradients over the ranks of a data-parallel run; None
    /// alone.
    #[serde(default)]
    pub all_reduce_secs: Option<f64>,
}

/// The trainer's side of an epoch's time.
#[derive(Default)]
struct EpochTiming {
    elapsed: Duration,
    stepping: Duration,
    to_device: Duration,
    /// The gradients' all-reduces so far when the epoch started (a data-parallel run's).
    all_reduced_before: Option<f64>,
}

/// One trainer at one batch size, running the epochs left (see the module).
pub struct Session<'a> {
    setup: &'a Setup<'a>,
    trainer: Trainer,
    batch_size: i64,
    /// The step of the newest checkpoint this session saved or resumed from.
    saved_step: Option<i64>,
    preview_piece: usize,
    profiles: Vec<EpochProfile>,
    gpu_sampler: Option<UtilizationSampler>,
}

impl<'a> Session<'a> {
    /// A trainer at `batch_size`, continuing from the newest checkpoint pair, else starting
    /// from the pretrained files.
    pub fn start(
        setup: &'a Setup<'a>,
        batch_size: i64,
        profiles: Vec<EpochProfile>,
    ) -> Result<Self> {
        let ctx = setup.ctx;
        let mut trainer = Trainer::new(
            setup.config.clone(),
            setup.plan.f0,
            setup.device,
            setup.precision,
        )?;
        let steps_per_epoch = setup
            .data
            .epoch_batches(1, batch_size as usize, seed(setup), setup.shard())
            .len();
        let checkpoints = setup.files.checkpoints();
        let resumed = trainer.resume(&checkpoints, steps_per_epoch as i64)?;
        if resumed.is_none() {
            trainer.load_pretrained(
                setup.pretrained.generator.as_deref(),
                setup.pretrained.discriminator.as_deref(),
            )?;
        }
        if let Some(group) = setup.group {
            // The other ranks resume from the checkpoints folder once it is settled.
            group.barrier(setup.device)?;
            trainer.join_group(Arc::clone(group))?;
        }
        let (epoch, step) = (trainer.epoch(), trainer.global_step());
        // What a previous run recorded beyond this point is trained again.
        let id = setup.training_id;
        let (removed, samples) = {
            let conn = ctx.library().conn();
            training_metrics::delete_after(&conn, id, step)?;
            trainings::set_position(&conn, id, epoch, step)?;
            let samples = checkpoint_scores::delete_after(&conn, id, step)?;
            (training_previews::delete_after(&conn, id, epoch)?, samples)
        };
        ctx.library().notify(Notification::TrainingRewound {
            training_id: id,
            epoch,
            step,
        });
        for path in removed.into_iter().map(|p| p.path).chain(samples) {
            let _ = std::fs::remove_file(&path);
        }
        setup
            .judge
            .submit_unscored(ctx.library(), id, &checkpoints)?;
        if resumed.is_some() {
            let data = json!({ "epoch": epoch, "step": step });
            ctx.event(Level::Info, "resumed", &data)?;
        }
        Ok(Self {
            saved_step: resumed.map(|_| step),
            preview_piece: super::preview::fixed_piece(setup.data),
            profiles: profiles.into_iter().filter(|p| p.epoch <= epoch).collect(),
            gpu_sampler: match setup.device {
                Device::Cuda(index) => UtilizationSampler::start(index as u32, GPU_SAMPLE_EVERY),
                _ => None,
            },
            setup,
            trainer,
            batch_size,
        })
    }

    /// The trainer, at its current epoch and step.
    pub fn trainer(&self) -> &Trainer {
        &self.trainer
    }

    /// Each epoch's profile so far, earlier sessions' included.
    pub fn profiles(&self) -> &[EpochProfile] {
        &self.profiles
    }

    /// Runs the epochs left.
    pub fn run(&mut self) -> Result<Ending> {
        for epoch in self.trainer.epoch() + 1..=self.setup.plan.request.epochs {
            if let Some(ending) = self.epoch(epoch)? {
                return Ok(ending);
            }
        }
        Ok(Ending::Finished)
    }

    fn epoch(&mut self, epoch: i64) -> Result<Option<Ending>> {
        let setup = self.setup;
        let plan = setup.data.epoch_batches(
            epoch as u64,
            self.batch_size as usize,
            seed(setup),
            setup.shard(),
        );
        let batches = plan.len();
        let profile = Profile::default();
        let producer = BatchProducer::start(
            Arc::clone(setup.data),
            plan,
            ProducerOptions {
                threads: training_threads(),
                profile: profile.clone(),
                ..ProducerOptions::default()
            },
        );
        let started = Instant::now();
        if let Some(sampler) = &self.gpu_sampler {
            sampler.take_mean();
        }
        let mut timing = EpochTiming {
            all_reduced_before: self.trainer.all_reduced().map(|a| a.seconds),
            ..EpochTiming::default()
        };
        for (number, batch) in producer.enumerate() {
            let copy_started = Instant::now();
            let batch = batch?.to_device(setup.device);
            timing.to_device += copy_started.elapsed();
            let step_started = Instant::now();
            let losses = match guarded_step(&mut self.trainer, &batch) {
                Ok(losses) => losses,
                Err(error) if is_out_of_memory(&error) => {
                    return Ok(Some(Ending::OutOfMemory(error)));
                }
                Err(error) => {
                    let step = self.trainer.global_step() + 1;
                    return Err(error.context(format!("epoch {epoch}, step {step}")));
                }
            };
            timing.stepping += step_started.elapsed();
            let last = number + 1 == batches;
            if self.trainer.global_step() % METRICS_EVERY == 0 || last {
                self.record(epoch, &losses)?;
            }
            let fraction = (epoch - 1) as f64 + (number + 1) as f64 / batches as f64;
            let message = format!(
                "epoch {epoch}/{} · step {} · mel loss {:.2}",
                setup.plan.request.epochs,
                self.trainer.global_step(),
                losses.mel
            );
            let asked = setup.ctx.check_cancelled().and_then(|()| {
                let epochs = setup.plan.request.epochs as f64;
                setup
                    .ctx
                    .progress(TRAINING_SHARE * fraction / epochs, message)
            });
            if let Err(stop) = asked {
                return Err(self.stop(stop));
            }
        }
        self.trainer.finish_epoch();
        timing.elapsed = started.elapsed();
        self.profile_epoch(epoch, batches, &timing, &profile)?;
        let request = &setup.plan.request;
        let last = epoch == request.epochs;
        let saving = epoch % request.save_every == 0 || last;
        if saving {
            self.save()?;
        }
        if epoch % request.preview_every() == 0 || last {
            self.preview(epoch)?;
        }
        if let Some(patience) = request.patience_saves
            && saving
        {
            setup.judge.wait();
            let scores = checkpoint_scores::list(&setup.ctx.library().conn(), setup.training_id)?;
            let weights = setup.ctx.library().settings()?.judge_weights;
            if let Some(best) = recommend::converged(&scores, &weights, patience) {
                let data = json!({ "step": best.step, "epoch": best.epoch, "patience": patience });
                setup.ctx.event(Level::Info, "converged", &data)?;
                self.trainer.end_run()?;
                return Ok(Some(Ending::Converged { step: best.step }));
            }
        }
        Ok(None)
    }

    fn record(&self, epoch: i64, losses: &StepLosses) -> Result<()> {
        let metric = TrainingMetric {
            epoch,
            step: self.trainer.global_step(),
            losses: training_metrics::StepLosses {
                g_total: losses.g_total,
                d_total: losses.d_total,
                mel: losses.mel,
                kl: losses.kl,
                fm: losses.fm,
                adversarial: losses.adversarial,
                grad_norm_g: losses.grad_norm_g,
                grad_norm_d: losses.grad_norm_d,
            },
            lr: self.trainer.learning_rate(),
            at: crate::db::now(),
        };
        let library = self.setup.ctx.library();
        let training_id = self.setup.training_id;
        {
            let conn = library.conn();
            training_metrics::insert(&conn, training_id, &metric)?;
            trainings::set_position(&conn, training_id, self.trainer.epoch(), metric.step)?;
        }
        library.notify(Notification::TrainingMetric {
            training_id,
            metric,
        });
        Ok(())
    }

    fn profile_epoch(
        &mut self,
        epoch: i64,
        batches: usize,
        timing: &EpochTiming,
        profile: &Profile,
    ) -> Result<()> {
        let stages = profile.stages();
        let seconds = timing.elapsed.as_secs_f64();
        let waited_secs = stages.waited.as_secs_f64();
        self.profiles.push(EpochProfile {
            epoch,
            batch_size: self.batch_size,
            batches,
            seconds,
            step_secs: timing.stepping.as_secs_f64(),
            to_device_secs: timing.to_device.as_secs_f64(),
            load_secs: stages.load.as_secs_f64(),
            assemble_secs: stages.assemble.as_secs_f64(),
            waited_secs,
            starved: waited_secs > STARVED_SHARE * seconds,
            gpu_percent: self.gpu_sampler.as_ref().and_then(|s| s.take_mean()),
            all_reduce_secs: self
                .trainer
                .all_reduced()
                .zip(timing.all_reduced_before)
                .map(|(now, before)| now.seconds - before),
        });
        let conn = self.setup.ctx.library().conn();
        let id = self.setup.training_id;
        trainings::set_profile(&conn, id, &serde_json::to_value(&self.profiles)?)?;
        trainings::set_position(&conn, id, self.trainer.epoch(), self.trainer.global_step())
    }

    /// Saves a checkpoint pair unless the current step has one.
    fn save(&mut self) -> Result<()> {
        let step = self.trainer.global_step();
        if self.saved_step == Some(step) {
            return Ok(());
        }
        let keep = self.setup.plan.request.keep_checkpoints as usize;
        // The judge is done with the previous checkpoint before pruning can remove it.
        self.setup.judge.wait();
        let library = self.setup.ctx.library();
        let scores = checkpoint_scores::list(&library.conn(), self.setup.training_id)?;
        let best = recommend::recommend(&scores, &library.settings()?.judge_weights);
        self.trainer.keep_checkpoint(best.map(|b| b.step));
        let (generator, _) = self
            .trainer
            .save_checkpoint(&self.setup.files.checkpoints(), keep)
            .with_context(|| format!("saving the checkpoint of step {step}"))?;
        self.setup.judge.submit(step, generator.clone());
        self.saved_step = Some(step);
        let epoch = self.trainer.epoch();
        self.setup
            .ctx
            .library()
            .edit(|conn| trainings::set_position(conn, self.setup.training_id, epoch, step))?;
        self.setup.ctx.event(
            Level::Info,
            "checkpoint",
            &json!({ "epoch": epoch, "step": step, "generator": generator }),
        )
    }

    fn preview(&self, epoch: i64) -> Result<()> {
        let path = self.setup.files.preview(epoch);
        super::preview::render(&self.trainer, self.setup.data, self.preview_piece, &path)?;
        let step = self.trainer.global_step();
        let path = path.display().to_string();
        let library = self.setup.ctx.library();
        let preview =
            training_previews::insert(&library.conn(), self.setup.training_id, epoch, step, &path)?;
        library.notify(Notification::TrainingPreview { preview });
        Ok(())
    }

    /// A stop (or a failure to ask whether to stop): the state so far is saved first, then
    /// the other ranks of a data-parallel run end theirs.
    fn stop(&mut self, reason: anyhow::Error) -> anyhow::Error {
        let saved = self.save();
        // Best effort: ranks that are gone already (a worker that died) need no telling.
        let _ = self.trainer.end_run();
        match saved {
            Ok(()) => reason,
            Err(error) => error.context("stopping"),
        }
    }

    /// The trainer, once the epochs have run, to export from.
    pub fn into_trainer(self) -> Trainer {
        self.trainer
    }
}

/// The seed of the file list's shuffle (RVC's `filelist.py`), the configuration's.
fn seed(setup: &Setup) -> u64 {
    setup.config.train.seed as u64
}
