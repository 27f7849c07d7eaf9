//! `timbre train` through the real binary: a tiny generator (the hidden `--model-config`)
//! trained on a dataset prepared from generated speech with the fixture HuBERT, on the CPU:
//! checkpoints, losses, previews, the model and index in the library, conversion with it;
//! a stop and a resume; the refusals (a pretrained file of another rate, too little audio); a
//! `kill -9` after a checkpoint, recovered by the job system and resumed from it, what a save
//! cut off would leave cleared.
//! One test, since each step builds on the one before; the discriminator is narrowed too,
//! batches are large and epochs few.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};
use timbre_integration_tests::{Sandbox, TINY_GENERATOR_40K};

/// `TINY_GENERATOR_40K` at 32 kHz.
const TINY_32K: &str = r#"{"spec_channels": 513, "segment_size": 3, "inter_channels": 8,
    "hidden_channels": 8, "filter_channels": 16, "n_heads": 2, "n_layers": 1, "kernel_size": 3,
    "p_dropout": 0, "resblock": "1", "resblock_kernel_sizes": [3],
    "resblock_dilation_sizes": [[1, 3, 5]], "upsample_rates": [10, 4, 2, 2, 2],
    "upsample_initial_channel": 32, "upsample_kernel_sizes": [16, 16, 4, 4, 4],
    "spk_embed_dim": 1, "gin_channels": 8, "sr": 32000}"#;

/// A sandbox whose models folder holds the fixture HuBERT, and the tiny configurations.
pub(crate) fn sandbox() -> Sandbox {
    let sb = Sandbox::with_extractors(false);
    std::fs::write(
        sb.path("tiny40k.json"),
        narrow_discriminator(TINY_GENERATOR_40K),
    )
    .unwrap();
    std::fs::write(sb.path("tiny32k.json"), narrow_discriminator(TINY_32K)).unwrap();
    sb
}

/// `generator` with a discriminator 16 times narrower than RVC's: its steps and its share of
/// each checkpoint pair (630 MiB at RVC's width) are what cost time here, not the data.
fn narrow_discriminator(generator: &str) -> String {
    let mut config: Value = serde_json::from_str(generator).unwrap();
    config["discriminator_divisor"] = 16.into();
    config.to_string()
}

pub(crate) fn command(sb: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = sb.cpu_command();
    cmd.args(args);
    cmd
}

fn timbre(sb: &Sandbox, args: &[&str]) -> Output {
    command(sb, args).output().expect("running timbre")
}

/// Runs with `--json`: whether it succeeded, stdout as JSON, stderr as text.
pub(crate) fn json(sb: &Sandbox, args: &[&str]) -> (bool, Value, String) {
    let out = timbre(sb, &[&["--json"], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), value, stderr)
}

pub(crate) fn ok(sb: &Sandbox, args: &[&str]) -> Value {
    let (ok, value, stderr) = json(sb, args);
    assert!(ok, "timbre {args:?} failed: {value} {stderr}");
    value
}

pub(crate) fn training_row(sb: &Sandbox, id: i64) -> Value {
    ok(sb, &["train", "show", &id.to_string()])
}

/// Steps of the `G_<step>.pth` files in the training's checkpoints folder (none before it
/// exists), ascending.
pub(crate) fn generator_steps(folder: &Path) -> Vec<i64> {
    let mut steps: Vec<i64> = std::fs::read_dir(folder.join("checkpoints"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    name.strip_prefix("G_")?.strip_suffix(".pth")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    steps.sort_unstable();
    steps
}

/// The checkpoint steps, each a whole G and D pair.
pub(crate) fn checkpoint_steps(folder: &Path) -> Vec<i64> {
    let steps = generator_steps(folder);
    for step in &steps {
        assert!(folder.join(format!("checkpoints/D_{step}.pth")).is_file());
    }
    steps
}

/// `timbre train start` of the tiny generator on "Alto set" in the background, from scratch.
fn spawn_training(sb: &Sandbox, name: &str, epochs: &str, save_every: &str, config: &str) -> Child {
    command(
        sb,
        &[
            "train",
            "start",
            "--dataset",
            "Alto set",
            "--name",
            name,
            "--epochs",
            epochs,
            "--save-every",
            save_every,
            "--batch-size",
            "16",
            "--pretrained",
            "none",
            "--model-config",
            config,
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap()
}

#[test]
fn a_tiny_model_trains_stops_resumes_and_converts() {
    let started = Instant::now();
    let sb = sandbox();
    let file = sb.write_speech("speech.wav", 64.0);
    let dataset_id = sb.prepare_dataset("Alto set", "40k", &file);
    eprintln!("dataset prepared in {:.1?}", started.elapsed());
    let config = sb.path("tiny40k.json").display().to_string();

    let trained = ok(
        &sb,
        &[
            "train",
            "start",
            "--dataset",
            "Alto set",
            "--name",
            "Alto tiny",
            "--epochs",
            "2",
            "--save-every",
            "2",
            "--preview-every",
            "1",
            "--batch-size",
            "16",
            "--model-config",
            &config,
        ],
    );
    eprintln!("trained in {:.1?}", started.elapsed());
    let training = &trained["training"];
    let id = training["id"].as_i64().unwrap();
    assert_eq!(training["status"], "done", "{trained}");
    assert_eq!(training["dataset_id"].as_i64(), Some(dataset_id));
    assert_eq!(
        (training["epoch"].as_i64(), training["batch_size"].as_i64()),
        (Some(2), Some(16))
    );
    assert_eq!(training["device"], "cpu");
    let step = training["global_step"].as_i64().unwrap();
    assert!(step >= 4, "{training}");
    let profile = training["profile"].as_array().unwrap();
    assert_eq!(profile.len(), 2);
    assert!(
        profile[0]["step_secs"].as_f64().unwrap() > 0.0,
        "{profile:?}"
    );

    let shown = training_row(&sb, id);
    let folder = PathBuf::from(shown["folder"].as_str().unwrap());
    let steps = checkpoint_steps(&folder);
    assert_eq!(steps, [step], "one checkpoint, at the end");
    let metrics = shown["metrics"].as_array().unwrap();
    assert!(metrics.len() >= 2, "{metrics:?}");
    for m in metrics {
        for key in ["g_total", "d_total", "mel", "kl", "fm", "adversarial", "lr"] {
            assert!(m[key].as_f64().unwrap().is_finite(), "{m}");
        }
    }
    let previews = shown["previews"].as_array().unwrap();
    assert_eq!(previews.len(), 2);
    let preview = timbre_audio::decode_file(
        Path::new(previews[1]["path"].as_str().unwrap()),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(preview.sample_rate, 40_000);
    assert!(preview.duration_secs() > 0.5);
    assert!(preview.channels[0].iter().all(|s| s.is_finite()));

    // The model and its index are in the library, for the dataset's voice.
    let model = &trained["job"]["result"]["model"];
    let model_id = model["id"].as_i64().unwrap();
    assert_eq!(training["model_id"].as_i64(), Some(model_id));
    assert_eq!(model["name"], "Alto tiny");
    assert!(model["index_sha256"].is_string(), "{model}");
    assert!(model["voice_id"].is_i64(), "{model}");
    let input = sb.write_speech("input.wav", 3.0);
    let out_dir = sb.path("converted");
    let converted = ok(
        &sb,
        &[
            "convert",
            "--model",
            &model_id.to_string(),
            "--f0-method",
            "pm",
            "--out",
            &out_dir.display().to_string(),
            &input,
        ],
    );
    assert_eq!(converted[0]["ok"], true, "{converted}");

    // A checkpoint exported to a file is a model that converts too.
    let exported = sb.path("exported.pth");
    ok(
        &sb,
        &[
            "export",
            "--training",
            &id.to_string(),
            "--step",
            &step.to_string(),
            "--out",
            &exported.display().to_string(),
        ],
    );
    let converted = ok(
        &sb,
        &[
            "convert",
            "--model",
            &exported.display().to_string(),
            "--f0-method",
            "pm",
            &input,
        ],
    );
    assert_eq!(converted[0]["ok"], true, "{converted}");
    eprintln!("converted in {:.1?}", started.elapsed());

    stop_and_resume(&sb, &config);
    eprintln!("resumed in {:.1?}", started.elapsed());

    refusals(&sb, &folder.join(format!("checkpoints/G_{step}.pth")));

    killed_and_recovered(&sb, &config);
    eprintln!("all done in {:.1?}", started.elapsed());
}

/// A 20-second dataset at 32 kHz: a pretrained generator of another rate is refused with the
/// trainer's message, a community base for the dataset's version, then the dataset for its size,
/// saying how much audio it holds.
fn refusals(sb: &Sandbox, generator_40k: &Path) {
    let file = sb.write_speech("short.wav", 20.0);
    let id = sb.prepare_dataset("Short", "32k", &file).to_string();
    let discriminator = generator_40k.with_file_name(
        generator_40k
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace("G_", "D_"),
    );
    let pretrained = format!("{},{}", generator_40k.display(), discriminator.display());
    let config = sb.path("tiny32k.json").display().to_string();
    let start = [
        "train",
        "start",
        "--dataset",
        &id,
        "--model-config",
        &config,
    ];
    let (ok_, _, stderr) = json(sb, &[&start[..], &["--pretrained", &pretrained]].concat());
    assert!(!ok_);
    assert!(
        stderr.contains(&generator_40k.display().to_string())
            && stderr.contains(
                "this is a v1 40k generator with pitch; the model being trained is a v1 32k \
                 generator with pitch"
            ),
        "{stderr}"
    );
    // A community base is a v2 model with pitch; this dataset makes a v1 one.
    let (ok_, _, stderr) = json(sb, &[&start[..], &["--base", "titan"]].concat());
    assert!(!ok_);
    assert!(
        stderr.contains(
            "the community bases are v2 models with pitch; this dataset makes a v1 model"
        ),
        "{stderr}"
    );
    let (ok_, _, stderr) = json(sb, &start);
    assert!(!ok_);
    assert!(
        stderr.contains("holds 0:") && stderr.contains("of audio; training needs at least 1:00"),
        "{stderr}"
    );
    assert_eq!(
        ok(sb, &["train", "list"]).as_array().unwrap().len(),
        2,
        "refused trainings are not created"
    );
}

/// A second training stopped from another process mid-run saves a checkpoint of where it is,
/// and resumes from that epoch and step.
fn stop_and_resume(sb: &Sandbox, config: &str) {
    let mut child = spawn_training(sb, "Stopped", "1", "100", config);
    let id = 2;
    let waited = Instant::now();
    loop {
        // The job's message says "epoch E/N · step S · …".
        let step: i64 = sb
            .db()
            .and_then(|db| {
                db.query_row(
                    "SELECT j.message FROM trainings t JOIN jobs j ON j.id = t.job_id
                     WHERE t.id = ?1",
                    [id],
                    |r| r.get::<_, String>(0),
                )
                .ok()
            })
            .and_then(|message| {
                let (_, rest) = message.split_once("step ")?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .unwrap_or(0);
        if step >= 1 {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "the training never got going"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "it ended before the stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(sb, &["train", "stop", &id.to_string()]);
    let status = child.wait().unwrap();
    assert!(!status.success(), "a stopped training is not a success");

    let stopped = training_row(sb, id);
    let row = &stopped["training"];
    assert_eq!(row["status"], "stopped", "{row}");
    let (epoch, step) = (
        row["epoch"].as_i64().unwrap(),
        row["global_step"].as_i64().unwrap(),
    );
    assert!(step >= 1 && epoch == 0, "{row}");
    let folder = PathBuf::from(stopped["folder"].as_str().unwrap());
    assert_eq!(
        checkpoint_steps(&folder),
        [step],
        "the stop saved one checkpoint"
    );

    let resumed = ok(sb, &["train", "resume", &id.to_string()]);
    let row = &resumed["training"];
    assert_eq!(
        (row["status"].as_str(), row["epoch"].as_i64()),
        (Some("done"), Some(1))
    );
    assert!(row["global_step"].as_i64().unwrap() > step);
    let job = ok(sb, &["jobs", "show", &row["job_id"].to_string()]);
    let events = job["events"].as_array().unwrap();
    let resumed_at = events.iter().find(|e| e["kind"] == "resumed").unwrap();
    assert_eq!(
        (
            resumed_at["data"]["epoch"].as_i64(),
            resumed_at["data"]["step"].as_i64()
        ),
        (Some(epoch), Some(step))
    );
    let steps: Vec<i64> = training_row(sb, id)["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["step"].as_i64().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
}

/// `kill -9` of a training after its first epoch's checkpoint: the next start of the job system
/// queues the job again (training is resumable), and running it resumes from that checkpoint,
/// at its epoch and step, and finishes.
fn killed_and_recovered(sb: &Sandbox, config: &str) {
    let mut child = spawn_training(sb, "Killed", "2", "1", config);
    let id = 3;
    let folder = sb.data_dir().join(format!("trainings/{id}"));
    let waited = Instant::now();
    // A G and its D are each written whole (to a temporary name, then renamed); a pair is a
    // checkpoint once both are there.
    let pairs = |folder: &Path| -> Vec<i64> {
        generator_steps(folder)
            .into_iter()
            .filter(|step| folder.join(format!("checkpoints/D_{step}.pth")).is_file())
            .collect()
    };
    while pairs(&folder).is_empty() {
        assert!(
            waited.elapsed() < Duration::from_secs(180),
            "no checkpoint came"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "it ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let saved = *pairs(&folder).last().unwrap();
    // What a kill during a later save leaves: its `G_` written, its `D_` half written under the
    // temporary name (from before the next process starts), neither ever resumed from.
    let checkpoints = folder.join("checkpoints");
    let unpaired = checkpoints.join(format!("G_{}.pth", saved + 1000));
    std::fs::copy(checkpoints.join(format!("G_{saved}.pth")), &unpaired).unwrap();
    let cut_off = checkpoints.join(format!(".D_{}.pth.4242.0.tmp", saved + 1000));
    std::fs::File::create(&cut_off)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();

    let jobs = ok(sb, &["jobs", "list"]);
    assert!(
        !cut_off.exists(),
        "the next start removes a temporary file no process writes"
    );
    let job = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["kind"] == "train" && j["state"] == "queued")
        .expect("the killed training's job is queued again");
    let ran = ok(sb, &["jobs", "run"]);
    assert_eq!(ran["ran"], 1, "{ran}");
    let row = &training_row(sb, id)["training"];
    assert_eq!(
        (row["status"].as_str(), row["epoch"].as_i64()),
        (Some("done"), Some(2)),
        "{row}"
    );
    let shown = ok(sb, &["jobs", "show", &job["id"].to_string()]);
    let events = shown["events"].as_array().unwrap();
    let resumed_at = events.iter().find(|e| e["kind"] == "resumed").unwrap();
    assert_eq!(
        resumed_at["data"]["epoch"].as_i64(),
        Some(1),
        "{resumed_at}"
    );
    assert_eq!(
        resumed_at["data"]["step"].as_i64(),
        Some(saved),
        "{resumed_at}"
    );
    assert!(
        !unpaired.exists(),
        "the resumed run removed the half of a pair"
    );
    assert!(!checkpoint_steps(&folder).is_empty(), "whole pairs only");
}

/// A dataset prepared with Applio's `spin` embedder (the fixture HuBERT in its folder) holds that
/// embedder's features (Applio's v1: the last layer's projection, not RVC's layer 9), and the
/// voice trained on it is exported naming it (`embedder_model`), shown by `models info` and
/// converted with it; an unknown embedder and a missing folder are refused by name.
#[test]
fn a_voice_trained_on_another_embedder_names_it_and_converts_with_its_features() {
    let sb = sandbox();
    let file = sb.write_speech("speech.wav", 64.0);
    let prepare = |name: &str, embedder: &str| {
        json(
            &sb,
            &[
                "dataset",
                "prepare",
                "--name",
                name,
                "--voice",
                "Alto",
                "--rate",
                "40k",
                "--version",
                "v1",
                "--f0-method",
                "pm",
                "--embedder",
                embedder,
                &file,
            ],
        )
    };
    let (ok_, _, stderr) = prepare("Whisper set", "whisper");
    assert!(
        !ok_ && stderr.contains("unknown embedder") && stderr.contains("whisper"),
        "{stderr}"
    );
    let (ok_, out, stderr) = prepare("Spin set", "spin");
    let said = format!("{out} {stderr}");
    assert!(
        !ok_ && said.contains("spin") && said.contains("timbre assets download embedder-spin"),
        "{said}"
    );
    let spin = sb.models_dir().join("embedders/spin");
    std::fs::create_dir_all(&spin).unwrap();
    for name in ["config.json", "model.safetensors"] {
        let from = timbre_test_support::rvc_parity_fixtures()
            .join("hubert_tiny/hf")
            .join(name);
        std::fs::copy(from, spin.join(name)).unwrap();
    }
    let features_of = |prepared: &Value| {
        let folder = PathBuf::from(prepared["result"]["folder"].as_str().unwrap());
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(folder.join("dataset.json")).unwrap()).unwrap();
        let first = folder.join(manifest["pieces"][0]["features"].as_str().unwrap());
        (manifest, std::fs::read(first).unwrap())
    };
    let (ok_, spun, stderr) = prepare("Spin set", "spin");
    assert!(ok_, "{stderr}");
    let (manifest, spin_features) = features_of(&spun);
    assert_eq!(manifest["embedder"], "spin", "{manifest}");
    assert_eq!(manifest["feature_dim"], 256, "{manifest}");
    let (ok_, plain, stderr) = prepare("Plain set", "contentvec");
    assert!(ok_, "{stderr}");
    let (manifest, plain_features) = features_of(&plain);
    assert_eq!(manifest["embedder"], "contentvec", "{manifest}");
    assert_ne!(
        spin_features, plain_features,
        "another embedder, other features"
    );

    let config = sb.path("tiny40k.json").display().to_string();
    let trained = ok(
        &sb,
        &[
            "train",
            "start",
            "--dataset",
            "Spin set",
            "--name",
            "Spin tiny",
            "--epochs",
            "1",
            "--save-every",
            "1",
            "--batch-size",
            "16",
            "--model-config",
            &config,
        ],
    );
    let model = &trained["job"]["result"]["model"];
    let info = ok(&sb, &["models", "info", model["name"].as_str().unwrap()]);
    assert_eq!(info["embedder"], "spin", "{info}");
    let input = sb.write_speech("input.wav", 2.0);
    let model_id = model["id"].as_i64().unwrap().to_string();
    let convert = || {
        json(
            &sb,
            &["convert", "--model", &model_id, "--f0-method", "pm", &input],
        )
    };
    let (ok_, converted, stderr) = convert();
    assert!(ok_ && converted[0]["ok"] == true, "{converted} {stderr}");
    std::fs::remove_dir_all(&spin).unwrap();
    let (ok_, refused, stderr) = convert();
    let said = format!("{refused} {stderr}");
    assert!(!ok_ && said.contains("spin embedder"), "{said}");
}
