//! The audio a job reads: a take of the library or a file anywhere, one type for every job.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::db::takes::{self, Take};
use crate::library::Library;

/// The audio a job reads, serialised as `{"take": id}` or `{"file": path}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum AudioInput {
    /// The take of this id in the library.
    Take(i64),
    /// A file anywhere on disk, made absolute before a job is queued.
    File(PathBuf),
}

/// An input found: where its audio is, and its take when it is one.
#[derive(Debug, Clone)]
pub struct ResolvedInput {
    /// Where the audio is: the take's stored file, or the file itself.
    pub path: PathBuf,
    /// The take's row; None for a file.
    pub take: Option<Take>,
    /// The take's name, or the file's name without its extension.
    pub name: String,
}

impl AudioInput {
    /// The take's row and stored file, or the file; refuses a take or a file that is not there.
    pub fn resolve(&self, library: &Library) -> Result<ResolvedInput> {
        match self {
            AudioInput::Take(id) => {
                let take = takes::require(&library.conn(), *id)?;
                Ok(ResolvedInput {
                    path: library.take_path(&take),
                    name: take.name.clone(),
                    take: Some(take),
                })
            }
            AudioInput::File(path) => {
                // Not `exists()`, which says "no" to a loop of symbolic links or a folder that
                // cannot be read as well.
                match std::fs::metadata(path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(crate::error::not_found(format!(
                            "{}: no such file",
                            path.display()
                        )));
                    }
                    Err(e) => {
                        return Err(anyhow::Error::new(e)
                            .context(format!("{}: cannot read", path.display())));
                    }
                    Ok(_) => {}
                }
                Ok(ResolvedInput {
                    path: path.clone(),
                    take: None,
                    name: file_name(path),
                })
            }
        }
    }

    /// The same input with a file's path made absolute: jobs may run in another process, from
    /// another working directory.
    pub fn absolute(self) -> Result<Self> {
        Ok(match self {
            AudioInput::File(path) => AudioInput::File(std::path::absolute(path)?),
            take => take,
        })
    }
}

impl ResolvedInput {
    /// Where the input came from, for messages.
    pub fn label(&self) -> String {
        match &self.take {
            Some(take) => format!("take {} ({})", take.id, take.name),
            None => self.path.display().to_string(),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "untitled".into(), |s| s.to_string_lossy().into_owned())
}

/// Resolves every input, so a batch is refused before any of it is queued.
pub fn check_all(library: &Library, inputs: &[AudioInput]) -> Result<()> {
    for input in inputs {
        input.resolve(library)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_take_or_file_is_refused_and_a_file_is_named_by_its_stem() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        let err = AudioInput::Take(42).resolve(&library).unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
        let missing = dir.path().join("gone.wav");
        let err = AudioInput::File(missing).resolve(&library).unwrap_err();
        assert!(err.to_string().contains("gone.wav: no such file"), "{err}");
        let looped = dir.path().join("loop.wav");
        std::os::unix::fs::symlink(&looped, &looped).unwrap();
        let err = AudioInput::File(looped.clone())
            .resolve(&library)
            .unwrap_err();
        let message = format!("{err:#}");
        assert!(
            message.starts_with(&format!("{}: cannot read: ", looped.display()))
                && message.contains("Too many levels of symbolic links"),
            "{message}"
        );
        let present = dir.path().join("voice.flac");
        std::fs::write(&present, b"").unwrap();
        let resolved = AudioInput::File(present.clone()).resolve(&library).unwrap();
        assert_eq!(resolved.name, "voice");
        assert!(resolved.take.is_none());
        assert_eq!(resolved.label(), present.display().to_string());
    }
}
