//! Errors at the boundary: everything inside is `anyhow` with context; the shell and the CLI
//! turn an error into `{kind, message}` with [`ErrorReport::from_anyhow`].

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use timbre_audio::AudioErrorKind;

/// What kind of failure an error is, so the app can say what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A take, model, job, file or other thing asked for does not exist.
    NotFound,
    /// A request, parameter or file the user gave is refused.
    InvalidInput,
    /// Audio could not be decoded or encoded.
    Audio,
    /// Something (another process, a locked database) holds what is needed; trying again may work.
    Busy,
    /// The disk holding the library (or an output) has no room left.
    DiskFull,
    /// The device (or the host) had no memory left for a libtorch allocation.
    OutOfMemory,
    /// The library database is damaged or not a database: restore a backup.
    Damaged,
    /// Another I/O failure.
    Io,
    /// The user cancelled the work.
    Cancelled,
    /// Anything else: a bug or an unexpected failure.
    Internal,
}

/// A leaf error whose kind we decided where it arose.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct KindedError {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// What went wrong, as shown to the user.
    pub message: String,
}

/// An error of kind [`ErrorKind::NotFound`] with `message`.
pub fn not_found(message: impl Into<String>) -> anyhow::Error {
    KindedError {
        kind: ErrorKind::NotFound,
        message: message.into(),
    }
    .into()
}

/// An error of kind [`ErrorKind::InvalidInput`] with `message`.
pub fn invalid_input(message: impl Into<String>) -> anyhow::Error {
    KindedError {
        kind: ErrorKind::InvalidInput,
        message: message.into(),
    }
    .into()
}

/// An allocation libtorch could not make: only its errors that say so are made this kind (see
/// `timbre_core::torch_errors`), never an error because its text mentions memory.
pub fn out_of_memory(message: impl Into<String>) -> anyhow::Error {
    KindedError {
        kind: ErrorKind::OutOfMemory,
        message: message.into(),
    }
    .into()
}

/// Refuses a number outside `min..=max` (NaN too), naming the parameter, the value and the
/// range: every option and setting is checked this way where its request is built.
pub fn check_range<T: PartialOrd + std::fmt::Display>(
    name: &str,
    value: T,
    min: T,
    max: T,
) -> anyhow::Result<()> {
    if min <= value && value <= max {
        return Ok(());
    }
    Err(invalid_input(format!(
        "{name} must be between {min} and {max}, not {value}"
    )))
}

/// An error of kind [`ErrorKind::Busy`] with `message`.
pub fn busy(message: impl Into<String>) -> anyhow::Error {
    KindedError {
        kind: ErrorKind::Busy,
        message: message.into(),
    }
    .into()
}

/// The context that says which disk is full, added once by [`explain_disk_full`].
#[derive(Debug)]
struct DiskFullAt(PathBuf);

impl std::fmt::Display for DiskFullAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the disk holding {} is full", self.0.display())
    }
}

/// SQLite's extended code for a shared-memory file it could not grow: what opening a WAL
/// library on a disk with no room left gives.
const SQLITE_IOERR_SHMSIZE: i32 = 4874;

/// Whether this cause says the disk is full: SQLite's SQLITE_FULL or a failure to grow its
/// shared-memory file, ENOSPC or a quota, however the I/O error is wrapped.
fn is_disk_full_cause(cause: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(io) = cause.downcast_ref::<std::io::Error>() {
        return matches!(
            io.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        );
    }
    if let Some(rusqlite::Error::SqliteFailure(e, _)) = cause.downcast_ref::<rusqlite::Error>() {
        return e.code == rusqlite::ErrorCode::DiskFull || e.extended_code == SQLITE_IOERR_SHMSIZE;
    }
    false
}

/// Whether any cause of `err` says the disk is full (SQLite's, or an I/O error's).
pub fn is_disk_full(err: &anyhow::Error) -> bool {
    err.chain().any(is_disk_full_cause)
}

/// When `err` says the disk is full, says first which: "the disk holding DIR is full: …".
pub fn explain_disk_full(err: anyhow::Error, dir: &Path) -> anyhow::Error {
    if is_disk_full(&err) && err.downcast_ref::<DiskFullAt>().is_none() {
        err.context(DiskFullAt(dir.to_path_buf()))
    } else {
        err
    }
}

/// An error of kind [`ErrorKind::Damaged`] with `message`.
pub fn damaged(message: impl Into<String>) -> anyhow::Error {
    KindedError {
        kind: ErrorKind::Damaged,
        message: message.into(),
    }
    .into()
}

/// An error as the app and the CLI show it: `{kind, message}`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
pub struct ErrorReport {
    /// The kind of its first cause that has one ([`kind_of`]).
    pub kind: ErrorKind,
    /// The error with its whole context chain, outermost first (`{:#}`).
    pub message: String,
}

impl ErrorReport {
    /// The report of `err`: its kind and its full message.
    pub fn from_anyhow(err: &anyhow::Error) -> Self {
        ErrorReport {
            kind: kind_of(err),
            message: format!("{err:#}"),
        }
    }
}

/// The first cause in the chain that tells what kind of failure this is.
pub fn kind_of(err: &anyhow::Error) -> ErrorKind {
    for cause in err.chain() {
        if is_disk_full_cause(cause) {
            return ErrorKind::DiskFull;
        }
        if let Some(k) = cause.downcast_ref::<KindedError>() {
            return k.kind;
        }
        if let Some(audio) = cause.downcast_ref::<timbre_audio::AudioError>() {
            return match audio.kind {
                AudioErrorKind::NotFound => ErrorKind::NotFound,
                AudioErrorKind::Io => ErrorKind::Io,
                _ => ErrorKind::Audio,
            };
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                std::io::ErrorKind::ResourceBusy | std::io::ErrorKind::WouldBlock => {
                    ErrorKind::Busy
                }
                _ => ErrorKind::Io,
            };
        }
        if let Some(rusqlite::Error::SqliteFailure(e, _)) = cause.downcast_ref::<rusqlite::Error>()
            && matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            )
        {
            return ErrorKind::Busy;
        }
        if cause.downcast_ref::<crate::jobs::Cancelled>().is_some() {
            return ErrorKind::Cancelled;
        }
    }
    ErrorKind::Internal
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn report_keeps_kind_under_context_and_names_the_whole_chain() {
        let err = Err::<(), _>(not_found("take 7 does not exist"))
            .context("renaming take")
            .unwrap_err();
        let report = ErrorReport::from_anyhow(&err);
        assert_eq!(report.kind, ErrorKind::NotFound);
        assert_eq!(report.message, "renaming take: take 7 does not exist");
    }

    #[test]
    fn io_errors_are_classified() {
        let err = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(kind_of(&err), ErrorKind::Io);
        let json = serde_json::to_value(ErrorReport::from_anyhow(&err)).unwrap();
        assert_eq!(json["kind"], "io");
    }

    #[test]
    fn a_full_disk_is_recognised_and_named_once() {
        let sqlite_full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        );
        let shm = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(4874), None);
        let enospc = std::io::Error::from_raw_os_error(28);
        for err in [
            anyhow::Error::new(sqlite_full).context("migrating /lib/library.sqlite3"),
            anyhow::Error::new(shm),
            anyhow::Error::new(enospc).context("x.wav: cannot copy into the library"),
        ] {
            assert_eq!(kind_of(&err), ErrorKind::DiskFull, "{err:#}");
            let explained = explain_disk_full(err, Path::new("/lib"));
            let explained = explain_disk_full(explained, Path::new("/lib"));
            let message = ErrorReport::from_anyhow(&explained).message;
            assert!(
                message.starts_with("the disk holding /lib is full: "),
                "{message}"
            );
            assert_eq!(message.matches("the disk holding").count(), 1, "{message}");
        }
        let other = explain_disk_full(not_found("take 7"), Path::new("/lib"));
        assert_eq!(format!("{other:#}"), "take 7");
    }

    #[test]
    fn a_range_refuses_what_is_outside_it_and_nan() {
        assert!(check_range("protect", 0.5, 0.0, 0.5).is_ok());
        let err = check_range("protect", 7.0, 0.0, 0.5).unwrap_err();
        assert_eq!(err.to_string(), "protect must be between 0 and 0.5, not 7");
        assert_eq!(kind_of(&err), ErrorKind::InvalidInput);
        assert!(check_range("transpose", f32::NAN, -48.0, 48.0).is_err());
        assert!(check_range("light_workers", 0, 1, 64).is_err());
    }
}
