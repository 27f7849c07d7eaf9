use super::*;
use std::sync::atomic::AtomicU32;

struct Scripted {
    kind: JobKind,
    lane: Lane,
    extraction: bool,
    calls: AtomicU32,
    scales: Mutex<Vec<f64>>,
    freed: AtomicU32,
    script: fn(&JobContext, u32) -> Result<Value>,
}

impl JobHandler for Scripted {
    fn kind(&self) -> JobKind {
        self.kind
    }
    fn lane(&self) -> Lane {
        self.lane
    }
    fn runs_on_extraction_device(&self) -> bool {
        self.extraction
    }
    fn extraction_device_apart(&self, settings: &Settings) -> bool {
        !settings.extraction_device.is_empty()
    }
    fn run(&self, ctx: &JobContext) -> Result<Value> {
        self.scales.lock().unwrap().push(ctx.batch_scale());
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        (self.script)(ctx, call)
    }
    fn free_caches(&self) {
        self.freed.fetch_add(1, Ordering::SeqCst);
    }
}

fn scripted(kind: JobKind, script: fn(&JobContext, u32) -> Result<Value>) -> Arc<Scripted> {
    scripted_on(kind, Lane::Light, false, script)
}

fn scripted_on(
    kind: JobKind,
    lane: Lane,
    extraction: bool,
    script: fn(&JobContext, u32) -> Result<Value>,
) -> Arc<Scripted> {
    Arc::new(Scripted {
        kind,
        lane,
        extraction,
        calls: AtomicU32::new(0),
        scales: Mutex::new(vec![]),
        freed: AtomicU32::new(0),
        script,
    })
}

fn system_with(handler: Arc<Scripted>) -> (tempfile::TempDir, Arc<JobSystem>) {
    system_of(vec![handler])
}

fn system_of(handlers: Vec<Arc<Scripted>>) -> (tempfile::TempDir, Arc<JobSystem>) {
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(Library::open(dir.path()).unwrap());
    Settings::set(&library.conn(), "retry_base_secs", "0.01").unwrap();
    Settings::set(&library.conn(), "monitor_interval_ms", "50").unwrap();
    let handlers = handlers
        .into_iter()
        .map(|h| h as Arc<dyn JobHandler>)
        .collect();
    (dir, JobSystem::new(library, handlers).unwrap())
}

fn state_of(system: &JobSystem, id: i64) -> JobState {
    job_rows::require(&system.library().conn(), id)
        .unwrap()
        .state
}

fn wait_for(system: &JobSystem, id: i64, state: JobState) {
    let started = Instant::now();
    while state_of(system, id) != state {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "job {id} never {state:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A GPU-lane training that runs until cancelled, and a preparation.
fn training_and_preparation() -> (tempfile::TempDir, Arc<JobSystem>) {
    let training = scripted_on(JobKind::Train, Lane::Gpu, false, |ctx, _| {
        loop {
            ctx.check_cancelled()?;
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let preparation = scripted_on(JobKind::Dataset, Lane::Gpu, true, |_, _| {
        Ok(json!("prepared"))
    });
    system_of(vec![training, preparation])
}

#[test]
fn with_an_extraction_device_a_preparation_runs_beside_a_training() {
    let (_dir, system) = training_and_preparation();
    Settings::set(&system.library().conn(), "extraction_device", "cuda:1").unwrap();
    system.start_workers().unwrap();
    let training = system.submit(JobKind::Train, json!({})).unwrap();
    wait_for(&system, training.id, JobState::Running);
    let preparation = system.submit(JobKind::Dataset, json!({})).unwrap();
    wait_for(&system, preparation.id, JobState::Succeeded);
    assert_eq!(state_of(&system, training.id), JobState::Running);
    system.cancel(training.id).unwrap();
    wait_for(&system, training.id, JobState::Cancelled);
    system.shutdown();
}

#[test]
fn on_one_device_a_preparation_waits_for_the_training() {
    let (_dir, system) = training_and_preparation();
    system.start_workers().unwrap();
    let training = system.submit(JobKind::Train, json!({})).unwrap();
    wait_for(&system, training.id, JobState::Running);
    let preparation = system.submit(JobKind::Dataset, json!({})).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(state_of(&system, preparation.id), JobState::Queued);
    system.cancel(training.id).unwrap();
    wait_for(&system, preparation.id, JobState::Succeeded);
    system.shutdown();
}

#[test]
fn success_records_result_progress_and_metrics() {
    let handler = scripted(JobKind::Import, |ctx, _| {
        ctx.progress(0.5, "halfway")?;
        std::thread::sleep(Duration::from_millis(120));
        Ok(json!({"answer": 42}))
    });
    let (_dir, system) = system_with(handler);
    let updates = system.library().subscribe();
    let job = system.submit(JobKind::Import, json!({})).unwrap();
    let done = system.run_job(job.id).unwrap();
    assert_eq!((done.state, done.progress), (JobState::Succeeded, 1.0));
    assert_eq!(done.result, Some(json!({"answer": 42})));
    let messages: Vec<String> = updates
        .try_iter()
        .filter_map(|n| match n {
            Notification::Job { job } => Some(job.message),
            _ => None,
        })
        .collect();
    assert!(messages.contains(&"halfway".to_string()));
    let report = job_report(system.library(), job.id).unwrap();
    let peaks = report["metrics_summary"].as_array().unwrap();
    assert!(
        peaks
            .iter()
            .any(|m| m["name"] == "ram_used_bytes" && m["peak"].as_f64().unwrap() > 0.0)
    );
}

#[test]
fn transient_failures_retry_with_backoff_then_succeed() {
    let handler = scripted(JobKind::Import, |_, call| {
        if call < 2 {
            Err(
                anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::ResourceBusy))
                    .context("device busy"),
            )
        } else {
            Ok(json!(null))
        }
    });
    let (_dir, system) = system_with(handler.clone());
    let job = system.submit(JobKind::Import, json!({})).unwrap();
    let done = system.run_job(job.id).unwrap();
    assert_eq!((done.state, done.attempts), (JobState::Succeeded, 2));
    let retries = job_events::list(&system.library().conn(), job.id, Some("retry")).unwrap();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[1].data["delay_secs"], json!(0.02));
}

#[test]
fn retries_stop_at_the_limit_and_permanent_errors_fail_at_once() {
    let flaky = scripted(JobKind::Import, |_, _| {
        Err(crate::error::busy("still busy"))
    });
    let (_dir, system) = system_with(flaky.clone());
    let job = system.submit(JobKind::Import, json!({})).unwrap();
    let done = system.run_job(job.id).unwrap();
    assert_eq!(done.state, JobState::Failed);
    assert_eq!(
        flaky.calls.load(Ordering::SeqCst),
        4,
        "first try plus 3 retries"
    );
    assert_eq!(done.error.as_deref(), Some("still busy"));

    let broken = scripted(JobKind::Import, |_, _| {
        Err(crate::error::invalid_input("bad.wav: not audio"))
    });
    let (_dir, system) = system_with(broken.clone());
    let done = system
        .run_job(system.submit(JobKind::Import, json!({})).unwrap().id)
        .unwrap();
    assert_eq!(
        (done.state, broken.calls.load(Ordering::SeqCst)),
        (JobState::Failed, 1)
    );
    assert_eq!(done.error.as_deref(), Some("bad.wav: not audio"));
}

#[test]
fn out_of_memory_frees_caches_and_halves_the_batch() {
    let handler = scripted(JobKind::Import, |_, call| {
        if call < 2 {
            Err(crate::error::out_of_memory("CUDA out of memory"))
        } else {
            Ok(json!(null))
        }
    });
    let (_dir, system) = system_with(handler.clone());
    let done = system
        .run_job(system.submit(JobKind::Import, json!({})).unwrap().id)
        .unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    assert_eq!(*handler.scales.lock().unwrap(), vec![1.0, 0.5, 0.25]);
    assert_eq!(handler.freed.load(Ordering::SeqCst), 2);
}

#[test]
fn a_failure_that_only_mentions_memory_fails_at_once() {
    let handler = scripted(JobKind::Import, |_, _| {
        Err(crate::error::invalid_input(
            "/tmp/out of memory.wav: not an audio file",
        ))
    });
    let (_dir, system) = system_with(handler.clone());
    let done = system
        .run_job(system.submit(JobKind::Import, json!({})).unwrap().id)
        .unwrap();
    assert_eq!(
        (
            done.state,
            done.attempts,
            handler.calls.load(Ordering::SeqCst)
        ),
        (JobState::Failed, 0, 1)
    );
    assert_eq!(handler.freed.load(Ordering::SeqCst), 0);
}

#[test]
fn a_panicking_handler_fails_its_job_only() {
    let handler = scripted(JobKind::Import, |_, _| panic!("index out of bounds"));
    let (_dir, system) = system_with(handler);
    let done = system
        .run_job(system.submit(JobKind::Import, json!({})).unwrap().id)
        .unwrap();
    assert_eq!(done.state, JobState::Failed);
    assert!(done.error.unwrap().contains("index out of bounds"));
}

#[test]
fn running_job_stops_when_cancelled_from_another_thread() {
    let handler = scripted(JobKind::Import, |ctx, _| {
        for i in 0..1000 {
            ctx.progress(f64::from(i) / 1000.0, "working")?;
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(json!(null))
    });
    let (_dir, system) = system_with(handler);
    system.start_workers().unwrap();
    let job = system.submit(JobKind::Import, json!({})).unwrap();
    let started = Instant::now();
    while job_rows::require(&system.library().conn(), job.id)
        .unwrap()
        .state
        != JobState::Running
    {
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(10));
    }
    system.cancel(job.id).unwrap();
    let done = system.run_job(job.id).unwrap();
    assert_eq!(done.state, JobState::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    system.shutdown();
}

#[test]
fn kinds_without_a_handler_are_refused() {
    let (_dir, system) = system_with(scripted(JobKind::Import, |_, _| Ok(json!(null))));
    let err = system.submit(JobKind::Convert, json!({})).unwrap_err();
    assert_eq!(
        crate::error::kind_of(&err),
        crate::error::ErrorKind::InvalidInput
    );
}

#[test]
fn a_job_whose_end_cannot_be_recorded_fails_its_waiter_instead_of_hanging() {
    // The library turns read-only while the job runs: its end cannot be written.
    let handler = scripted(JobKind::Import, |ctx, _| {
        ctx.library()
            .conn()
            .pragma_update(None, "query_only", true)?;
        Ok(json!("done"))
    });
    let (_dir, system) = system_with(handler);
    let job = system.submit(JobKind::Import, json!({})).unwrap();
    let started = Instant::now();
    let err = format!("{:#}", system.run_job(job.id).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.starts_with(&format!("could not record the end of job {}", job.id)),
        "{err}"
    );
}

#[test]
fn an_unfinished_job_with_the_same_param_is_returned_instead_of_a_second() {
    let (_dir, system) = system_with(scripted(JobKind::Download, |_, _| Ok(json!("done"))));
    let submit = |asset: &'static str| {
        let system = system.clone();
        std::thread::spawn(move || {
            system
                .submit_unless_unfinished(
                    JobKind::Download,
                    ("asset", asset),
                    json!({ "asset": asset }),
                )
                .unwrap()
                .id
        })
    };
    let clicks: Vec<i64> = (0..4)
        .map(|_| submit("rmvpe"))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|click| click.join().unwrap())
        .collect();
    assert!(clicks.iter().all(|id| *id == clicks[0]), "{clicks:?}");
    let other = submit("fcpe").join().unwrap();
    assert_ne!(other, clicks[0]);

    system.run_job(clicks[0]).unwrap();
    let after_it_ended = submit("rmvpe").join().unwrap();
    assert!(after_it_ended > other, "{after_it_ended} after {other}");
}
