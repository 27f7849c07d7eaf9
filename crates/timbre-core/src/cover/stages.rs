//! The stages of a cover: their share of the job's progress, their cache (the takes a stage
//! made under the key of its inputs and parameters, `db::cover_stages`) and the report of each:
//! ran, cached or skipped, as a job event and in the result.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use timbre_audio::DecodeOptions;

use crate::db::job_events::Level;
use crate::db::takes::{self, Take};
use crate::db::{cover_stages, derived_takes};
use crate::derived::find_or_insert;
use crate::jobs::JobContext;
use crate::library::{Library, Notification};
use crate::store::StoredObject;

/// One stage of a cover, in the order they run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The song split into vocals and instrumental.
    Isolate,
    /// A second separation model over the vocals, lead from backing; skipped unless chosen.
    SecondPass,
    /// The (lead) vocals converted with the voice; skipped without one, the vocals passing through.
    Convert,
    /// The effect chain over the converted vocals; skipped when there is none.
    Effects,
    /// The vocals mixed over the instrumental and true-peak limited into the cover.
    Remix,
}

impl Stage {
    /// The stage's snake_case name, as serialised and in progress messages.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Isolate => "isolate",
            Stage::SecondPass => "second_pass",
            Stage::Convert => "convert",
            Stage::Effects => "effects",
            Stage::Remix => "remix",
        }
    }

    /// The stage's share of the job's progress, from and to.
    fn span(self) -> (f64, f64) {
        match self {
            Stage::Isolate => (0.0, 0.35),
            Stage::SecondPass => (0.35, 0.45),
            Stage::Convert => (0.45, 0.82),
            Stage::Effects => (0.82, 0.86),
            Stage::Remix => (0.86, 0.99),
        }
    }
}

/// How a stage went in one job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// It ran and its results were saved (and cached).
    Ran,
    /// Its results for the same inputs and parameters were found in the cache.
    Cached,
    /// It had nothing to do under the chosen settings.
    Skipped,
}

/// How one stage of a cover went, as a job event and in the result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct StageReport {
    /// Which stage.
    pub stage: Stage,
    /// Whether it ran, came from the cache or was skipped.
    pub status: StageStatus,
    /// Wall-clock time it took, in seconds; 0 when cached or skipped.
    pub seconds: f64,
    /// Why it was skipped, or what ran.
    pub detail: String,
}

/// A file a stage made, to become a take linked to the song.
pub(super) struct Made {
    pub role: &'static str,
    /// The `derived_takes` operation.
    pub operation: &'static str,
    pub name: String,
    pub file: tempfile::TempPath,
    /// `wav` or `flac`.
    pub format: &'static str,
    pub params: Value,
}

/// The progress callback a stage's work gets: a fraction of the stage, and a message.
pub(super) type StageProgress<'a> = &'a dyn Fn(f64, String) -> Result<()>;

pub(super) struct Stages<'a> {
    ctx: &'a JobContext<'a>,
    pub song: &'a Take,
    reports: Vec<StageReport>,
}

impl<'a> Stages<'a> {
    pub fn new(ctx: &'a JobContext<'a>, song: &'a Take) -> Self {
        Stages {
            ctx,
            song,
            reports: Vec::new(),
        }
    }

    pub fn library(&self) -> &'a Library {
        self.ctx.library()
    }

    pub fn into_reports(self) -> Vec<StageReport> {
        self.reports
    }

    /// Progress within `stage`, as `<song>: <stage>: <message>`.
    fn progress(&self, stage: Stage, fraction: f64, message: &str) -> Result<()> {
        let (from, to) = stage.span();
        self.ctx.progress(
            from + (to - from) * fraction.clamp(0.0, 1.0),
            format!("{}: {}: {message}", self.song.name, stage.name()),
        )
    }

    fn report(
        &mut self,
        stage: Stage,
        status: StageStatus,
        seconds: f64,
        detail: String,
    ) -> Result<()> {
        let report = StageReport {
            stage,
            status,
            seconds,
            detail,
        };
        self.ctx.event(Level::Info, "stage", &json!(report))?;
        self.reports.push(report);
        Ok(())
    }

    pub fn skip(&mut self, stage: Stage, why: &str) -> Result<()> {
        self.progress(stage, 1.0, "skipped")?;
        self.report(stage, StageStatus::Skipped, 0.0, why.into())
    }

    /// The takes `stage` made under `key` before, when they are all still there; else runs
    /// `make` and saves what it made as takes linked to the song, recorded under `key`, in
    /// one transaction.
    pub fn cached_or_run(
        &mut self,
        stage: Stage,
        key: &str,
        roles: &[&str],
        make: impl FnOnce(StageProgress<'_>) -> Result<Vec<Made>>,
    ) -> Result<BTreeMap<String, Take>> {
        let started = Instant::now();
        let conn = self.library().conn();
        let found = cover_stages::find(&conn, key, roles)?;
        let cached = match found {
            Some(ids) => ids
                .into_iter()
                .map(|(role, id)| Ok(takes::get(&conn, id)?.map(|take| (role, take))))
                .collect::<Result<Option<BTreeMap<_, _>>>>()?
                .filter(|takes| {
                    takes
                        .values()
                        .all(|t| self.library().take_path(t).is_file())
                }),
            None => None,
        };
        drop(conn);
        if let Some(takes) = cached {
            self.progress(stage, 1.0, "from the cache")?;
            self.report(
                stage,
                StageStatus::Cached,
                0.0,
                "the same inputs were done before".into(),
            )?;
            return Ok(takes);
        }
        self.progress(stage, 0.0, "starting")?;
        let progress = |f: f64, message: String| self.progress(stage, f, &message);
        let made = make(&progress)?;
        self.ctx.check_cancelled()?;
        let saved = save(
            self.library(),
            self.song,
            stage,
            key,
            made,
            self.ctx.job_id(),
        )?;
        let detail = saved.keys().cloned().collect::<Vec<_>>().join(", ");
        self.report(
            stage,
            StageStatus::Ran,
            started.elapsed().as_secs_f64(),
            detail,
        )?;
        Ok(saved)
    }
}

/// Stores the files, then adds their takes, their links to the song and the stage record in one
/// transaction; a failure removes what this call stored.
fn save(
    library: &Library,
    song: &Take,
    stage: Stage,
    key: &str,
    made: Vec<Made>,
    job_id: i64,
) -> Result<BTreeMap<String, Take>> {
    let mut stored: Vec<(StoredObject, takes::NewTake, &Made)> = Vec::new();
    let written = (|| {
        for result in &made {
            let object = library.store().ingest_file(&result.file, result.format)?;
            let new = crate::separation::stream::describe_file(
                &result.file,
                &DecodeOptions::default(),
                &object,
                result.format,
                result.name.clone(),
                song.voice_id,
            );
            match new {
                Ok(new) => stored.push((object, new, result)),
                Err(err) => {
                    library.discard(object)?;
                    return Err(err);
                }
            }
        }
        Ok(())
    })();
    let committed = written.and_then(|()| {
        let mut conn = library.conn();
        let tx = conn.transaction()?;
        let mut saved = BTreeMap::new();
        for (_, new, result) in &stored {
            let (take, _) = find_or_insert(&tx, new)?;
            if take.id != song.id {
                derived_takes::insert(
                    &tx,
                    take.id,
                    song.id,
                    result.operation,
                    &result.params,
                    Some(job_id),
                )?;
            }
            saved.insert(result.role.to_string(), take);
        }
        let records: Vec<(&str, i64)> = saved.iter().map(|(r, t)| (r.as_str(), t.id)).collect();
        cover_stages::record(&tx, key, stage.name(), &records)?;
        tx.commit()
            .context("saving the cover's stems to the library")?;
        Ok(saved)
    });
    match committed {
        Ok(saved) => {
            library.notify(Notification::LibraryChanged);
            Ok(saved)
        }
        Err(err) => {
            for (object, _, _) in stored {
                library.discard(object)?;
            }
            Err(err)
        }
    }
}

/// A temporary file in the store's own `tmp/`, which the next process to open the library
/// alone empties.
pub(super) fn temp_file(library: &Library, part: &str, ext: &str) -> Result<tempfile::TempPath> {
    let dir = library.store().tmp_dir();
    Ok(tempfile::Builder::new()
        .prefix(&format!(".cover-{part}-"))
        .suffix(&format!(".{ext}"))
        .tempfile_in(&dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?
        .into_temp_path())
}
