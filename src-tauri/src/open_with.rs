//! "Open with Timbre Studio": the files the app was started with (the desktop entry's `%F`),
//! and a later start's, handed to the app already running on the same library over a Unix
//! socket in its data folder (that start then exits), so a file opened from the file manager
//! lands in the open window as a drop would. One app per library, not per machine: two
//! libraries can be open side by side; a start without files opens a window as before.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use tauri::{Emitter, Manager};

/// The event the UI routes as a drop: the paths a later start handed over.
pub const EVENT: &str = "open-files";

/// The files of the command line not yet taken by the UI.
pub struct OpenedFiles(Mutex<Vec<String>>);

impl OpenedFiles {
    pub fn new(paths: Vec<String>) -> Self {
        OpenedFiles(Mutex::new(paths))
    }

    /// The paths, once: the UI asks at start.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The files the app was opened with, for the UI to route as a drop; empty after the first ask.
#[tauri::command]
pub fn take_opened_files(opened: tauri::State<'_, OpenedFiles>) -> Vec<String> {
    opened.take()
}

/// The arguments that name files or folders, absolute (a file manager may pass them relative
/// to its own folder); options (`--…`, as tauri-driver adds) are not files.
pub fn paths_in(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<String> {
    args.into_iter()
        .filter(|arg| !arg.to_string_lossy().starts_with('-'))
        .filter_map(|arg| std::fs::canonicalize(PathBuf::from(arg)).ok())
        .map(|path| path.display().to_string())
        .collect()
}

/// How this start goes on.
pub enum Start {
    /// No app runs on this library: this one does, answering later starts on the socket
    /// (None where it could not be made: later starts then open windows of their own).
    First(Option<UnixListener>),
    /// The running app took the files: this start ends.
    HandedOver,
}

fn socket(data_dir: &Path) -> PathBuf {
    data_dir.join("app.sock")
}

/// Hands `paths` to the app running on the library at `data_dir`, or claims the library's
/// socket for this start. A start without files beside a running app opens a window of its own
/// and leaves the socket to the running one.
pub fn start(data_dir: &Path, paths: &[String]) -> Start {
    let socket = socket(data_dir);
    if let Ok(mut running) = UnixStream::connect(&socket) {
        let handed_over = !paths.is_empty()
            && serde_json::to_writer(&mut running, paths).is_ok()
            && running.flush().is_ok();
        return if handed_over {
            Start::HandedOver
        } else {
            Start::First(None)
        };
    }
    // Nobody answers: the socket is a crashed run's, or there is none.
    let _ = std::fs::remove_file(&socket);
    match UnixListener::bind(&socket) {
        Ok(listener) => Start::First(Some(listener)),
        Err(err) => {
            eprintln!(
                "Timbre Studio: files opened later will open a window of their own ({}: {err})",
                socket.display()
            );
            Start::First(None)
        }
    }
}

/// Answers later starts: each one's paths are sent to the UI and the window comes forward.
pub fn serve(listener: UnixListener, app: tauri::AppHandle) {
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            let paths = connection
                .context("accepting a later start")
                .and_then(read_paths);
            match paths {
                Ok(paths) if paths.is_empty() => {}
                Ok(paths) => {
                    if let Some(window) = app.get_webview_window("main") {
                        let _ = window.unminimize();
                        let _ = window.set_focus();
                    }
                    if let Err(err) = app.emit(EVENT, paths) {
                        eprintln!("Timbre Studio: opened files not passed on: {err}");
                    }
                }
                Err(err) => eprintln!("Timbre Studio: {err:#}"),
            }
        }
    });
}

fn read_paths(mut connection: UnixStream) -> Result<Vec<String>> {
    let mut text = String::new();
    connection
        .read_to_string(&mut text)
        .context("reading the files a later start opened")?;
    if text.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&text).context("the files a later start opened are not a JSON list")
}

/// The socket goes with the app that claimed it, so that the next start need not find it stale.
pub fn remove_socket(data_dir: &Path) {
    let _ = std::fs::remove_file(socket(data_dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_start_hands_its_files_to_the_first_and_a_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("take.wav");
        std::fs::write(&file, b"RIFF").unwrap();
        let paths = paths_in(["--flag".into(), file.clone().into(), "missing.wav".into()]);
        assert_eq!(paths, [file.canonicalize().unwrap().display().to_string()]);

        let Start::First(Some(listener)) = start(dir.path(), &[]) else {
            panic!("the first start claims the socket");
        };
        let reader = std::thread::spawn(move || read_paths(listener.accept().unwrap().0));
        assert!(matches!(start(dir.path(), &paths), Start::HandedOver));
        assert_eq!(reader.join().unwrap().unwrap(), paths);
        // A start without files beside it opens its own window and leaves the socket alone.
        let Start::First(Some(listener)) = start(dir.path(), &[]) else {
            panic!("the stale socket is claimed again");
        };
        let reader = std::thread::spawn(move || read_paths(listener.accept().unwrap().0));
        assert!(matches!(start(dir.path(), &[]), Start::First(None)));
        assert_eq!(reader.join().unwrap().unwrap(), Vec::<String>::new());
        assert!(socket(dir.path()).exists());

        // The first app is gone (its listener dropped, the file left): the next start claims it.
        assert!(matches!(start(dir.path(), &paths), Start::First(Some(_))));
    }
}
