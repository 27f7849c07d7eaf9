//! `timbre runtime status|install cuda|remove cuda`: the CUDA runtime a package leaves out,
//! downloaded from PyPI's wheels for this build's torch (`timbre_core::cuda_runtime`), used from
//! the next start. The install is a `runtime_install` job, the one the app's "Enable GPU" queues.

use super::open_jobs;
use crate::output::Output;
use anyhow::{Result, bail};
use std::path::Path;
use std::process::ExitCode;
use timbre_core::cuda_runtime;
use timbre_core::disk::human_bytes;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Whether the CUDA runtime is installed and loaded, and what an install downloads.
    Status,
    /// Download and unpack the CUDA runtime (about 2.5 GB; resumes an interrupted install).
    Install {
        #[arg(value_enum)]
        runtime: Runtime,
    },
    /// Delete the CUDA runtime: the app runs on the CPU from its next start.
    Remove {
        #[arg(value_enum)]
        runtime: Runtime,
    },
}

/// The runtimes that can be installed.
#[derive(clap::ValueEnum, Clone, Copy)]
pub enum Runtime {
    /// libtorch's CUDA backend and NVIDIA's libraries.
    Cuda,
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Status => {
            let status = cuda_runtime::status()?;
            out.print(&status, || {
                let mut lines = vec![format!(
                    "CUDA runtime for torch {}: {} ({})",
                    status.torch_version,
                    if status.installed {
                        format!("installed, {}", human_bytes(status.bytes_on_disk))
                    } else {
                        format!(
                            "not installed, {} to download",
                            human_bytes(status.download_bytes)
                        )
                    },
                    status.folder
                )];
                lines.push(match (&status.loaded, &status.problem) {
                    (Some(library), _) => format!("loaded: {library}"),
                    (None, Some(problem)) => format!("not loaded: {problem}"),
                    (None, None) => "not loaded".to_owned(),
                });
                lines.push(format!(
                    "NVIDIA driver: {}",
                    if status.nvidia_driver { "yes" } else { "no" }
                ));
                lines.join("\n")
            });
        }
        Command::Install {
            runtime: Runtime::Cuda,
        } => {
            let system = open_jobs(data_dir)?;
            let job = cuda_runtime::start_install(&system)?;
            let outcome = super::run_jobs::<cuda_runtime::Installed>(
                &system,
                vec![("CUDA runtime".to_owned(), job.id)],
                out,
            )?
            .remove(0);
            let Some(installed) = outcome.result else {
                bail!(
                    "the CUDA runtime was not installed (job {}): {}",
                    outcome.job_id,
                    outcome
                        .error
                        .unwrap_or_else(|| format!("the job ended {}", outcome.state.as_str()))
                );
            };
            out.print(&installed, || {
                format!(
                    "CUDA runtime installed in {}: {} libraries, {} from {} wheels; used from the next start",
                    installed.folder.display(),
                    installed.libraries,
                    human_bytes(installed.bytes),
                    installed.wheels
                )
            });
        }
        Command::Remove {
            runtime: Runtime::Cuda,
        } => {
            let removed = cuda_runtime::remove()?;
            out.print(&serde_json::json!({ "removed": removed }), || {
                if removed {
                    "CUDA runtime removed: the next start runs on the CPU".to_owned()
                } else {
                    "no CUDA runtime was installed".to_owned()
                }
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}
