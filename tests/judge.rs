//! The checkpoint judge through the real binary: a dataset prepared from 80 s of generated speech
//! keeps a held-out set; a tiny model trained on the rest has every checkpoint scored
//! (speaker similarity with Resemblyzer's real weights, of the held-out speech and of another
//! speaker's take converted, pitch, reconstruction, artefacts),
//! the recommended checkpoint outlives pruning and exports with `--best`; a training stopped
//! mid-run keeps its scores and the resumed run scores the checkpoint the stop saved, and stops
//! early exactly when its recommendation is a save old (`--patience 1`).

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use timbre_integration_tests::{Sandbox, TINY_GENERATOR_40K};

fn ok(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb
        .cpu_command()
        .args([&["--json"], args].concat())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "timbre {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn train_args<'a>(name: &'a str, epochs: &'a str, config: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "start",
        "--dataset",
        "Judged",
        "--name",
        name,
        "--epochs",
        epochs,
        "--save-every",
        "1",
        "--keep",
        "1",
        "--batch-size",
        "16",
        "--pretrained",
        "none",
        "--model-config",
        config,
    ]
}

fn scores(shown: &Value) -> &Vec<Value> {
    shown["judge"]["scores"].as_array().unwrap()
}

#[test]
fn every_checkpoint_is_scored_on_held_out_speech_and_the_best_is_kept() {
    let started = Instant::now();
    let sb = Sandbox::with_extractors(false);
    std::fs::copy(
        timbre_test_support::resemblyzer_weights(),
        sb.models_dir().join("speaker-encoder.pt"),
    )
    .unwrap();
    let mut config: Value = serde_json::from_str(TINY_GENERATOR_40K).unwrap();
    config["discriminator_divisor"] = 16.into();
    let config_path = sb.path("tiny40k.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let config = config_path.display().to_string();

    let file = sb.write_speech("speech.wav", 80.0);
    let dataset_id = sb.prepare_dataset("Judged", "40k", &file);
    let dataset = ok(&sb, &["dataset", "show", &dataset_id.to_string()]);
    let held_out = &dataset["dataset"]["report"]["held_out"];
    let held_seconds = held_out["seconds"].as_f64().unwrap();
    assert!(
        (5.0..=20.0).contains(&held_seconds) && held_out["pieces"].as_u64() > Some(0),
        "{held_out}"
    );
    assert_eq!(held_out["whole_sources"], false, "one input: its end");
    eprintln!("dataset prepared in {:.1?}", started.elapsed());

    let other = sb.path("other.wav");
    let other_voice = timbre_audio::signal::speech_like(44_100, 10.0, 11).audio;
    timbre_audio::write_wav(&other, &other_voice, timbre_audio::SampleFormat::Int16).unwrap();
    let other = other.display().to_string();
    let mut args = train_args("Judged tiny", "3", &config);
    args.extend(["--judge-source", &other]);
    let trained = ok(&sb, &args);
    let training = &trained["training"];
    assert_eq!(training["status"], "done", "{trained}");
    let id = training["id"].as_i64().unwrap().to_string();
    let shown = ok(&sb, &["train", "show", &id]);
    let scored = scores(&shown);
    let job = ok(&sb, &["jobs", "show", &training["job_id"].to_string()]);
    assert_eq!(
        scored.len(),
        3,
        "one score per save: {scored:?} {}",
        job["events"]
    );
    for score in scored {
        let similarity = score["similarity"].as_f64().unwrap();
        let ceiling = score["similarity_ceiling"].as_f64().unwrap();
        assert!(similarity > -1.0 && similarity < 1.0, "{score}");
        assert!(ceiling > 0.5 && ceiling <= 1.0, "{score}");
        let source = score["source_similarity"].as_f64().unwrap();
        assert!(source > -1.0 && source < 1.0, "{score}");
        assert!(
            score["pitch_rmse_cents"].as_f64().unwrap() >= 0.0,
            "{score}"
        );
        let voicing = score["voicing_agreement"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&voicing), "{score}");
        assert!(score["mel_distance"].as_f64().unwrap() > 0.0, "{score}");
        assert!(
            score["train_mel_distance"].as_f64().unwrap() > 0.0,
            "{score}"
        );
        assert!(
            score["artefacts_db"].as_f64().unwrap().is_finite(),
            "{score}"
        );
        let sample = score["sample"].as_str().unwrap();
        let audio = timbre_audio::decode_file(Path::new(sample), &Default::default()).unwrap();
        assert_eq!(audio.sample_rate, 40_000);
    }
    // The untrained network's first checkpoint does not sound like the speaker the way the
    // real held-out speech does.
    assert!(
        scored[0]["similarity"].as_f64() < scored[0]["similarity_ceiling"].as_f64(),
        "{scored:?}"
    );
    let best = shown["judge"]["recommendation"]["step"].as_i64().unwrap();
    let folder = Path::new(shown["folder"].as_str().unwrap());
    assert!(
        folder.join(format!("checkpoints/G_{best}.pth")).is_file(),
        "the recommended checkpoint outlives --keep 1"
    );
    let exported = sb.path("best.pth");
    let out = ok(
        &sb,
        &[
            "export",
            "--training",
            &id,
            "--best",
            "--out",
            &exported.display().to_string(),
        ],
    );
    assert!(
        out["checkpoint"]
            .as_str()
            .unwrap()
            .ends_with(&format!("G_{best}.pth")),
        "{out}"
    );
    eprintln!("trained and judged in {:.1?}", started.elapsed());

    stopped_and_resumed(&sb, &config);
    eprintln!("all done in {:.1?}", started.elapsed());
}

/// A training stopped after its first scored checkpoint: the scores stay, and the resumed run
/// scores the stop's checkpoint and every later save.
fn stopped_and_resumed(sb: &Sandbox, config: &str) {
    let mut args = train_args("Stopped", "3", config);
    args.extend(["--patience", "1"]);
    let mut child = sb
        .cpu_command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = 2;
    let waited = Instant::now();
    let scored_count = || -> i64 {
        sb.db()
            .and_then(|db| {
                db.query_row(
                    "SELECT count(*) FROM checkpoint_scores WHERE training_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .ok()
            })
            .unwrap_or(0)
    };
    while scored_count() < 1 {
        assert!(waited.elapsed() < Duration::from_secs(300), "never scored");
        assert!(child.try_wait().unwrap().is_none(), "it ended first");
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(sb, &["train", "stop", &id.to_string()]);
    assert!(!child.wait().unwrap().success());
    let before = ok(sb, &["train", "show", &id.to_string()]);
    let first = scores(&before)[0].clone();
    let stopped_at = before["training"]["global_step"].as_i64().unwrap();

    let resumed = sb
        .cpu_command()
        .args(["--json", "train", "resume", &id.to_string()])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{resumed:?}");
    let after = ok(sb, &["train", "show", &id.to_string()]);
    let scored = scores(&after);
    assert_eq!(
        scored[0], first,
        "a score from before the stop is kept as it was"
    );
    let steps: Vec<i64> = scored.iter().map(|s| s["step"].as_i64().unwrap()).collect();
    assert!(
        steps.contains(&stopped_at),
        "the stop's checkpoint: {steps:?}"
    );
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    let last = after["training"]["global_step"].as_i64().unwrap();
    assert_eq!(
        steps.last(),
        Some(&last),
        "the last save is scored: {steps:?}"
    );

    // With a patience of one save, the run stops as soon as the latest checkpoint is not the
    // best, and only then.
    let job = ok(
        sb,
        &["jobs", "show", &after["training"]["job_id"].to_string()],
    );
    let converged = job["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "converged");
    let best = &after["judge"]["recommendation"];
    match converged {
        Some(event) => {
            assert_eq!(event["data"]["step"], best["step"], "{event} {best}");
            assert!(best["saves_since"].as_u64() >= Some(1), "{best}");
        }
        None => {
            assert_eq!(best["saves_since"], 0, "{best}");
            assert_eq!(after["training"]["epoch"], 3, "{after}");
        }
    }
}
