use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tch::{Kind, Tensor};

use super::data::{TrainingData, collate};
use super::producer::{BatchProducer, ProducerOptions};
use super::sampler::{self, Shard};
use crate::dataset_layout::{Layout, Manifest, ManifestPiece};

const RATE: u32 = 40_000;
const HOP: i64 = 400;
const FEATURE_DIM: i64 = 8;

pub(super) struct TestPiece {
    pub name: &'static str,
    pub samples: usize,
    pub feature_frames: i64,
    pub pitch_frames: i64,
}

const fn piece(
    name: &'static str,
    samples: usize,
    feature_frames: i64,
    pitch_frames: i64,
) -> TestPiece {
    TestPiece {
        name,
        samples,
        feature_frames,
        pitch_frames,
    }
}

/// Spectrogram frames are `samples / 400`, phone frames twice the feature frames.
pub(super) const PIECES: [TestPiece; 6] = [
    // 150 spec frames, 148 phone frames: all cut to 148, the wave to 59 200.
    piece("a-shorter-phone", 60_000, 74, 151),
    // 200 and 200: nothing is cut, the wave keeps its 80 150 samples.
    piece("b-equal", 80_150, 100, 201),
    // 250 spec frames, 260 phone frames: cut to 250, the wave to 100 000.
    piece("c-longer-phone", 100_100, 130, 261),
    // Too short for the sampler (its estimate is 66).
    piece("d-short", 20_000, 24, 126),
    // 950 spec frames, 960 phone frames capped to 900, pitch shorter than that.
    piece("e-capped", 380_000, 480, 880),
    // 148 and 148: as long as the first once cut, a tie for the collate's sort.
    piece("f-tie", 59_200, 74, 149),
];

/// Audio in [-0.5, 0.5] from a seed.
fn noise(seed: u64, samples: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..samples)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

/// The features of piece `index`: `[frames, FEATURE_DIM]`, every value distinct.
fn features(index: usize, frames: i64) -> Tensor {
    (Tensor::arange(frames * FEATURE_DIM, (Kind::Float, tch::Device::Cpu)) / 1000.0 + index as f64)
        .view([frames, FEATURE_DIM])
}

/// A dataset folder in our layout, as the dataset job writes it; returns its root.
pub(super) fn write_dataset(dir: &Path, pieces: &[TestPiece], with_pitch: bool) -> PathBuf {
    let layout = Layout::new(dir, 1);
    layout.create().unwrap();
    let mut manifest = Manifest {
        sample_rate: RATE,
        version: "v2".into(),
        f0_method: with_pitch.then(|| "rmvpe".into()),
        embedder: Default::default(),
        feature_dim: FEATURE_DIM,
        pieces: vec![],
        held_out: vec![],
    };
    for (index, piece) in pieces.iter().enumerate() {
        let gt_wav = Layout::gt_wav(piece.name);
        layout
            .write_wav(&gt_wav, &noise(index as u64, piece.samples), RATE)
            .unwrap();
        let mut tensors = vec![("features", features(index, piece.feature_frames))];
        if with_pitch {
            let frames = piece.pitch_frames;
            tensors.push((
                "f0",
                Tensor::arange(frames, (Kind::Int64, tch::Device::Cpu)) + 1,
            ));
            tensors.push((
                "f0nsf",
                Tensor::arange(frames, (Kind::Float, tch::Device::Cpu)) * 1.5 + 100.0,
            ));
        }
        let features_file = Layout::features(piece.name);
        Tensor::write_safetensors(&tensors, layout.path(&features_file)).unwrap();
        manifest.pieces.push(ManifestPiece {
            gt_wav,
            wav_16k: Layout::wav_16k(piece.name),
            features: features_file,
            source: "test".into(),
            index,
            seconds: piece.samples as f64 / f64::from(RATE),
            feature_frames: piece.feature_frames,
            f0_frames: with_pitch.then_some(piece.pitch_frames),
        });
    }
    layout.commit(&manifest).unwrap();
    layout.root().to_path_buf()
}

fn index_of(name: &str) -> usize {
    PIECES.iter().position(|p| p.name == name).unwrap()
}

#[test]
fn items_are_cut_as_the_reference_cuts_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = TrainingData::open(&write_dataset(dir.path(), &PIECES, true), 3).unwrap();
    let loader = data.loader();
    // (piece, frames, wave samples, pitch frames)
    let expected = [
        ("a-shorter-phone", 148, 59_200, 148),
        ("b-equal", 200, 80_150, 200),
        ("c-longer-phone", 250, 100_000, 250),
        ("e-capped", 900, 360_000, 880),
        ("f-tie", 148, 59_200, 148),
    ];
    for (name, frames, samples, pitch_frames) in expected {
        let index = index_of(name);
        let item = loader.item(index).unwrap();
        assert_eq!(item.spec.size(), [1025, frames], "{name} spec");
        assert_eq!(item.phone.size(), [frames, FEATURE_DIM], "{name} phone");
        assert_eq!(item.wave.size(), [1, samples], "{name} wave");
        assert_eq!(item.pitch.unwrap().size(), [pitch_frames], "{name} pitch");
        assert_eq!(item.pitchf.unwrap().size(), [pitch_frames], "{name} pitchf");
        let audio = noise(index as u64, PIECES[index].samples);
        assert_eq!(
            Vec::<f32>::try_from(item.wave.view([-1])).unwrap(),
            audio[..samples as usize]
        );
        // Each feature frame twice, in order.
        let features = features(index, PIECES[index].feature_frames);
        assert!(item.phone.get(0).equal(&features.get(0)));
        assert!(item.phone.get(1).equal(&features.get(0)));
        assert!(item.phone.get(2).equal(&features.get(1)));
    }
}

#[test]
fn collate_sorts_by_spectrogram_length_and_pads_with_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let data = TrainingData::open(&write_dataset(dir.path(), &PIECES, true), 3).unwrap();
    let loader = data.loader();
    let names = ["a-shorter-phone", "c-longer-phone", "f-tie", "b-equal"];
    let items: Vec<_> = names
        .iter()
        .map(|n| loader.item(index_of(n)).unwrap())
        .collect();
    let batch = collate(&items, 3);
    batch.check().unwrap();
    let lengths = |t: &Tensor| Vec::<i64>::try_from(t).unwrap();
    assert_eq!(lengths(&batch.spec_lengths), [250, 200, 148, 148]);
    assert_eq!(lengths(&batch.phone_lengths), [250, 200, 148, 148]);
    assert_eq!(
        lengths(&batch.wave_lengths),
        [100_000, 80_150, 59_200, 59_200]
    );
    assert_eq!(lengths(&batch.sid), [3; 4]);
    assert_eq!(batch.spec.size(), [4, 1025, 250]);
    assert_eq!(batch.wave.size(), [4, 1, 100_000]);
    assert_eq!(batch.phone.size(), [4, 250, FEATURE_DIM]);
    let (pitch, pitchf) = (
        batch.pitch.as_ref().unwrap(),
        batch.pitchf.as_ref().unwrap(),
    );
    assert_eq!((pitch.size(), pitch.kind()), (vec![4, 250], Kind::Int64));
    assert_eq!((pitchf.size(), pitchf.kind()), (vec![4, 250], Kind::Float));
    // The tie keeps the given order: row 2 is "a-shorter-phone", row 3 "f-tie"; each holds
    // its item, then zeros.
    for (row, item) in [(2, &items[0]), (3, &items[2])] {
        let zeros = |t: Tensor| t.abs().sum(Kind::Double).double_value(&[]) == 0.0;
        assert!(batch.spec.get(row).narrow(1, 0, 148).equal(&item.spec));
        assert!(zeros(batch.spec.get(row).narrow(1, 148, 102)));
        assert!(batch.wave.get(row).narrow(1, 0, 59_200).equal(&item.wave));
        assert!(zeros(batch.wave.get(row).narrow(1, 59_200, 40_800)));
        assert!(batch.phone.get(row).narrow(0, 0, 148).equal(&item.phone));
        assert!(zeros(batch.phone.get(row).narrow(0, 148, 102)));
        assert!(
            pitch
                .get(row)
                .narrow(0, 0, 148)
                .equal(item.pitch.as_ref().unwrap())
        );
        assert!(zeros(pitch.get(row).narrow(0, 148, 102)));
        assert!(
            pitchf
                .get(row)
                .narrow(0, 0, 148)
                .equal(item.pitchf.as_ref().unwrap())
        );
        assert!(zeros(pitchf.get(row).narrow(0, 148, 102)));
    }

    let dir = tempfile::tempdir().unwrap();
    let data = TrainingData::open(&write_dataset(dir.path(), &PIECES[..2], false), 0).unwrap();
    let loader = data.loader();
    let batch = collate(&[loader.item(0).unwrap(), loader.item(1).unwrap()], 0);
    batch.check().unwrap();
    assert!(batch.pitch.is_none() && batch.pitchf.is_none());
}

/// Twelve pieces over three buckets, for the sampler.
pub(super) fn many_pieces() -> Vec<TestPiece> {
    const NAMES: [&str; 12] = [
        "p00", "p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11",
    ];
    NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let samples = [40_000, 80_000, 160_000][i % 3] + 400 * i;
            let frames = (samples / 800) as i64;
            piece(name, samples, frames, 2 * frames + 1)
        })
        .collect()
}

#[test]
fn every_piece_appears_once_an_epoch_in_an_order_set_by_epoch_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_dataset(dir.path(), &PIECES, true);
    let data = TrainingData::open(&root, 0).unwrap();
    assert_eq!(data.left_out(), [index_of("d-short"), index_of("e-capped")]);
    let mut seen = data.epoch_batches(1, 1, 7, Shard::ALONE).concat();
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 5]);

    let dir = tempfile::tempdir().unwrap();
    let root = write_dataset(dir.path(), &many_pieces(), true);
    let data = TrainingData::open(&root, 0).unwrap();
    let epoch = |epoch, seed| data.epoch_batches(epoch, 2, seed, Shard::ALONE);
    for batches in [epoch(1, 0), epoch(2, 0), epoch(1, 5)] {
        assert_eq!(batches.len(), 6);
        let mut seen = batches.concat();
        seen.sort_unstable();
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
        for batch in &batches {
            let bucket = |piece: usize| {
                let size = std::fs::metadata(root.join(&data.manifest().pieces[piece].gt_wav));
                sampler::bucket_of(sampler::estimated_length(size.unwrap().len(), HOP))
            };
            assert_eq!(bucket(batch[0]), bucket(batch[1]), "{batch:?}");
        }
    }
    assert_eq!(epoch(1, 0), epoch(1, 0));
    assert_ne!(epoch(1, 0), epoch(2, 0));
    assert_ne!(epoch(1, 0), epoch(1, 5));
    // Odd buckets are filled up with pieces of their own.
    let batches = data.epoch_batches(1, 3, 0, Shard::ALONE);
    assert!(batches.iter().all(|batch| batch.len() == 3));
    assert_eq!(batches.len(), 6);
}

#[test]
fn spectrograms_are_cached_and_recomputed_when_the_settings_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = write_dataset(dir.path(), &PIECES[..3], true);
    let load_all = |data: &TrainingData| {
        let loader = data.loader();
        (0..3)
            .map(|i| loader.item(i).unwrap().spec)
            .collect::<Vec<_>>()
    };
    let data = TrainingData::open(&root, 0).unwrap();
    let computed = load_all(&data);
    assert_eq!(data.specs_computed(), 3);
    let data = TrainingData::open(&root, 0).unwrap();
    let cached = load_all(&data);
    assert_eq!(data.specs_computed(), 0);
    assert!(computed.iter().zip(&cached).all(|(a, b)| a.equal(b)));

    let mut config = *data.spectrogram_config();
    config.win_length = 1024;
    let data = TrainingData::open_with(&root, 0, config).unwrap();
    let other = load_all(&data);
    assert_eq!(data.specs_computed(), 3);
    assert!(!other[0].equal(&computed[0]));
    // The other settings' files are gone.
    assert_eq!(
        std::fs::read_dir(root.join(super::data::SPECS))
            .unwrap()
            .count(),
        3
    );
}

#[test]
fn missing_and_unreadable_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let message = |root: &Path| format!("{:#}", TrainingData::open(root, 0).err().unwrap());
    assert!(message(&dir.path().join("none")).contains("no such dataset folder"));
    let root = write_dataset(dir.path(), &PIECES[..3], true);

    let features = root.join(Layout::features("b-equal"));
    let saved = std::fs::read(&features).unwrap();
    std::fs::remove_file(&features).unwrap();
    assert!(message(&root).contains(&features.display().to_string()));
    std::fs::write(&features, saved).unwrap();

    // Unreadable once the dataset is open: that batch's error names it, the others load.
    let data = Arc::new(TrainingData::open(&root, 0).unwrap());
    std::fs::write(&features, b"not safetensors").unwrap();
    let plan = vec![vec![0], vec![1], vec![2]];
    let results: Vec<_> = BatchProducer::start(data, plan, ProducerOptions::default()).collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok() && results[2].is_ok());
    let error = format!("{:#}", results[1].as_ref().err().unwrap());
    assert!(error.contains(&features.display().to_string()), "{error}");

    let manifest = root.join(crate::dataset_layout::MANIFEST);
    std::fs::write(&manifest, "{").unwrap();
    assert!(message(&root).contains(&manifest.display().to_string()));
    let empty = Manifest {
        sample_rate: RATE,
        version: "v2".into(),
        f0_method: None,
        embedder: Default::default(),
        feature_dim: FEATURE_DIM,
        pieces: vec![],
        held_out: vec![],
    };
    std::fs::write(&manifest, serde_json::to_string(&empty).unwrap()).unwrap();
    assert!(message(&root).contains("no pieces"));
    std::fs::remove_file(&manifest).unwrap();
    assert!(message(&root).contains(&manifest.display().to_string()));

    let dir = tempfile::tempdir().unwrap();
    let only_short = write_dataset(dir.path(), &PIECES[3..4], true);
    assert!(
        message(&only_short).contains("no piece has a length RVC trains on (about 0.75 to 6.75 s)")
    );
}

#[test]
fn the_producer_gives_the_planned_batches_in_order_and_profiles_them() {
    let dir = tempfile::tempdir().unwrap();
    let data =
        Arc::new(TrainingData::open(&write_dataset(dir.path(), &many_pieces(), true), 2).unwrap());
    let plan: Vec<Vec<usize>> = (1..=3)
        .flat_map(|epoch| data.epoch_batches(epoch, 2, 9, Shard::ALONE))
        .collect();
    let options = ProducerOptions {
        threads: 3,
        ..Default::default()
    };
    let profile = options.profile.clone();
    let batches: Vec<_> = BatchProducer::start(data.clone(), plan.clone(), options)
        .map(Result::unwrap)
        .collect();
    assert_eq!(batches.len(), plan.len());
    let loader = data.loader();
    for (batch, pieces) in batches.iter().zip(&plan) {
        let items: Vec<_> = pieces.iter().map(|&p| loader.item(p).unwrap()).collect();
        let expected = collate(&items, 2);
        assert!(batch.wave.equal(&expected.wave) && batch.spec.equal(&expected.spec));
        assert!(batch.sid.equal(&expected.sid));
    }
    let stages = profile.stages();
    assert_eq!(stages.batches, plan.len());
    assert!(stages.load > Duration::ZERO && stages.assemble > Duration::ZERO);
}

#[test]
fn stopping_early_ends_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let data =
        Arc::new(TrainingData::open(&write_dataset(dir.path(), &many_pieces(), false), 0).unwrap());
    let endless = std::iter::repeat(vec![0, 3, 6, 9]);
    let cancel = Arc::new(AtomicBool::new(false));
    let options = || ProducerOptions {
        cancel: cancel.clone(),
        ..Default::default()
    };
    let mut producer = BatchProducer::start(data.clone(), endless.clone(), options());
    producer.next().unwrap().unwrap();
    let started = Instant::now();
    drop(producer);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!cancel.load(Ordering::Relaxed));

    let mut producer = BatchProducer::start(data, endless, options());
    producer.next().unwrap().unwrap();
    cancel.store(true, Ordering::Relaxed);
    assert!(producer.next().is_none());
    let started = Instant::now();
    drop(producer);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
