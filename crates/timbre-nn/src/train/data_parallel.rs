//! Data-parallel training over a c10d process group (`timbre_torch_ext::distributed`), with the
//! semantics of torch's `DistributedDataParallel` as RVC's `train.py` uses it and the numbers of
//! one process training the combined batch: each rank steps on its share of every batch, padded
//! to the combined batch's lengths; the random draws are those of the combined batch (every
//! rank draws them all from the same seeded generator and keeps its own rows); the KL loss is
//! normalised by the combined batch's frames; gradients are averaged in buckets of at most
//! 25 MB (DDP's `bucket_cap_mb`), after the backward pass rather than overlapped with it (tch's
//! `run_backward` has no per-parameter hooks; docs/PERFORMANCE.md measures the all-reduce's
//! share of the step). A rank's failure in a phase of the step is announced to the others
//! before they all-reduce, so that every rank ends the step together: an out-of-memory one
//! lowers the batch on all of them.

use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, ensure};
use tch::{Device, Kind, Tensor};
use timbre_torch_ext::distributed::ProcessGroup;

use super::batch::Batch;
use crate::synthesizer::{TrainableSynthesizer, TrainingNoise};
use crate::torch_errors::{is_out_of_memory, reports_out_of_memory, torch_panic_message};

/// Gradients travel in flat buckets of at most this many bytes.
const BUCKET_BYTES: i64 = 25 << 20;

/// The failure codes a rank announces after a phase of the step.
const SUCCEEDED: f64 = 0.0;
const FAILED: f64 = 1.0;
const OUT_OF_MEMORY: f64 = 2.0;

/// Another rank failed in this step, so this one ended the step too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerFailure {
    /// The failed rank.
    pub rank: usize,
    /// It ran out of memory (every rank then retries with a smaller batch).
    pub out_of_memory: bool,
}

impl fmt::Display for PeerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.out_of_memory {
            true => write!(f, "rank {} ran out of memory in this step", self.rank),
            false => write!(f, "rank {} failed in this step", self.rank),
        }
    }
}

impl std::error::Error for PeerFailure {}

/// Rank 0 ended the run (stopped, finished early or failed outside a step): the other ranks
/// end theirs without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnded;

impl fmt::Display for RunEnded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank 0 ended the run")
    }
}

impl std::error::Error for RunEnded {}

/// A trainer's place in a process group.
pub struct DataParallel {
    group: Arc<ProcessGroup>,
    device: Device,
    all_reduced: Cell<AllReduced>,
}

/// What the gradients' all-reduces cost since the trainer joined its group.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AllReduced {
    /// Seconds in them.
    pub seconds: f64,
    /// Bytes of gradients they averaged.
    pub bytes: u64,
}

/// What a rank tells the others of its batch at the start of a step.
struct RankBatch {
    /// It steps (rank 0 sends false when it ends the run).
    stepping: bool,
    items: i64,
    phone_frames: i64,
    spec_frames: i64,
    wave_samples: i64,
    /// Its spectrogram frames, for the combined batch's KL denominator.
    spec_lengths_total: i64,
}

const RANK_BATCH_FIELDS: usize = 6;

/// What every rank learns at the start of a step.
pub(super) struct StepPlan {
    /// This rank's batch, padded to the combined batch's lengths.
    pub batch: Batch,
    /// The combined batch's random draws, this rank's rows of them.
    pub noise: TrainingNoise,
    /// The combined batch's spectrogram frames over the ranks: the KL loss's denominator, so
    /// that the ranks' average is the combined batch's loss.
    pub kl_frames: Tensor,
}

impl DataParallel {
    /// A trainer on `device` in `group`.
    pub fn new(group: Arc<ProcessGroup>, device: Device) -> Self {
        Self {
            group,
            device,
            all_reduced: Cell::new(AllReduced::default()),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.group.rank()
    }

    fn world(&self) -> usize {
        self.group.world()
    }

    /// Every rank's `parameters` become rank 0's, as DDP does at its construction.
    pub(super) fn broadcast_parameters(&self, parameters: &[Tensor]) -> Result<()> {
        tch::no_grad(|| {
            for bucket in buckets(parameters) {
                let flat = flatten(bucket);
                self.group.broadcast_(&flat, 0)?;
                unflatten(&flat, bucket);
            }
            Ok(())
        })
    }

    /// The exchange that starts a step: every rank's batch shape, and whether rank 0 ended the
    /// run. `batch` is None on rank 0 when it ends the run ([`RunEnded`] on the others).
    fn exchange_lengths(&self, batch: Option<&Batch>) -> Result<Vec<RankBatch>> {
        let (rank, world) = (self.rank(), self.world());
        let mine = match batch {
            Some(batch) => [
                1,
                batch.size(),
                batch.phone.size()[1],
                batch.spec.size()[2],
                batch.wave.size()[2],
                batch.spec_lengths.sum(Kind::Int64).int64_value(&[]),
            ],
            None => [0; RANK_BATCH_FIELDS],
        };
        let mut slots = vec![0i64; RANK_BATCH_FIELDS * world];
        slots[RANK_BATCH_FIELDS * rank..RANK_BATCH_FIELDS * (rank + 1)].copy_from_slice(&mine);
        let exchanged = Tensor::from_slice(&slots).to_device(self.device);
        self.group.sum_(&exchanged)?;
        let slots = Vec::<i64>::try_from(exchanged.to_device(Device::Cpu))?;
        let ranks: Vec<RankBatch> = slots
            .chunks(RANK_BATCH_FIELDS)
            .map(|c| RankBatch {
                stepping: c[0] != 0,
                items: c[1],
                phone_frames: c[2],
                spec_frames: c[3],
                wave_samples: c[4],
                spec_lengths_total: c[5],
            })
            .collect();
        if !ranks[0].stepping {
            return Err(RunEnded.into());
        }
        Ok(ranks)
    }

    /// Rank 0's end of the run, which the other ranks learn at the start of their next step.
    pub fn end_run(&self) -> Result<()> {
        match self.exchange_lengths(None) {
            Err(error) if error.is::<RunEnded>() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Learns the combined batch's shape and pads this rank's batch to it; draws the combined
    /// batch's noise.
    pub(super) fn plan_step(
        &self,
        batch: &Batch,
        generator: &TrainableSynthesizer,
    ) -> Result<StepPlan> {
        let ranks = self.exchange_lengths(Some(batch))?;
        let longest = |field: fn(&RankBatch) -> i64| ranks.iter().map(field).max().unwrap_or(0);
        let sizes: Vec<i64> = ranks.iter().map(|r| r.items).collect();
        ensure!(
            sizes.iter().all(|&size| size == sizes[0]),
            "the ranks' batches differ in size ({sizes:?}): their samplers disagree"
        );
        let phone_frames = longest(|r| r.phone_frames);
        let spec_frames = longest(|r| r.spec_frames);
        let wave_samples = longest(|r| r.wave_samples);
        let batch = batch.padded_to(phone_frames, spec_frames, wave_samples);
        let local = batch.size();
        let combined = local * self.world() as i64;
        let start = local * self.rank() as i64;
        let device = batch.spec.device();
        let draws = generator
            .training_draws(combined, spec_frames)
            .into_iter()
            .map(|draw| {
                let options = (Kind::Float, device);
                let all = match draw.normal {
                    true => Tensor::randn(&draw.shape, options),
                    false => Tensor::rand(&draw.shape, options),
                };
                match draw.per_item {
                    true => all.narrow(0, start, local),
                    false => all,
                }
            })
            .collect();
        let frames: i64 = ranks.iter().map(|r| r.spec_lengths_total).sum();
        let kl_frames =
            Tensor::from((frames as f64 / self.world() as f64) as f32).to_device(device);
        Ok(StepPlan {
            batch,
            noise: TrainingNoise::Given(draws),
            kl_frames,
        })
    }

    /// Runs `phase` on this rank, then tells every rank how it went on each, with the average
    /// over the ranks of the `count` values `values` reads from its result. A rank that failed
    /// fails here as it did; the others fail with [`PeerFailure`].
    pub(super) fn phase<T>(
        &self,
        count: usize,
        phase: impl FnOnce() -> Result<T>,
        values: impl FnOnce(&T) -> Vec<f64>,
    ) -> Result<(T, Vec<f64>)> {
        let outcome = catch_unwind(AssertUnwindSafe(phase));
        let (rank, world) = (self.rank(), self.world());
        let mut slots = vec![0.0; world + count];
        slots[rank] = match &outcome {
            Ok(Ok(result)) => {
                let values = values(result);
                assert_eq!(values.len(), count, "a phase reports its count of values");
                slots[world..].copy_from_slice(&values);
                SUCCEEDED
            }
            Ok(Err(error)) if error.chain().any(is_out_of_memory) => OUT_OF_MEMORY,
            Err(panic)
                if torch_panic_message(&**panic).is_some_and(|m| reports_out_of_memory(&m)) =>
            {
                OUT_OF_MEMORY
            }
            _ => FAILED,
        };
        let exchanged = Tensor::from_slice(&slots).to_device(self.device);
        self.group.sum_(&exchanged)?;
        let slots = Vec::<f64>::try_from(exchanged.to_device(Device::Cpu))?;
        let result = match outcome {
            Ok(result) => result?,
            Err(panic) => resume_unwind(panic),
        };
        if let Some(failed) = slots[..world].iter().position(|&code| code != SUCCEEDED) {
            return Err(PeerFailure {
                rank: failed,
                out_of_memory: slots[failed] == OUT_OF_MEMORY,
            }
            .into());
        }
        let averages = slots[world..].iter().map(|v| v / world as f64).collect();
        Ok((result, averages))
    }

    /// What the gradients' all-reduces cost so far.
    pub fn all_reduced(&self) -> AllReduced {
        self.all_reduced.get()
    }

    /// Every rank's gradients become their average over the ranks.
    pub(super) fn average_gradients(&self, gradients: &[Tensor]) -> Result<()> {
        let started = Instant::now();
        let defined: Vec<Tensor> = gradients
            .iter()
            .filter(|g| g.defined())
            .map(Tensor::shallow_clone)
            .collect();
        tch::no_grad(|| {
            for bucket in buckets(&defined) {
                let mut flat = flatten(bucket);
                self.group.sum_(&flat)?;
                let _ = flat.g_div_scalar_(self.world() as f64);
                unflatten(&flat, bucket);
            }
            Ok::<_, anyhow::Error>(())
        })?;
        let bytes: i64 = defined
            .iter()
            .map(|g| g.numel() as i64 * g.kind().elt_size_in_bytes() as i64)
            .sum();
        let so_far = self.all_reduced.get();
        self.all_reduced.set(AllReduced {
            seconds: so_far.seconds + started.elapsed().as_secs_f64(),
            bytes: so_far.bytes + bytes as u64,
        });
        Ok(())
    }
}

/// Consecutive runs of `tensors` of one kind, each at most [`BUCKET_BYTES`] (or one tensor).
fn buckets(tensors: &[Tensor]) -> Vec<&[Tensor]> {
    let mut buckets = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, tensor) in tensors.iter().enumerate() {
        let size = tensor.numel() as i64 * tensor.kind().elt_size_in_bytes() as i64;
        let other_kind = i > start && tensor.kind() != tensors[start].kind();
        if i > start && (bytes + size > BUCKET_BYTES || other_kind) {
            buckets.push(&tensors[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < tensors.len() {
        buckets.push(&tensors[start..]);
    }
    buckets
}

fn flatten(bucket: &[Tensor]) -> Tensor {
    let flat: Vec<Tensor> = bucket.iter().map(|t| t.reshape([-1])).collect();
    Tensor::cat(&flat, 0)
}

fn unflatten(flat: &Tensor, bucket: &[Tensor]) {
    let mut offset = 0;
    for tensor in bucket {
        let count = tensor.numel() as i64;
        tensor
            .shallow_clone()
            .copy_(&flat.narrow(0, offset, count).view_as(tensor));
        offset += count;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use timbre_torch_ext::distributed::{GroupBackend, Rendezvous};

    use super::*;

    /// Two ranks on threads (these collectives draw nothing from libtorch's generator).
    fn two_ranks<T: Send + 'static>(
        rank_does: impl Fn(DataParallel) -> T + Send + Sync + 'static,
    ) -> Vec<T> {
        let port = timbre_test_support::free_port();
        let rank_does = Arc::new(rank_does);
        let threads: Vec<_> = (0..2)
            .map(|rank| {
                let rank_does = Arc::clone(&rank_does);
                std::thread::spawn(move || {
                    let rendezvous =
                        Rendezvous::on_this_machine(port, rank, 2, Duration::from_secs(20));
                    let group = ProcessGroup::join(&rendezvous, GroupBackend::Gloo).unwrap();
                    rank_does(DataParallel::new(Arc::new(group), Device::Cpu))
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    #[test]
    fn an_out_of_memory_rank_ends_the_phase_on_every_rank_and_the_others_average() {
        let outcomes = two_ranks(|parallel| {
            let rank = parallel.rank();
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                parallel.phase(
                    2,
                    || {
                        if rank == 1 {
                            // What tch's infallible calls panic with when libtorch's allocator fails.
                            panic!("Torch(\"CUDA out of memory. Tried to allocate 2.00 GiB\")");
                        }
                        Ok(rank)
                    },
                    |_| vec![1.0, 3.0],
                )
            }));
            // The phase after it: every rank averages again, none waits on a failed one.
            let next = parallel
                .phase(1, || Ok(()), |_| vec![rank as f64])
                .unwrap()
                .1;
            (outcome, next)
        });
        let (zero, one) = (&outcomes[0], &outcomes[1]);
        let peer = zero.0.as_ref().unwrap().as_ref().unwrap_err();
        assert_eq!(
            peer.downcast_ref::<PeerFailure>(),
            Some(&PeerFailure {
                rank: 1,
                out_of_memory: true
            })
        );
        assert_eq!(peer.to_string(), "rank 1 ran out of memory in this step");
        assert!(one.0.is_err(), "rank 1's own panic goes on unwinding");
        assert_eq!((zero.1.clone(), one.1.clone()), (vec![0.5], vec![0.5]));
    }

    #[test]
    fn rank_zeros_end_of_the_run_reaches_the_others_next_step() {
        let outcomes = two_ranks(|parallel| match parallel.rank() {
            0 => parallel.end_run().map(|()| "ended".to_string()),
            _ => {
                let zeros = |shape: &[i64]| Tensor::zeros(shape, (Kind::Float, Device::Cpu));
                let lengths = Tensor::from_slice(&[4i64]);
                let batch = Batch {
                    phone: zeros(&[1, 4, 768]),
                    phone_lengths: lengths.copy(),
                    pitch: None,
                    pitchf: None,
                    spec: zeros(&[1, 257, 4]),
                    spec_lengths: lengths.copy(),
                    wave: zeros(&[1, 1, 640]),
                    wave_lengths: lengths * 160,
                    sid: Tensor::zeros([1], (Kind::Int64, Device::Cpu)),
                };
                let stepped = parallel.exchange_lengths(Some(&batch));
                stepped.map(|_| "stepped".to_string())
            }
        });
        assert_eq!(outcomes[0].as_ref().unwrap(), "ended");
        let other = outcomes[1].as_ref().unwrap_err();
        assert!(other.downcast_ref::<RunEnded>().is_some(), "{other:#}");
    }

    #[test]
    fn buckets_hold_at_most_25_mb_of_one_kind() {
        let tensors = [
            Tensor::zeros([4 << 20], (Kind::Float, Device::Cpu)),
            Tensor::zeros([2 << 20], (Kind::Float, Device::Cpu)),
            Tensor::zeros([1 << 20], (Kind::Float, Device::Cpu)),
            Tensor::zeros([8], (Kind::Double, Device::Cpu)),
            Tensor::zeros([8 << 20], (Kind::Float, Device::Cpu)),
        ];
        let sizes: Vec<usize> = buckets(&tensors).iter().map(|b| b.len()).collect();
        // 16 + 8 MB, then 4 MB alone before the other kind, the double, then the 32 MB one alone.
        assert_eq!(sizes, [2, 1, 1, 1]);
    }
}
