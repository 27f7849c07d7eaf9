//! `timbre models` and `timbre convert` through the real binary, with the small random-weight
//! models of the parity fixtures standing in for real ones (`RVC_PARITY_DIR`, and Applio's other
//! vocoders from `applio_parity_fixtures`).

use std::path::Path;
use timbre_integration_tests::{
    Sandbox, applio_parity_fixtures, rvc_parity_fixtures, write_sine_wav,
};

fn fixture(path: &str) -> String {
    rvc_parity_fixtures().join(path).display().to_string()
}

#[test]
fn models_convert_in_a_batch_and_a_second_model_reuses_the_analysis() {
    let sb = Sandbox::with_extractors(true);
    let (a, b) = (sb.path("a.wav"), sb.path("b.wav"));
    write_sine_wav(&a, 1.5, 220.0);
    write_sine_wav(&b, 1.0, 330.0);
    let with_pitch = sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_f0_40k/model.pth"),
        "--index",
        &fixture("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index"),
        "--name",
        "pitched",
    ]);
    assert_eq!(
        (
            with_pitch[0]["version"].as_str(),
            with_pitch[0]["sample_rate"].as_u64()
        ),
        (Some("v1"), Some(40_000))
    );
    assert!(with_pitch[0]["index_sha256"].is_string());
    let out_dir = sb.path("out");
    let results = sb.cpu_json(&[
        "convert",
        "--model",
        "pitched",
        "-t",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 2);
    for (result, seconds) in results.iter().zip([1.5, 1.0]) {
        assert_eq!(result["ok"], true, "{result}");
        let path = result["result"]["output_path"].as_str().unwrap();
        assert!(path.starts_with(out_dir.to_str().unwrap()), "{path}");
        let audio = timbre_audio::decode_file(Path::new(path), &Default::default()).unwrap();
        assert_eq!(audio.sample_rate, 40_000);
        // As in the reference, HuBERT's framing leaves the output about 20 ms short.
        assert!(
            (audio.duration_secs() - seconds).abs() < 0.05,
            "{} s",
            audio.duration_secs()
        );
        assert_eq!(result["result"]["analysis_cache"], "computed");
    }
    // Another model on the same input (a new process) takes the analysis from the disk cache.
    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_nono_32k/model.pth"),
        "--name",
        "plain",
    ]);
    let again = sb.cpu_json(&[
        "convert",
        "--model",
        "pitched",
        "-t",
        "-2",
        a.to_str().unwrap(),
    ]);
    assert_eq!(again[0]["result"]["analysis_cache"], "disk");
    let plain = sb.cpu_json(&["convert", "--model", "plain", a.to_str().unwrap()]);
    assert_eq!(plain[0]["ok"], true, "{}", plain[0]);
    assert_eq!(plain[0]["result"]["conversion"]["sample_rate"], 32_000);
    let listed = sb.cpu_json(&["models", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
}

#[test]
fn bad_models_and_inputs_are_refused_with_the_file_named() {
    let sb = Sandbox::with_extractors(true);
    let junk = sb.path("junk.pth");
    std::fs::write(&junk, b"definitely not a checkpoint").unwrap();
    let out = sb.cpu_run(&["models", "import", junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("junk.pth"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let truncated = sb.path("truncated.pth");
    let bytes = std::fs::read(rvc_parity_fixtures().join("synth_v2_f0_40k/model.pth")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = sb.cpu_run(&["models", "import", truncated.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated.pth"));

    // A v2 model with a v1 index: refused, naming the index and the fix.
    let out = sb.cpu_run(&[
        "models",
        "import",
        &fixture("synth_v2_f0_40k/model.pth"),
        "--index",
        &fixture("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("added_IVF51_Flat_nprobe_1_tiny_v1.index") && err.contains("v1"),
        "{err}"
    );
    assert_eq!(
        sb.cpu_json(&["models", "list"]).as_array().unwrap().len(),
        0,
        "nothing half-imported"
    );

    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v2_f0_40k/model.pth"),
        "--name",
        "v2",
    ]);
    let blip = sb.path("blip.wav");
    write_sine_wav(&blip, 0.05, 440.0);
    let out = sb.cpu_run(&["--json", "convert", "--model", "v2", blip.to_str().unwrap()]);
    assert!(!out.status.success());
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = results[0]["error"].as_str().unwrap();
    assert!(
        error.contains("blip.wav") && error.contains("too short"),
        "{error}"
    );

    std::fs::remove_file(sb.path("models/hubert_base.pt")).unwrap();
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 440.0);
    let out = sb.cpu_run(&["--json", "convert", "--model", "v2", tone.to_str().unwrap()]);
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = results[0]["error"].as_str().unwrap();
    assert!(error.contains("hubert_base.pt"), "{error}");
}

fn count(sb: &Sandbox, table: &str) -> i64 {
    sb.db()
        .map(|db| {
            db.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        })
        .unwrap_or(0)
}

/// An input whose name leaves no room in a file name (255 bytes) for " (model).wav".
fn long_named_input(sb: &Sandbox) -> std::path::PathBuf {
    let input = sb.path(&format!("{}.wav", "n".repeat(250)));
    write_sine_wav(&input, 1.0, 220.0);
    input
}

#[test]
fn a_request_refused_for_its_options_or_output_folder_imports_and_records_nothing() {
    let sb = Sandbox::with_extractors(true);
    let model = fixture("synth_v2_f0_40k/model.pth");
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 440.0);
    let out = sb.cpu_run(&[
        "convert",
        "--model",
        &model,
        "--protect",
        "7",
        tone.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("protect must be between 0 and 0.5, not 7"),
        "{said}"
    );

    let input = long_named_input(&sb);
    let out_dir = sb.path("converted");
    let out = sb.cpu_run(&[
        "convert",
        "--model",
        &model,
        "--out",
        out_dir.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(out_dir.to_str().unwrap()) && said.contains("too long for the file system"),
        "{said}"
    );
    assert_eq!(
        sb.cpu_json(&["models", "list"]).as_array().unwrap().len(),
        0,
        "the model named by its file was not imported"
    );
    assert_eq!((count(&sb, "jobs"), count(&sb, "conversions")), (0, 0));
}

/// A conversion queued by another process (the app) whose copy into its output folder fails
/// when it runs: the job fails naming the file, and no conversion is recorded.
#[test]
fn a_copy_that_fails_when_the_job_runs_leaves_no_conversion() {
    let sb = Sandbox::with_extractors(true);
    let model = fixture("synth_v1_f0_40k/model.pth");
    sb.cpu_json(&["models", "import", &model, "--name", "v1"]);
    let input = long_named_input(&sb);
    let out_dir = sb.path("converted");
    let params = serde_json::json!({
        "input": { "file": input },
        "model_id": 1,
        "out_dir": out_dir,
    });
    let db = rusqlite::Connection::open(sb.data_dir().join("library.sqlite3")).unwrap();
    db.execute(
        "INSERT INTO jobs (kind, lane, state, params, max_retries, created_at)
         VALUES ('convert', 'gpu', 'queued', ?1, 3, '2026-01-01T00:00:00Z')",
        [params.to_string()],
    )
    .unwrap();
    let job_id = db.last_insert_rowid().to_string();
    drop(db);
    assert_eq!(sb.cpu_json(&["jobs", "run"])["ran"], 1);
    let job = sb.cpu_json(&["jobs", "show", &job_id]);
    assert_eq!(job["job"]["state"], "failed", "{job}");
    let error = job["job"]["error"].as_str().unwrap();
    assert!(
        error.contains(out_dir.to_str().unwrap()) && error.contains("File name too long"),
        "{error}"
    );
    assert_eq!(count(&sb, "conversions"), 0);
}

/// A job that runs again (here: its end could not be recorded, so it is retried) replaces the
/// conversion its earlier run recorded instead of adding another.
#[test]
fn a_conversion_job_that_runs_again_keeps_one_conversion() {
    let sb = Sandbox::with_extractors(true);
    let model = fixture("synth_v1_nono_32k/model.pth");
    sb.cpu_json(&["models", "import", &model, "--name", "plain"]);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 440.0);
    let first = sb.cpu_json(&["convert", "--model", "plain", tone.to_str().unwrap()]);
    let id = first[0]["result"]["conversion"]["id"].as_i64().unwrap();
    let job_id = first[0]["job_id"].as_i64().unwrap();
    let db = rusqlite::Connection::open(sb.data_dir().join("library.sqlite3")).unwrap();
    db.execute("UPDATE jobs SET state = 'failed' WHERE id = ?1", [job_id])
        .unwrap();
    drop(db);
    let retried = sb.cpu_json(&["jobs", "retry", &job_id.to_string()]);
    assert_eq!(retried["state"], "queued");
    assert_eq!(sb.cpu_json(&["jobs", "run"])["ran"], 1);
    let rows: Vec<(i64, i64)> = {
        let db = sb.db().unwrap();
        let mut stmt = db.prepare("SELECT id, job_id FROM conversions").unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(rows, vec![(id, job_id)]);
}

/// A conversion cancelled while it runs is reported as cancelled, not as an unknown error.
#[test]
fn a_cancelled_conversion_says_it_was_cancelled() {
    let sb = Sandbox::with_extractors(true);
    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_f0_40k/model.pth"),
        "--name",
        "pitched",
    ]);
    let long = sb.path("long.wav");
    write_sine_wav(&long, 60.0, 220.0);
    let child = sb
        .cpu_command()
        .args(["convert", "--model", "pitched", long.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let under_way = || {
        sb.db().and_then(|db| {
            db.query_row(
                "SELECT progress FROM jobs WHERE kind = 'convert' AND state = 'running'",
                [],
                |r| r.get::<_, f64>(0),
            )
            .ok()
        })
    };
    while under_way().is_none_or(|progress| progress < 0.02) {
        assert!(
            started.elapsed().as_secs() < 120,
            "the conversion never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let job_id: i64 = sb
        .db()
        .unwrap()
        .query_row("SELECT id FROM jobs WHERE kind = 'convert'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let cancel = sb.run(&["jobs", "cancel", &job_id.to_string()]);
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("cancelled  {}", long.display())) && !stdout.contains("unknown"),
        "{stdout}"
    );
    assert_eq!(count(&sb, "conversions"), 0);
}

#[test]
fn applio_voices_with_the_mrf_hifigan_and_refinegan_vocoders_convert() {
    let sb = Sandbox::with_extractors(true);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    for (fixture, name, vocoder, rate) in [
        ("mrf_hifigan_32k", "mrf", "MRF HiFi-GAN", 32_000),
        ("refinegan_24k", "refine", "RefineGAN", 24_000),
    ] {
        let model = applio_parity_fixtures().join(fixture).join("model.pth");
        sb.cpu_json(&["models", "import", model.to_str().unwrap(), "--name", name]);
        let info = sb.cpu_json(&["models", "info", name]);
        assert_eq!(info["vocoder"], vocoder, "{info}");
        assert_eq!(info["metadata"]["file"]["vocoder"], vocoder, "{info}");

        let converted = sb.cpu_json(&["convert", "--model", name, tone.to_str().unwrap()]);
        assert_eq!(converted[0]["ok"], true, "{}", converted[0]);
        let path = converted[0]["result"]["output_path"].as_str().unwrap();
        let audio = timbre_audio::decode_file(Path::new(path), &Default::default()).unwrap();
        assert_eq!(audio.sample_rate, rate);
        assert!(
            (audio.duration_secs() - 1.0).abs() < 0.05,
            "{}",
            audio.duration_secs()
        );
        let peak = audio.channels[0].iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(peak > 1e-3, "{vocoder}: silent output (peak {peak})");
    }
}
