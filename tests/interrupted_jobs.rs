//! Jobs cut off by `kill -9`: the next command says they wait and how to resume or drop them,
//! `jobs list` marks them, and a job whose process died three times is failed, not run again.

use std::process::Child;
use std::time::{Duration, Instant};
use timbre_integration_tests::{Sandbox, write_sine_wav};

const FILES: usize = 200;

fn inputs(sb: &Sandbox) -> Vec<String> {
    let dir = sb.path("inputs");
    std::fs::create_dir(&dir).unwrap();
    (0..FILES)
        .map(|i| {
            let path = dir.join(format!("clip{i:03}.wav"));
            write_sine_wav(&path, 1.0, 200.0 + i as f32);
            path.display().to_string()
        })
        .collect()
}

/// Kills the process with SIGKILL once it has reported 10 more files.
fn kill_after_progress(sb: &Sandbox, mut child: Child) {
    let from = sb.reported_files();
    let started = Instant::now();
    while sb.reported_files() < from + 10 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the job never got going"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the process ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sb.reported_files() < FILES as i64, "killed too late");
}

fn interrupted_import(sb: &Sandbox) {
    let child = sb.command().arg("import").args(inputs(sb)).spawn().unwrap();
    kill_after_progress(sb, child);
}

#[test]
fn an_interrupted_job_is_announced_marked_and_resumed() {
    let sb = Sandbox::new();
    interrupted_import(&sb);
    let out = sb.run(&["--json", "jobs", "list"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "1 job was interrupted and is waiting (job 1): `timbre jobs resume ID` or `timbre jobs drop ID`"
        ),
        "{stderr}"
    );
    let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&jobs[0]["state"], &jobs[0]["recovered"]),
        (&"queued".into(), &true.into())
    );
    let listed = sb.run(&["jobs", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("[interrupted: resume or drop]"));
    let other = sb.run(&["library", "list"]);
    assert!(String::from_utf8_lossy(&other.stderr).contains("1 job was interrupted"));

    let resumed = sb.json(&["jobs", "resume", "1"]);
    assert_eq!(resumed["state"], "succeeded", "{resumed}");
    assert_eq!(resumed["result"]["imported"], FILES);
    let quiet = sb.run(&["library", "list"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("interrupted"));
    let again = sb.run(&["jobs", "resume", "1"]);
    assert!(!again.status.success(), "a finished job does not resume");
}

#[test]
fn a_dropped_job_is_not_run() {
    let sb = Sandbox::new();
    interrupted_import(&sb);
    let dropped = sb.json(&["jobs", "drop", "1"]);
    assert_eq!(dropped["state"], "cancelled", "{dropped}");
    assert_eq!(sb.json(&["jobs", "run"])["ran"], 0);
    let quiet = sb.run(&["jobs", "list"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("interrupted"));
}

#[test]
fn a_job_that_crashed_the_app_three_times_fails_and_is_not_rerun() {
    let sb = Sandbox::new();
    interrupted_import(&sb);
    for _ in 0..2 {
        let child = sb.command().args(["jobs", "run"]).spawn().unwrap();
        kill_after_progress(&sb, child);
    }
    let job = sb.json(&["jobs", "show", "1"]);
    assert_eq!(job["job"]["state"], "failed", "{job}");
    assert_eq!(job["job"]["crashes"], 3);
    let error = job["job"]["error"].as_str().unwrap();
    assert!(error.contains("crashed the app 3 times"), "{error}");
    let reported = sb.reported_files();
    assert_eq!(sb.json(&["jobs", "run"])["ran"], 0);
    assert_eq!(sb.reported_files(), reported, "not run again");
    let listed = sb.run(&["jobs", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("crashed the app 3 times"));
}
