//! `timbre assets list|download|verify|remove`: the catalogue's weight files in the models
//! folder; downloads run as `download` jobs in this process and are verified by SHA-256.

use super::{open_jobs, open_library};
use crate::output::Output;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use timbre_core::assets::{
    self, Asset, AssetState, AssetStatus, Catalog, DownloadRequest, Downloaded,
};
use timbre_core::disk::human_bytes;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Every asset of the catalogue: present, verified, missing, corrupt or partial.
    List,
    /// Download assets, verified by SHA-256; waits and shows progress.
    Download {
        /// Asset names (or paths in the models folder).
        #[arg(required_unless_present_any = ["essentials", "all"])]
        names: Vec<String>,
        /// HuBERT and RMVPE: what conversion needs.
        #[arg(long, conflicts_with_all = ["names", "all"])]
        essentials: bool,
        /// Every asset of the catalogue.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Hash the assets (all by default) and name corrupt or truncated files.
    Verify { names: Vec<String> },
    /// Delete assets' files (and partial downloads).
    Remove {
        #[arg(required = true)]
        names: Vec<String>,
    },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let catalog = Catalog::read()?;
    match cmd {
        Command::List => {
            let library = open_library(data_dir)?;
            let dir = timbre_core::models_folder::of(&library)?;
            let statuses = assets::inspect(&dir, &catalog.assets, false)?;
            print_statuses(out, &dir, &statuses);
            Ok(ExitCode::SUCCESS)
        }
        Command::Download {
            names,
            essentials,
            all,
        } => {
            let chosen: Vec<&Asset> = if essentials {
                catalog.essentials().collect()
            } else if all {
                catalog.assets.iter().collect()
            } else {
                select(&catalog, &names)?
            };
            let system = open_jobs(data_dir)?;
            let mut jobs = Vec::new();
            for asset in chosen {
                let request = DownloadRequest {
                    asset: asset.name.clone(),
                };
                jobs.push((
                    asset.name.clone(),
                    assets::start_download(&system, request)?.id,
                ));
            }
            let results = super::run_jobs::<Downloaded>(&system, jobs, out)?;
            let ok = results.iter().all(|r| r.ok);
            out.print(&results, || {
                results
                    .iter()
                    .map(|r| match &r.result {
                        Some(done) => {
                            format!("verified  {:<28} {}", r.input, done.path.display())
                        }
                        None => format!(
                            "failed    {}",
                            r.error.as_deref().unwrap_or("no error recorded")
                        ),
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            Ok(exit_code(ok))
        }
        Command::Verify { names } => {
            let library = open_library(data_dir)?;
            let dir = timbre_core::models_folder::of(&library)?;
            let chosen = if names.is_empty() {
                catalog.assets.iter().collect()
            } else {
                select(&catalog, &names)?
            };
            let statuses = assets::inspect(&dir, chosen, true)?;
            print_statuses(out, &dir, &statuses);
            let corrupt = statuses
                .iter()
                .any(|s| matches!(s.state, AssetState::Corrupt { .. }));
            Ok(exit_code(!corrupt))
        }
        Command::Remove { names } => {
            let library = open_library(data_dir)?;
            let dir = timbre_core::models_folder::of(&library)?;
            let mut removed = Vec::new();
            for asset in select(&catalog, &names)? {
                let was_there = assets::remove(&dir, asset)?;
                removed.push(serde_json::json!({ "asset": asset.name, "removed": was_there }));
            }
            out.print(&removed, || {
                removed
                    .iter()
                    .map(|r| {
                        let what = if r["removed"] == true {
                            "removed"
                        } else {
                            "absent"
                        };
                        format!("{what:<9} {}", r["asset"].as_str().unwrap_or_default())
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn select<'a>(catalog: &'a Catalog, names: &[String]) -> Result<Vec<&'a Asset>> {
    names.iter().map(|name| catalog.find(name)).collect()
}

fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_statuses(out: &Output, dir: &Path, statuses: &[AssetStatus]) {
    out.print(
        &serde_json::json!({ "models_dir": dir, "assets": statuses }),
        || {
            let mut lines = vec![format!("models folder: {}", dir.display())];
            lines.extend(statuses.iter().map(|s| {
                let size = s.asset.size_bytes.map_or("?".into(), human_bytes);
                let detail = match &s.state {
                    AssetState::Corrupt { problem } => format!("  ({problem})"),
                    AssetState::Partial { bytes } => format!("  ({} so far)", human_bytes(*bytes)),
                    _ => String::new(),
                };
                format!(
                    "{:<9} {:<28} {:>9}  {}{detail}",
                    s.state.label(),
                    s.asset.name,
                    size,
                    s.asset.needed_for.join(", ")
                )
            }));
            lines.join("\n")
        },
    );
}
