//! `timbre jobs list|show|cancel|retry|resume|drop|run|export`: the queue inspected and
//! controlled, jobs a crash interrupted resumed or dropped, and a job's full report as JSON.

use super::open_jobs;
use crate::output::Output;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::db::{job_events, jobs as job_rows};

#[derive(clap::Subcommand)]
pub enum Command {
    /// List recent jobs.
    List {
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Show a job and its events.
    Show { id: i64 },
    /// Cancel a queued or running job.
    Cancel { id: i64 },
    /// Queue a failed, cancelled or interrupted job again.
    Retry { id: i64 },
    /// Run, in this process, a job that waits after the app stopped while it ran.
    Resume { id: i64 },
    /// Give up a job that waits after the app stopped while it ran.
    Drop { id: i64 },
    /// Run every queued job (re-queued ones included) in this process until none is left.
    Run,
    /// Write a job's full report (events, metric peaks/averages, samples) as JSON.
    Export {
        id: i64,
        /// Output file; stdout when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let system = open_jobs(data_dir)?;
    let library = system.library();
    match cmd {
        Command::List { limit } => {
            let jobs = job_rows::list(&library.conn(), limit)?;
            out.print(&jobs, || {
                jobs.iter().map(job_line).collect::<Vec<_>>().join("\n")
            });
        }
        Command::Show { id } => {
            let job = job_rows::require(&library.conn(), id)?;
            let events = job_events::list(&library.conn(), id, None)?;
            out.print(&serde_json::json!({ "job": job, "events": events }), || {
                let mut lines = vec![job_line(&job)];
                lines.extend(
                    events
                        .iter()
                        .map(|e| format!("  {} {:?} {} {}", e.at, e.level, e.kind, e.data)),
                );
                lines.join("\n")
            });
        }
        Command::Cancel { id } => {
            let job = system.cancel(id)?;
            out.print(&job, || job_line(&job));
        }
        Command::Retry { id } => {
            let job = system.retry(id)?;
            out.print(&job, || job_line(&job));
        }
        Command::Resume { id } => {
            system.resume(id)?;
            super::show_progress(&system, vec![id], out);
            let job = system.run_job(id)?;
            out.note("");
            out.print(&job, || job_line(&job));
            if job.state != job_rows::JobState::Succeeded {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Drop { id } => {
            let job = system.drop_job(id)?;
            out.print(&job, || job_line(&job));
        }
        Command::Run => {
            let ran = system.run_queue()?;
            out.print(&serde_json::json!({ "ran": ran }), || {
                format!("ran {ran} job(s)")
            });
        }
        Command::Export { id, out: path } => {
            let report =
                serde_json::to_string_pretty(&timbre_core::jobs::job_report(library, id)?)?;
            match path {
                Some(path) => std::fs::write(&path, report)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => println!("{report}"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn job_line(j: &job_rows::Job) -> String {
    let error = j
        .error
        .as_deref()
        .map(|e| format!("  error: {e}"))
        .unwrap_or_default();
    let waiting = if j.recovered {
        "  [interrupted: resume or drop]"
    } else {
        ""
    };
    format!(
        "{:>5}  {:<8} {:<11} {:>5.1}%  {}{error}{waiting}",
        j.id,
        j.kind,
        j.state.as_str(),
        j.progress * 100.0,
        j.message
    )
}
