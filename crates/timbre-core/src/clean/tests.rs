use super::*;
use crate::db::derived_takes;
use crate::db::jobs::{Job, JobState};
use crate::db::takes;
use crate::input::AudioInput;
use crate::jobs::{JobKind, JobSystem};
use crate::library::Library;
use crate::separation::IsolationMethod;
use serde_json::Value;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use timbre_audio::AudioBuffer;
use timbre_audio::SampleFormat;
use timbre_audio::signal::{backing_track, speech_like, white_noise};

fn setup() -> (tempfile::TempDir, Arc<JobSystem>) {
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(Library::open(&dir.path().join("data")).unwrap());
    let handlers: Vec<Arc<dyn crate::jobs::JobHandler>> = vec![
        Arc::new(EnhanceHandler),
        Arc::new(IsolateHandler::new(Default::default())),
    ];
    let system = JobSystem::new(library, handlers).unwrap();
    (dir, system)
}

/// Noisy speech-like audio as a 16 kHz WAV.
fn write_speech(dir: &Path, name: &str, seconds: f64) -> PathBuf {
    let speech = speech_like(16000, seconds, 3).audio;
    let noise = white_noise(16000, seconds, 4).channels.remove(0);
    let noisy: Vec<f32> = speech.channels[0]
        .iter()
        .zip(&noise)
        .map(|(s, n)| s + 0.02 * n)
        .collect();
    let path = dir.join(name);
    let audio = AudioBuffer::new(16000, vec![noisy]);
    timbre_audio::write_wav(&path, &audio, SampleFormat::Int16).unwrap();
    path
}

fn run(system: &JobSystem, kind: JobKind, params: Value) -> Job {
    let job = system.submit(kind, params).unwrap();
    system.run_job(job.id).unwrap()
}

/// Runs job `id`, cancelling it at its first progress report.
pub(super) fn run_cancelled_once_started(system: &Arc<JobSystem>, id: i64) -> Job {
    let updates = system.library().subscribe();
    let canceller = {
        let system = Arc::clone(system);
        std::thread::spawn(move || {
            for update in updates {
                if let crate::Notification::Job { job } = update
                    && job.progress > 0.0
                {
                    system.cancel(job.id).unwrap();
                    return;
                }
            }
        })
    };
    let job = system.run_job(id).unwrap();
    canceller.join().unwrap();
    job
}

pub(super) fn stored_objects(dir: &Path) -> usize {
    walk(&dir.join("data/store/objects"))
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                if e.path().is_dir() {
                    walk(&e.path())
                } else {
                    1
                }
            })
            .sum()
    })
}

#[test]
fn enhancing_a_file_saves_it_and_its_result_linked() {
    let (dir, system) = setup();
    let path = write_speech(dir.path(), "speech.wav", 3.0);
    let original = std::fs::read(&path).unwrap();
    let params = json!({ "input": { "file": path }, "out_dir": dir.path().join("out") });
    let job = run(&system, JobKind::Enhance, params.clone());
    assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
    let result = job.result.unwrap();
    let conn = system.library().conn();
    let source = takes::require(&conn, result["source_take_id"].as_i64().unwrap()).unwrap();
    assert_eq!(source.name, "speech");
    assert_eq!(
        std::fs::read(system.library().take_path(&source)).unwrap(),
        original
    );
    let enhanced_id = result["takes"][0]["take"]["id"].as_i64().unwrap();
    let enhanced = takes::require(&conn, enhanced_id).unwrap();
    assert_eq!(enhanced.name, "speech (enhanced)");
    assert!((enhanced.loudness_lufs.unwrap() + 20.0).abs() < 0.5);
    let link = derived_takes::get(&conn, enhanced_id).unwrap().unwrap();
    assert_eq!(
        (link.source_take_id, link.operation.as_str()),
        (Some(source.id), "enhance")
    );
    assert!(dir.path().join("out/speech (enhanced).wav").is_file());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        original,
        "the input is never touched"
    );
    drop(conn);
    // The same input again: the same takes, reported as duplicates.
    let again = run(&system, JobKind::Enhance, params).result.unwrap();
    assert_eq!(again["takes"][0]["take"]["id"], enhanced_id);
    assert_eq!(again["takes"][0]["duplicate"], true);
}

#[test]
fn rough_isolation_of_a_take_says_so_and_a_sample_is_short() {
    let (dir, system) = setup();
    let mix_path = dir.path().join("mix.wav");
    timbre_audio::write_wav(&mix_path, &backing_track(16000, 4.0), SampleFormat::Float32).unwrap();
    let params = json!({ "input": { "file": mix_path }, "method": "rough", "preview_secs": 1.5 });
    let result = run(&system, JobKind::Isolate, params).result.unwrap();
    assert_eq!(result["rough_preview"], true);
    assert_eq!(result["method"], "rough");
    let names: Vec<&str> = (0..2)
        .map(|i| result["takes"][i]["take"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mix (vocals, rough preview, 1.5 s sample)",
            "mix (instrumental, rough preview, 1.5 s sample)"
        ]
    );
    assert_eq!(result["takes"][0]["take"]["frames"], 24000);
    let source = result["source_take_id"].as_i64().unwrap();
    let whole = json!({ "input": { "take": source }, "method": "rough" });
    let result = run(&system, JobKind::Isolate, whole).result.unwrap();
    let links = derived_takes::from_source(&system.library().conn(), source).unwrap();
    assert_eq!(links.len(), 4);
    assert_eq!(result["takes"][1]["take"]["frames"], 64000);
}

#[test]
fn a_failed_or_cancelled_job_leaves_nothing() {
    let (dir, system) = setup();
    let corrupt = dir.path().join("corrupt.wav");
    std::fs::write(&corrupt, b"RIFF\x10\0\0\0WAVEjunkjunkjunk").unwrap();
    let job = run(
        &system,
        JobKind::Enhance,
        json!({ "input": { "file": corrupt } }),
    );
    assert_eq!(job.state, JobState::Failed);
    assert!(job.error.unwrap().contains("corrupt.wav"));
    let missing =
        json!({ "input": { "file": dir.path().join("mix.wav") }, "method": { "model": "nope" } });
    let job = run(&system, JobKind::Isolate, missing);
    assert!(job.error.unwrap().contains("no separation model \"nope\""));

    let long = write_speech(dir.path(), "long.wav", 20.0);
    let job = system
        .submit(JobKind::Enhance, json!({ "input": { "file": long } }))
        .unwrap();
    let job = run_cancelled_once_started(&system, job.id);
    assert_eq!(job.state, JobState::Cancelled);
    assert!(
        takes::list(&system.library().conn(), None)
            .unwrap()
            .is_empty()
    );
    assert_eq!(stored_objects(dir.path()), 0);
}

#[test]
fn separation_models_are_found_by_name() {
    let dir = tempfile::tempdir().unwrap();
    assert!(crate::models_folder::separation_models(dir.path()).is_empty());
    let folder = dir.path().join("separation");
    std::fs::create_dir(&folder).unwrap();
    for file in ["b.ckpt", "b.yaml", "a.ckpt", "a.yaml", "lonely.ckpt"] {
        std::fs::write(folder.join(file), "x").unwrap();
    }
    let names: Vec<String> = crate::models_folder::separation_models(dir.path())
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn a_model_is_for_the_task_its_stems_say_and_only_vocals_models_isolate() {
    use crate::separation::{IsolationMethod, choose_model, choose_second_pass};
    use timbre_nn::separation::VoiceTask;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("separation");
    std::fs::create_dir(&folder).unwrap();
    let fixture = timbre_test_support::separation_fixtures().join("bs_roformer_tiny");
    let config = std::fs::read_to_string(fixture.join("config.yaml")).unwrap();
    let stems = "  - vocals\n  - other\n  target_instrument: vocals\n";
    assert!(config.contains(stems), "the fixture's stems changed");
    for (name, replaced) in [
        (
            "a_dereverb",
            "  - noreverb\n  - reverb\n  target_instrument: noreverb\n",
        ),
        (
            "b_karaoke",
            "  - karaoke\n  - other\n  target_instrument: karaoke\n",
        ),
        ("c_vocals", stems),
    ] {
        std::fs::copy(
            fixture.join("model.ckpt"),
            folder.join(format!("{name}.ckpt")),
        )
        .unwrap();
        std::fs::write(
            folder.join(format!("{name}.yaml")),
            config.replace(stems, replaced),
        )
        .unwrap();
    }
    let tasks: Vec<(String, Option<VoiceTask>, Vec<String>)> =
        crate::models_folder::separation_models(dir.path())
            .into_iter()
            .map(|m| (m.name, m.task, m.stems))
            .collect();
    assert_eq!(
        tasks,
        [
            (
                "a_dereverb".into(),
                Some(VoiceTask::DeReverb),
                vec!["noreverb".into()]
            ),
            (
                "b_karaoke".into(),
                Some(VoiceTask::LeadVocal),
                vec!["karaoke".into()]
            ),
            (
                "c_vocals".into(),
                Some(VoiceTask::Vocals),
                vec!["vocals".into()]
            ),
        ]
    );
    let chosen = choose_model(&IsolationMethod::Auto, dir.path())
        .unwrap()
        .unwrap();
    assert_eq!(
        chosen.name, "c_vocals",
        "the first vocals model, not the first model"
    );
    let err = choose_model(&IsolationMethod::Model("a_dereverb".into()), dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a_dereverb.yaml") && err.contains("outputs noreverb, not vocals"),
        "{err}"
    );
    assert_eq!(
        choose_second_pass("a_dereverb", dir.path()).unwrap().name,
        "a_dereverb"
    );
    std::fs::write(
        folder.join("c_vocals.yaml"),
        config.replace(
            stems,
            "  - instrumental\n  - other\n  target_instrument: instrumental\n",
        ),
    )
    .unwrap();
    assert!(
        choose_model(&IsolationMethod::Auto, dir.path())
            .unwrap()
            .is_none()
    );
    let err = choose_second_pass("c_vocals", dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("outputs instrumental, not a voice"), "{err}");
}

#[test]
fn the_loudest_stretch_is_found_and_excerpts_stay_inside() {
    let rate = 1000;
    let mut samples = vec![0.01f32; 30 * rate];
    for s in &mut samples[17 * rate..22 * rate] {
        *s = 0.5;
    }
    let audio = AudioBuffer::new(rate as u32, vec![samples]);
    let start = preview::loudest_start(&audio, 5 * rate);
    assert_eq!(start, 17 * rate);
    assert_eq!(preview::loudest_start(&audio, 40 * rate), 0);
    let part = preview::excerpt(&audio, 28 * rate, 5 * rate);
    assert_eq!(part.frames(), 2 * rate);
    assert_eq!(preview::excerpt(&audio, 99 * rate, 10).frames(), 0);
}

#[test]
fn a_preview_cleans_an_excerpt_and_stores_nothing() {
    let (dir, system) = setup();
    let library = system.library();
    let path = write_speech(dir.path(), "long.wav", 14.0);
    let models = crate::model_cache::ModelCache::default();
    let natural = timbre_audio::enhance::Preset::Natural.options();
    let request = PreviewRequest {
        input: AudioInput::File(path.clone()),
        start_secs: Some(2.0),
        secs: 10.0,
        isolation: None,
        enhance: Some(natural.clone()),
    };
    let done = preview(library, &models, &request).unwrap();
    assert_eq!(done.info.start_secs, 2.0);
    assert_eq!(done.original.frames(), 160_000);
    assert_eq!(done.cleaned.frames(), 160_000, "natural keeps the pauses");
    assert!(!done.info.rough_preview);
    // A start past the end is moved back so the excerpt stays 10 s long.
    let late = PreviewRequest {
        start_secs: Some(13.0),
        ..request.clone()
    };
    assert_eq!(
        preview(library, &models, &late).unwrap().info.start_secs,
        4.0
    );
    // Rough isolation, then enhancement; no start: the loudest stretch.
    let both = PreviewRequest {
        start_secs: None,
        isolation: Some(IsolationMethod::Rough),
        ..request.clone()
    };
    let done = preview(library, &models, &both).unwrap();
    assert!(done.info.rough_preview);
    assert!((0.0..=4.0).contains(&done.info.start_secs));
    assert_eq!(done.cleaned.frames(), 160_000);
    let neither = PreviewRequest {
        enhance: None,
        ..request
    };
    assert!(preview(library, &models, &neither).is_err());
    assert!(takes::list(&library.conn(), None).unwrap().is_empty());
    assert_eq!(stored_objects(dir.path()), 0);
}

#[test]
fn isolation_then_enhancement_enhances_the_vocals() {
    let (dir, system) = setup();
    let mix_path = dir.path().join("mix.wav");
    timbre_audio::write_wav(&mix_path, &backing_track(16000, 3.0), SampleFormat::Float32).unwrap();
    let natural = timbre_audio::enhance::Preset::Natural.options();
    let params = json!({ "input": { "file": mix_path }, "method": "rough", "enhance": natural });
    let job = run(&system, JobKind::Isolate, params);
    assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
    let result = job.result.unwrap();
    assert_eq!(
        result["takes"][0]["take"]["name"],
        "mix (vocals, enhanced, rough preview)"
    );
    assert_eq!(
        result["takes"][1]["take"]["name"],
        "mix (instrumental, rough preview)"
    );
    assert!(result["enhance_report"]["loudness_lufs"].is_number());
    let vocals = result["takes"][0]["take"]["id"].as_i64().unwrap();
    let link = derived_takes::get(&system.library().conn(), vocals)
        .unwrap()
        .unwrap();
    assert_eq!(link.params["enhance"]["loudness_lufs"], -23.0);
}
