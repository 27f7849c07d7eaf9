use std::cell::Cell;
use std::path::{Path, PathBuf};

use super::*;
use crate::dataset_layout::{folder, manifest};
use crate::settings::Settings;
use timbre_test_support::rvc_parity_fixtures;

/// A library whose models folder holds the fixture HuBERT, and `seconds` of speech-like audio.
fn setup(seconds: f64) -> (tempfile::TempDir, Library, PathBuf) {
    let hubert = rvc_parity_fixtures().join("hubert_tiny/hubert_fairseq.pt");
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(&hubert, models.join("hubert_base.pt")).unwrap();
    let library = Library::open(&dir.path().join("data")).unwrap();
    let models_dir = serde_json::to_string(models.to_str().unwrap()).unwrap();
    Settings::set(&library.conn(), "models_dir", &models_dir).unwrap();
    let audio = dir.path().join("speech.wav");
    let speech = timbre_audio::signal::speech_like(40_000, seconds, 7);
    timbre_audio::write_wav(&audio, &speech.audio, timbre_audio::SampleFormat::Float32).unwrap();
    (dir, library, audio)
}

fn params(audio: &Path, version: ModelVersion) -> PrepareRequest {
    PrepareRequest {
        name: "set".into(),
        voice_id: None,
        inputs: vec![AudioInput::File(audio.to_path_buf())],
        sample_rate: 40_000,
        version,
        f0_method: Some(F0Method::Pm),
        embedder: Default::default(),
        isolate: None,
        enhance: None,
    }
}

fn quiet(_: f64, _: String) -> Result<()> {
    Ok(())
}

/// Cancels at the `n`th feature computation.
fn cancel_at_feature(n: usize) -> impl Fn(f64, String) -> Result<()> {
    let seen = Cell::new(0);
    move |_, message| {
        if message.starts_with("features ") {
            seen.set(seen.get() + 1);
            if seen.get() == n {
                return Err(crate::jobs::Cancelled.into());
            }
        }
        Ok(())
    }
}

#[test]
fn cache_keys_change_with_content_weights_and_parameters() {
    let files = ExtractorFiles {
        hubert: "h".into(),
        hubert_sha256: "aa".into(),
        pitch_model: None,
        pitch_model_sha256: None,
    };
    let key = |sha: &str, files: &ExtractorFiles, v, m| features::cache_key(sha, files, v, m);
    let base = key("piece", &files, FeatureVersion::V2, Some(F0Method::Pm));
    assert_eq!(
        base,
        key("piece", &files, FeatureVersion::V2, Some(F0Method::Pm))
    );
    let other_weights = ExtractorFiles {
        hubert_sha256: "bb".into(),
        ..files.clone()
    };
    let with_rmvpe = ExtractorFiles {
        pitch_model_sha256: Some("cc".into()),
        ..files.clone()
    };
    for other in [
        key("other", &files, FeatureVersion::V2, Some(F0Method::Pm)),
        key(
            "piece",
            &other_weights,
            FeatureVersion::V2,
            Some(F0Method::Pm),
        ),
        key("piece", &files, FeatureVersion::V1, Some(F0Method::Pm)),
        key("piece", &files, FeatureVersion::V2, Some(F0Method::Yin)),
        key("piece", &files, FeatureVersion::V2, None),
        key("piece", &with_rmvpe, FeatureVersion::V2, Some(F0Method::Pm)),
    ] {
        assert_ne!(base, other);
    }
}

#[test]
fn invalid_parameters_and_missing_rmvpe_are_refused_before_any_work() {
    let (_dir, library, audio) = setup(1.0);
    let mut extractors = Extractors::new(Default::default());
    let mut bad_rate = params(&audio, ModelVersion::V2);
    bad_rate.sample_rate = 44_100;
    let err = check(&bad_rate).unwrap_err();
    assert!(err.to_string().contains("44100 Hz"), "{err}");
    let mut rmvpe = params(&audio, ModelVersion::V2);
    rmvpe.f0_method = Some(F0Method::Rmvpe);
    let err = format!(
        "{:#}",
        prepare(&library, &mut extractors, &rmvpe, &quiet).unwrap_err()
    );
    assert!(err.contains("needs rmvpe.pt in"), "{err}");
    assert!(datasets::list(&library.conn()).unwrap().is_empty());
}

#[test]
fn a_cut_off_preparation_keeps_the_previous_dataset_and_resumes_where_it_stopped() {
    let (_dir, library, audio) = setup(12.0);
    let mut extractors = Extractors::new(Default::default());
    let first = prepare(
        &library,
        &mut extractors,
        &params(&audio, ModelVersion::V2),
        &quiet,
    )
    .unwrap();
    let pieces = first.pieces;
    assert!(pieces >= 3, "{first:?}");
    assert_eq!((first.computed, first.cached), (pieces, 0));
    let id = first.dataset.id;
    let before = manifest(library.data_dir(), id).unwrap();

    // v1 features this time, cut off at the third piece: two are cached, the v2 dataset stays.
    let v1 = params(&audio, ModelVersion::V1);
    let err = prepare(&library, &mut extractors, &v1, &cancel_at_feature(3)).unwrap_err();
    assert!(err.is::<crate::jobs::Cancelled>(), "{err:#}");
    assert_eq!(manifest(library.data_dir(), id).unwrap(), before);
    for piece in &before.pieces {
        for file in [&piece.gt_wav, &piece.wav_16k, &piece.features] {
            assert!(folder(&library, id).join(file).is_file(), "{file}");
        }
    }
    let row = datasets::require(&library.conn(), id).unwrap();
    assert_eq!(
        (row.status.as_str(), row.piece_count),
        (datasets::READY, pieces as i64)
    );

    let resumed = prepare(&library, &mut extractors, &v1, &quiet).unwrap();
    assert_eq!((resumed.computed, resumed.cached), (pieces - 2, 2));
    let after = manifest(library.data_dir(), id).unwrap();
    assert_eq!(after.version, "v1");
    assert_eq!(after.pieces.len(), pieces);
    // The v2 feature files are gone from the folder; the WAVs are the same pieces.
    let listed = std::fs::read_dir(folder(&library, id).join("features"))
        .unwrap()
        .count();
    assert_eq!(listed, pieces);
    assert_eq!(
        before.pieces.iter().map(|p| &p.gt_wav).collect::<Vec<_>>(),
        after.pieces.iter().map(|p| &p.gt_wav).collect::<Vec<_>>()
    );
    let again = prepare(&library, &mut extractors, &v1, &quiet).unwrap();
    assert_eq!(again.computed, 0);

    let deleted = delete(&library, id).unwrap();
    assert_eq!(deleted.id, id);
    assert!(!folder(&library, id).exists());
}

#[test]
fn isolation_runs_before_slicing_and_a_missing_model_is_refused_first() {
    let (_dir, library, audio) = setup(6.0);
    let mut extractors = Extractors::new(Default::default());
    let mut missing = params(&audio, ModelVersion::V2);
    missing.isolate = Some(IsolationMethod::Model("kim".into()));
    let err = format!(
        "{:#}",
        prepare(&library, &mut extractors, &missing, &quiet).unwrap_err()
    );
    assert!(err.contains("no separation model \"kim\""), "{err}");
    assert!(datasets::list(&library.conn()).unwrap().is_empty());

    let plain = prepare(
        &library,
        &mut extractors,
        &params(&audio, ModelVersion::V2),
        &quiet,
    );
    let plain_pieces = piece_names(&library, plain.unwrap());
    let mut rough = params(&audio, ModelVersion::V2);
    rough.name = "isolated".into();
    rough.isolate = Some(IsolationMethod::Rough);
    let isolated = piece_names(
        &library,
        prepare(&library, &mut extractors, &rough, &quiet).unwrap(),
    );
    assert!(!isolated.is_empty());
    assert!(
        isolated.iter().all(|name| !plain_pieces.contains(name)),
        "the isolated pieces are the input's own audio"
    );
}

fn piece_names(library: &Library, result: PrepareResult) -> Vec<String> {
    let manifest = manifest(library.data_dir(), result.dataset.id).unwrap();
    manifest.pieces.into_iter().map(|p| p.gt_wav).collect()
}

#[test]
fn a_preparation_and_a_conversion_share_one_loaded_hubert() {
    let (_dir, library, audio) = setup(3.0);
    let models = std::sync::Arc::new(crate::model_cache::ModelCache::default());
    let system = JobSystem::new(
        std::sync::Arc::new(library),
        crate::handlers::job_handlers(&models),
    )
    .unwrap();
    // v1: the tiny HuBERT fixture's final projection is what the v1 fixture voice reads.
    submit(&system, params(&audio, ModelVersion::V1)).unwrap();
    let voice = crate::model_import::import_model(
        system.library(),
        &rvc_parity_fixtures().join("synth_v1_f0_40k/model.pth"),
        None,
        Some("fixture"),
        None,
    )
    .unwrap();
    let options = timbre_nn::pipeline::ConvertOptions {
        voice: timbre_nn::voice::VoiceParams {
            f0_method: F0Method::Pm,
            ..Default::default()
        },
        ..Default::default()
    };
    crate::convert::submit(
        &system,
        crate::convert::ConvertRequest {
            inputs: vec![AudioInput::File(audio.clone())],
            model_ids: vec![voice.id],
            options,
            format: Default::default(),
            out_dir: None,
            effects: None,
        },
    )
    .unwrap();
    assert_eq!(system.run_queue().unwrap(), 2);
    for job in crate::db::jobs::list(&system.library().conn(), 10).unwrap() {
        assert_eq!(job.state, crate::db::jobs::JobState::Succeeded, "{job:?}");
    }
    let report = models.report();
    let hubert: Vec<_> = report
        .models
        .iter()
        .filter(|m| m.kind == crate::model_cache::ModelKind::Hubert)
        .collect();
    assert_eq!(hubert.len(), 1, "{report:?}");
    assert_eq!(
        hubert[0].hits, 1,
        "the conversion found the preparation's HuBERT"
    );
    assert_eq!(hubert[0].name, "hubert_base.pt");
    assert!(
        report
            .models
            .iter()
            .any(|m| m.kind == crate::model_cache::ModelKind::Voice)
    );
    assert_eq!((report.hits, report.misses), (1, 2));
}
