use super::{duration, open_library};
use crate::output::Output;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use timbre_core::Library;
use timbre_core::db::{backups, datasets, takes, voices};

#[derive(clap::Subcommand)]
pub enum Command {
    /// List takes (newest first).
    List {
        /// Only the takes of this voice.
        #[arg(long)]
        voice: Option<String>,
    },
    /// Show one take in full.
    Show { id: i64 },
    /// Delete takes and their audio.
    Rm {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// List voices.
    Voices,
    /// List datasets.
    Datasets,
    /// List the backups of the library database (newest first).
    Backups,
    /// Put a backup (a name from `library backups`, or a path) in place of the library
    /// database; the replaced file is kept aside, renamed.
    Restore { backup: String },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    // Backups are listed and restored without opening the library, which may be damaged.
    let dir = timbre_core::library::resolve_data_dir(data_dir)?;
    match cmd {
        Command::Backups => {
            let backups = backups::list(&dir.join(timbre_core::library::DATABASE))?;
            out.print(&backups, || {
                backups
                    .iter()
                    .map(|b| format!("{}  {:>10} bytes  {}", b.name, b.bytes, b.made_at))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            return Ok(ExitCode::SUCCESS);
        }
        Command::Restore { backup } => {
            let kept = Library::restore_backup(&dir, &backup)?;
            let result = serde_json::json!({ "restored": backup, "kept_aside": kept });
            out.print(&result, || match &kept {
                Some(kept) => format!("restored {backup}; the replaced file is {}", kept.display()),
                None => format!("restored {backup}"),
            });
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let library = open_library(data_dir)?;
    match cmd {
        Command::Backups | Command::Restore { .. } => unreachable!("handled above"),
        Command::List { voice } => {
            let voice_id = match voice {
                Some(name) => Some(
                    voices::find_by_name(&library.conn(), &name)?
                        .ok_or_else(|| {
                            timbre_core::error::not_found(format!("no voice named {name:?}"))
                        })?
                        .id,
                ),
                None => None,
            };
            let takes = takes::list(&library.conn(), voice_id)?;
            out.print(&takes, || {
                takes.iter().map(take_line).collect::<Vec<_>>().join("\n")
            });
        }
        Command::Show { id } => {
            let take = takes::require(&library.conn(), id)?;
            let path = library.take_path(&take);
            out.print(&take, || {
                format!("{}\nfile: {}", take_line(&take), path.display())
            });
        }
        Command::Rm { ids } => {
            let removed = ids
                .iter()
                .map(|&id| library.delete_take(id))
                .collect::<Result<Vec<_>>>()?;
            out.print(&removed, || {
                removed
                    .iter()
                    .map(|t| format!("deleted take {} \"{}\"", t.id, t.name))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Voices => {
            let voices = voices::list(&library.conn())?;
            out.print(&voices, || {
                voices
                    .iter()
                    .map(|v| format!("{:>5}  {}  ({} takes)", v.id, v.name, v.take_count))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Datasets => {
            let sets = datasets::list(&library.conn())?;
            out.print(&sets, || {
                sets.iter()
                    .map(|d| format!("{:>5}  {}  ({} takes)", d.id, d.name, d.take_count))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn take_line(t: &takes::Take) -> String {
    format!(
        "{:>5}  {:<32} {:>8}  {:>6} Hz  {} ch  peak {:>6.1} dBFS  {}",
        t.id,
        t.name,
        duration(t.duration_secs),
        t.sample_rate,
        t.channels,
        t.peak_dbfs,
        t.tags.join(",")
    )
}
