//! The persistent job system. Jobs live in SQLite; workers claim them atomically, so the app and
//! the CLI can share one library. A job left running by a dead process is re-queued (resumable
//! kinds, flagged `recovered`: workers leave it until the user resumes or drops it) or marked
//! interrupted when the next job system starts; one that was running in
//! [`job_rows::MAX_CRASHES`] dead processes fails.

mod failure;
mod sampler;

pub use crate::db::jobs::JobKind;
pub use failure::{Failure, classify};

use crate::db::job_events::Level;
use crate::db::jobs::{self as job_rows, Claim, Job, JobState, Lane, Recovered};
use crate::db::{self, job_events};
use crate::error::ErrorReport;
use crate::library::{Library, Notification};
use crate::settings::Settings;
use anyhow::Result;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The error a job's run returns once the user asked to cancel it; the job ends cancelled.
#[derive(Debug, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

/// The jobs a background worker takes.
#[derive(Clone, Copy)]
enum Worker {
    /// The GPU lane's jobs; not the extraction jobs while they have a worker of their own.
    Gpu,
    /// The extraction jobs, while their device is apart.
    Extraction,
    Light,
}

/// What a job kind runs on, for `timbre doctor` to check on this machine and library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The HuBERT / ContentVec feature extractor in the models folder.
    Hubert,
    /// A usable device (the main one, or the extraction device where the kind runs there).
    Device,
    /// The RMVPE pitch model (the default pitch method).
    Rmvpe,
    /// Pretrained generator and discriminator bases.
    PretrainedBases,
    /// A RoFormer separation model.
    SeparationModel,
    /// The checkpoint judge's speaker encoder (Resemblyzer's GE2E weights).
    SpeakerEncoder,
}

/// A kind's needs: what it cannot run without, and what it uses when it is there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// What the kind cannot run without.
    pub required: &'static [Need],
    /// What the kind uses when it is there, and runs without otherwise.
    pub optional: &'static [Need],
}

/// Runs one kind of job: workers call [`JobHandler::run`] for each job of its kind they claim.
pub trait JobHandler: Send + Sync {
    /// The kind it runs; a system has one handler per kind.
    fn kind(&self) -> JobKind;
    /// What the kind runs on (see [`Need`]): nothing by default.
    fn needs(&self) -> Needs {
        Needs::default()
    }
    /// The lane its jobs are queued on: light by default.
    fn lane(&self) -> Lane {
        Lane::Light
    }
    /// Whether a run that was cut off can simply run again and pick up where it stopped.
    fn resumable(&self) -> bool {
        false
    }
    /// Whether it runs on the extraction device (see `timbre_core::devices`): with a device of
    /// its own, such jobs have a GPU-lane worker of their own too.
    fn runs_on_extraction_device(&self) -> bool {
        false
    }
    /// For a kind that runs on the extraction device: whether these settings make that device
    /// another GPU than the main one. The kind answers, as devices are libtorch's to know.
    fn extraction_device_apart(&self, _settings: &Settings) -> bool {
        false
    }
    /// Runs the job and returns its result as JSON; an error fails the attempt (retried when
    /// transient or out of memory, within the job's retries).
    fn run(&self, ctx: &JobContext) -> Result<Value>;
    /// Called after an out-of-memory failure, before the retry with a smaller batch.
    fn free_caches(&self) {}
}

/// What a running job sees of the system: progress, events, cancellation.
pub struct JobContext<'a> {
    system: &'a JobSystem,
    job: Mutex<Job>,
    last_progress_write: Mutex<Option<Instant>>,
}

const PROGRESS_WRITE_INTERVAL: Duration = Duration::from_millis(100);

impl JobContext<'_> {
    /// Row id of the running job.
    pub fn job_id(&self) -> i64 {
        self.snapshot().id
    }

    /// The library the job runs in.
    pub fn library(&self) -> &Library {
        &self.system.library
    }

    /// The job's parameters as `T`; an invalid-input error when they do not fit.
    pub fn params<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        let job = self.snapshot();
        serde_json::from_value(job.params).map_err(|e| {
            crate::error::invalid_input(format!("job {} has invalid parameters: {e}", job.id))
        })
    }

    /// 1.0 normally; halved after each out-of-memory retry, for jobs that batch.
    pub fn batch_scale(&self) -> f64 {
        self.snapshot().batch_scale
    }

    fn snapshot(&self) -> Job {
        self.job.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records progress (throttled) and fails with [`Cancelled`] once cancellation is asked for.
    pub fn progress(&self, fraction: f64, message: impl Into<String>) -> Result<()> {
        let message = message.into();
        let mut last = self
            .last_progress_write
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if fraction < 1.0 && last.is_some_and(|t| t.elapsed() < PROGRESS_WRITE_INTERVAL) {
            return Ok(());
        }
        *last = Some(Instant::now());
        let cancel =
            job_rows::set_progress(&self.library().conn(), self.job_id(), fraction, &message)?;
        let job = {
            let mut job = self.job.lock().unwrap_or_else(|p| p.into_inner());
            job.progress = fraction.clamp(0.0, 1.0);
            job.message = message;
            job.cancel_requested = cancel;
            job.clone()
        };
        self.library()
            .notify(Notification::Job { job: Box::new(job) });
        if cancel {
            Err(Cancelled.into())
        } else {
            Ok(())
        }
    }

    /// Fails with [`Cancelled`] if cancellation was asked for (reads the database each call).
    pub fn check_cancelled(&self) -> Result<()> {
        if job_rows::cancel_requested(&self.library().conn(), self.job_id())? {
            return Err(Cancelled.into());
        }
        Ok(())
    }

    /// Records an event of this job in `job_events`.
    pub fn event(&self, level: Level, kind: &str, data: &Value) -> Result<()> {
        job_events::insert(&self.library().conn(), self.job_id(), level, kind, data)
    }
}

/// The job system of a library: the kinds' handlers and the workers that run the queue.
pub struct JobSystem {
    library: Arc<Library>,
    handlers: HashMap<JobKind, Arc<dyn JobHandler>>,
    wake: (Mutex<()>, Condvar),
    shutting_down: AtomicBool,
    /// Whether extraction jobs have their own GPU-lane worker (their device is another GPU).
    extraction_apart: AtomicBool,
    /// The kinds that run on the extraction device.
    extraction_kinds: Vec<JobKind>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl JobSystem {
    /// Builds the system and recovers the jobs of processes that died while running them.
    pub fn new(
        library: Arc<Library>,
        handlers: Vec<Arc<dyn JobHandler>>,
    ) -> Result<Arc<JobSystem>> {
        let mut extraction_kinds: Vec<JobKind> = handlers
            .iter()
            .filter(|h| h.runs_on_extraction_device())
            .map(|h| h.kind())
            .collect();
        extraction_kinds.sort_unstable();
        let system = JobSystem {
            library,
            handlers: handlers.into_iter().map(|h| (h.kind(), h)).collect(),
            wake: (Mutex::new(()), Condvar::new()),
            shutting_down: AtomicBool::new(false),
            extraction_apart: AtomicBool::new(false),
            extraction_kinds,
            workers: Mutex::new(Vec::new()),
        };
        if let Err(err) = system.recover() {
            let err = crate::error::explain_disk_full(err, system.library.data_dir());
            // A full disk must not lock the user out: the jobs are recovered at a later start.
            if !crate::error::is_disk_full(&err) {
                return Err(err.context("recovering interrupted jobs"));
            }
            eprintln!("timbre: could not recover interrupted jobs: {err:#}");
        }
        Ok(Arc::new(system))
    }

    /// The library whose jobs it runs.
    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }

    fn recover(&self) -> Result<()> {
        let conn = self.library.conn();
        for worker in job_rows::running_workers(&conn)? {
            if !self.library.is_process_dead(&worker) {
                continue;
            }
            let resumable = |kind: &str| {
                JobKind::parse(kind)
                    .and_then(|kind| self.handlers.get(&kind))
                    .is_some_and(|h| h.resumable())
            };
            let tx = conn.unchecked_transaction()?;
            for (id, outcome) in job_rows::recover_from_dead_worker(&tx, &worker, &resumable)? {
                let data = json!({
                    "requeued": outcome == Recovered::Waiting,
                    "crashed_too_often": outcome == Recovered::Crashed,
                });
                job_events::insert(&tx, id, Level::Warn, "interrupted", &data)?;
            }
            tx.commit()?;
            let _ = std::fs::remove_file(
                self.library
                    .data_dir()
                    .join("run")
                    .join(format!("{worker}.lock")),
            );
        }
        Ok(())
    }

    /// Queues a job of `kind` with `params` on its handler's lane and wakes the workers; refuses a
    /// kind this build has no handler for.
    pub fn submit(&self, kind: JobKind, params: Value) -> Result<Job> {
        self.submit_where(kind, params, |_| Ok(None))
    }

    /// Returns the oldest queued or running job of `kind` whose parameter `key` is `value` (a
    /// second click, or one a killed process left and recovery re-queued), else submits `params`.
    /// The look and the insert hold the connection together, so two callers get one job.
    pub fn submit_unless_unfinished(
        &self,
        kind: JobKind,
        (key, value): (&str, &str),
        params: Value,
    ) -> Result<Job> {
        self.submit_where(kind, params, |conn| {
            job_rows::unfinished_with_param(conn, kind, key, value)
        })
    }

    fn submit_where(
        &self,
        kind: JobKind,
        params: Value,
        existing: impl FnOnce(&rusqlite::Connection) -> Result<Option<Job>>,
    ) -> Result<Job> {
        let handler = self.handlers.get(&kind).ok_or_else(|| {
            crate::error::invalid_input(format!("this build cannot run {kind} jobs"))
        })?;
        let max_retries = self.library.settings()?.max_retries;
        let job = {
            let conn = self.library.conn();
            if let Some(job) = existing(&conn)? {
                return Ok(job);
            }
            let id = job_rows::insert(&conn, kind, handler.lane(), &params, max_retries)?;
            job_rows::require(&conn, id)?
        };
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        self.wake.1.notify_all();
        Ok(job)
    }

    /// Cancels a queued job at once, or asks a running one to stop; refuses a job already ended.
    pub fn cancel(&self, id: i64) -> Result<Job> {
        let job = job_rows::request_cancel(&self.library.conn(), id)?;
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        Ok(job)
    }

    /// Queues a failed, cancelled or interrupted job again from scratch and wakes the workers.
    pub fn retry(&self, id: i64) -> Result<Job> {
        let job = job_rows::retry(&self.library.conn(), id)?;
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        self.wake.1.notify_all();
        Ok(job)
    }

    /// Jobs re-queued after a crash that wait for [`JobSystem::resume`] or [`JobSystem::drop_job`].
    pub fn waiting_after_crash(&self) -> Result<Vec<Job>> {
        job_rows::waiting_after_crash(&self.library.conn())
    }

    /// Lets the workers take a job that waits after a crash.
    pub fn resume(&self, id: i64) -> Result<Job> {
        let job = job_rows::resume(&self.library.conn(), id)?;
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        self.wake.1.notify_all();
        Ok(job)
    }

    /// Gives up a job that waits after a crash.
    pub fn drop_job(&self, id: i64) -> Result<Job> {
        let job = job_rows::drop_waiting(&self.library.conn(), id)?;
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        Ok(job)
    }

    /// Background workers: two for the GPU lane (the extraction jobs get the second when their
    /// device is another GPU; otherwise it idles), `light_workers` for the light lane.
    pub fn start_workers(self: &Arc<Self>) -> Result<()> {
        self.devices_changed()?;
        let light = self.library.settings()?.light_workers.max(1);
        let workers = [Worker::Gpu, Worker::Extraction]
            .into_iter()
            .chain(std::iter::repeat_n(Worker::Light, light));
        let mut handles = self.workers.lock().unwrap_or_else(|p| p.into_inner());
        for worker in workers {
            let system = Arc::clone(self);
            handles.push(std::thread::spawn(move || system.work(worker)));
        }
        Ok(())
    }

    /// Reads the device settings again: jobs claimed from now on follow them. (A change made
    /// by another process is seen at the next start.)
    pub fn devices_changed(&self) -> Result<()> {
        let settings = self.library.settings()?;
        let apart = self
            .handlers
            .values()
            .any(|h| h.runs_on_extraction_device() && h.extraction_device_apart(&settings));
        self.set_extraction_apart(apart);
        Ok(())
    }

    fn set_extraction_apart(&self, apart: bool) {
        if self.extraction_apart.swap(apart, Ordering::SeqCst) != apart {
            self.wake.1.notify_all();
        }
    }

    fn work(&self, worker: Worker) {
        while !self.shutting_down.load(Ordering::SeqCst) {
            let apart = self.extraction_apart.load(Ordering::SeqCst);
            let kinds = |only| Claim::Kinds {
                lane: Lane::Gpu,
                kinds: &self.extraction_kinds,
                only,
            };
            let claim = match worker {
                Worker::Light => Some(Claim::Next(Some(Lane::Light))),
                Worker::Gpu if apart => Some(kinds(false)),
                Worker::Gpu => Some(Claim::Next(Some(Lane::Gpu))),
                Worker::Extraction if apart => Some(kinds(true)),
                Worker::Extraction => None,
            };
            match claim.map(|claim| self.claim(claim)) {
                Some(Ok(Some(job))) => {
                    if let Err(err) = self.execute(job) {
                        eprintln!("timbre: {err:#}");
                    }
                }
                // Other processes may queue jobs too, so idle workers also poll.
                _ => {
                    let guard = self.wake.0.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = self.wake.1.wait_timeout(guard, Duration::from_millis(500));
                }
            }
        }
    }

    /// Stops the background workers once their current jobs end, and waits for them.
    pub fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.wake.1.notify_all();
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        for worker in workers {
            let _ = worker.join();
        }
    }

    /// Runs one job in this thread, through its retries, and returns it finished. Fails when the
    /// job's end cannot be recorded.
    pub fn run_job(&self, id: i64) -> Result<Job> {
        loop {
            let job = job_rows::require(&self.library.conn(), id)?;
            match job.state {
                JobState::Queued => match self.claim(Claim::Id(id))? {
                    Some(job) => self.execute(job)?,
                    None => std::thread::sleep(Duration::from_millis(100)),
                },
                JobState::Running
                    if job
                        .worker
                        .as_deref()
                        .is_some_and(|w| self.library.is_process_dead(w)) =>
                {
                    self.recover()?;
                }
                // Another process is running it: wait for that to end.
                JobState::Running => std::thread::sleep(Duration::from_millis(200)),
                _ => return Ok(job),
            }
        }
    }

    /// Runs every queued job in this thread, waiting out retry backoffs; returns how many ran.
    pub fn run_queue(&self) -> Result<usize> {
        let mut ran = 0;
        loop {
            if let Some(job) = self.claim(Claim::Any)? {
                self.execute(job)?;
                ran += 1;
            } else if job_rows::next_due(&self.library.conn())?.is_some() {
                std::thread::sleep(Duration::from_millis(100));
            } else {
                return Ok(ran);
            }
        }
    }

    fn claim(&self, which: Claim) -> Result<Option<Job>> {
        job_rows::claim(&self.library.conn(), which, self.library.process_id())
    }

    /// Runs a claimed job and records its end; an error says the end could not be recorded
    /// (the job stays running until a later process finds this one dead).
    fn execute(&self, job: Job) -> Result<()> {
        self.library.notify(Notification::Job {
            job: Box::new(job.clone()),
        });
        let id = job.id;
        let outcome = match self.handlers.get(&job.kind) {
            None => Err(anyhow::anyhow!("this build cannot run {} jobs", job.kind)),
            Some(handler) => {
                let sampler = sampler::Sampler::start(Arc::clone(&self.library), id);
                let ctx = JobContext {
                    system: self,
                    job: Mutex::new(job.clone()),
                    last_progress_write: Mutex::new(None),
                };
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler.run(&ctx)))
                    .unwrap_or_else(|panic| {
                        Err(anyhow::anyhow!("the job crashed: {}", panic_text(&panic)))
                    });
                sampler.stop();
                // What the job freed would otherwise stay mapped until the next one reuses it.
                timbre_audio::memory::release_free_memory();
                outcome
            }
        };
        let data_dir = self.library.data_dir();
        let outcome = outcome.map_err(|err| crate::error::explain_disk_full(err, data_dir));
        let settings = self.library.settings().unwrap_or_default();
        let recorded = self
            .library
            .write(|conn| self.record_outcome(conn, &settings, &job, &outcome));
        recorded.map_err(|err| {
            crate::error::explain_disk_full(err, data_dir)
                .context(format!("could not record the end of job {id}"))
        })?;
        if let Ok(job) = job_rows::require(&self.library.conn(), id) {
            self.library
                .notify(Notification::Job { job: Box::new(job) });
        }
        Ok(())
    }

    fn record_outcome(
        &self,
        conn: &rusqlite::Connection,
        settings: &crate::settings::Settings,
        job: &Job,
        outcome: &Result<Value>,
    ) -> Result<()> {
        let err = match outcome {
            Ok(result) => {
                return job_rows::finish(conn, job.id, JobState::Succeeded, Some(result), None);
            }
            Err(err) => err,
        };
        let failure = classify(err);
        let report = ErrorReport::from_anyhow(err);
        let failed = job_rows::Failed {
            message: &report.message,
            kind: report.kind,
        };
        let message = &report.message;
        if failure == Failure::Cancelled {
            return job_rows::finish(conn, job.id, JobState::Cancelled, None, None);
        }
        let retryable = matches!(failure, Failure::Transient | Failure::OutOfMemory);
        if retryable && job.attempts < job.max_retries {
            let batch_scale = if failure == Failure::OutOfMemory {
                if let Some(handler) = self.handlers.get(&job.kind) {
                    handler.free_caches();
                }
                job.batch_scale / 2.0
            } else {
                job.batch_scale
            };
            let delay = settings.retry_delay_secs(job.attempts);
            let due =
                db::timestamp(time::OffsetDateTime::now_utc() + Duration::from_secs_f64(delay));
            let data = json!({ "attempt": job.attempts + 1, "delay_secs": delay, "error": message, "batch_scale": batch_scale });
            job_events::insert(conn, job.id, Level::Warn, "retry", &data)?;
            return job_rows::requeue_after_failure(conn, job.id, failed, &due, batch_scale);
        }
        job_events::insert(
            conn,
            job.id,
            Level::Error,
            "failed",
            &json!({ "error": message }),
        )?;
        job_rows::finish(conn, job.id, JobState::Failed, None, Some(failed))
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A full report of one job: the row, its events, metric peaks and averages, and every sample.
pub fn job_report(library: &Library, id: i64) -> Result<Value> {
    let conn = library.conn();
    Ok(json!({
        "job": job_rows::require(&conn, id)?,
        "events": job_events::list(&conn, id, None)?,
        "metrics_summary": db::metrics::summary(&conn, id)?,
        "metrics": db::metrics::samples(&conn, id)?,
    }))
}

#[cfg(test)]
mod tests;
