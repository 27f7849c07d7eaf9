//! The subcommands, one module each, and what they share: opening the library and its job
//! system (saying when jobs wait after a crash), running jobs in this process with their
//! progress on stderr, and each job's outcome.

pub mod analyze;
pub mod assets;
pub mod clean;
pub mod convert;
pub mod cover;
pub mod dataset;
pub mod doctor;
pub mod effects;
pub mod import;
pub mod jobs;
pub mod library;
pub mod live;
mod live_tune;
pub mod models;
pub mod record;
pub mod runtime;
pub mod settings;
pub mod train;
pub mod update;
pub mod voice_args;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use timbre_core::Library;
use timbre_core::db::jobs::JobState;
use timbre_core::jobs::JobSystem;

/// A command-line input: a take's id, unless a file of that name exists, else a file.
pub fn audio_input(arg: &str) -> timbre_core::input::AudioInput {
    use timbre_core::input::AudioInput;
    match arg.parse::<i64>() {
        Ok(id) if !Path::new(arg).exists() => AudioInput::Take(id),
        _ => AudioInput::File(arg.into()),
    }
}

pub fn open_library(data_dir: Option<&Path>) -> Result<Arc<Library>> {
    Ok(Arc::clone(open_jobs(data_dir)?.library()))
}

/// Opens the library and its job system, which recovers the jobs of processes that died, and
/// says on stderr when jobs wait after such a death.
pub fn open_jobs(data_dir: Option<&Path>) -> Result<Arc<JobSystem>> {
    let dir = timbre_core::library::resolve_data_dir(data_dir)?;
    let library = Arc::new(Library::open(&dir)?);
    let system = JobSystem::new(
        library,
        timbre_core::handlers::job_handlers(&Default::default()),
    )?;
    let waiting = system.waiting_after_crash()?;
    if !waiting.is_empty() {
        eprintln!("timbre: {}", waiting_notice(&waiting));
    }
    Ok(system)
}

fn waiting_notice(waiting: &[timbre_core::db::jobs::Job]) -> String {
    let ids: Vec<String> = waiting.iter().map(|j| j.id.to_string()).collect();
    let (count, are) = match waiting.len() {
        1 => ("1 job was".to_string(), "is"),
        n => (format!("{n} jobs were"), "are"),
    };
    format!(
        "{count} interrupted and {are} waiting (job {}): `timbre jobs resume ID` or `timbre jobs drop ID`",
        ids.join(", ")
    )
}

pub fn duration(secs: f64) -> String {
    format!("{}:{:04.1}", (secs / 60.0).floor() as u64, secs % 60.0)
}

/// Prints the progress of the given jobs on stderr as they report it (not in JSON mode).
pub fn show_progress(system: &JobSystem, job_ids: Vec<i64>, out: &crate::output::Output) {
    if out.json {
        return;
    }
    let updates = system.library().subscribe();
    std::thread::spawn(move || {
        for update in updates {
            if let timbre_core::Notification::Job { job } = update
                && job_ids.contains(&job.id)
                && !job.message.is_empty()
            {
                eprint!("\r\x1b[2K[{:>3.0}%] {}", job.progress * 100.0, job.message);
            }
        }
    });
}

/// One job as the CLI reports it: its input, how it ended, its result or its error.
#[derive(serde::Serialize)]
pub struct JobOutcome<T> {
    pub input: String,
    pub job_id: i64,
    pub ok: bool,
    pub state: JobState,
    pub result: Option<T>,
    pub error: Option<String>,
}

impl<T> JobOutcome<T> {
    /// The line of a job that did not succeed: cancelled, or failed with its error.
    pub fn failure_line(&self) -> String {
        let input = &self.input;
        match (self.state, &self.error) {
            (JobState::Cancelled, _) => format!("cancelled  {input}"),
            (_, Some(error)) => format!("failed     {input}: {error}"),
            (state, None) => format!("failed     {input}: the job ended {}", state.as_str()),
        }
    }
}

/// Runs submitted jobs (labelled by their input) in this process, showing progress, and
/// returns each one's outcome with its result read back as `T`.
pub fn run_jobs<T: DeserializeOwned>(
    system: &JobSystem,
    jobs: Vec<(String, i64)>,
    out: &crate::output::Output,
) -> Result<Vec<JobOutcome<T>>> {
    show_progress(system, jobs.iter().map(|(_, id)| *id).collect(), out);
    let mut outcomes = Vec::new();
    for (input, id) in jobs {
        let job = system.run_job(id)?;
        out.note("");
        let ok = job.state == JobState::Succeeded;
        let result = match job.result.filter(|_| ok) {
            Some(value) => Some(
                serde_json::from_value(value)
                    .with_context(|| format!("reading the result of job {}", job.id))?,
            ),
            None => None,
        };
        outcomes.push(JobOutcome {
            input,
            job_id: job.id,
            ok,
            state: job.state,
            result,
            error: job.error,
        });
    }
    Ok(outcomes)
}

/// Success when every job succeeded.
pub fn exit_code<T>(outcomes: &[JobOutcome<T>]) -> ExitCode {
    if outcomes.iter().all(|o| o.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
