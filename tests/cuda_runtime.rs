//! `timbre runtime install|status|remove cuda` against wheels made for the test and served from
//! 127.0.0.1 (`support::asset_server`): what is unpacked, a download cut off and resumed, a
//! wrong hash refused with nothing installed, the installed runtime tried at the next start,
//! and removal back to what the build finds itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use timbre_integration_tests::Sandbox;
use timbre_integration_tests::asset_server::{AssetServer, Fault};
use timbre_integration_tests::assets::sha256_hex;

/// A wheel (a zip) with `members` (name, bytes).
fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes) in members {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// 200 KB of bytes that are not an ELF library, so loading one fails with the loader's word.
fn not_a_library(seed: u8) -> Vec<u8> {
    (0..200_000u32)
        .map(|i| (i.wrapping_mul(31) as u8) ^ seed)
        .collect()
}

struct Runtime {
    sb: Sandbox,
    server: AssetServer,
    catalog: PathBuf,
    torch: Vec<u8>,
    cublas: Vec<u8>,
}

impl Runtime {
    /// Two wheels: torch's (its CUDA backend and a CPU library that must stay out) and an NVIDIA
    /// one; `wrong_hash` lists a hash for the torch wheel that it does not have.
    fn new(wrong_hash: bool) -> Runtime {
        let sb = Sandbox::new();
        let server = AssetServer::start();
        let torch = wheel(&[
            ("torch/lib/libtorch_cuda.so", &not_a_library(1)),
            ("torch/lib/libc10_cuda.so", &not_a_library(2)),
            (
                "torch/lib/libtorch_cpu.so",
                b"the CPU runtime the package has",
            ),
            ("torch/__init__.py", b""),
        ]);
        let cublas = wheel(&[
            ("nvidia/cu13/lib/libcublas.so.13", &not_a_library(3)),
            ("nvidia/cu13/include/cublas.h", b"/* header */"),
        ]);
        let status = runtime_json(&sb, &["runtime", "status"], None);
        let torch_hash = if wrong_hash {
            sha256_hex(b"another file")
        } else {
            sha256_hex(&torch)
        };
        let entry = |name: &str, file: &str, bytes: &[u8], sha256: String| {
            serde_json::json!({
                "name": name, "role": "cuda-runtime", "description": "a test wheel",
                "path": format!("wheels/{file}"), "urls": [format!("packages/{file}")],
                "size_bytes": bytes.len(), "sha256": sha256, "needed_for": ["tests"],
            })
        };
        let catalog = sb.path("cuda-runtime.json");
        let text = serde_json::json!({
            "torch_version": status["torch_version"],
            "endpoints": ["https://unused.invalid"],
            "models": [
                entry("torch", "torch-test.whl", &torch, torch_hash),
                entry("nvidia-cublas", "nvidia_cublas-test.whl", &cublas, sha256_hex(&cublas)),
            ],
        });
        std::fs::write(&catalog, text.to_string()).unwrap();
        Runtime {
            sb,
            server,
            catalog,
            torch,
            cublas,
        }
    }

    fn root(&self) -> PathBuf {
        self.sb.path("runtime")
    }

    /// Serves both wheels, the NVIDIA one with `cublas_fault`.
    fn serve(&self, cublas_fault: Fault) {
        self.server
            .serve("/packages/torch-test.whl", &self.torch, Fault::None);
        self.server.serve(
            "/packages/nvidia_cublas-test.whl",
            &self.cublas,
            cublas_fault,
        );
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        command(&self.sb, Some(self))
            .args(args)
            .output()
            .expect("running timbre")
    }
}

fn command(sb: &Sandbox, runtime: Option<&Runtime>) -> std::process::Command {
    let mut cmd = sb.command();
    cmd.env("TIMBRE_RUNTIME_DIR", sb.path("runtime"))
        .env_remove("TIMBRE_CUDA_RUNTIME")
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY");
    if let Some(runtime) = runtime {
        cmd.env("TIMBRE_CUDA_RUNTIME_CATALOG", &runtime.catalog)
            .env("TIMBRE_DOWNLOAD_ENDPOINT", runtime.server.url());
    }
    cmd
}

fn runtime_json(sb: &Sandbox, args: &[&str], runtime: Option<&Runtime>) -> serde_json::Value {
    let out = command(sb, runtime)
        .arg("--json")
        .args(args)
        .output()
        .expect("running timbre");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from timbre")
}

fn folder(status: &serde_json::Value) -> PathBuf {
    PathBuf::from(status["folder"].as_str().expect("a runtime folder"))
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let relative = entry.path().strip_prefix(dir).unwrap().to_path_buf();
                out.push(relative.display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_cuda_runtime_installs_resumes_a_cut_download_and_is_loaded_at_the_next_start() {
    let runtime = Runtime::new(false);
    let before = runtime_json(&runtime.sb, &["runtime", "status"], Some(&runtime));
    assert_eq!(before["installed"], false, "{before}");
    assert_eq!(
        before["download_bytes"],
        (runtime.torch.len() + runtime.cublas.len()) as u64
    );
    assert!(folder(&before).starts_with(runtime.root()), "{before}");
    runtime.serve(Fault::Drop {
        at: runtime.cublas.len() / 2,
        times: 1,
    });

    let out = runtime.run(&["--json", "runtime", "install", "cuda"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resumed = runtime
        .server
        .seen()
        .iter()
        .filter(|s| s.path.ends_with("nvidia_cublas-test.whl"))
        .filter_map(|s| s.range_start)
        .max();
    assert!(
        resumed.is_some_and(|start| start > 0),
        "the cut download was not resumed: {:?}",
        runtime.server.seen()
    );
    let installed = folder(&before);
    assert_eq!(
        files_under(&installed),
        [
            "nvidia/cu13/lib/libcublas.so.13",
            "torch/lib/libc10_cuda.so",
            "torch/lib/libtorch_cuda.so",
        ]
    );
    assert_eq!(
        std::fs::read(installed.join("nvidia/cu13/lib/libcublas.so.13")).unwrap(),
        not_a_library(3)
    );
    assert!(
        !runtime.root().join("downloads").exists(),
        "the wheels stay after the install"
    );
    let after = runtime_json(&runtime.sb, &["runtime", "status"], Some(&runtime));
    assert_eq!(after["installed"], true, "{after}");

    // The next start tries the installed runtime first: here its libtorch_cuda is no library,
    // and the loader's refusal names it, while the CPU keeps working.
    let doctor = runtime_json(&runtime.sb, &["doctor"], None);
    let problem = doctor["libtorch"]["cuda_runtime_problem"]
        .as_str()
        .unwrap_or_default();
    assert!(
        problem.contains(
            &installed
                .join("torch/lib/libtorch_cuda.so")
                .display()
                .to_string()
        ),
        "{doctor}"
    );
    assert!(doctor["libtorch"]["cuda_runtime"].is_null(), "{doctor}");

    let removed = runtime_json(&runtime.sb, &["runtime", "remove", "cuda"], Some(&runtime));
    assert_eq!(removed["removed"], true);
    assert!(!installed.exists());
    let doctor = runtime_json(&runtime.sb, &["doctor"], None);
    let loaded = doctor["libtorch"]["cuda_runtime"]
        .as_str()
        .unwrap_or_default();
    assert!(
        !loaded.starts_with(&runtime.root().display().to_string()),
        "{doctor}"
    );
}

#[test]
fn a_wheel_with_the_wrong_hash_is_refused_and_nothing_is_installed() {
    let runtime = Runtime::new(true);
    runtime.serve(Fault::None);
    let out = runtime.run(&["runtime", "install", "cuda"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("torch") && stderr.contains("SHA-256"),
        "the refusal names the wheel and the hash: {stderr}"
    );
    let status = runtime_json(&runtime.sb, &["runtime", "status"], Some(&runtime));
    assert_eq!(status["installed"], false, "{status}");
    assert!(!folder(&status).exists());
}

#[test]
fn a_catalogue_for_another_torch_is_refused_naming_both_versions() {
    let runtime = Runtime::new(false);
    let text = std::fs::read_to_string(&runtime.catalog).unwrap();
    let mut catalog: serde_json::Value = serde_json::from_str(&text).unwrap();
    catalog["torch_version"] = "1.0.0+cu99".into();
    std::fs::write(&runtime.catalog, catalog.to_string()).unwrap();
    let out = runtime.run(&["runtime", "install", "cuda"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1.0.0+cu99") && stderr.contains("this build links torch"),
        "{stderr}"
    );
}
