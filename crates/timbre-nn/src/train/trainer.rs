//! One RVC training run: the generator and the multi-period discriminator, their AdamW
//! optimizers and exponential schedule, the fp16 loss scaler, and the training step of rvc_next
//! 0.2.16 `engine/train/loop.py` `_train` (RVC's `train.py`): the discriminator's step on the
//! detached slice, then the generator's on mel L1 × c_mel + KL × c_kl + feature matching +
//! adversarial loss. Checkpoints are RVC's `G_<step>.pth` / `D_<step>.pth`, so RVC resumes ours
//! and we resume RVC's.

mod step;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tch::{Device, Tensor, nn};

use super::checkpoint::{read_training_checkpoint, write_training_checkpoint};
pub use super::checkpoint_pairs::{checkpoint_steps, generator_checkpoint};
use super::checkpoint_pairs::{latest_checkpoint_pair, remove_unfinished_saves};
use super::config::TrainingConfig;
use super::data_parallel::DataParallel;
pub use super::data_parallel::{AllReduced, PeerFailure, RunEnded};
use super::discriminator::{DiscriminatorVersion, MultiPeriodDiscriminator};
use super::optimizer::{AdamW, AdamWConfig, AdamWKernel, ExponentialLr};
use super::scaler::GradScaler;
use super::spectrogram::Spectrograms;
use crate::checkpoint::{Value, read_torch_file};
use crate::device::Precision;
use crate::export::{RvcModelMeta, Trained, export_rvc_model};
use crate::synthesizer::{Synthesizer, TrainableSynthesizer};

/// The losses of one step (as rvc-next logs them) and the gradients' norms.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct StepLosses {
    /// The generator's loss: `adversarial + fm + mel + kl`.
    pub g_total: f64,
    /// The discriminator's least-squares GAN loss, summed over sub-discriminators.
    pub d_total: f64,
    /// Mel-spectrogram L1 loss, already weighted by `c_mel`.
    pub mel: f64,
    /// KL loss between posterior and prior, already weighted by `c_kl`.
    pub kl: f64,
    /// Feature-matching loss over the discriminator's feature maps.
    pub fm: f64,
    /// The generator's least-squares GAN loss.
    pub adversarial: f64,
    /// L2 norm of all the generator's gradients, unscaled; infinite if the step was skipped.
    pub grad_norm_g: f64,
    /// L2 norm of all the discriminator's gradients, unscaled; infinite if the step was skipped.
    pub grad_norm_d: f64,
}

/// The key beside RVC's four in our `G_<step>.pth` that keeps the exact step count, so a run
/// stopped within an epoch resumes counting where it stopped (RVC's loaders ignore it).
const GLOBAL_STEP: &str = "global_step";

/// One training run: both networks, their optimizers and schedule, the loss scaler, and the counts.
pub struct Trainer {
    config: TrainingConfig,
    f0: bool,
    generator: TrainableSynthesizer,
    // The discriminator's variables live here; `discriminator` holds handles to them.
    _discriminator_vars: nn::VarStore,
    discriminator: MultiPeriodDiscriminator,
    optimizer_g: AdamW,
    optimizer_d: AdamW,
    schedule: ExponentialLr,
    scaler: GradScaler,
    spectrograms: Spectrograms,
    precision: Precision,
    /// Epochs finished (the `iteration` RVC saves) and optimizer steps taken.
    epoch: i64,
    global_step: i64,
    /// A checkpoint step that pruning keeps however old (the judge's recommended one).
    kept_step: Option<i64>,
    /// The process group, when this is one rank of a data-parallel run.
    parallel: Option<DataParallel>,
}

impl Trainer {
    /// A fresh run: both networks initialised from `config.train.seed`, as RVC seeds its run.
    pub fn new(
        config: TrainingConfig,
        f0: bool,
        device: Device,
        precision: Precision,
    ) -> Result<Self> {
        if precision == Precision::BFloat16 {
            bail!("training runs in fp32, or fp16 on CUDA; bf16 is not available");
        }
        if precision == Precision::Float16 && !device.is_cuda() {
            bail!("fp16 training needs CUDA: train in fp32 on the CPU");
        }
        tch::manual_seed(config.train.seed);
        let generator = TrainableSynthesizer::new(&config.model, &config.version, f0, device)?;
        let vars = nn::VarStore::new(device);
        let version = match config.version.as_str() {
            "v1" => DiscriminatorVersion::V1,
            _ => DiscriminatorVersion::V2,
        };
        let discriminator =
            MultiPeriodDiscriminator::new(&vars.root(), version, config.discriminator_width);
        let adam = AdamWConfig {
            lr: config.train.learning_rate,
            betas: config.train.betas,
            eps: config.train.eps,
            ..AdamWConfig::default()
        };
        let generator_parameters = generator
            .parameters()
            .iter()
            .map(|(_, t)| t.shallow_clone())
            .collect();
        // torch's fused kernel on every device (AdamW(fused=True)): one launch per step where
        // the single-tensor path launches a dozen per parameter.
        let mut optimizer_g =
            AdamW::new(generator_parameters, adam).with_kernel(AdamWKernel::Fused);
        let mut optimizer_d =
            AdamW::new(discriminator.parameters(), adam).with_kernel(AdamWKernel::Fused);
        let schedule = ExponentialLr::new(&mut optimizer_g, config.train.lr_decay);
        ExponentialLr::new(&mut optimizer_d, config.train.lr_decay);
        Ok(Self {
            spectrograms: Spectrograms::new(config.data, device),
            config,
            f0,
            generator,
            _discriminator_vars: vars,
            discriminator,
            optimizer_g,
            optimizer_d,
            schedule,
            scaler: GradScaler::new(precision == Precision::Float16),
            precision,
            epoch: 0,
            global_step: 0,
            kept_step: None,
            parallel: None,
        })
    }

    /// Keeps the checkpoint pair of `step` when later saves prune old pairs (beside the newest
    /// ones they keep); None keeps none beyond those.
    pub fn keep_checkpoint(&mut self, step: Option<i64>) {
        self.kept_step = step;
    }

    /// The configuration the run trains with.
    pub fn config(&self) -> &TrainingConfig {
        &self.config
    }

    /// Whether the model has pitch (RVC's `f0`).
    pub fn f0(&self) -> bool {
        self.f0
    }

    /// Epochs finished, as RVC saves them under `iteration`.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// Optimizer steps taken, the `<step>` of `G_<step>.pth`.
    pub fn global_step(&self) -> i64 {
        self.global_step
    }

    /// The generator optimizer's current learning rate, after the per-epoch decay.
    pub fn learning_rate(&self) -> f64 {
        self.optimizer_g.lr()
    }

    /// Fine-tunes from pretrained bases (`f0G40k.pth`, `f0D40k.pth`, …): their weights only.
    pub fn load_pretrained(
        &mut self,
        generator: Option<&Path>,
        discriminator: Option<&Path>,
    ) -> Result<()> {
        if let Some(path) = generator {
            self.generator.load_checkpoint(path)?;
        }
        if let Some(path) = discriminator {
            let checkpoint = read_training_checkpoint(path)?;
            self.discriminator
                .load_weights(&checkpoint.model)
                .with_context(|| format!("{}: not this model's discriminator", path.display()))?;
        }
        Ok(())
    }

    /// Continues the run saved in `dir`: the newest `G_<n>.pth` that has its `D_<n>.pth`, with
    /// both optimizers' states, the loss scale, the epoch, and the step count ours save
    /// (`global_step`), else as RVC counts it (`epoch × steps_per_epoch`). `None` when `dir`
    /// holds no pair. What a save cut off left in `dir` goes first (`remove_unfinished_saves`):
    /// the run that resumes owns the folder.
    pub fn resume(&mut self, dir: &Path, steps_per_epoch: i64) -> Result<Option<i64>> {
        remove_unfinished_saves(dir)?;
        let Some((generator_path, discriminator_path)) = latest_checkpoint_pair(dir)? else {
            return Ok(None);
        };
        let root = read_torch_file(&generator_path)?;
        self.generator
            .load_checkpoint_value(&root, &generator_path)?;
        let optimizer = root.get("optimizer").with_context(|| {
            format!(
                "{}: no optimizer state to resume from",
                generator_path.display()
            )
        })?;
        self.optimizer_g
            .load_state_dict(optimizer, &generator_path)?;
        if let Some(scaler) = root.get("scaler") {
            self.scaler.load_state_dict(scaler);
        }
        let epoch = root
            .get("iteration")
            .and_then(Value::as_i64)
            .with_context(|| {
                format!(
                    "{}: no `iteration` (epoch) to resume from",
                    generator_path.display()
                )
            })?;
        let discriminator = read_training_checkpoint(&discriminator_path)?;
        self.discriminator.load_weights(&discriminator.model)?;
        let optimizer = discriminator.optimizer.with_context(|| {
            format!(
                "{}: no optimizer state to resume from",
                discriminator_path.display()
            )
        })?;
        self.optimizer_d
            .load_state_dict(&optimizer, &discriminator_path)?;
        self.epoch = epoch;
        self.global_step = root
            .get(GLOBAL_STEP)
            .and_then(Value::as_i64)
            .unwrap_or(epoch * steps_per_epoch);
        Ok(Some(epoch))
    }

    /// The end of an epoch: the learning rates decay.
    pub fn finish_epoch(&mut self) {
        self.schedule.step(&mut self.optimizer_g);
        self.schedule.step(&mut self.optimizer_d);
        self.epoch += 1;
    }

    /// Writes `G_<step>.pth` and `D_<step>.pth` into `dir` (each atomically, so a full disk
    /// or a kill leaves the previous pair valid), then removes all but the newest `keep` pairs
    /// and the one [`Trainer::keep_checkpoint`] names.
    /// A `G_<step>` whose `D_<step>` cannot be written is removed again.
    pub fn save_checkpoint(&self, dir: &Path, keep: usize) -> Result<(PathBuf, PathBuf)> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        let generator_path = dir.join(format!("G_{}.pth", self.global_step));
        let discriminator_path = dir.join(format!("D_{}.pth", self.global_step));
        let rate = self.config.train.learning_rate;
        let mut extra = vec![(GLOBAL_STEP.to_string(), Value::Int(self.global_step))];
        if self.scaler.is_enabled() {
            extra.push(("scaler".to_string(), self.scaler.state_dict()));
        }
        write_training_checkpoint(
            &generator_path,
            &self.generator.state_dict(),
            self.optimizer_g.state_dict(),
            rate,
            self.epoch,
            extra,
        )?;
        let discriminator_written = write_training_checkpoint(
            &discriminator_path,
            &self.discriminator.state_dict(),
            self.optimizer_d.state_dict(),
            rate,
            self.epoch,
            Vec::new(),
        );
        if let Err(error) = discriminator_written {
            // Half a pair is no checkpoint, only space taken, unless a `D_<step>` saved earlier
            // at this step (which the failed write left whole) completes it.
            if !discriminator_path.exists() {
                let _ = std::fs::remove_file(&generator_path);
            }
            return Err(error);
        }
        let old = checkpoint_steps(dir)?.into_iter().rev().skip(keep.max(1));
        for step in old.filter(|&step| Some(step) != self.kept_step) {
            for prefix in ["G", "D"] {
                let _ = std::fs::remove_file(dir.join(format!("{prefix}_{step}.pth")));
            }
        }
        Ok((generator_path, discriminator_path))
    }

    /// The inference model RVC exports (`savee`): fp16 weights, config and metadata, with
    /// Applio's entries for the voice `name`.
    pub fn export(&self, path: &Path, name: &str) -> Result<()> {
        let trained = Trained {
            epoch: self.epoch,
            step: self.global_step,
            model_name: name,
        };
        export_generator(
            &self.config,
            self.f0,
            trained,
            &self.generator.state_dict(),
            path,
        )
    }

    /// An inference model on a copy of the current weights, for previews.
    pub fn preview_model(&self) -> Result<Synthesizer> {
        self.generator.synthesizer()
    }
}

/// The inference model of a saved generator (`G_<step>.pth`, as RVC's `extract_small_model`
/// makes one), for a run of `config`, as the voice `name`; the epoch and step it names are the
/// checkpoint's.
pub fn export_checkpoint(
    config: &TrainingConfig,
    f0: bool,
    checkpoint: &Path,
    path: &Path,
    name: &str,
) -> Result<()> {
    let (generator, epoch, step) = read_generator(config, f0, checkpoint, Device::Cpu)?;
    let trained = Trained {
        epoch,
        step,
        model_name: name,
    };
    export_generator(config, f0, trained, &generator.state_dict(), path)
}

/// A saved generator (`G_<step>.pth`) of a run of `config` as an inference model on `device`,
/// for the checkpoint judge, and the epoch it was saved after.
pub fn checkpoint_synthesizer(
    config: &TrainingConfig,
    f0: bool,
    checkpoint: &Path,
    device: Device,
) -> Result<(Synthesizer, i64)> {
    let (generator, epoch, _) = read_generator(config, f0, checkpoint, device)?;
    Ok((generator.synthesizer()?, epoch))
}

fn read_generator(
    config: &TrainingConfig,
    f0: bool,
    checkpoint: &Path,
    device: Device,
) -> Result<(TrainableSynthesizer, i64, i64)> {
    let root = read_torch_file(checkpoint)?;
    let mut generator = TrainableSynthesizer::new(&config.model, &config.version, f0, device)?;
    generator.load_checkpoint_value(&root, checkpoint)?;
    let epoch = root.get("iteration").and_then(Value::as_i64).unwrap_or(0);
    let step = root.get(GLOBAL_STEP).and_then(Value::as_i64).unwrap_or(0);
    Ok((generator, epoch, step))
}

fn export_generator(
    config: &TrainingConfig,
    f0: bool,
    trained: Trained<'_>,
    state_dict: &[(String, Tensor)],
    path: &Path,
) -> Result<()> {
    let sr = format!("{}k", config.data.sampling_rate / 1000);
    let info = format!("{}epoch", trained.epoch);
    export_rvc_model(
        path,
        state_dict,
        &RvcModelMeta {
            config: &config.model,
            sr: &sr,
            f0,
            version: &config.version,
            info: &info,
            embedder: config.embedder,
            trained: Some(trained),
        },
    )
}
