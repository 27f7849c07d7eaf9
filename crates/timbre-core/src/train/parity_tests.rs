//! Parity with rvc_next 0.2.16's loader, collate and bucket sampler, run by `.venv/bin/python`
//! (`reference_data.py`, beside this file) on the same dataset rewritten in its layout.

use std::path::Path;
use std::process::Command;

use tch::Tensor;
use timbre_test_support::reference_python;

use super::data::{TrainingData, collate};
use super::sampler::Shard;
use super::tests::{PIECES, many_pieces, write_dataset};

const SCRIPT: &str = include_str!("reference_data.py");
const SEED: u64 = 1234;
const EPOCHS: u64 = 3;
const BATCH_SIZE: usize = 3;
const SPEAKER: i64 = 5;

/// What the reference script gives.
struct Reference {
    /// Per epoch, the piece names of each batch.
    epochs: Vec<Vec<Vec<String>>>,
    /// Each of two replicas' batches, epoch by epoch.
    shards: Vec<Vec<Vec<Vec<String>>>>,
    tensors: Vec<(String, Tensor)>,
}

impl Reference {
    fn get(&self, name: &str) -> Tensor {
        let found = self.tensors.iter().find(|(n, _)| n == name);
        found
            .unwrap_or_else(|| panic!("the reference wrote no {name}"))
            .1
            .shallow_clone()
    }
}

fn reference(python: &Path, dataset: &Path, out: &Path) -> Reference {
    let script = out.join("reference_data.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let output = Command::new(python)
        .arg(&script)
        .arg(dataset)
        .arg(out)
        .args([SEED, EPOCHS, BATCH_SIZE as u64].map(|n| n.to_string()))
        .arg(SPEAKER.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "reference_data.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    Reference {
        epochs: serde_json::from_value(printed["epochs"].clone()).unwrap(),
        shards: serde_json::from_value(printed["shards"].clone()).unwrap(),
        tensors: Tensor::read_safetensors(out.join("reference.safetensors")).unwrap(),
    }
}

fn compare(what: &str, ours: &Tensor, theirs: &Tensor) {
    assert_eq!(ours.size(), theirs.size(), "{what}: shape");
    assert_eq!(ours.kind(), theirs.kind(), "{what}: kind");
    if what.ends_with(".spec") {
        // Our STFT against torch's: the spectrogram module's own parity bound.
        let error = (ours - theirs).abs().max().double_value(&[]);
        let scale = theirs.abs().max().double_value(&[]).max(1.0);
        assert!(error <= 1e-5 * scale, "{what}: max abs error {error:.2e}");
    } else {
        assert!(ours.equal(theirs), "{what}: differs");
    }
}

fn check_against_the_reference(with_pitch: bool) {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    let pieces: Vec<_> = PIECES.into_iter().chain(many_pieces()).collect();
    let root = write_dataset(&dir.path().join("ours"), &pieces, with_pitch);
    let out = dir.path().join("reference");
    std::fs::create_dir_all(&out).unwrap();
    let reference = reference(&python, &root, &out);

    let data = TrainingData::open(&root, SPEAKER).unwrap();
    let name = |piece: usize| pieces[piece].name.to_string();
    for (epoch, theirs) in (1..=EPOCHS).zip(&reference.epochs) {
        let ours: Vec<Vec<String>> = data
            .epoch_batches(epoch, BATCH_SIZE, SEED, Shard::ALONE)
            .into_iter()
            .map(|batch| batch.into_iter().map(name).collect())
            .collect();
        assert_eq!(&ours, theirs, "epoch {epoch}");
    }
    for (rank, shard) in reference.shards.iter().enumerate() {
        for (epoch, theirs) in (1..=EPOCHS).zip(shard) {
            let ours: Vec<Vec<String>> = data
                .epoch_batches(epoch, BATCH_SIZE, SEED, Shard { rank, replicas: 2 })
                .into_iter()
                .map(|batch| batch.into_iter().map(name).collect())
                .collect();
            assert_eq!(&ours, theirs, "epoch {epoch}, rank {rank} of 2");
        }
    }

    let loader = data.loader();
    let items: Vec<_> = (0..pieces.len()).map(|i| loader.item(i).unwrap()).collect();
    for (piece, item) in items.iter().enumerate() {
        let fields = [
            ("spec", Some(&item.spec)),
            ("wave", Some(&item.wave)),
            ("phone", Some(&item.phone)),
            ("pitch", item.pitch.as_ref()),
            ("pitchf", item.pitchf.as_ref()),
        ];
        for (field, ours) in fields {
            if let Some(ours) = ours {
                let what = format!("item.{}.{field}", name(piece));
                compare(&what, ours, &reference.get(&what));
            }
        }
    }
    for (k, batch) in data
        .epoch_batches(1, BATCH_SIZE, SEED, Shard::ALONE)
        .iter()
        .enumerate()
    {
        let ours = collate(batch.iter().map(|&i| &items[i]), SPEAKER);
        let fields = [
            ("phone", Some(&ours.phone)),
            ("phone_lengths", Some(&ours.phone_lengths)),
            ("pitch", ours.pitch.as_ref()),
            ("pitchf", ours.pitchf.as_ref()),
            ("spec", Some(&ours.spec)),
            ("spec_lengths", Some(&ours.spec_lengths)),
            ("wave", Some(&ours.wave)),
            ("wave_lengths", Some(&ours.wave_lengths)),
            ("sid", Some(&ours.sid)),
        ];
        for (field, ours) in fields {
            let what = format!("batch.{k}.{field}");
            match ours {
                Some(ours) => compare(&what, ours, &reference.get(&what)),
                None => assert!(reference.tensors.iter().all(|(n, _)| n != &what), "{what}"),
            }
        }
    }
}

#[test]
fn pieces_batches_and_epochs_match_the_reference() {
    check_against_the_reference(true);
}

#[test]
fn datasets_without_pitch_match_the_reference() {
    check_against_the_reference(false);
}
