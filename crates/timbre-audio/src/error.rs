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
    /// No file at the path.
    NotFound,
    /// The path is a directory, not a file.
    IsDirectory,
    /// A FIFO, socket or device: refused before opening it (a FIFO would block).
    NotRegularFile,
    /// The file has 0 bytes.
    Empty,
    /// Not audio, or a format, codec or setting that cannot be read or written.
    Unsupported,
    /// The file is damaged: a header or audio packets cannot be decoded.
    Corrupt,
    /// The file holds less audio than its header promises (by more than 1%).
    Truncated,
    /// There are no audio samples to read or to write.
    NoSamples,
    /// Longer than the allowed duration, or too big for the output format (WAV's 4 GiB).
    TooLong,
    /// An audio device is missing, or failed to open or run.
    Device,
    /// A live session's block processor failed to build or to run.
    Processor,
    /// Reading or writing failed at the operating-system level.
    Io,
}

/// An audio error whose `Display` names the file (when there is one) and the problem in plain
/// words, so it can be shown to a user as is.
#[derive(Debug, thiserror::Error)]
pub struct AudioError {
    /// The file concerned; `None` for in-memory audio and devices.
    pub path: Option<PathBuf>,
    /// Which case this is.
    pub kind: AudioErrorKind,
    /// The problem in plain words, without the path.
    pub detail: String,
}

impl AudioError {
    /// Error of `kind` about `path` (if any), described by `detail`.
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
