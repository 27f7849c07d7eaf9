//! [`AudioError`]: an error of reading, writing, resampling or recording audio, whose message
//! names the file (when there is one) and the problem in plain words, with an [`AudioErrorKind`]
//! for callers that react to each case.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, for callers that react differently to each case (and for the UI, serialized
/// in snake_case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioErrorKind {
    NotFound,
    IsDirectory,
    /// A FIFO, socket or device: refused before opening it (a FIFO would block).
    NotRegularFile,
    Empty,
    Unsupported,
    Corrupt,
    Truncated,
    NoSamples,
    TooLong,
    Device,
    /// A live session's block processor failed to build or to run.
    Processor,
    Io,
}

/// An audio error whose `Display` names the file (when there is one) and the problem in plain
/// words, so it can be shown to a user as is.
#[derive(Debug, thiserror::Error)]
pub struct AudioError {
    pub path: Option<PathBuf>,
    pub kind: AudioErrorKind,
    pub detail: String,
}

impl AudioError {
    pub fn new(kind: AudioErrorKind, path: Option<&Path>, detail: impl Into<String>) -> Self {
        AudioError {
            path: path.map(Path::to_path_buf),
            kind,
            detail: detail.into(),
        }
    }

    pub(crate) fn io(path: Option<&Path>, action: &str, err: &std::io::Error) -> Self {
        AudioError::new(AudioErrorKind::Io, path, format!("{action}: {err}"))
    }
}

impl fmt::Display for AudioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_and_problem() {
        let err = AudioError::new(
            AudioErrorKind::Empty,
            Some(Path::new("/x/a.wav")),
            "the file is empty (0 bytes)",
        );
        assert_eq!(err.to_string(), "/x/a.wav: the file is empty (0 bytes)");
        let err = AudioError::new(AudioErrorKind::Device, None, "no input device");
        assert_eq!(err.to_string(), "no input device");
    }

    #[test]
    fn kind_serializes_snake_case() {
        let json = serde_json::to_string(&AudioErrorKind::NoSamples).unwrap();
        assert_eq!(json, "\"no_samples\"");
    }
}
