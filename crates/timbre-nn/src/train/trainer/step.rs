//! The training step, alone or as one rank of a data-parallel run.

use std::sync::Arc;

use anyhow::Result;
use tch::{Reduction, Tensor};
use timbre_torch_ext::distributed::ProcessGroup;

use super::{StepLosses, Trainer};
use crate::synthesizer::{TrainingBatch, TrainingNoise, TrainingOutput, slice_segments};
use crate::train::batch::Batch;
use crate::train::data_parallel::{AllReduced, DataParallel, StepPlan};
use crate::train::losses::{
    discriminator_loss, feature_loss, generator_loss, kl_loss, kl_loss_over,
};

impl Trainer {
    /// Trains as `group`'s rank from now on: this rank's weights become rank 0's, and each step
    /// is this rank's share of the combined batch (see `data_parallel`).
    pub fn join_group(&mut self, group: Arc<ProcessGroup>) -> Result<()> {
        let parallel = DataParallel::new(group, self.generator.device());
        let mut parameters: Vec<Tensor> = self
            .generator
            .parameters()
            .iter()
            .map(|(_, t)| t.shallow_clone())
            .collect();
        parameters.extend(self.discriminator.parameters());
        parallel.broadcast_parameters(&parameters)?;
        self.parallel = Some(parallel);
        Ok(())
    }

    /// What the gradients' all-reduces cost since the trainer joined its group; None alone.
    pub fn all_reduced(&self) -> Option<AllReduced> {
        self.parallel.as_ref().map(DataParallel::all_reduced)
    }

    /// Rank 0's end of a data-parallel run, which ends the other ranks' runs at their next
    /// step ([`RunEnded`]); nothing alone.
    pub fn end_run(&self) -> Result<()> {
        match &self.parallel {
            Some(parallel) if parallel.rank() == 0 => parallel.end_run(),
            _ => Ok(()),
        }
    }

    /// One optimizer step of each network on `batch` (already on the trainer's device); in a
    /// group, this rank's share of the combined batch, and the combined batch's losses.
    pub fn step(&mut self, batch: &Batch) -> Result<StepLosses> {
        let plan = match &self.parallel {
            Some(parallel) => Some(parallel.plan_step(batch, &self.generator)?),
            None => None,
        };
        let padded;
        let (batch, noise, kl_frames) = match plan {
            Some(StepPlan {
                batch: planned,
                noise,
                kl_frames,
            }) => {
                padded = planned;
                (&padded, noise, Some(kl_frames))
            }
            None => (batch, TrainingNoise::Torch, None),
        };
        let parallel = self.parallel.as_ref();
        let range = crate::profile::range("generator forward and discriminator backward");
        let (pass, d_average) = in_phase(
            parallel,
            1,
            || self.discriminator_pass(batch, noise),
            |pass| vec![pass.d_total.double_value(&[])],
        )?;
        drop(range);
        let range = crate::profile::range("discriminator step");
        if let Some(parallel) = parallel {
            parallel.average_gradients(&pass.gradients)?;
        }
        let grad_norm_d = self.scaler.step(&mut self.optimizer_d, &pass.gradients)?;
        drop(range);
        let range = crate::profile::range("generator losses and backward");
        let ((losses, grads_g), g_averages) = in_phase(
            parallel,
            5,
            || self.generator_pass(&pass, kl_frames.as_ref()),
            |(losses, _)| losses.iter().map(|t| t.double_value(&[])).collect(),
        )?;
        drop(range);
        let range = crate::profile::range("generator step");
        if let Some(parallel) = parallel {
            parallel.average_gradients(&grads_g)?;
        }
        let grad_norm_g = self.scaler.step(&mut self.optimizer_g, &grads_g)?;
        self.scaler.update();
        self.global_step += 1;
        drop(range);
        let _range = crate::profile::range("losses to the host");
        let value = |t: &Tensor| t.double_value(&[]);
        let (d_total, [g_total, mel, kl, fm, adversarial]) = match parallel {
            Some(_) => (d_average[0], [0, 1, 2, 3, 4].map(|i| g_averages[i])),
            None => (value(&pass.d_total), losses.each_ref().map(value)),
        };
        Ok(StepLosses {
            g_total,
            d_total,
            mel,
            kl,
            fm,
            adversarial,
            grad_norm_g: value(&grad_norm_g),
            grad_norm_d: value(&grad_norm_d),
        })
    }

    /// The generator's forward and the discriminator's loss and gradients on the detached
    /// slice.
    fn discriminator_pass(&self, batch: &Batch, noise: TrainingNoise) -> Result<DiscriminatorPass> {
        let precision = self.precision;
        let segment_frames = self.config.segment_frames();
        let hop = self.config.data.hop_length;
        let (output, y_mel, y_hat_mel, wave) = precision.autocast(|| {
            let output = self.generator.forward(
                &TrainingBatch {
                    phone: &batch.phone,
                    phone_lengths: &batch.phone_lengths,
                    pitch: batch.pitch.as_ref().filter(|_| self.f0),
                    pitchf: batch.pitchf.as_ref().filter(|_| self.f0),
                    spec: &batch.spec,
                    spec_lengths: &batch.spec_lengths,
                    sid: &batch.sid,
                },
                noise,
            )?;
            let mel = self.spectrograms.mel_of_linear(&batch.spec);
            let y_mel = slice_segments(&mel, &output.ids_slice, segment_frames);
            let y_hat_mel = self.spectrograms.mel(&output.audio.squeeze_dim(1));
            let wave = slice_segments(
                &batch.wave,
                &(&output.ids_slice * hop),
                self.config.train.segment_size,
            );
            Ok((output, y_mel, y_hat_mel, wave))
        })?;
        let scores =
            precision.autocast(|| Ok(self.discriminator.forward(&wave, &output.audio.detach())))?;
        let discriminator = discriminator_loss(&scores.real_scores, &scores.generated_scores);
        let gradients = Tensor::run_backward(
            &[self.scaler.scale_loss(&discriminator.total)],
            &self.discriminator.parameters(),
            false,
            false,
        );
        Ok(DiscriminatorPass {
            output,
            y_mel,
            y_hat_mel,
            wave,
            d_total: discriminator.total,
            gradients,
        })
    }

    /// The generator's losses `[g_total, mel, kl, fm, adversarial]` on the updated
    /// discriminator, and its gradients; the KL over `kl_frames` in a group.
    fn generator_pass(
        &self,
        pass: &DiscriminatorPass,
        kl_frames: Option<&Tensor>,
    ) -> Result<([Tensor; 5], Vec<Tensor>)> {
        let output = &pass.output;
        let judged = self
            .precision
            .autocast(|| Ok(self.discriminator.forward(&pass.wave, &output.audio)))?;
        let mel = pass.y_mel.l1_loss(&pass.y_hat_mel, Reduction::Mean) * self.config.train.c_mel;
        let kl = match kl_frames {
            Some(frames) => kl_loss_over(
                &output.z_p,
                &output.logs_q,
                &output.m_p,
                &output.logs_p,
                &output.y_mask,
                frames,
            ),
            None => kl_loss(
                &output.z_p,
                &output.logs_q,
                &output.m_p,
                &output.logs_p,
                &output.y_mask,
            ),
        } * self.config.train.c_kl;
        let fm = feature_loss(&judged.real_features, &judged.generated_features);
        let (adversarial, _) = generator_loss(&judged.generated_scores);
        let g_total = &adversarial + &fm + &mel + &kl;
        let generator_parameters: Vec<Tensor> = self
            .generator
            .parameters()
            .iter()
            .map(|(_, t)| t.shallow_clone())
            .collect();
        let gradients = Tensor::run_backward(
            &[self.scaler.scale_loss(&g_total)],
            &generator_parameters,
            false,
            false,
        );
        Ok(([g_total, mel, kl, fm, adversarial], gradients))
    }
}

/// What the discriminator's half of a step leaves for the generator's.
struct DiscriminatorPass {
    output: TrainingOutput,
    y_mel: Tensor,
    y_hat_mel: Tensor,
    wave: Tensor,
    d_total: Tensor,
    gradients: Vec<Tensor>,
}

/// `phase` alone, or as a phase of a data-parallel step that every rank ends together, with the
/// ranks' average of `count` values read from its result (none alone).
fn in_phase<T>(
    parallel: Option<&DataParallel>,
    count: usize,
    phase: impl FnOnce() -> Result<T>,
    values: impl FnOnce(&T) -> Vec<f64>,
) -> Result<(T, Vec<f64>)> {
    match parallel {
        Some(parallel) => parallel.phase(count, phase, values),
        None => Ok((phase()?, Vec::new())),
    }
}
