//! `timbre update check|install`: what the signed update feed offers, and the newest version
//! installed in place of this one (the tar.gz form). `install` asks nothing: typing it is the
//! asking; it says what it installs before it starts, then runs the `update_install` job the
//! app's Install button queues.

use super::{open_jobs, open_library};
use crate::output::{Output, escape_controls};
use anyhow::{Result, bail};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use timbre_core::disk::human_bytes;
use timbre_core::updates::{self, Installed, UpdateCheck, UpdateRequest};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Ask the update feed (the update_feed_url setting) whether a newer version is out, and
    /// what is new in it.
    Check,
    /// Download the newest version's tar.gz package, verify it and put it in place of this
    /// copy (the old one is kept as <folder>.old). A .deb is updated by apt, a checkout by git.
    Install,
}

/// What `install` did: the check, and the install when there was something newer.
#[derive(Serialize)]
struct InstallOutcome {
    check: UpdateCheck,
    installed: Option<Installed>,
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    let settings = library.settings()?;
    let check = updates::check(&settings)?;
    match cmd {
        Command::Check => {
            out.print(&check, || describe(&check));
            Ok(ExitCode::SUCCESS)
        }
        Command::Install => {
            let Some(latest) = check.latest.as_ref().filter(|_| check.newer) else {
                out.print(
                    &InstallOutcome {
                        check: check.clone(),
                        installed: None,
                    },
                    || describe(&check),
                );
                return Ok(ExitCode::SUCCESS);
            };
            if let Some(refused) = updates::refusal(check.installed_as) {
                return Err(timbre_core::error::invalid_input(refused));
            }
            let root = updates::install_root()?;
            if let Some(package) =
                latest.package(updates::PackageForm::TarGz, std::env::consts::ARCH)
            {
                out.note(&format!(
                    "installing Timbre Studio {} into {}: {} ({}, SHA-256 {})",
                    latest.version,
                    root.display(),
                    package.url,
                    human_bytes(package.size_bytes),
                    package.sha256
                ));
            }
            let system = open_jobs(data_dir)?;
            let request = UpdateRequest {
                version: latest.version.clone(),
            };
            let job = updates::start_install(&system, request)?;
            let outcome = super::run_jobs::<Installed>(
                &system,
                vec![(format!("Timbre Studio {}", latest.version), job.id)],
                out,
            )?
            .remove(0);
            let Some(installed) = outcome.result else {
                bail!(
                    "Timbre Studio {} was not installed (job {}): {}",
                    latest.version,
                    outcome.job_id,
                    outcome
                        .error
                        .unwrap_or_else(|| format!("the job ended {}", outcome.state.as_str()))
                );
            };
            out.note("");
            let text = format!(
                "installed Timbre Studio {} into {} (the previous version is in {}); restart \
                 the app to use it",
                installed.version, installed.install_root, installed.previous
            );
            out.print(
                &InstallOutcome {
                    check,
                    installed: Some(installed),
                },
                || text,
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The check for a terminal: up to date, or the newer release, its notes, its packages and how
/// to get it.
fn describe(check: &UpdateCheck) -> String {
    let current = &check.current;
    let latest = match &check.latest {
        Some(latest) if check.newer => latest,
        _ => {
            return format!("Timbre Studio {current} is up to date ({})", check.feed_url);
        }
    };
    let mut lines = vec![format!(
        "Timbre Studio {} is out (this is {current}), released {}",
        latest.version, latest.date
    )];
    if !latest.notes.trim().is_empty() {
        lines.push(String::new());
        lines.extend(
            latest
                .notes
                .lines()
                .map(|l| format!("  {}", escape_controls(l))),
        );
    }
    lines.push(String::new());
    for package in &latest.packages {
        let form = serde_json::to_value(package.form).unwrap_or_default();
        lines.push(format!(
            "  {:<7} {:<8} {:>9}  {}",
            form.as_str().unwrap_or_default(),
            package.arch,
            human_bytes(package.size_bytes),
            package.url
        ));
    }
    lines.push(String::new());
    lines.push(match (&check.how_to_update, check.can_install) {
        (_, true) => "install it with: timbre update install".to_string(),
        (Some(how), false) => how.clone(),
        (None, false) => format!(
            "no tar.gz package for {} in this release: download it from the feed's page",
            std::env::consts::ARCH
        ),
    });
    lines.join("\n")
}
