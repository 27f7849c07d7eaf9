//! `timbre update` against a feed served from 127.0.0.1 and signed in the test with a key of its
//! own (`TIMBRE_UPDATE_KEY`): a newer signed version is offered, an equal or older one is not,
//! a manifest altered after signing or signed by another key is refused saying so, checks
//! turned off make no request; the tar.gz form installs in place of a temporary install folder,
//! and a package that does not match its signed hash changes nothing.

use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use std::path::{Path, PathBuf};
use std::process::Output;
use timbre_integration_tests::Sandbox;
use timbre_integration_tests::asset_server::{AssetServer, Fault};
use timbre_integration_tests::assets::sha256_hex;

const CURRENT: &str = env!("CARGO_PKG_VERSION");
const FORM_MARKER: &str = "share/timbre-studio/package-form";

/// A library whose update feed is `/stable.json` on a local server, and an install folder.
struct Setup {
    sb: Sandbox,
    server: AssetServer,
    signer: SigningKey,
}

impl Setup {
    fn new() -> Setup {
        let setup = Setup {
            sb: Sandbox::new(),
            server: AssetServer::start(),
            signer: SigningKey::from_bytes(&[42; 32]),
        };
        let feed = setup.feed_url();
        let out = setup.sb.run(&["settings", "set", "update_feed_url", &feed]);
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::create_dir_all(setup.root()).unwrap();
        setup
    }

    fn feed_url(&self) -> String {
        format!("{}/stable.json", self.server.url())
    }

    /// The install folder `timbre` is told it runs from.
    fn root(&self) -> PathBuf {
        self.sb.path("install/timbre-studio")
    }

    /// Marks the install folder as installed from `form` (`deb`, `tar.gz`).
    fn mark(&self, form: &str) {
        let marker = self.root().join(FORM_MARKER);
        std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
        std::fs::write(marker, format!("{form}\n")).unwrap();
    }

    /// Serves `manifest` and its signature by `signer`.
    fn publish_signed_by(&self, manifest: &str, signer: &SigningKey) {
        let signature = signer.sign(manifest.as_bytes()).to_bytes();
        let text = base64::engine::general_purpose::STANDARD.encode(signature) + "\n";
        self.server
            .serve("/stable.json", manifest.as_bytes(), Fault::None);
        self.server
            .serve("/stable.json.sig", text.as_bytes(), Fault::None);
    }

    fn publish(&self, manifest: &str) {
        self.publish_signed_by(manifest, &self.signer);
    }

    fn timbre(&self, args: &[&str]) -> Output {
        let key: String = self
            .signer
            .verifying_key()
            .to_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.sb
            .command()
            .env("TIMBRE_UPDATE_KEY", key)
            .env("TIMBRE_INSTALL_ROOT", self.root())
            .args(args)
            .output()
            .expect("running timbre")
    }

    fn check(&self) -> serde_json::Value {
        let out = self.timbre(&["update", "check", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    }

    /// The message of a command that must fail, from its JSON error.
    fn refusal(&self, args: &[&str]) -> String {
        let out = self.timbre(args);
        assert!(
            !out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let line = stderr(&out);
        let report: serde_json::Value = serde_json::from_str(line.trim().lines().last().unwrap())
            .unwrap_or_else(|e| panic!("{e}: {line}"));
        report["message"].as_str().unwrap().to_string()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A feed of releases (version, packages JSON).
fn manifest(releases: &[(&str, String)]) -> String {
    let releases: Vec<String> = releases
        .iter()
        .map(|(version, packages)| {
            format!(
                r#"{{"version": "{version}", "date": "2026-12-01",
                "notes": "What is new in {version}", "packages": [{packages}]}}"#
            )
        })
        .collect();
    format!(r#"{{"schema": 1, "releases": [{}]}}"#, releases.join(","))
}

fn package(form: &str, url: &str, bytes: &[u8]) -> String {
    format!(
        r#"{{"form": "{form}", "arch": "{}", "url": "{url}", "size_bytes": {},
        "sha256": "{}"}}"#,
        std::env::consts::ARCH,
        bytes.len(),
        sha256_hex(bytes)
    )
}

/// The app as scripts/package.sh packs its tar.gz form: one top folder, the marker inside.
fn tar_gz_package(version: &str, timbre: &str) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let top = format!("timbre-studio-{version}-x86_64-linux");
    for (name, text) in [("bin/timbre", timbre), (FORM_MARKER, "tar.gz\n")] {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o755);
        builder
            .append_data(&mut header, format!("{top}/{name}"), text.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_newer_signed_version_is_offered_with_its_notes_and_packages() {
    let setup = Setup::new();
    let tar_url = setup.server.url() + "/p.tar.gz";
    let packages = [
        package("deb", "https://example.com/p.deb", b"deb"),
        package("tar.gz", &tar_url, b"tar"),
    ]
    .join(",");
    setup.publish(&manifest(&[
        (CURRENT, String::new()),
        ("99.0.0", packages),
        ("0.0.1", String::new()),
    ]));
    let check = setup.check();
    assert_eq!(check["current"], CURRENT);
    assert_eq!(check["newer"], true, "{check}");
    assert_eq!(check["latest"]["version"], "99.0.0");
    assert_eq!(check["latest"]["notes"], "What is new in 99.0.0");
    assert_eq!(check["latest"]["packages"][1]["url"], tar_url.as_str());
    assert_eq!(check["installed_as"], "source");
    assert_eq!(check["can_install"], false);
    assert_eq!(
        check["how_to_update"],
        "built from source: update with git pull"
    );

    setup.mark("tar.gz");
    assert_eq!(setup.check()["can_install"], true);
    let text = setup.timbre(&["update", "check"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Timbre Studio 99.0.0 is out"), "{text}");
    assert!(text.contains("What is new in 99.0.0"), "{text}");
    assert!(text.contains("timbre update install"), "{text}");
}

#[test]
fn an_equal_or_older_version_is_not_newer() {
    let setup = Setup::new();
    setup.publish(&manifest(&[(CURRENT, String::new())]));
    let check = setup.check();
    assert_eq!(check["newer"], false, "{check}");
    assert_eq!(check["latest"]["version"], CURRENT);
    setup.publish(&manifest(&[("0.0.1", String::new())]));
    assert_eq!(setup.check()["newer"], false);
    setup.publish(&manifest(&[]));
    let check = setup.check();
    assert!(
        check["latest"].is_null() && check["newer"] == false,
        "{check}"
    );
    let text = setup.timbre(&["update", "check"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("is up to date"));
}

#[test]
fn a_manifest_altered_after_signing_or_signed_by_another_key_is_refused() {
    let setup = Setup::new();
    let honest = manifest(&[("0.0.1", String::new())]);
    setup.publish(&honest);
    let forged = honest.replace("0.0.1", "99.0.0");
    setup
        .server
        .serve("/stable.json", forged.as_bytes(), Fault::None);
    let expected = format!(
        "update feed {}: the signature does not match the manifest (signed by another key, or \
         the file was altered)",
        setup.feed_url()
    );
    assert_eq!(setup.refusal(&["update", "check", "--json"]), expected);
    setup.publish_signed_by(&forged, &SigningKey::from_bytes(&[7; 32]));
    assert_eq!(setup.refusal(&["update", "check", "--json"]), expected);
    // Nor is an altered feed installed.
    setup.mark("tar.gz");
    assert_eq!(setup.refusal(&["update", "install", "--json"]), expected);

    setup.server.serve("/stable.json.sig", b"", Fault::NotFound);
    let message = setup.refusal(&["update", "check", "--json"]);
    assert!(
        message.contains("an unsigned feed is not trusted"),
        "{message}"
    );
}

#[test]
fn with_checks_off_no_request_is_made() {
    let setup = Setup::new();
    setup.publish(&manifest(&[("99.0.0", String::new())]));
    let out = setup.sb.run(&["settings", "set", "update_check", "false"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let message = setup.refusal(&["update", "check", "--json"]);
    assert!(
        message.starts_with("update checks are off in Settings"),
        "{message}"
    );
    assert!(setup.server.seen().is_empty(), "{:?}", setup.server.seen());
}

#[test]
fn the_tar_gz_form_installs_in_place_and_a_wrong_hash_changes_nothing() {
    let setup = Setup::new();
    setup.mark("tar.gz");
    let root = setup.root();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("bin/timbre"), "old").unwrap();
    let bytes = tar_gz_package("99.0.0", "new");
    setup.server.serve("/p.tar.gz", &bytes, Fault::None);
    let url = setup.server.url() + "/p.tar.gz";

    // Signed, but the package served is not the one the manifest names.
    let wrong = package("tar.gz", &url, b"other bytes").replace(
        &format!("\"size_bytes\": {}", b"other bytes".len()),
        &format!("\"size_bytes\": {}", bytes.len()),
    );
    setup.publish(&manifest(&[("99.0.0", wrong)]));
    let message = setup.refusal(&["update", "install", "--json"]);
    assert!(
        message.contains(&url) && message.contains("SHA-256"),
        "{message}"
    );
    assert_eq!(read(&root.join("bin/timbre")), "old");
    let beside: Vec<String> = std::fs::read_dir(root.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside, ["timbre-studio"], "nothing unpacked or moved aside");

    setup.publish(&manifest(&[("99.0.0", package("tar.gz", &url, &bytes))]));
    let out = setup.timbre(&["update", "install", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["installed"]["version"], "99.0.0", "{done}");
    assert_eq!(done["installed"]["sha256"], sha256_hex(&bytes).as_str());
    assert_eq!(read(&root.join("bin/timbre")), "new");
    assert_eq!(read(&root.join(FORM_MARKER)).trim(), "tar.gz");
    let old = root.with_file_name("timbre-studio.old");
    assert_eq!(read(&old.join("bin/timbre")), "old");
    assert_eq!(
        done["installed"]["previous"],
        old.display().to_string().as_str()
    );
    // The library and its settings are where they were.
    assert_eq!(setup.check()["feed_url"], setup.feed_url().as_str());
}

#[test]
fn a_deb_install_is_left_to_the_package_manager() {
    let setup = Setup::new();
    setup.mark("deb");
    let bytes = tar_gz_package("99.0.0", "new");
    setup.server.serve("/p.tar.gz", &bytes, Fault::None);
    let url = setup.server.url() + "/p.tar.gz";
    setup.publish(&manifest(&[("99.0.0", package("tar.gz", &url, &bytes))]));
    let check = setup.check();
    assert_eq!(check["installed_as"], "deb");
    assert_eq!(check["can_install"], false);
    assert_eq!(
        setup.refusal(&["update", "install", "--json"]),
        "installed from a .deb: update it with your package manager (apt)"
    );
    assert!(setup.server.seen().iter().all(|s| s.path != "/p.tar.gz"));
}
