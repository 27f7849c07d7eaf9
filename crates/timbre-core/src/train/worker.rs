//! A further rank of a data-parallel training (`timbre train worker` with a rank above 0): it
//! reads the training's plan and dataset from the library, joins the group, and steps on its
//! share of every batch as rank 0's job does (`session`), starting each session from the
//! checkpoint rank 0 resumed, halving the batch with it when a rank runs out of memory, and
//! ending when the epochs are done or rank 0 ends the run. It writes nothing.

use std::sync::Arc;

use anyhow::{Context, Result};
use tch::{Device, Tensor};
use timbre_nn::device::Precision;
use timbre_nn::train::trainer::{RunEnded, Trainer};
use timbre_torch_ext::distributed::{GroupBackend, ProcessGroup, Rendezvous};

use super::batch_size::{halved, is_out_of_memory};
use super::data::TrainingData;
use super::files::TrainingFiles;
use super::producer::{BatchProducer, ProducerOptions, training_threads};
use super::request::plan_of;
use super::sampler::Shard;
use super::step::guarded_step;
use crate::db::trainings;
use crate::library::Library;

/// The share of `group`'s rank, as the sampler takes it.
pub fn shard_of(group: &ProcessGroup) -> Shard {
    Shard {
        rank: group.rank(),
        replicas: group.world(),
    }
}

/// Every rank's batch size becomes rank 0's `batch_size` (the others' is ignored).
pub fn share_batch_size(group: &ProcessGroup, device: Device, batch_size: i64) -> Result<i64> {
    let shared = Tensor::from_slice(&[batch_size]).to_device(device);
    group.broadcast_(&shared, 0)?;
    Ok(shared.int64_value(&[0]))
}

/// Trains as `rendezvous`'s rank (above 0) of training `training_id` on `device`.
pub fn run(
    library: &Library,
    training_id: i64,
    rendezvous: &Rendezvous,
    device: Device,
) -> Result<()> {
    let training = trainings::require(&library.conn(), training_id)?;
    let plan = plan_of(&training)?;
    let config = plan.config()?;
    let dataset_id = training
        .dataset_id
        .with_context(|| format!("training {training_id}: its dataset was deleted"))?;
    let dataset_dir = crate::dataset_layout::folder(library, dataset_id);
    let data = Arc::new(
        TrainingData::open_with(&dataset_dir, super::job::SPEAKER_ID, config.data)?
            .compute_spectrograms_on(device),
    );
    let precision = Precision::default_for(device)?;
    let group = Arc::new(ProcessGroup::join(
        rendezvous,
        GroupBackend::for_device(device),
    )?);
    let shard = shard_of(&group);
    let files = TrainingFiles::new(library.data_dir(), training_id, &training.name);
    let seed = config.train.seed as u64;
    let mut batch_size = share_batch_size(&group, device, 0)?;
    loop {
        // Rank 0 has settled the checkpoints folder and resumed from it.
        group.barrier(device)?;
        let mut trainer = Trainer::new(config.clone(), plan.f0, device, precision)?;
        let steps = data
            .epoch_batches(1, batch_size as usize, seed, shard)
            .len();
        trainer.resume(&files.checkpoints(), steps as i64)?;
        trainer.join_group(Arc::clone(&group))?;
        let mut epochs = || -> Result<()> {
            for epoch in trainer.epoch() + 1..=plan.request.epochs {
                let batches = data.epoch_batches(epoch as u64, batch_size as usize, seed, shard);
                let options = ProducerOptions {
                    threads: training_threads(),
                    ..ProducerOptions::default()
                };
                for batch in BatchProducer::start(Arc::clone(&data), batches, options) {
                    guarded_step(&mut trainer, &batch?.to_device(device))?;
                }
                trainer.finish_epoch();
            }
            Ok(())
        };
        match epochs() {
            Ok(()) => return Ok(()),
            Err(error) if error.downcast_ref::<RunEnded>().is_some() => return Ok(()),
            Err(error) if is_out_of_memory(&error) => batch_size = halved(batch_size)?,
            Err(error) => return Err(error),
        }
    }
}
