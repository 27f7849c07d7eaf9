//! Bringing audio into the library: the `import` job (many files, resumable, one result per
//! file; takes are saved through `take_files`). A take and the job event that reports it commit together, so
//! after a crash every reported file is present and every present file is reported.

use crate::db::job_events::{self, Level};
use crate::db::jobs::Job;
use crate::db::takes::{Origin, Take};
use crate::error::{ErrorKind, ErrorReport, kind_of};
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem};
use crate::library::Library;
use crate::take_files::{commit_take, describe};
use anyhow::{Context, Result};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use timbre_audio::DecodeOptions;

/// The job kind.
const KIND: JobKind = JobKind::Import;

/// An import, as the CLI and the app ask for it and as its job runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRequest {
    /// The files to import, in order; `submit` makes them absolute and drops repeats.
    pub paths: Vec<PathBuf>,
    /// Put the takes under this voice.
    #[serde(default)]
    pub voice_id: Option<i64>,
}

/// What an `import` job gives; each file's outcome is its `file` event ([`file_outcomes`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ImportResult {
    /// Number of files in the request.
    pub total: usize,
    /// Files saved as new takes.
    pub imported: usize,
    /// Files whose audio the library already held (no new take).
    pub duplicates: usize,
    /// Files that could not be imported; each has its error in its `file` event.
    pub failed: usize,
}

/// Queues an import of the files. They are checked by the job, one by one, each failure
/// reported with its file, so one bad file does not hold back the others.
pub fn submit(system: &JobSystem, request: ImportRequest) -> Result<Job> {
    if request.paths.is_empty() {
        return Err(crate::error::invalid_input(
            "choose at least one file to import",
        ));
    }
    // Each file once, however often and by whatever path it was named: a second mention
    // would only be reported as a duplicate of the first.
    let mut seen = HashSet::new();
    let mut paths = Vec::with_capacity(request.paths.len());
    for path in &request.paths {
        let path = std::path::absolute(path)?;
        let identity = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(identity) {
            paths.push(path);
        }
    }
    let request = ImportRequest { paths, ..request };
    system.submit(KIND, serde_json::to_value(&request)?)
}

/// One line of an import's report, stored as the job event of kind `file`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileOutcome {
    /// The file, as the request named it (absolute).
    pub path: PathBuf,
    /// Whether the file is in the library now, as a new take or a duplicate.
    pub ok: bool,
    /// The take that holds the file's audio; None when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub take_id: Option<i64>,
    /// Whether an identical take was already there, so none was added.
    pub duplicate: bool,
    /// Why the file failed, in plain words; None when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The kind of the failure (not found, invalid input, …); None when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
}

/// Runs `import` jobs: each file decoded, stored and saved as a take; a rerun skips files done.
pub struct ImportHandler;

impl JobHandler for ImportHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let params: ImportRequest = ctx.params()?;
        let library = ctx.library();
        let max_duration_secs = library.settings()?.max_import_duration_secs;
        // A rerun (after a crash, or a retry) keeps what succeeded and tries failures again.
        let mut outcomes: Vec<FileOutcome> = file_outcomes(&library.conn(), ctx.job_id())?
            .into_iter()
            .filter(|o| o.ok)
            .collect();
        let done: HashSet<PathBuf> = outcomes.iter().map(|o| o.path.clone()).collect();
        let total = params.paths.len();
        for (i, path) in params.paths.iter().enumerate() {
            if done.contains(path) {
                continue;
            }
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            ctx.progress(i as f64 / total as f64, format!("{}/{total} {name}", i + 1))?;
            let outcome = match import_file(
                library,
                path,
                params.voice_id,
                max_duration_secs,
                |conn, outcome| {
                    job_events::insert(
                        conn,
                        ctx.job_id(),
                        Level::Info,
                        "file",
                        &serde_json::to_value(outcome)?,
                    )
                },
            ) {
                Ok(outcome) => outcome,
                // A locked database or a full disk is the library's trouble, not the file's:
                // the attempt ends, and a retry resumes after the files already imported.
                Err(err) if matches!(kind_of(&err), ErrorKind::Busy | ErrorKind::DiskFull) => {
                    return Err(err);
                }
                Err(err) => {
                    let report = ErrorReport::from_anyhow(&err);
                    FileOutcome {
                        path: path.clone(),
                        ok: false,
                        take_id: None,
                        duplicate: false,
                        error: Some(report.message),
                        error_kind: Some(report.kind),
                    }
                }
            };
            if !outcome.ok {
                ctx.event(Level::Error, "file", &serde_json::to_value(&outcome)?)?;
            }
            outcomes.push(outcome);
        }
        let failed: Vec<&FileOutcome> = outcomes.iter().filter(|o| !o.ok).collect();
        if total > 0 && failed.len() == total {
            let first = failed[0].error.as_deref().unwrap_or_default();
            return Err(crate::error::invalid_input(format!(
                "none of the {total} files could be imported; {first}"
            )));
        }
        let duplicates = outcomes.iter().filter(|o| o.duplicate).count();
        ctx.progress(
            1.0,
            format!(
                "{} imported, {duplicates} already in the library, {} failed",
                total - failed.len() - duplicates,
                failed.len()
            ),
        )?;
        Ok(serde_json::to_value(ImportResult {
            total,
            imported: total - failed.len() - duplicates,
            duplicates,
            failed: failed.len(),
        })?)
    }
}

/// The latest outcome for each file of an import job, in the order the files were first met.
pub fn file_outcomes(conn: &Connection, job_id: i64) -> Result<Vec<FileOutcome>> {
    let mut outcomes: Vec<FileOutcome> = Vec::new();
    for event in job_events::list(conn, job_id, Some("file"))? {
        let Ok(outcome) = serde_json::from_value::<FileOutcome>(event.data) else {
            continue;
        };
        match outcomes.iter_mut().find(|o| o.path == outcome.path) {
            Some(earlier) => *earlier = outcome,
            None => outcomes.push(outcome),
        }
    }
    Ok(outcomes)
}

/// Imports one file. `report` runs inside the transaction that adds the take.
pub fn import_file(
    library: &Library,
    path: &Path,
    voice_id: Option<i64>,
    max_duration_secs: f64,
    report: impl FnOnce(&Connection, &FileOutcome) -> Result<()>,
) -> Result<FileOutcome> {
    let audio = timbre_audio::decode_file(
        path,
        &DecodeOptions {
            max_duration_secs: Some(max_duration_secs),
        },
    )?;
    let format = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .filter(|e| !e.is_empty() && e.len() <= 8 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| "audio".into());
    let stored = library.store().ingest_file(path, &format)?;
    let name = path
        .file_stem()
        .map_or_else(|| "untitled".into(), |s| s.to_string_lossy().into_owned());
    let new = describe(
        &audio,
        &stored.sha256,
        &format,
        name,
        Some(path),
        Origin::Imported,
        voice_id,
    );
    let (take, duplicate) = commit_take(library, stored, &new, |conn, take, duplicate| {
        let outcome = success(path, take, duplicate);
        report(conn, &outcome)
    })
    .with_context(|| format!("{}: cannot save the take", path.display()))?;
    Ok(success(path, &take, duplicate))
}

fn success(path: &Path, take: &Take, duplicate: bool) -> FileOutcome {
    FileOutcome {
        path: path.to_path_buf(),
        ok: true,
        take_id: Some(take.id),
        duplicate,
        error: None,
        error_kind: None,
    }
}

#[cfg(test)]
mod tests;
