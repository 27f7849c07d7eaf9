//! A sandbox for `timbre assets` tests: a test catalogue of fixture bytes served by
//! [`AssetServer`], and `timbre` pointed at both.

use crate::Sandbox;
use crate::asset_server::{AssetServer, Fault};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Length of every [`fixture`], in bytes.
pub const SIZE: usize = 300_000;

/// Distinct, incompressible-looking bytes per seed.
pub fn fixture(seed: u8) -> Vec<u8> {
    let mut state = 0x9e37_79b9_u32 ^ u32::from(seed);
    (0..SIZE)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect()
}

/// SHA-256 of `bytes` as 64 lowercase hex digits, as the catalogue states it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One asset of the test catalogue.
pub struct Catalogued<'a> {
    /// Asset name, as given to `timbre assets download`.
    pub name: &'a str,
    /// Where it is stored, relative to the models folder.
    pub path: &'a str,
    /// Where to download it from, relative to the server (e.g. "repo/rmvpe.pt").
    pub urls: &'a [&'a str],
    /// The content; its length and SHA-256 go into the catalogue.
    pub bytes: &'a [u8],
    /// Whether `assets download --essentials` includes it.
    pub essential: bool,
}

/// A non-essential catalogue entry.
pub fn entry<'a>(
    name: &'a str,
    path: &'a str,
    urls: &'a [&'a str],
    bytes: &'a [u8],
) -> Catalogued<'a> {
    Catalogued {
        name,
        path,
        urls,
        bytes,
        essential: false,
    }
}

/// A sandbox, a running [`AssetServer`] and a catalogue file for `timbre` to use.
pub struct Setup {
    /// The sandbox `timbre` runs in.
    pub sb: Sandbox,
    /// The server the catalogue's URLs point at; routes are added per test.
    pub server: AssetServer,
    /// The catalogue JSON file, inside the sandbox.
    pub catalog: PathBuf,
}

impl Setup {
    /// Writes a catalogue of `assets` and starts a server, which serves nothing until told to.
    pub fn new(assets: &[Catalogued]) -> Setup {
        let sb = Sandbox::new();
        let server = AssetServer::start();
        let entries: Vec<serde_json::Value> = assets
            .iter()
            .map(|a| {
                serde_json::json!({
                    "name": a.name, "role": "test", "description": "a test asset",
                    "path": a.path, "urls": a.urls, "size_bytes": a.bytes.len(),
                    "sha256": sha256_hex(a.bytes), "needed_for": ["tests"],
                    "essential": a.essential,
                })
            })
            .collect();
        let catalog = sb.path("catalog.json");
        let text =
            serde_json::json!({ "endpoints": ["https://unused.invalid"], "models": entries });
        std::fs::write(&catalog, text.to_string()).unwrap();
        Setup {
            sb,
            server,
            catalog,
        }
    }

    /// The sandbox's models folder, which [`Setup::command`] points `timbre` at.
    pub fn models(&self) -> PathBuf {
        self.sb.models_dir()
    }

    /// `timbre` with the test catalogue, the server as endpoint and the sandbox's models folder.
    pub fn command(&self) -> Command {
        let mut cmd = self.sb.command();
        cmd.current_dir(self.sb.dir.path())
            .env("TIMBRE_ASSET_CATALOG", &self.catalog)
            .env("TIMBRE_DOWNLOAD_ENDPOINT", self.server.url())
            .env("TIMBRE_MODELS_DIR", self.models())
            .env_remove("HTTPS_PROXY")
            .env_remove("HTTP_PROXY")
            .env_remove("ALL_PROXY");
        cmd
    }

    /// Runs [`Setup::command`] with `args` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("running timbre")
    }

    /// `timbre --json assets download NAMES…`: (success, the per-asset results).
    pub fn download(&self, names: &[&str]) -> (bool, Vec<serde_json::Value>) {
        self.download_within(names, Duration::from_secs(300))
    }

    /// [`Setup::download`], failing the test when it still runs after `limit`.
    pub fn download_within(
        &self,
        names: &[&str],
        limit: Duration,
    ) -> (bool, Vec<serde_json::Value>) {
        let mut child = self
            .command()
            .args([&["--json", "assets", "download"], names].concat())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("running timbre");
        let started = Instant::now();
        // Under --json both outputs are a few lines, written at the end: the pipes never fill.
        while child.try_wait().expect("waiting for timbre").is_none() {
            if started.elapsed() > limit {
                child.kill().expect("stopping timbre");
                child.wait().expect("waiting for timbre");
                panic!("timbre assets download {names:?} still ran after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("reading timbre's output");
        let results: Vec<serde_json::Value> =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "no JSON results ({e}): {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        (out.status.success(), results)
    }

    /// The server's URL for `path` (which starts with "/").
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }
}

/// Asserts `file` holds exactly `bytes` and its `.part` file is gone.
pub fn assert_verified(file: &Path, bytes: &[u8]) {
    assert_eq!(std::fs::read(file).expect("the downloaded file"), bytes);
    assert!(
        !part_of(file).exists(),
        "the .part file stays after success"
    );
}

/// The partial-download file of `file`: the same path with ".part" appended.
pub fn part_of(file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.part", file.display()))
}

/// The state `timbre --json assets list` reports for asset `name`.
pub fn state_of(setup: &Setup, name: &str) -> String {
    let out = setup.run(&["--json", "assets", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list["assets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .map(|a| a["state"].as_str().unwrap().to_string())
        .expect("the asset is listed")
}

/// Starts `timbre assets download NAME` against a slow route and waits until its part holds
/// some bytes.
pub fn start_slow_download(setup: &Setup, name: &str, part: &Path) -> std::process::Child {
    let child = setup
        .command()
        .args(["assets", "download", name])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::metadata(part).map_or(0, |m| m.len()) < 20_000 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the download never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// A fault that sends 1 KiB every 50 ms (about 20 KB/s).
pub fn slow() -> Fault {
    Fault::Slow {
        chunk: 1024,
        every: Duration::from_millis(50),
    }
}
