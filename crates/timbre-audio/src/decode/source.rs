//! Opening a file the user named, refusing what is not a regular file before opening it: a FIFO
//! blocks `open` until a writer comes (a queued job would wait forever), and devices or sockets
//! are never audio files.

use std::fs::{File, FileType};
use std::io::ErrorKind;
use std::path::Path;

use crate::error::{AudioError, AudioErrorKind};

/// Opens `path` for reading after checking that it exists, is a regular file (symbolic links
/// are followed) and is not empty. Every path that reads a user's audio file goes through it.
pub fn open_audio_file(path: &Path) -> Result<File, AudioError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => {
            AudioError::new(AudioErrorKind::NotFound, Some(path), "no such file")
        }
        _ => AudioError::io(Some(path), "could not read the file", &e),
    })?;
    let file_type = meta.file_type();
    if file_type.is_dir() {
        return Err(AudioError::new(
            AudioErrorKind::IsDirectory,
            Some(path),
            "this is a folder, not an audio file",
        ));
    }
    if !file_type.is_file() {
        return Err(AudioError::new(
            AudioErrorKind::NotRegularFile,
            Some(path),
            format!("is not a regular file ({})", special_kind(file_type)),
        ));
    }
    if meta.len() == 0 {
        return Err(super::empty_error(Some(path)));
    }
    File::open(path).map_err(|e| AudioError::io(Some(path), "could not open the file", &e))
}

#[cfg(unix)]
fn special_kind(file_type: FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: FileType) -> &'static str {
    "a special file"
}

#[cfg(all(test, unix))]
mod tests {
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::decode::{DecodeOptions, decode_file, open_blocks, probe_file};

    #[test]
    fn a_fifo_is_refused_at_once_by_every_open_path() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("take.wav");
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let started = Instant::now();
        let expected = format!("{}: is not a regular file (a FIFO)", fifo.display());
        let errors = [
            open_audio_file(&fifo).unwrap_err(),
            decode_file(&fifo, &DecodeOptions::default()).unwrap_err(),
            open_blocks(&fifo, &DecodeOptions::default())
                .err()
                .expect("opening a FIFO must fail"),
            probe_file(&fifo).unwrap_err(),
        ];
        for err in errors {
            assert_eq!(err.kind, AudioErrorKind::NotRegularFile);
            assert_eq!(err.to_string(), expected);
        }
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_device_is_refused() {
        let err = open_audio_file(Path::new("/dev/null")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/dev/null: is not a regular file (a character device)"
        );
    }

    #[test]
    fn a_link_to_a_regular_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.wav");
        std::fs::write(&target, b"RIFF").unwrap();
        let link = dir.path().join("link.wav");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_audio_file(&link).is_ok());
    }
}
