//! `timbre library list|show|rm|export|voices|datasets|backups|restore|gc`: takes, voices and
//! datasets; takes and conversions exported as files; the database's backups, listed and
//! restored without opening the library (it may be damaged); and the store squared with the rows.

use super::{duration, open_library};
use crate::output::{Output, escape_controls};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::Library;
use timbre_core::db::{backups, datasets, takes, voices};
use timbre_core::library_export::{self, LibraryItem};

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
    /// Save takes and conversions as files: one to a file, whose extension picks the format
    /// (the stored one is copied, .wav, .flac, .mp3, .ogg or .opus encoded), or any number into
    /// an existing folder under their default names ("Song (Ada, +3 st).wav"), never overwriting.
    Export {
        /// A take to export (repeatable).
        #[arg(long = "take")]
        takes: Vec<i64>,
        /// A conversion to export (repeatable).
        #[arg(long = "conversion")]
        conversions: Vec<i64>,
        /// The file to write, or a folder to copy into.
        target: PathBuf,
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
    /// Square the stored files with the library: remove what nothing names, keep in the trash
    /// what only a kept backup names, bring back from it what the library names.
    Gc,
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
                    .map(|t| format!("deleted take {} \"{}\"", t.id, escape_controls(&t.name)))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Export {
            takes,
            conversions,
            target,
        } => {
            let items: Vec<LibraryItem> = takes
                .into_iter()
                .map(LibraryItem::Take)
                .chain(conversions.into_iter().map(LibraryItem::Conversion))
                .collect();
            let written = match items.as_slice() {
                [] => {
                    return Err(timbre_core::error::invalid_input(
                        "nothing to export: name a --take or a --conversion",
                    ));
                }
                [item] if !target.is_dir() => {
                    vec![library_export::export(&library, *item, &target)?]
                }
                _ if target.is_dir() => library_export::export_into(&library, &items, &target)?,
                _ => {
                    return Err(timbre_core::error::invalid_input(format!(
                        "{}: is not a folder: several items are exported into an existing folder",
                        target.display()
                    )));
                }
            };
            out.print(&written, || {
                written
                    .iter()
                    .map(|path| format!("exported {}", path.display()))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Voices => {
            let voices = voices::list(&library.conn())?;
            out.print(&voices, || {
                voices
                    .iter()
                    .map(|v| {
                        let name = escape_controls(&v.name);
                        format!("{:>5}  {name}  ({} takes)", v.id, v.take_count)
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Gc => {
            let alone = library.is_alone()?;
            let report = library.collect_garbage(alone)?;
            out.print(&report, || gc_summary(&report));
            if !report.missing.is_empty() {
                return Err(timbre_core::error::not_found(format!(
                    "{} stored file(s) the library names are missing: {}",
                    report.missing.len(),
                    report
                        .missing
                        .iter()
                        .map(|k| format!("{}.{}", k.sha256, k.ext))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        Command::Datasets => {
            let sets = datasets::list(&library.conn())?;
            out.print(&sets, || {
                sets.iter()
                    .map(|d| {
                        let name = escape_controls(&d.name);
                        format!("{:>5}  {name}  ({} takes)", d.id, d.take_count)
                    })
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
        escape_controls(&t.name),
        duration(t.duration_secs),
        t.sample_rate,
        t.channels,
        t.peak_dbfs,
        escape_controls(&t.tags.join(","))
    )
}

fn gc_summary(report: &timbre_core::store::GarbageReport) -> String {
    format!(
        "removed {} unused file(s), moved {} to the trash (a backup names them), brought back {} \
         from the trash, emptied {} from the trash, cleaned {} partial file(s) and {} stale pin(s)",
        report.orphan_objects,
        report.trashed_objects,
        report.restored_objects,
        report.emptied_from_trash,
        report.partial_files,
        report.stale_pins
    )
}
