//! `timbre assets` against a local HTTP server (`support::asset_server`) and a test catalogue
//! pointing at it: every fault lands the file verified or not at all, with a message naming the
//! asset, the URL and the problem; a killed download resumes; `verify` catches corruption.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use timbre_integration_tests::Sandbox;
use timbre_integration_tests::asset_server::{AssetServer, Fault, Seen};

const SIZE: usize = 300_000;

/// Distinct, incompressible-looking bytes per seed.
fn fixture(seed: u8) -> Vec<u8> {
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

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Catalogued<'a> {
    name: &'a str,
    path: &'a str,
    urls: &'a [&'a str],
    bytes: &'a [u8],
    essential: bool,
}

struct Setup {
    sb: Sandbox,
    server: AssetServer,
    catalog: PathBuf,
}

impl Setup {
    fn new(assets: &[Catalogued]) -> Setup {
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

    fn models(&self) -> PathBuf {
        self.sb.models_dir()
    }

    /// `timbre` with the test catalogue, the server as endpoint and the sandbox's models folder.
    fn command(&self) -> Command {
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

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("running timbre")
    }

    /// `timbre --json assets download NAMES…`: (success, the per-asset results).
    fn download(&self, names: &[&str]) -> (bool, Vec<serde_json::Value>) {
        let out = self.run(&[&["--json", "assets", "download"], names].concat());
        let results: Vec<serde_json::Value> =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "no JSON results ({e}): {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        (out.status.success(), results)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }
}

fn assert_verified(file: &Path, bytes: &[u8]) {
    assert_eq!(std::fs::read(file).expect("the downloaded file"), bytes);
    assert!(
        !part_of(file).exists(),
        "the .part file stays after success"
    );
}

fn part_of(file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.part", file.display()))
}

fn state_of(setup: &Setup, name: &str) -> String {
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

#[test]
fn essentials_download_into_a_fresh_data_dir_and_verify() {
    let (hubert, rmvpe, other) = (fixture(1), fixture(2), fixture(3));
    let setup = Setup::new(&[
        Catalogued {
            name: "hubert",
            path: "hubert_base.pt",
            urls: &["repo/hubert_base.pt"],
            bytes: &hubert,
            essential: true,
        },
        Catalogued {
            name: "rmvpe",
            path: "rmvpe.pt",
            urls: &["repo/rmvpe.pt"],
            bytes: &rmvpe,
            essential: true,
        },
        Catalogued {
            name: "extra",
            path: "extra/x.pth",
            urls: &["repo/x.pth"],
            bytes: &other,
            essential: false,
        },
    ]);
    setup
        .server
        .serve("/repo/hubert_base.pt", &hubert, Fault::None);
    setup.server.serve("/repo/rmvpe.pt", &rmvpe, Fault::None);
    // The models folder is the data dir's: no TIMBRE_MODELS_DIR.
    let out = setup
        .command()
        .env_remove("TIMBRE_MODELS_DIR")
        .args(["--json", "assets", "download", "--essentials"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let models = setup.sb.data_dir().join("models");
    assert_verified(&models.join("hubert_base.pt"), &hubert);
    assert_verified(&models.join("rmvpe.pt"), &rmvpe);
    assert!(!models.join("extra").exists());
    let list = setup
        .command()
        .env_remove("TIMBRE_MODELS_DIR")
        .args(["--json", "assets", "list"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let states: Vec<(&str, &str)> = list["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("hubert", "verified"),
            ("rmvpe", "verified"),
            ("extra", "missing")
        ]
    );
}

#[test]
fn a_dropped_connection_and_a_5xx_are_retried_and_the_download_resumes_with_range() {
    let bytes = fixture(4);
    let setup = Setup::new(&[Catalogued {
        name: "rmvpe",
        path: "rmvpe.pt",
        urls: &["r/rmvpe.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve(
        "/r/rmvpe.pt",
        &bytes,
        Fault::Drop {
            at: 100_000,
            times: 1,
        },
    );
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(ok, "{results:?}");
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
    let seen = setup.server.seen();
    assert_eq!(seen[0].range_start, None);
    assert_eq!(seen.last().unwrap().range_start, Some(100_000), "{seen:?}");

    std::fs::remove_file(setup.models().join("rmvpe.pt")).unwrap();
    setup
        .server
        .serve("/r/rmvpe.pt", &bytes, Fault::ServerError { times: 2 });
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(ok, "{results:?}");
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
}

#[test]
fn a_connection_that_always_drops_fails_naming_the_asset_the_url_and_the_problem() {
    let bytes = fixture(5);
    let setup = Setup::new(&[Catalogued {
        name: "hubert",
        path: "hubert_base.pt",
        urls: &["h/hubert_base.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve(
        "/h/hubert_base.pt",
        &bytes,
        Fault::Drop {
            at: 50_000,
            times: 100,
        },
    );
    let (ok, results) = setup.download(&["hubert"]);
    assert!(!ok);
    let error = results[0]["error"].as_str().unwrap();
    assert!(error.contains("hubert"), "{error}");
    assert!(error.contains(&setup.url("/h/hubert_base.pt")), "{error}");
    assert!(error.contains("connection dropped"), "{error}");
    assert!(!setup.models().join("hubert_base.pt").exists());
}

#[test]
fn a_wrong_body_is_deleted_and_the_message_says_which_url_served_what() {
    let bytes = fixture(6);
    let setup = Setup::new(&[Catalogued {
        name: "rmvpe",
        path: "rmvpe.pt",
        urls: &["r/rmvpe.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve("/r/rmvpe.pt", &bytes, Fault::WrongBody);
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(!ok);
    let error = results[0]["error"].as_str().unwrap();
    let wrong: Vec<u8> = bytes.iter().map(|b| b ^ 0x5a).collect();
    for part in [
        "rmvpe".to_string(),
        setup.url("/r/rmvpe.pt"),
        format!("served {SIZE} bytes"),
        sha256_hex(&wrong),
        format!("expected {}", sha256_hex(&bytes)),
    ] {
        assert!(error.contains(&part), "{part:?} missing from: {error}");
    }
    let file = setup.models().join("rmvpe.pt");
    assert!(!file.exists() && !part_of(&file).exists());
}

#[test]
fn a_404_tries_the_next_mirror_and_then_fails_naming_every_url() {
    let (a, b) = (fixture(7), fixture(8));
    let setup = Setup::new(&[
        Catalogued {
            name: "fcpe",
            path: "fcpe/fcpe.pt",
            urls: &["gone/fcpe.pt", "mirror/fcpe.pt"],
            bytes: &a,
            essential: false,
        },
        Catalogued {
            name: "crepe",
            path: "crepe/full.pth",
            urls: &["gone/full.pth", "also-gone/full.pth"],
            bytes: &b,
            essential: false,
        },
    ]);
    setup.server.serve("/mirror/fcpe.pt", &a, Fault::None);
    let (ok, results) = setup.download(&["fcpe"]);
    assert!(ok, "{results:?}");
    assert_eq!(results[0]["result"]["url"], setup.url("/mirror/fcpe.pt"));
    assert_verified(&setup.models().join("fcpe/fcpe.pt"), &a);

    let (ok, results) = setup.download(&["crepe"]);
    assert!(!ok);
    let error = results[0]["error"].as_str().unwrap();
    assert!(error.contains("crepe"), "{error}");
    for url in ["/gone/full.pth", "/also-gone/full.pth"] {
        assert!(
            error.contains(&format!("{}: HTTP 404", setup.url(url))),
            "{error}"
        );
    }
    assert!(!setup.models().join("crepe").join("full.pth").exists());
}

#[test]
fn redirects_are_followed() {
    let bytes = fixture(9);
    let setup = Setup::new(&[Catalogued {
        name: "hubert",
        path: "hubert_base.pt",
        urls: &["resolve/hubert_base.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve(
        "/resolve/hubert_base.pt",
        &[],
        Fault::Redirect("/cdn/blob".into()),
    );
    setup.server.serve("/cdn/blob", &bytes, Fault::None);
    let (ok, results) = setup.download(&["hubert"]);
    assert!(ok, "{results:?}");
    assert_verified(&setup.models().join("hubert_base.pt"), &bytes);
    assert!(setup.server.seen().iter().any(|s| s.path == "/cdn/blob"));
}

#[test]
fn endless_redirects_and_plain_http_elsewhere_are_refused_naming_the_url() {
    let bytes = fixture(15);
    let setup = Setup::new(&[Catalogued {
        name: "rmvpe",
        path: "rmvpe.pt",
        urls: &["loop", "downgrade"],
        bytes: &bytes,
        essential: true,
    }]);
    setup
        .server
        .serve("/loop", &[], Fault::Redirect("/loop".into()));
    // Another origin than the configured endpoint: plain HTTP there is not allowed.
    let elsewhere = setup.url("/file").replace("127.0.0.1", "localhost");
    setup
        .server
        .serve("/downgrade", &[], Fault::Redirect(elsewhere.clone()));
    setup.server.serve("/file", &bytes, Fault::None);
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(!ok);
    let error = results[0]["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("{}: more than 8 redirects", setup.url("/loop"))),
        "{error}"
    );
    assert!(
        error.contains(&format!("{elsewhere} is not an HTTPS URL")),
        "{error}"
    );
    assert!(!setup.server.seen().iter().any(|s| s.path == "/file"));
    assert!(!setup.models().join("rmvpe.pt").exists());
}

#[test]
fn a_server_without_range_support_restarts_the_file_cleanly() {
    let bytes = fixture(10);
    let setup = Setup::new(&[Catalogued {
        name: "rmvpe",
        path: "rmvpe.pt",
        urls: &["r/rmvpe.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    std::fs::create_dir_all(setup.models()).unwrap();
    std::fs::write(part_of(&setup.models().join("rmvpe.pt")), vec![7u8; 1000]).unwrap();
    assert_eq!(state_of(&setup, "rmvpe"), "partial");
    setup.server.serve("/r/rmvpe.pt", &bytes, Fault::NoRange);
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(ok, "{results:?}");
    assert_eq!(setup.server.seen()[0].range_start, Some(1000));
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
}

/// Starts `timbre assets download NAME` against a slow route and waits until its part holds
/// some bytes.
fn start_slow_download(setup: &Setup, name: &str, part: &Path) -> std::process::Child {
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

fn slow() -> Fault {
    Fault::Slow {
        chunk: 1024,
        every: Duration::from_millis(50),
    }
}

#[test]
fn a_killed_download_resumes_where_it_stopped() {
    let bytes = fixture(11);
    let setup = Setup::new(&[Catalogued {
        name: "hubert",
        path: "hubert_base.pt",
        urls: &["h/hubert_base.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve("/h/hubert_base.pt", &bytes, slow());
    let file = setup.models().join("hubert_base.pt");
    let mut child = start_slow_download(&setup, "hubert", &part_of(&file));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let stopped_at = std::fs::metadata(part_of(&file)).unwrap().len();
    assert!(stopped_at > 0 && (stopped_at as usize) < SIZE);
    assert_eq!(state_of(&setup, "hubert"), "partial");

    setup.server.serve("/h/hubert_base.pt", &bytes, Fault::None);
    let (ok, results) = setup.download(&["hubert"]);
    assert!(ok, "{results:?}");
    assert_eq!(results[0]["result"]["resumed_from"], stopped_at);
    assert_eq!(
        setup.server.seen().last().unwrap(),
        &Seen {
            path: "/h/hubert_base.pt".into(),
            range_start: Some(stopped_at)
        }
    );
    assert_verified(&file, &bytes);
}

#[test]
fn a_slow_download_can_be_cancelled_and_keeps_its_part() {
    let bytes = fixture(12);
    let setup = Setup::new(&[Catalogued {
        name: "rmvpe",
        path: "rmvpe.pt",
        urls: &["r/rmvpe.pt"],
        bytes: &bytes,
        essential: true,
    }]);
    setup.server.serve("/r/rmvpe.pt", &bytes, slow());
    let file = setup.models().join("rmvpe.pt");
    let mut child = start_slow_download(&setup, "rmvpe", &part_of(&file));
    let id: i64 = setup
        .sb
        .db()
        .unwrap()
        .query_row("SELECT id FROM jobs WHERE kind = 'download'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let out = setup.run(&["jobs", "cancel", &id.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = child.wait().unwrap();
    assert!(!status.success());
    let state: String = setup
        .sb
        .db()
        .unwrap()
        .query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| r.get(0))
        .unwrap();
    assert_eq!(state, "cancelled");
    assert!(!file.exists());
    let kept = std::fs::metadata(part_of(&file)).unwrap().len();
    assert!(kept > 0 && (kept as usize) < SIZE);
}

#[test]
fn verify_names_corrupt_and_truncated_files_and_remove_deletes() {
    let (a, b) = (fixture(13), fixture(14));
    let setup = Setup::new(&[
        Catalogued {
            name: "hubert",
            path: "hubert_base.pt",
            urls: &["h"],
            bytes: &a,
            essential: true,
        },
        Catalogued {
            name: "rmvpe",
            path: "rmvpe.pt",
            urls: &["r"],
            bytes: &b,
            essential: true,
        },
    ]);
    setup.server.serve("/h", &a, Fault::None);
    setup.server.serve("/r", &b, Fault::None);
    let (ok, results) = setup.download(&["hubert", "rmvpe"]);
    assert!(ok, "{results:?}");
    let out = setup.run(&["assets", "verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut corrupted = a.clone();
    corrupted[SIZE / 2] ^= 1;
    std::fs::write(setup.models().join("hubert_base.pt"), &corrupted).unwrap();
    std::fs::write(setup.models().join("rmvpe.pt"), &b[..1000]).unwrap();
    let out = setup.run(&["assets", "verify"]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
            .to_string()
    };
    assert!(line("hubert").starts_with("corrupt"), "{text}");
    assert!(line("hubert").contains(&sha256_hex(&corrupted)), "{text}");
    assert!(
        line("rmvpe").contains(&format!("truncated: 1000 of {SIZE} bytes")),
        "{text}"
    );
    assert_eq!(state_of(&setup, "hubert"), "corrupt");

    let out = setup.run(&["assets", "remove", "hubert", "rmvpe"]);
    assert!(out.status.success());
    assert_eq!(state_of(&setup, "hubert"), "missing");
    assert!(!setup.models().join("rmvpe.pt").exists());
}
