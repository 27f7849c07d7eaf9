//! Several processes writing one library at once, as the app and a CLI do: three imports of
//! distinct files and a conversion, started together. No write may be lost to the contention,
//! nor fail and be retried: every process succeeds and every file becomes a take.

use std::process::{Command, Stdio};
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, write_sine_wav};

const IMPORTS: usize = 3;
const FILES_PER_IMPORT: usize = 60;

fn fixture(path: &str) -> String {
    rvc_parity_fixtures().join(path).display().to_string()
}

fn assert_ok(what: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn concurrent_imports_and_a_conversion_lose_nothing() {
    let sb = Sandbox::with_extractors(true);
    let model = sb
        .cpu_command()
        .args(["models", "import", &fixture("synth_v1_f0_40k/model.pth")])
        .args(["--name", "pitched"])
        .output()
        .unwrap();
    assert_ok("models import", &model);
    let to_convert = sb.path("to_convert.wav");
    write_sine_wav(&to_convert, 3.0, 220.0);

    let batches: Vec<Vec<String>> = (0..IMPORTS)
        .map(|batch| {
            let dir = sb.path(&format!("batch{batch}"));
            std::fs::create_dir(&dir).unwrap();
            (0..FILES_PER_IMPORT)
                .map(|i| {
                    let path = dir.join(format!("clip{i:03}.wav"));
                    let freq = 100.0 + (batch * FILES_PER_IMPORT + i) as f32;
                    write_sine_wav(&path, 0.3, freq);
                    path.display().to_string()
                })
                .collect()
        })
        .collect();

    let spawn = |cmd: &mut Command| {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut children: Vec<(String, std::process::Child)> = batches
        .iter()
        .enumerate()
        .map(|(i, paths)| {
            let child = spawn(sb.cpu_command().arg("import").args(paths));
            (format!("import {i}"), child)
        })
        .collect();
    let convert = spawn(
        sb.cpu_command()
            .args(["convert", "--model", "pitched"])
            .arg(&to_convert),
    );
    children.push(("convert".into(), convert));
    for (what, child) in children {
        let out = child.wait_with_output().unwrap();
        assert_ok(&what, &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("failed"), "{what}: {stdout}");
    }

    let takes = sb.json(&["library", "list"]);
    let names: std::collections::HashSet<String> = takes
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["source_path"].as_str().unwrap_or_default().to_string())
        .collect();
    for path in batches.iter().flatten() {
        assert!(names.contains(path), "{path} is not in the library");
    }
    assert_eq!(names.len(), IMPORTS * FILES_PER_IMPORT);
    let db = sb.db().unwrap();
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT COUNT(*) FROM conversions"), 1);
    let retries: Vec<String> = db
        .prepare("SELECT data FROM job_events WHERE kind = 'retry'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        retries.is_empty(),
        "writers waited for each other in vain: {retries:?}"
    );
}
