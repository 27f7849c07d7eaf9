//! The `update_install` job: the app's "Install" button. It asks the feed again (the job may
//! run after a restart, and only a freshly verified manifest vouches for the package) and
//! installs the release the user was shown, refusing if the feed now offers another.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::jobs::Job;
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem};

/// The job kind that installs an update.
pub const KIND: JobKind = JobKind::UpdateInstall;

/// The params of an `update_install` job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct UpdateRequest {
    /// The release the user chose to install, as the check showed it.
    pub version: String,
}

/// Queues the install of `request.version`, or returns the unfinished one of that version.
pub fn start_install(system: &JobSystem, request: UpdateRequest) -> Result<Job> {
    let params = serde_json::to_value(&request)?;
    system.submit_unless_unfinished(KIND, ("version", &request.version), params)
}

/// Runs `update_install` jobs.
pub struct UpdateInstallHandler;

impl JobHandler for UpdateInstallHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let request: UpdateRequest = ctx.params()?;
        let settings = ctx.library().settings()?;
        let check = super::check(&settings)?;
        let latest = match check.latest {
            Some(latest) if check.newer && latest.version == request.version => latest,
            Some(latest) if check.newer => {
                return Err(crate::error::invalid_input(format!(
                    "the update feed now offers Timbre Studio {}, not the {} chosen: check for \
                     updates again",
                    latest.version, request.version
                )));
            }
            _ => {
                return Err(crate::error::invalid_input(format!(
                    "the update feed no longer offers a version newer than {}",
                    check.current
                )));
            }
        };
        let label = format!("Timbre Studio {}", latest.version);
        let installed = super::install_release(
            &settings,
            &latest,
            &super::install_root()?,
            &super::downloads_dir(ctx.library()),
            &mut |progress| ctx.progress(progress.fraction() * 0.95, progress.message(&label)),
        )?;
        ctx.progress(1.0, format!("{label} installed: restart the app to use it"))?;
        Ok(serde_json::to_value(installed)?)
    }
}
