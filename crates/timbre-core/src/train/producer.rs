//! Batches loaded ahead of the trainer: producer threads load items and assemble batches, and
//! hand them over in the planned order through a queue a few batches deep, so the device
//! seldom waits on the disk or the spectrograms. A profile says where the time goes.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use timbre_nn::train::batch::Batch;

use super::data::{ItemLoader, TrainingData, collate};

/// Batches ready and waiting for the trainer.
const QUEUE_DEPTH: usize = 3;
/// How often a thread waiting for its turn looks at a cancel flag set from outside.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Seconds spent in each stage, summed over threads and batches.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stages {
    /// Reading audio and features, spectrograms (cached or computed), the length cuts.
    pub load: Duration,
    /// Padding items into batches.
    pub assemble: Duration,
    /// The consumer blocked on an empty queue: the device starved.
    pub waited: Duration,
    /// Batches assembled.
    pub batches: usize,
}

/// A handle on the stages, readable from any thread while batches are produced; give the
/// same one to each epoch's producer to sum a whole run.
#[derive(Debug, Clone, Default)]
pub struct Profile(Arc<Mutex<Stages>>);

impl Profile {
    /// The time summed so far.
    pub fn stages(&self) -> Stages {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, update: impl FnOnce(&mut Stages)) {
        update(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// How a [`BatchProducer`] runs.
pub struct ProducerOptions {
    /// Loading threads (at least one runs); 2 by default.
    pub threads: usize,
    /// Where the threads add their time; share one to sum several producers.
    pub profile: Profile,
    /// Set from anywhere to stop the threads (a job's cancellation); they also stop when the
    /// producer is dropped, which leaves this flag as it is.
    pub cancel: Arc<AtomicBool>,
}

impl Default for ProducerOptions {
    fn default() -> Self {
        Self {
            threads: 2,
            profile: Profile::default(),
            cancel: Arc::default(),
        }
    }
}

/// The planned batches (piece indices, e.g. `TrainingData::epoch_batches`), loaded by
/// background threads; iterating gives them in the plan's order, each `Err` naming what could
/// not be read.
pub struct BatchProducer {
    receiver: Option<Receiver<Result<Batch>>>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

type Plan = Box<dyn Iterator<Item = Vec<usize>> + Send>;

struct Shared {
    /// The next batch to hand out to a thread, and its number.
    plan: Mutex<(usize, Plan)>,
    /// The number of the batch whose turn it is to enter the queue.
    turn: Mutex<usize>,
    turn_passed: Condvar,
    /// Set by the producer's drop, or when the queue is gone.
    stopped: AtomicBool,
    cancel: Arc<AtomicBool>,
    profile: Profile,
}

impl BatchProducer {
    /// Starts the threads loading `plan`'s batches from `data`.
    pub fn start<P>(data: Arc<TrainingData>, plan: P, options: ProducerOptions) -> Self
    where
        P: IntoIterator<Item = Vec<usize>>,
        P::IntoIter: Send + 'static,
    {
        let (sender, receiver) = sync_channel(QUEUE_DEPTH);
        let shared = Arc::new(Shared {
            plan: Mutex::new((0, Box::new(plan.into_iter()))),
            turn: Mutex::new(0),
            turn_passed: Condvar::new(),
            stopped: AtomicBool::new(false),
            cancel: options.cancel,
            profile: options.profile,
        });
        let threads = (0..options.threads.max(1))
            .map(|i| {
                let (data, shared, sender) = (data.clone(), shared.clone(), sender.clone());
                std::thread::Builder::new()
                    .name(format!("train-data-{i}"))
                    .spawn(move || produce(&data, &shared, &sender))
                    .expect("cannot start a training data thread")
            })
            .collect();
        Self {
            receiver: Some(receiver),
            shared,
            threads,
        }
    }

    /// Where this producer's threads add their time.
    pub fn profile(&self) -> &Profile {
        &self.shared.profile
    }
}

impl Iterator for BatchProducer {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.shared.cancelled() {
            return None;
        }
        let started = Instant::now();
        let batch = self.receiver.as_ref()?.recv().ok();
        let waited = started.elapsed();
        self.shared.profile.add(|s| s.waited += waited);
        batch
    }
}

impl Drop for BatchProducer {
    fn drop(&mut self) {
        self.shared.stop();
        // Unblocks threads waiting for room in the queue.
        self.receiver = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn cancelled(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed)
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        self.turn_passed.notify_all();
    }

    fn next_batch(&self) -> Option<(usize, Vec<usize>)> {
        let mut plan = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        let pieces = plan.1.next()?;
        plan.0 += 1;
        Some((plan.0 - 1, pieces))
    }

    /// Waits until batch `number` may enter the queue; false when cancelled first.
    fn wait_turn(&self, number: usize) -> bool {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        while *turn != number {
            if self.cancelled() {
                return false;
            }
            turn = self
                .turn_passed
                .wait_timeout(turn, CANCEL_POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        !self.cancelled()
    }

    fn pass_turn(&self) {
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.turn_passed.notify_all();
    }
}

fn produce(data: &TrainingData, shared: &Shared, sender: &SyncSender<Result<Batch>>) {
    let loader = data.loader();
    while !shared.cancelled() {
        let Some((number, pieces)) = shared.next_batch() else {
            return;
        };
        // A panic would leave the turn unpassed and the trainer waiting forever.
        let batch = catch_unwind(AssertUnwindSafe(|| {
            build(&loader, shared, &pieces, data.speaker_id())
        }))
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Some(Err(anyhow!("loading pieces {pieces:?} failed: {message}")))
        });
        let Some(batch) = batch else {
            return;
        };
        if !shared.wait_turn(number) {
            return;
        }
        let sent = sender.send(batch).is_ok();
        shared.pass_turn();
        if !sent {
            shared.stop();
            return;
        }
    }
}

/// The batch of `pieces`; `None` when cancelled on the way.
fn build(
    loader: &ItemLoader,
    shared: &Shared,
    pieces: &[usize],
    speaker_id: i64,
) -> Option<Result<Batch>> {
    let mut items = Vec::with_capacity(pieces.len());
    for &piece in pieces {
        if shared.cancelled() {
            return None;
        }
        let started = Instant::now();
        let item = loader.item(piece);
        let elapsed = started.elapsed();
        shared.profile.add(|s| s.load += elapsed);
        match item {
            Ok(item) => items.push(item),
            Err(error) => return Some(Err(error)),
        }
    }
    let started = Instant::now();
    let batch = collate(&items, speaker_id);
    let elapsed = started.elapsed();
    shared.profile.add(|s| {
        s.assemble += elapsed;
        s.batches += 1;
    });
    Some(Ok(batch))
}
/// Threads loading batches: half the cores, 2 to 8. At batch 256 on an H100 two threads kept
/// the GPU waiting 15 % of an epoch.
pub fn training_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| (n.get() / 2).clamp(2, 8))
}
