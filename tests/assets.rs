//! `timbre assets` against a local HTTP server (`support::asset_server`) and a test catalogue
//! pointing at it: every fault lands the file verified or not at all, with a message naming the
//! asset, the URL and the problem; a killed download resumes; `verify` catches corruption.

use std::time::Duration;
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

#[test]
fn an_endless_body_stops_at_the_declared_size_and_the_next_mirror_serves_the_file() {
    let (a, b) = (fixture(17), fixture(18));
    let setup = Setup::new(&[
        entry(
            "rmvpe",
            "rmvpe.pt",
            &["endless/rmvpe.pt", "mirror/rmvpe.pt"],
            &a,
        ),
        entry("fcpe", "fcpe.pt", &["endless/fcpe.pt"], &b),
    ]);
    setup.server.serve("/endless/rmvpe.pt", &a, Fault::Endless);
    setup.server.serve("/mirror/rmvpe.pt", &a, Fault::None);
    setup.server.serve("/endless/fcpe.pt", &b, Fault::Endless);
    let (ok, results) = setup.download_within(&["rmvpe", "fcpe"], Duration::from_secs(60));
    assert!(!ok, "{results:?}");
    assert_eq!(results[0]["result"]["url"], setup.url("/mirror/rmvpe.pt"));
    assert_verified(&setup.models().join("rmvpe.pt"), &a);

    let error = results[1]["error"].as_str().unwrap();
    let too_long = format!(
        "{} sent more than the 300.0 KB the catalogue declares",
        setup.url("/endless/fcpe.pt")
    );
    assert!(error.contains(&too_long), "{error}");
    // The part was garbage: nothing is kept to resume from.
    let file = setup.models().join("fcpe.pt");
    assert!(!file.exists() && !part_of(&file).exists());
    // A server that sends too much is not asked again: one request to each endless URL.
    let seen = setup.server.seen();
    let endless: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.path.starts_with("/endless/"))
        .collect();
    assert_eq!(endless.len(), 2, "{endless:?}");
}

#[test]
fn a_part_longer_than_the_declared_size_is_discarded_not_resumed() {
    let bytes = fixture(19);
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
    let file = setup.models().join("rmvpe.pt");
    std::fs::create_dir_all(setup.models()).unwrap();
    std::fs::write(part_of(&file), vec![7u8; SIZE + 1000]).unwrap();
    setup.server.serve("/r/rmvpe.pt", &bytes, Fault::None);
    let (ok, results) = setup.download(&["rmvpe"]);
    assert!(ok, "{results:?}");
    assert_eq!(results[0]["result"]["resumed_from"], 0);
    assert_eq!(
        setup.server.seen(),
        [Seen {
            path: "/r/rmvpe.pt".into(),
            range_start: None
        }]
    );
    assert_verified(&file, &bytes);
}

#[test]
fn a_trickle_fails_as_too_slow_naming_the_url_and_a_slow_but_steady_mirror_does_not() {
    let (a, b) = (fixture(20), fixture(21));
    let setup = Setup::new(&[
        entry("hubert", "hubert_base.pt", &["trickle/hubert_base.pt"], &a),
        entry(
            "rmvpe",
            "rmvpe.pt",
            &["trickle/rmvpe.pt", "steady/rmvpe.pt"],
            &b,
        ),
    ]);
    let trickle = Fault::Slow {
        chunk: 1,
        every: Duration::from_millis(200),
    };
    setup
        .server
        .serve("/trickle/hubert_base.pt", &a, trickle.clone());
    setup.server.serve("/trickle/rmvpe.pt", &b, trickle);
    // About 80 kB/s: the download spans several windows, each far above the minimum.
    let steady = Fault::Slow {
        chunk: 4096,
        every: Duration::from_millis(50),
    };
    setup.server.serve("/steady/rmvpe.pt", &b, steady);
    for (key, value) in [
        ("download_stall_secs", "1"),
        ("download_stall_bytes", "10000"),
    ] {
        let set = setup.run(&["settings", "set", key, value]);
        assert!(
            set.status.success(),
            "{}",
            String::from_utf8_lossy(&set.stderr)
        );
    }
    let (ok, results) = setup.download_within(&["hubert", "rmvpe"], Duration::from_secs(90));
    assert!(!ok, "{results:?}");
    let error = results[0]["error"].as_str().unwrap();
    let too_slow = format!(
        "{}: too slow: under 10.0 KB in 1 s",
        setup.url("/trickle/hubert_base.pt")
    );
    assert!(error.contains(&too_slow), "{error}");
    assert!(error.contains("(tried 4 times)"), "{error}");
    assert!(!setup.models().join("hubert_base.pt").exists());

    assert_eq!(
        results[1]["result"]["url"],
        setup.url("/steady/rmvpe.pt"),
        "{results:?}"
    );
    assert_verified(&setup.models().join("rmvpe.pt"), &b);
    // What the trickle sent was the file's start: each try resumed from it.
    let resumed: Vec<Option<u64>> = setup
        .server
        .seen()
        .iter()
        .filter(|s| s.path == "/trickle/hubert_base.pt")
        .map(|s| s.range_start)
        .collect();
    assert_eq!(resumed.len(), 4, "{resumed:?}");
    assert!(resumed[1..].iter().all(|r| r.is_some()), "{resumed:?}");
}

/// Runs inside the namespace, arguments: the models folder, the folder for what it reports,
/// then the `timbre` command line. A 1 MiB tmpfs is the models folder; once the download's
/// part holds 20 kB, a filler takes the rest of that disk.
const FULL_MODELS_DISK: &str = r#"
set -u
models=$1 out=$2
shift 2
mkdir -p "$models"
mount -t tmpfs -o size=1m tmpfs "$models" || exit 1
timeout 120 "$@" --json assets download rmvpe > "$out/download.out" 2> "$out/download.err" &
until [ "$(stat -c %s "$models/rmvpe.pt.part" 2> /dev/null || echo 0)" -gt 20000 ]; do
    kill -0 $! 2> /dev/null || break
    sleep 0.05
done
dd if=/dev/zero of="$models/filler" bs=4k 2> /dev/null
wait $!
echo $? > "$out/download.rc"
stat -c %s "$models/rmvpe.pt.part" > "$out/part_size"
"#;

#[test]
fn a_full_disk_during_a_download_names_the_models_folders_disk() {
    let namespaces = std::process::Command::new("unshare")
        .args(["-rm", "true"])
        .output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: {namespaces:?}) \
         to mount a small tmpfs as a full disk"
    );
    let bytes = fixture(22);
    let setup = Setup::new(&[entry("rmvpe", "rmvpe.pt", &["r/rmvpe.pt"], &bytes)]);
    setup.server.serve("/r/rmvpe.pt", &bytes, slow());
    let reports = setup.sb.path("reports");
    std::fs::create_dir(&reports).unwrap();
    let timbre = setup.command();
    let mut in_namespace = std::process::Command::new("unshare");
    in_namespace
        .args(["-rm", "sh", "-c", FULL_MODELS_DISK, "sh"])
        .arg(setup.models())
        .arg(&reports)
        .arg(timbre.get_program())
        .args(timbre.get_args());
    for (key, value) in timbre.get_envs() {
        match value {
            Some(value) => in_namespace.env(key, value),
            None => in_namespace.env_remove(key),
        };
    }
    let ran = in_namespace.output().unwrap();
    assert!(ran.status.success(), "the namespace script failed: {ran:?}");
    let read = |name: &str| std::fs::read_to_string(reports.join(name)).unwrap();
    let rc: i32 = read("download.rc").trim().parse().unwrap();
    assert_ne!(rc, 124, "the download hung: {}", read("download.err"));
    assert_ne!(rc, 0, "the disk was full: {}", read("download.out"));
    let results: serde_json::Value = serde_json::from_str(&read("download.out")).unwrap();
    let error = results[0]["error"].as_str().unwrap();
    let models_full = format!("the disk holding {} is full", setup.models().display());
    assert!(error.contains(&models_full), "{error}");
    assert!(error.contains("No space left on device"), "{error}");
    assert!(
        !error.contains(&setup.sb.data_dir().display().to_string()),
        "the data dir's disk is not the full one: {error}"
    );
    // What arrived is the file's start: kept, to resume once there is room.
    let part_size: u64 = read("part_size").trim().parse().unwrap();
    assert!(part_size > 20_000, "{part_size}");
}
