//! `timbre assets` against a local HTTP server (`support::asset_server`) and a test catalogue
//! pointing at it: every fault lands the file verified or not at all, with a message naming the
//! asset, the URL and the problem; a killed download resumes; `verify` catches corruption.

use timbre_integration_tests::asset_server::{Fault, Seen};
use timbre_integration_tests::assets::*;

#[test]
fn essentials_download_into_a_fresh_data_dir_and_verify() {
    let (hubert, rmvpe, other) = (fixture(1), fixture(2), fixture(3));
    let setup = Setup::new(&[
        Catalogued {
            essential: true,
            ..entry(
                "hubert",
                "hubert_base.pt",
                &["repo/hubert_base.pt"],
                &hubert,
            )
        },
        Catalogued {
            essential: true,
            ..entry("rmvpe", "rmvpe.pt", &["repo/rmvpe.pt"], &rmvpe)
        },
        entry("extra", "extra/x.pth", &["repo/x.pth"], &other),
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

    // Verified files are not fetched again.
    let requests = setup.server.seen().len();
    let again = setup
        .command()
        .env_remove("TIMBRE_MODELS_DIR")
        .args(["--json", "assets", "download", "hubert"])
        .output()
        .unwrap();
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again[0]["ok"], true, "{again}");
    assert!(again[0]["result"]["url"].is_null(), "{again}");
    assert_eq!(setup.server.seen().len(), requests);
}

#[test]
fn a_dropped_connection_and_a_5xx_are_retried_and_the_download_resumes_with_range() {
    let bytes = fixture(4);
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
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
    let setup = Setup::new(&[entry(
        "hubert",
        "hubert_base.pt",
        &["h/hubert_base.pt"],
        &bytes,
    )]);
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
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
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
        entry(
            "fcpe",
            "fcpe/fcpe.pt",
            &["gone/fcpe.pt", "mirror/fcpe.pt"],
            &a,
        ),
        entry(
            "crepe",
            "crepe/full.pth",
            &["gone/full.pth", "also-gone/full.pth"],
            &b,
        ),
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
    let setup = Setup::new(&[entry(
        "hubert",
        "hubert_base.pt",
        &["resolve/hubert_base.pt"],
        &bytes,
    )]);
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
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["loop", "downgrade"], &bytes)]);
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
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
    std::fs::create_dir_all(setup.models()).unwrap();
    std::fs::write(part_of(&setup.models().join("rmvpe.pt")), vec![7u8; 1000]).unwrap();
    assert_eq!(state_of(&setup, "rmvpe"), "partial");
    setup.server.serve("/r/rmvpe.pt", &bytes, Fault::NoRange);
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(ok, "{results:?}");
    assert_eq!(setup.server.seen()[0].range_start, Some(1000));
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
}

#[test]
fn a_killed_download_resumes_where_it_stopped() {
    let bytes = fixture(11);
    let setup = Setup::new(&[entry(
        "hubert",
        "hubert_base.pt",
        &["h/hubert_base.pt"],
        &bytes,
    )]);
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
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
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
        entry("hubert", "hubert_base.pt", &["h"], &a),
        entry("rmvpe", "rmvpe.pt", &["r"], &b),
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

#[test]
fn https_proxy_from_the_environment_is_used() {
    let bytes = fixture(16);
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
    setup.server.serve("/r/rmvpe.pt", &bytes, Fault::None);
    // Nothing listens on the endpoint's port: only the proxy (the test server) can answer.
    let out = setup
        .command()
        .env("TIMBRE_DOWNLOAD_ENDPOINT", "http://localhost:9")
        .env("HTTPS_PROXY", setup.server.url())
        .args(["--json", "assets", "download", "rmvpe"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
    let seen = setup.server.seen();
    assert!(
        seen.iter().any(|s| s.path.contains("localhost:9")),
        "the proxy saw {seen:?}"
    );
}

#[test]
fn a_mirror_set_in_the_settings_serves_what_the_primary_endpoint_lacks() {
    let bytes = fixture(9);
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
    setup
        .server
        .serve("/mirror/r/rmvpe.pt", &bytes, Fault::None);
    let mirrors = serde_json::json!([setup.url("/mirror")]).to_string();
    let set = setup.run(&["settings", "set", "download_mirrors", &mirrors]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    // The endpoint comes from the setting too: the variable is not set.
    let endpoint = setup.url("/nothing-here");
    let set = setup.run(&["settings", "set", "download_endpoint", &endpoint]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let out = setup
        .command()
        .env_remove("TIMBRE_DOWNLOAD_ENDPOINT")
        .args(["--json", "assets", "download", "rmvpe"])
        .output()
        .unwrap();
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results[0]["ok"], true, "{results}");
    assert_eq!(results[0]["result"]["url"], setup.url("/mirror/r/rmvpe.pt"));
    assert_verified(&setup.models().join("rmvpe.pt"), &bytes);
    let tried: Vec<String> = setup.server.seen().iter().map(|s| s.path.clone()).collect();
    assert_eq!(tried[0], "/nothing-here/r/rmvpe.pt");
}
