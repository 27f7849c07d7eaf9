//! `timbre import FILE… [--voice V]`: one `import` job for all the files, run in this process,
//! then each file's outcome (imported, duplicate or failed).

use super::open_jobs;
use crate::output::Output;
use anyhow::Result;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::db::jobs::JobState;
use timbre_core::import::{self, ImportRequest, file_outcomes};

#[derive(clap::Args)]
pub struct Args {
    /// Audio files to import.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Put the takes under this voice (created if new).
    #[arg(long)]
    voice: Option<String>,
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let system = open_jobs(data_dir)?;
    let voice_id = system.library().resolve_voice(args.voice.as_deref())?;
    let request = ImportRequest {
        paths: args.files,
        voice_id,
    };
    let job = import::submit(&system, request)?;
    // The files as the job has them: each once.
    let count = serde_json::from_value::<ImportRequest>(job.params.clone())?
        .paths
        .len();
    out.note(&format!("job {}: importing {count} file(s)", job.id));
    super::show_progress(&system, vec![job.id], out);
    let done = system.run_job(job.id)?;
    out.note("");
    let files = file_outcomes(&system.library().conn(), done.id)?;
    out.print(&json!({ "job": done, "files": files }), || {
        files
            .iter()
            .map(|f| match (&f.error, f.duplicate) {
                (Some(error), _) => format!("failed     {error}"),
                (None, true) => format!(
                    "duplicate  {} (take {})",
                    f.path.display(),
                    f.take_id.unwrap_or_default()
                ),
                (None, false) => format!(
                    "imported   {} (take {})",
                    f.path.display(),
                    f.take_id.unwrap_or_default()
                ),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    if let Some(error) = done
        .error
        .as_deref()
        .filter(|_| done.state != JobState::Succeeded)
    {
        out.note(&format!("timbre: job {}: {error}", done.id));
    }
    let all_ok = done.state == JobState::Succeeded && files.iter().all(|f| f.ok);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
