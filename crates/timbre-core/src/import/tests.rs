use super::*;
use crate::db::jobs::JobState;
use crate::db::takes;
use crate::jobs::{JobKind, JobSystem};
use crate::take_files::{WAVEFORM_BINS, save_recording};
use serde_json::json;
use std::sync::Arc;
use timbre_audio::signal::sine;
use timbre_audio::{AudioBuffer, SampleFormat};

fn write_sine(dir: &Path, name: &str, seconds: f64) -> PathBuf {
    let path = dir.join(name);
    timbre_audio::write_wav(
        &path,
        &sine(16000, 440.0, seconds, 0.5),
        SampleFormat::Int16,
    )
    .unwrap();
    path
}

fn setup() -> (tempfile::TempDir, Arc<JobSystem>) {
    let dir = tempfile::tempdir().unwrap();
    let library = Arc::new(Library::open(&dir.path().join("data")).unwrap());
    let system = JobSystem::new(library, vec![Arc::new(ImportHandler)]).unwrap();
    (dir, system)
}

fn import(system: &JobSystem, paths: Vec<PathBuf>) -> crate::db::jobs::Job {
    let job = system
        .submit(JobKind::Import, json!({ "paths": paths }))
        .unwrap();
    system.run_job(job.id).unwrap()
}

#[test]
fn a_wav_becomes_a_take_with_its_metadata_and_stored_content() {
    let (dir, system) = setup();
    let path = write_sine(dir.path(), "hello.wav", 1.5);
    let job = import(&system, vec![path.clone()]);
    assert_eq!(job.state, JobState::Succeeded);
    assert_eq!(job.result.unwrap()["imported"], 1);
    let takes = takes::list(&system.library().conn(), None).unwrap();
    let take = &takes[0];
    assert_eq!(
        (
            take.name.as_str(),
            take.sample_rate,
            take.channels,
            take.frames
        ),
        ("hello", 16000, 1, 24000)
    );
    assert!(
        (take.peak_dbfs + 6.02).abs() < 0.1,
        "peak {}",
        take.peak_dbfs
    );
    assert_eq!(take.waveform.len(), WAVEFORM_BINS);
    assert_eq!(
        std::fs::read(system.library().take_path(take)).unwrap(),
        std::fs::read(&path).unwrap()
    );
    assert_eq!(
        take.sha256,
        crate::store::sha256_hex(&std::fs::read(&path).unwrap())
    );
}

#[test]
fn importing_the_same_file_twice_yields_one_take() {
    let (dir, system) = setup();
    let path = write_sine(dir.path(), "a.wav", 0.5);
    let copy = dir.path().join("copy.wav");
    std::fs::copy(&path, &copy).unwrap();
    import(&system, vec![path]);
    let job = import(&system, vec![copy]);
    assert_eq!(job.result.unwrap()["duplicates"], 1);
    assert_eq!(
        takes::list(&system.library().conn(), None).unwrap().len(),
        1
    );
}

#[test]
fn bad_files_are_reported_one_by_one_and_good_ones_still_land() {
    let (dir, system) = setup();
    let good = write_sine(dir.path(), "good.wav", 0.5);
    let empty = dir.path().join("empty.wav");
    std::fs::write(&empty, b"").unwrap();
    let junk = dir.path().join("junk.mp3");
    std::fs::write(&junk, b"this is not audio at all, just some text").unwrap();
    let missing = dir.path().join("missing.flac");
    let folder = dir.path().join("folder.wav");
    std::fs::create_dir(&folder).unwrap();
    let job = import(
        &system,
        vec![
            empty.clone(),
            good,
            junk.clone(),
            missing.clone(),
            folder.clone(),
        ],
    );
    assert_eq!(job.state, JobState::Succeeded);
    assert_eq!(
        job.result.unwrap(),
        json!({"total": 5, "imported": 1, "duplicates": 0, "failed": 4})
    );
    let events = job_events::list(&system.library().conn(), job.id, Some("file")).unwrap();
    for bad in [&empty, &junk, &missing, &folder] {
        let event = events
            .iter()
            .find(|e| e.data["path"] == json!(bad))
            .expect("an event per file");
        assert_eq!(event.data["ok"], false);
        let error = event.data["error"].as_str().unwrap();
        assert!(error.contains(&bad.display().to_string()), "{error}");
    }
    assert_eq!(
        takes::list(&system.library().conn(), None).unwrap().len(),
        1
    );
    let objects = walk_files(&system.library().data_dir().join("store/objects"));
    assert_eq!(objects, 1, "nothing stored for the bad files");
}

fn walk_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { walk_files(&p) } else { 1 })
        .sum()
}

#[test]
fn a_job_whose_every_file_fails_fails_and_names_the_problem() {
    let (dir, system) = setup();
    let job = import(&system, vec![dir.path().join("nope.wav")]);
    assert_eq!(job.state, JobState::Failed);
    assert!(job.error.unwrap().contains("nope.wav"));
}

#[test]
fn an_interrupted_import_resumes_without_redoing_reported_files() {
    let (dir, system) = setup();
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| write_sine(dir.path(), &format!("{i}.wav"), 0.2 + f64::from(i) * 0.1))
        .collect();
    let library = Arc::clone(system.library());
    let job = system
        .submit(JobKind::Import, json!({ "paths": paths }))
        .unwrap();
    {
        let conn = library.conn();
        crate::db::jobs::claim(&conn, crate::db::jobs::Claim::Id(job.id), "dead-process").unwrap();
    }
    import_file(&library, &paths[0], None, 60.0, |conn, outcome| {
        job_events::insert(
            conn,
            job.id,
            Level::Info,
            "file",
            &serde_json::to_value(outcome)?,
        )
    })
    .unwrap();
    drop(system);
    let system = JobSystem::new(library, vec![Arc::new(ImportHandler)]).unwrap();
    let recovered = crate::db::jobs::require(&system.library().conn(), job.id).unwrap();
    assert_eq!(recovered.state, JobState::Queued);
    let done = system.run_job(job.id).unwrap();
    assert_eq!(
        done.result.unwrap(),
        json!({"total": 3, "imported": 3, "duplicates": 0, "failed": 0})
    );
    assert_eq!(
        job_events::list(&system.library().conn(), job.id, Some("file"))
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_recording_is_saved_as_a_float_wav_take() {
    let (_dir, system) = setup();
    let audio = sine(48000, 440.0, 1.0, 0.5);
    let take = save_recording(system.library(), &audio, Some(" Mic test "), None).unwrap();
    assert_eq!(
        (take.name.as_str(), take.origin, take.frames),
        ("Mic test", Origin::Recorded, 48000)
    );
    let back = timbre_audio::decode_file(
        &system.library().take_path(&take),
        &DecodeOptions::default(),
    )
    .unwrap();
    assert_eq!(back.channels[0], audio.channels[0]);
    let empty = AudioBuffer::new(48000, vec![vec![]]);
    assert!(save_recording(system.library(), &empty, None, None).is_err());
}
