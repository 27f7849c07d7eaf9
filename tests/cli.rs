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
