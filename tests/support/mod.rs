//! Helpers for the integration tests: a sandboxed library driven through the real `timbre`
//! binary, and generated audio.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use timbre_audio::SampleFormat;
use timbre_audio::signal::sine;

/// The `timbre` binary of this build (`cargo build -p timbre-cli` puts it beside the tests).
pub fn timbre_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir")
        .join("timbre");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p timbre-cli` first",
        bin.display()
    );
    bin
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("library")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(timbre_bin());
        cmd.arg("--data-dir").arg(self.data_dir());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("running timbre")
    }

    /// Runs with `--json`, expects success, and parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(&[&["--json"], args].concat());
        assert!(
            out.status.success(),
            "timbre {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    }

    /// The library database, read-only; None until a `timbre` process has created it.
    pub fn db(&self) -> Option<rusqlite::Connection> {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        rusqlite::Connection::open_with_flags(self.data_dir().join("library.sqlite3"), flags).ok()
    }
}

pub fn write_sine_wav(path: &Path, seconds: f64, freq: f32) {
    timbre_audio::write_wav(path, &sine(16000, freq, seconds, 0.5), SampleFormat::Int16)
        .expect("writing test wav");
}
