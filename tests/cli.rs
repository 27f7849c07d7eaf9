//! `timbre import`, `library`, `jobs` and `settings` through the real binary: takes imported,
//! listed and deleted, jobs exported and retried, settings checked and kept, the data dir from
//! the environment, clear errors for odd files and folders, and names escaped for the terminal.

use serde_json::Value;
use timbre_integration_tests::{Sandbox, write_sine_wav};

#[test]
fn import_list_show_tag_free_delete_through_the_cli() {
    let sb = Sandbox::new();
    let a = sb.path("alpha.wav");
    let b = sb.path("beta.wav");
    write_sine_wav(&a, 1.0, 440.0);
    write_sine_wav(&b, 0.5, 220.0);
    let out = sb.json(&[
        "import",
        "--voice",
        "Ada",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(out["job"]["state"], "succeeded");
    assert_eq!(out["files"].as_array().unwrap().len(), 2);

    let takes = sb.json(&["library", "list"]);
    let takes = takes
        .as_array()
        .expect("library list --json prints an array");
    assert_eq!(takes.len(), 2);
    let alpha = takes.iter().find(|t| t["name"] == "alpha").unwrap();
    assert_eq!(
        (
            alpha["duration_secs"].as_f64(),
            alpha["sample_rate"].as_u64()
        ),
        (Some(1.0), Some(16000))
    );
    assert_eq!(alpha["source_path"], Value::from(a.to_str().unwrap()));

    let voices = sb.json(&["library", "voices"]);
    assert_eq!(voices[0]["name"], "Ada");
    assert_eq!(voices[0]["take_count"], 2);
    assert_eq!(
        sb.json(&["library", "list", "--voice", "Ada"])
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let id = alpha["id"].to_string();
    assert_eq!(sb.json(&["library", "show", &id])["name"], "alpha");
    sb.json(&["library", "rm", &id]);
    let shown = sb.run(&["library", "show", &id]);
    assert!(!shown.status.success());
    assert!(String::from_utf8_lossy(&shown.stderr).contains(&format!("take {id} does not exist")));
    assert_eq!(sb.json(&["library", "list"]).as_array().unwrap().len(), 1);
}

#[test]
fn jobs_are_listed_exported_and_retried() {
    let sb = Sandbox::new();
    let missing = sb.path("missing.wav");
    let out = sb.run(&["--json", "import", missing.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "a failed file makes the command fail"
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["job"]["state"], "failed");
    assert!(
        result["files"][0]["error"]
            .as_str()
            .unwrap()
            .contains("missing.wav")
    );

    let jobs = sb.json(&["jobs", "list"]);
    let id = jobs[0]["id"].to_string();
    let report_path = sb.path("report.json");
    sb.run(&[
        "jobs",
        "export",
        &id,
        "--out",
        report_path.to_str().unwrap(),
    ]);
    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["job"]["kind"], "import");
    assert!(
        report["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "file")
    );
    assert!(
        report["metrics_summary"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "cpu_percent")
    );

    write_sine_wav(&missing, 0.5, 330.0);
    assert_eq!(sb.json(&["jobs", "retry", &id])["state"], "queued");
    assert_eq!(sb.json(&["jobs", "run"])["ran"], 1);
    assert_eq!(sb.json(&["jobs", "show", &id])["job"]["state"], "succeeded");
    let cancel = sb.run(&["jobs", "cancel", &id]);
    assert!(String::from_utf8_lossy(&cancel.stderr).contains("already succeeded"));
}

#[test]
fn settings_are_validated_and_kept() {
    let sb = Sandbox::new();
    assert_eq!(
        sb.json(&["settings", "set", "max_retries", "5"])["max_retries"],
        5
    );
    assert_eq!(sb.json(&["settings", "list"])["max_retries"], 5);
    let bad = sb.run(&["settings", "set", "max_retries", "lots"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a valid value for max_retries"));
}

#[test]
fn the_data_dir_comes_from_the_environment_too() {
    let sb = Sandbox::new();
    let wav = sb.path("env.wav");
    write_sine_wav(&wav, 0.2, 440.0);
    let out = std::process::Command::new(timbre_integration_tests::timbre_bin())
        .env("TIMBRE_DATA_DIR", sb.data_dir())
        .args(["import", wav.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(sb.json(&["library", "list"]).as_array().unwrap().len(), 1);
}

#[test]
fn a_file_named_like_an_error_fails_once_not_as_out_of_memory() {
    let sb = Sandbox::new();
    let named = sb.path("out of memory.wav");
    std::fs::write(&named, "CUDA out of memory. Not audio at all.\n").unwrap();
    let out = sb.run(&["--json", "import", named.to_str().unwrap()]);
    assert!(!out.status.success());
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["job"]["state"], "failed", "{result}");
    assert_eq!(result["job"]["attempts"], 0, "no retry: {result}");
    let shown = sb.json(&["jobs", "show", &result["job"]["id"].to_string()]);
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(!kinds.contains(&"retry"), "{kinds:?}");
}

#[test]
fn a_read_only_library_folder_is_named_in_the_error() {
    let namespaces = std::process::Command::new("unshare")
        .args(["-rm", "true"])
        .output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: \
         {namespaces:?}) to mount a read-only folder"
    );
    let sb = Sandbox::new();
    let wav = sb.path("take.wav");
    write_sine_wav(&wav, 0.2, 440.0);
    sb.json(&["import", wav.to_str().unwrap()]);
    let data = sb.data_dir();
    // The library folder bound onto itself read-only, inside a mount namespace.
    let script = r#"bin=$1 data=$2 wav=$3
        mount --bind "$data" "$data" && mount -o remount,bind,ro "$data" || exit 99
        "$bin" --data-dir "$data" library list
        "$bin" --data-dir "$data" import "$wav""#;
    let out = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .arg(timbre_integration_tests::timbre_bin())
        .arg(&data)
        .arg(&wav)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(99), "mounting failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named = format!(
        "in the library folder {}: Read-only file system",
        data.display()
    );
    assert_eq!(stderr.matches(&named).count(), 2, "{stderr}");
}

#[test]
fn a_symbolic_link_loop_is_called_one() {
    let sb = Sandbox::new();
    let looped = sb.path("loop.wav");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let out = sb.run(&["enhance", looped.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: cannot read: Too many levels of symbolic links",
            looped.display()
        )) && !stderr.contains("no such file"),
        "{stderr}"
    );
}

#[test]
fn a_file_named_twice_in_one_import_is_imported_once() {
    let sb = Sandbox::new();
    let wav = sb.path("take.wav");
    write_sine_wav(&wav, 0.5, 440.0);
    let out = sb
        .command()
        .current_dir(sb.dir.path())
        .args(["import", wav.to_str().unwrap(), "take.wav", "./take.wav"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        format!("imported   {} (take 1)", wav.display())
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("importing 1 file(s)"));
}

#[test]
fn control_characters_in_names_are_escaped_for_the_terminal_only() {
    let sb = Sandbox::new();
    let wav = sb.path("line\nbreak\ttab\x1b[31mred.wav");
    write_sine_wav(&wav, 0.5, 440.0);
    sb.json(&["import", "--voice", "Ada\x1b[2J", wav.to_str().unwrap()]);
    let listed = sb.json(&["library", "list"]);
    assert_eq!(listed[0]["name"], "line\nbreak\ttab\x1b[31mred");
    for args in [&["library", "list"][..], &["library", "voices"]] {
        let out = sb.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains('\x1b')
                && !stdout.contains('\t')
                && stdout.trim().lines().count() == 1,
            "{args:?}: {stdout:?}"
        );
    }
    let out = sb.run(&["library", "list"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(r"line\nbreak\ttab\x1b[31mred"));
    let out = sb.run(&["library", "voices"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(r"Ada\x1b[2J"));
}
