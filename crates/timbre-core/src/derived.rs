//! Results derived from a source take (cleaned takes, separated stems, a cover's stems): the
//! source they come from (a take, or a file that becomes one), their audio saved into the store
//! and their takes linked to the source in one transaction, and copies into an output folder.
//! The cleaning and cover jobs save their results through here.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timbre_audio::{AudioBuffer, DecodeOptions};

use crate::db::derived_takes;
use crate::db::takes::{self, NewTake, Origin, Take};
use crate::input::{AudioInput, ResolvedInput};
use crate::library::{Library, Notification};
use crate::out_folder;
use crate::output_format::OutputFormat;
use crate::separation::stream;
use crate::store::StoredObject;
use crate::take_files::describe;

/// Where the input came from: the take it is or will become.
pub(crate) struct Source {
    pub name: String,
    pub voice_id: Option<i64>,
    pub origin: SourceOrigin,
}

pub(crate) enum SourceOrigin {
    Take(Take),
    /// A file, already copied into the store, with the row it gets when the results commit.
    File {
        path: PathBuf,
        stored: StoredObject,
        new_take: Box<NewTake>,
    },
}

impl Source {
    /// The source and its decoded audio.
    pub fn load(library: &Library, input: &AudioInput) -> Result<(Source, AudioBuffer)> {
        let max_duration_secs = Some(library.settings()?.max_import_duration_secs);
        let decode =
            |path: &Path| timbre_audio::decode_file(path, &DecodeOptions { max_duration_secs });
        let ResolvedInput { path, take, name } = input.resolve(library)?;
        match take {
            Some(take) => {
                let audio =
                    decode(&path).with_context(|| format!("take {} ({:?})", take.id, take.name))?;
                let source = Source {
                    name: take.name.clone(),
                    voice_id: take.voice_id,
                    origin: SourceOrigin::Take(take),
                };
                Ok((source, audio))
            }
            None => {
                let audio = decode(&path)?;
                let format = file_format(&path);
                let stored = library.store().ingest_file(&path, &format)?;
                let new_take = describe(
                    &audio,
                    &stored.sha256,
                    &format,
                    name.clone(),
                    Some(&path),
                    Origin::Imported,
                    None,
                );
                let source = Source {
                    name,
                    voice_id: None,
                    origin: SourceOrigin::File {
                        path,
                        stored,
                        new_take: Box::new(new_take),
                    },
                };
                Ok((source, audio))
            }
        }
    }

    /// The source, without decoding it into memory: a file is stored, then described block by
    /// block (a file it fails to describe leaves nothing stored).
    pub fn open(library: &Library, input: &AudioInput, decode: &DecodeOptions) -> Result<Source> {
        let ResolvedInput { path, take, name } = input.resolve(library)?;
        match take {
            Some(take) => Ok(Source {
                name: take.name.clone(),
                voice_id: take.voice_id,
                origin: SourceOrigin::Take(take),
            }),
            None => {
                // The header first, so a file that is not audio is not copied.
                timbre_audio::open_blocks(&path, decode)?;
                let format = file_format(&path);
                let stored = library.store().ingest_file(&path, &format)?;
                let described =
                    stream::describe_file(&path, decode, &stored, &format, name.clone(), None);
                let mut new_take = match described {
                    Ok(new_take) => new_take,
                    Err(err) => {
                        library.discard(stored)?;
                        return Err(err);
                    }
                };
                new_take.source_path = Some(path.display().to_string());
                Ok(Source {
                    name,
                    voice_id: None,
                    origin: SourceOrigin::File {
                        path,
                        stored,
                        new_take: Box::new(new_take),
                    },
                })
            }
        }
    }

    /// Undoes `load` for a job that ends without saving: a file's copy in the store goes unless
    /// a take holds the same content.
    pub fn discard(self, library: &Library) -> Result<()> {
        if let SourceOrigin::File { stored, .. } = self.origin {
            library.discard(stored)?;
        }
        Ok(())
    }

    /// Where the input came from, for messages.
    pub fn label(&self) -> String {
        match &self.origin {
            SourceOrigin::Take(take) => format!("take {} ({})", take.id, take.name),
            SourceOrigin::File { path, .. } => path.display().to_string(),
        }
    }
}

/// The store extension of an input file: its own, when it looks like one.
fn file_format(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .filter(|e| e.len() <= 8 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "audio".into())
}

/// One result of a job, before it is saved.
pub(crate) struct Derived {
    /// `enhance`, `isolate_vocals` or `isolate_instrumental`.
    pub operation: &'static str,
    pub name: String,
    pub audio: Output,
}

/// A result's audio: in memory, or a complete WAV file written block by block.
pub(crate) enum Output {
    Audio(AudioBuffer),
    File(tempfile::TempPath),
}

/// A saved result, as the job reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct SavedTake {
    /// What made it, as `derived_takes` records it: `enhance`, `isolate_vocals`, `cover`, …
    pub operation: String,
    /// The saved take (an existing one when `duplicate`).
    pub take: Take,
    /// The library already held identical audio.
    pub duplicate: bool,
    /// Where `out_dir` got a copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub copied_to: Option<PathBuf>,
}

/// Writes the results into the store, then adds the source's take (for a file) and the results'
/// takes with their links in one transaction. `before_commit` runs last before the transaction
/// (a cancelled job stops there); a failure removes whatever this call stored.
pub(crate) fn save(
    library: &Library,
    source: Source,
    results: Vec<Derived>,
    params: &Value,
    job_id: i64,
    format: OutputFormat,
    before_commit: impl FnOnce() -> Result<()>,
) -> Result<(i64, Vec<SavedTake>)> {
    let mut stored: Vec<(StoredObject, NewTake, &'static str)> = Vec::new();
    let written = (|| {
        for result in results {
            let (object, new) = match &result.audio {
                Output::Audio(audio) => {
                    let object = store_audio(library, audio, format)?;
                    let new = describe(
                        audio,
                        &object.sha256,
                        format.extension(),
                        result.name,
                        None,
                        Origin::Imported,
                        source.voice_id,
                    );
                    (object, new)
                }
                Output::File(path) => {
                    let object = library.store().ingest_file(path, format.extension())?;
                    let described = stream::describe_file(
                        path,
                        &DecodeOptions::default(),
                        &object,
                        format.extension(),
                        result.name,
                        source.voice_id,
                    );
                    match described {
                        Ok(new) => (object, new),
                        Err(err) => {
                            library.discard(object)?;
                            return Err(err);
                        }
                    }
                }
            };
            stored.push((object, new, result.operation));
        }
        before_commit()
    })();
    let committed = written.and_then(|()| commit(library, &source.origin, &stored, params, job_id));
    match committed {
        Ok(saved) => {
            library.notify(Notification::LibraryChanged);
            Ok(saved)
        }
        Err(err) => {
            for (object, _, _) in stored {
                library.discard(object)?;
            }
            source.discard(library)?;
            Err(err)
        }
    }
}

fn commit(
    library: &Library,
    origin: &SourceOrigin,
    stored: &[(StoredObject, NewTake, &'static str)],
    params: &Value,
    job_id: i64,
) -> Result<(i64, Vec<SavedTake>)> {
    let mut conn = library.conn();
    let tx = conn.transaction()?;
    let source_id = match origin {
        SourceOrigin::Take(take) => take.id,
        SourceOrigin::File { new_take, .. } => find_or_insert(&tx, new_take)?.0.id,
    };
    let mut saved = Vec::with_capacity(stored.len());
    for (_, new, operation) in stored {
        let (take, duplicate) = find_or_insert(&tx, new)?;
        // With every step off, a result can be its own source.
        if take.id != source_id {
            derived_takes::insert(&tx, take.id, source_id, operation, params, Some(job_id))?;
        }
        saved.push(SavedTake {
            operation: operation.to_string(),
            take,
            duplicate,
            copied_to: None,
        });
    }
    tx.commit().context("saving to the library database")?;
    Ok((source_id, saved))
}

pub(crate) fn find_or_insert(conn: &rusqlite::Connection, new: &NewTake) -> Result<(Take, bool)> {
    Ok(match takes::find_by_sha(conn, &new.sha256)? {
        Some(existing) => (existing, true),
        None => (takes::require(conn, takes::insert(conn, new)?)?, false),
    })
}

/// Where results are written before they go into the store: the store's own `tmp/`, which the
/// next process to open the library alone empties, so a killed job leaves no files behind.
pub(crate) fn scratch_dir(library: &Library) -> PathBuf {
    library.data_dir().join("store").join("tmp")
}

/// Encodes through a temporary file (a long result is not held twice in memory) and moves it
/// into the store.
fn store_audio(
    library: &Library,
    audio: &AudioBuffer,
    format: OutputFormat,
) -> Result<StoredObject> {
    let tmp = tempfile::Builder::new()
        .suffix(&format!(".{}", format.extension()))
        .tempfile_in(scratch_dir(library))
        .context("creating a temporary file in the library's store")?;
    let mut writer =
        stream::StemWriter::create(tmp.path(), format, audio.sample_rate, audio.channel_count())?;
    writer.write(audio)?;
    writer.finish()?;
    library.store().ingest_file(tmp.path(), format.extension())
}

/// Copies each saved take into `dir` as `<take name>.<ext>`, never overwriting (a number is
/// added).
pub(crate) fn copy_out(library: &Library, saved: &mut [SavedTake], dir: &Path) -> Result<()> {
    for result in saved {
        let take = &result.take;
        result.copied_to = Some(out_folder::copy_into(
            &library.take_path(take),
            dir,
            &out_folder::file_stem(&take.name),
            &take.format,
        )?);
    }
    Ok(())
}
