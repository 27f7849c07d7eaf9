//! `kill -9` in the middle of a 200-file import, then a restart: the library is consistent, every
//! file the job reported is present, nothing half-written is left, and the re-queued job finishes.

use sha2_free::sha256_file;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use timbre_integration_tests::{Sandbox, write_sine_wav};

mod sha2_free {
    /// `sha256sum`, so the test checks the store with a tool independent of the code under test.
    pub fn sha256_file(path: &std::path::Path) -> String {
        let out = std::process::Command::new("sha256sum")
            .arg(path)
            .output()
            .expect("sha256sum");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    }
}

const FILES: usize = 200;

#[test]
fn kill_9_during_a_200_file_import_then_restart() {
    let sb = Sandbox::new();
    let inputs = sb.path("inputs");
    std::fs::create_dir(&inputs).unwrap();
    let paths: Vec<String> = (0..FILES)
        .map(|i| {
            let path = inputs.join(format!("clip{i:03}.wav"));
            write_sine_wav(&path, 1.0, 200.0 + i as f32);
            path.display().to_string()
        })
        .collect();

    let mut child = sb.command().arg("import").args(&paths).spawn().unwrap();
    let started = Instant::now();
    while sb.reported_files() < 10 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the import never got going"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let reported_at_kill = sb.reported_files();
    assert!(
        reported_at_kill < FILES as i64,
        "killed too late to test anything"
    );

    // Restart: any command opens the library, cleans the store and recovers the job.
    let jobs = sb.json(&["jobs", "list"]);
    assert_eq!(
        jobs[0]["state"], "queued",
        "an import is resumable, so it is re-queued"
    );
    let takes = sb.json(&["library", "list"]);
    let takes = takes.as_array().unwrap();
    assert_eq!(
        takes.len() as i64,
        reported_at_kill,
        "every reported file is present, no more"
    );
    assert_store_matches(&sb, takes);

    let ran = sb.json(&["jobs", "run"]);
    assert_eq!(ran["ran"], 1);
    let job = sb.json(&["jobs", "show", &jobs[0]["id"].to_string()]);
    assert_eq!(job["job"]["state"], "succeeded");
    assert_eq!(job["job"]["result"]["imported"], FILES);
    assert!(
        job["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "interrupted")
    );
    let takes = sb.json(&["library", "list"]);
    let takes = takes.as_array().unwrap();
    assert_eq!(takes.len(), FILES);
    let names: HashSet<&str> = takes.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), FILES);
    assert_store_matches(&sb, takes);
}

/// Every take's object exists with its hash, and the store holds nothing else.
fn assert_store_matches(sb: &Sandbox, takes: &[serde_json::Value]) {
    let mut expected = HashSet::new();
    for take in takes {
        let sha = take["sha256"].as_str().unwrap();
        let path = sb
            .data_dir()
            .join("store/objects")
            .join(&sha[..2])
            .join(format!("{sha}.wav"));
        assert_eq!(
            sha256_file(&path),
            sha,
            "{} holds what its name says",
            path.display()
        );
        expected.insert(path);
    }
    let mut found = HashSet::new();
    for shard in std::fs::read_dir(sb.data_dir().join("store/objects")).unwrap() {
        for entry in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            found.insert(entry.unwrap().path());
        }
    }
    assert_eq!(found, expected, "no orphan objects");
    assert_eq!(
        std::fs::read_dir(sb.data_dir().join("store/tmp"))
            .unwrap()
            .count(),
        0,
        "no partial files"
    );
}
