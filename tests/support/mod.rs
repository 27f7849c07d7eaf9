//! Helpers for the integration tests: a sandboxed library driven through the real `timbre`
//! binary, the parity fixtures' extractors standing in for real ones, and generated audio.

pub mod asset_server;
pub mod assets;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use timbre_audio::SampleFormat;
use timbre_audio::signal::sine;
pub use timbre_test_support::{applio_parity_fixtures, rvc_parity_fixtures, separation_fixtures};

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

/// RVC's v1 generator at 40 kHz shrunk to a few channels and a 3-frame slice, for
/// `--model-config`: it trains in seconds on the CPU (the discriminator stays RVC's unless a
/// `discriminator_divisor` is added, as tests/train.rs does).
pub const TINY_GENERATOR_40K: &str = r#"{"spec_channels": 1025, "segment_size": 3,
    "inter_channels": 8, "hidden_channels": 8, "filter_channels": 16, "n_heads": 2,
    "n_layers": 1, "kernel_size": 3, "p_dropout": 0, "resblock": "1",
    "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3, 5]],
    "upsample_rates": [10, 10, 2, 2], "upsample_initial_channel": 32,
    "upsample_kernel_sizes": [16, 16, 4, 4], "spk_embed_dim": 1, "gin_channels": 8,
    "sr": 40000}"#;

/// A temporary folder holding one test's library and files, removed when dropped.
pub struct Sandbox {
    /// The temporary folder; the library lives in its `library` subfolder.
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// An empty sandbox in a fresh temporary folder.
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A sandbox whose models folder holds the fixture HuBERT as `hubert_base.pt`, and the
    /// fixture RMVPE as `rmvpe.pt` when asked for.
    pub fn with_extractors(rmvpe: bool) -> Self {
        let sb = Sandbox::new();
        let models = sb.models_dir();
        std::fs::create_dir_all(&models).expect("creating the models folder");
        let copy = |from: &str, to: &str| {
            std::fs::copy(rvc_parity_fixtures().join(from), models.join(to))
                .unwrap_or_else(|e| panic!("copying the fixture {from}: {e}"));
        };
        copy("hubert_tiny/hubert_fairseq.pt", "hubert_base.pt");
        if rmvpe {
            copy("rmvpe_tiny/rmvpe.pt", "rmvpe.pt");
        }
        sb
    }

    /// The sandbox's `models` folder (not created here).
    pub fn models_dir(&self) -> PathBuf {
        self.path("models")
    }

    /// `timbre` on the CPU with the sandbox's models folder.
    pub fn cpu_command(&self) -> Command {
        let mut cmd = self.command();
        cmd.env("TIMBRE_MODELS_DIR", self.models_dir())
            .env("TIMBRE_DEVICE", "cpu");
        cmd
    }

    /// Speech-like audio (44.1 kHz, 16-bit) written into the sandbox; its path.
    pub fn write_speech(&self, name: &str, seconds: f64) -> String {
        let path = self.path(name);
        let audio = timbre_audio::signal::speech_like(44_100, seconds, 3).audio;
        timbre_audio::write_wav(&path, &audio, SampleFormat::Int16).expect("writing speech");
        path.display().to_string()
    }

    /// Prepares a v1 dataset of the voice "Alto" with pm pitch from `file` on the CPU; its id.
    pub fn prepare_dataset(&self, name: &str, rate: &str, file: &str) -> i64 {
        let args = [
            "--json",
            "dataset",
            "prepare",
            "--name",
            name,
            "--voice",
            "Alto",
            "--rate",
            rate,
            "--version",
            "v1",
            "--f0-method",
            "pm",
            file,
        ];
        let out = self
            .cpu_command()
            .args(args)
            .output()
            .expect("running timbre");
        assert!(
            out.status.success(),
            "timbre {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let prepared: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        prepared["result"]["dataset"]["id"]
            .as_i64()
            .expect("a dataset id")
    }

    /// Imports the fixture voice at `fixture` (a path in the RVC fixture set) as `name`.
    pub fn import_fixture_voice(&self, fixture: &str, name: &str) {
        let out = self
            .cpu_command()
            .args(["models", "import"])
            .arg(rvc_parity_fixtures().join(fixture))
            .args(["--name", name])
            .output()
            .expect("running timbre");
        assert!(
            out.status.success(),
            "importing {fixture}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The library folder passed to `timbre` as `--data-dir`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("library")
    }

    /// `name` inside the sandbox folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The `timbre` binary with `--data-dir` set to the sandbox's library.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(timbre_bin());
        cmd.arg("--data-dir").arg(self.data_dir());
        cmd
    }

    /// Runs `timbre` with `args` to completion, whatever its exit status.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("running timbre")
    }

    /// Runs on the CPU with the sandbox's models folder.
    pub fn cpu_run(&self, args: &[&str]) -> Output {
        self.cpu_command()
            .args(args)
            .output()
            .expect("running timbre")
    }

    /// Runs with `--json`, expects success, and parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        Self::parsed(args, self.run(&[&["--json"], args].concat()))
    }

    /// [`Sandbox::json`] on the CPU with the sandbox's models folder.
    pub fn cpu_json(&self, args: &[&str]) -> serde_json::Value {
        Self::parsed(args, self.cpu_run(&[&["--json"], args].concat()))
    }

    fn parsed(args: &[&str], out: Output) -> serde_json::Value {
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

    /// How many files import jobs have reported so far (0 before the library exists).
    pub fn reported_files(&self) -> i64 {
        self.db()
            .and_then(|db| {
                db.query_row(
                    "SELECT COUNT(*) FROM job_events WHERE kind = 'file'",
                    [],
                    |r| r.get(0),
                )
                .ok()
            })
            .unwrap_or(0)
    }
}

/// Writes a 16 kHz mono 16-bit WAV of a `freq` Hz sine at amplitude 0.5, `seconds` long.
pub fn write_sine_wav(path: &Path, seconds: f64, freq: f32) {
    timbre_audio::write_wav(path, &sine(16000, freq, seconds, 0.5), SampleFormat::Int16)
        .expect("writing test wav");
}
