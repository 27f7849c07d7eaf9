//! A prepared dataset on disk, under `<data dir>/datasets/<id>/`:
//!
//! - `gt_wavs/<piece>.wav`: each piece at the model rate (32-bit float WAV, RVC's `0_gt_wavs`);
//! - `wavs16k/<piece>.wav`: the same piece at 16 kHz (RVC's `1_16k_wavs`);
//! - `features/<key>.safetensors`: its features and pitch (see `features::FeatureCache`);
//! - `dataset.json`: the [`Manifest`], the pieces in order, each naming its three files, and
//!   the held-out pieces the same way.
//!
//! Pieces are named by their content and feature files by their cache key, so a preparation
//! never overwrites a file the current manifest uses: every file is written to a temporary name
//! and renamed into place, the manifest is replaced last, and only then are files it no longer
//! lists removed. A preparation killed at any point leaves the previous manifest valid.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_nn::hubert::Embedder;

use crate::library::Library;

/// The manifest's file name in the dataset folder.
pub const MANIFEST: &str = "dataset.json";
/// The folder of pieces at the model rate (RVC's `0_gt_wavs`).
pub const GT_WAVS: &str = "gt_wavs";
/// The folder of pieces at 16 kHz (RVC's `1_16k_wavs`).
pub const WAVS_16K: &str = "wavs16k";
/// The folder of per-piece feature files.
pub const FEATURES: &str = "features";
/// Less training audio than this is refused: RVC users find a minute the least that gives a
/// voice. The held-out set never takes a dataset below it.
pub const MIN_TRAINING_SECONDS: f64 = 60.0;

/// What a trainer reads first: the parameters and every piece, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The model rate the `gt_wavs` pieces are at, in Hz: 32000, 40000 or 48000.
    pub sample_rate: u32,
    /// `v1` or `v2`.
    pub version: String,
    /// The pitch method, `None` for a dataset without pitch.
    pub f0_method: Option<String>,
    /// The content encoder of the features (contentvec in manifests written before it was
    /// recorded, which were all contentvec's).
    #[serde(default)]
    pub embedder: Embedder,
    /// Width of each HuBERT feature frame: 256 for v1, 768 for v2.
    pub feature_dim: i64,
    /// Every piece trained on, in the order the inputs and their slices came.
    pub pieces: Vec<ManifestPiece>,
    /// The pieces kept out of training for the checkpoint judge (`dataset::held_out`), their
    /// features and pitch prepared as the others'.
    #[serde(default)]
    pub held_out: Vec<ManifestPiece>,
}

impl Manifest {
    /// Seconds of audio the pieces trained on hold, each second once: the slicer's kept audio
    /// (`sliced_seconds` of its report: consecutive pieces overlap by 0.3 s, so their lengths
    /// add up to more) less the held-out pieces, at most the pieces' own sum (pieces dropped as
    /// too loud take theirs away). Without a report, the pieces' sum.
    pub fn audio_seconds(&self, sliced_seconds: Option<f64>) -> f64 {
        let in_pieces: f64 = self.pieces.iter().map(|p| p.seconds).sum();
        let held_out: f64 = self.held_out.iter().map(|p| p.seconds).sum();
        sliced_seconds.map_or(in_pieces, |sliced| (sliced - held_out).min(in_pieces))
    }
}

/// One piece of a dataset: its three files and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestPiece {
    /// Relative to the dataset folder.
    pub gt_wav: String,
    /// The piece at 16 kHz, relative to the dataset folder.
    pub wav_16k: String,
    /// The piece's feature file, relative to the dataset folder.
    pub features: String,
    /// The input it came from, and its number among that input's pieces.
    pub source: String,
    /// Position among the pieces kept from that input, from 0.
    pub index: usize,
    /// Length of the piece in seconds.
    pub seconds: f64,
    /// Number of HuBERT feature frames (one per 20 ms).
    pub feature_frames: i64,
    /// Number of pitch frames (one per 10 ms); None for a dataset without pitch.
    pub f0_frames: Option<i64>,
}

/// The folder of one dataset, `<data dir>/datasets/<id>/`, and the paths inside it.
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of dataset `dataset_id` under `data_dir`; nothing is created.
    pub fn new(data_dir: &Path, dataset_id: i64) -> Layout {
        Layout {
            root: data_dir.join("datasets").join(dataset_id.to_string()),
        }
    }

    /// The dataset folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the folder and its `gt_wavs`, `wavs16k` and `features` subfolders.
    pub fn create(&self) -> Result<()> {
        for dir in [GT_WAVS, WAVS_16K, FEATURES] {
            let dir = self.root.join(dir);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
        }
        Ok(())
    }

    /// Where the model-rate WAV of `piece` goes, relative to the dataset folder.
    pub fn gt_wav(piece: &str) -> String {
        format!("{GT_WAVS}/{piece}.wav")
    }

    /// Where the 16 kHz WAV of `piece` goes, relative to the dataset folder.
    pub fn wav_16k(piece: &str) -> String {
        format!("{WAVS_16K}/{piece}.wav")
    }

    /// Where the feature file of cache key `key` goes, relative to the dataset folder.
    pub fn features(key: &str) -> String {
        format!("{FEATURES}/{key}.safetensors")
    }

    /// The absolute path of `relative` inside the dataset folder.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Writes mono `samples` as a float WAV, unless the (content-named) file is already there.
    pub fn write_wav(&self, relative: &str, samples: &[f32], rate: u32) -> Result<()> {
        let path = self.path(relative);
        if path.is_file() {
            return Ok(());
        }
        let bytes = timbre_audio::encode_wav(
            &AudioBuffer::new(rate, vec![samples.to_vec()]),
            SampleFormat::Float32,
        )?;
        write_atomically(&path, |temp| {
            std::fs::write(temp, &bytes).map_err(Into::into)
        })
    }

    /// Puts a cached feature file into the dataset: a hard link where it can, else a copy.
    pub fn add_features(&self, relative: &str, cached: &Path) -> Result<()> {
        let path = self.path(relative);
        if path.is_file() {
            return Ok(());
        }
        write_atomically(&path, |temp| {
            if std::fs::hard_link(cached, temp).is_err() {
                std::fs::copy(cached, temp)?;
            }
            Ok(())
        })
    }

    /// The committed manifest; None when there is none or it cannot be read.
    pub fn read_manifest(&self) -> Option<Manifest> {
        let text = std::fs::read_to_string(self.path(MANIFEST)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Replaces the manifest, then removes the files it does not list.
    pub fn commit(&self, manifest: &Manifest) -> Result<()> {
        let text = serde_json::to_string_pretty(manifest)?;
        write_atomically(&self.path(MANIFEST), |temp| {
            std::fs::write(temp, text.as_bytes()).map_err(Into::into)
        })?;
        let listed: std::collections::HashSet<&str> = manifest
            .pieces
            .iter()
            .chain(&manifest.held_out)
            .flat_map(|p| [p.gt_wav.as_str(), p.wav_16k.as_str(), p.features.as_str()])
            .collect();
        for dir in [GT_WAVS, WAVS_16K, FEATURES] {
            let Ok(entries) = std::fs::read_dir(self.root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = format!("{dir}/{}", entry.file_name().to_string_lossy());
                if !listed.contains(name.as_str()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    /// Removes the whole folder (a dataset being deleted).
    pub fn remove(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.root) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(err).with_context(|| format!("{}: cannot remove", self.root.display()))
            }
            _ => Ok(()),
        }
    }
}

/// Runs `write` on a temporary name beside `path` (a dot file the cleanup pass also removes),
/// then renames it into place.
fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let dir = path.parent().context("a dataset file has no folder")?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
    let written = write(&temp).and_then(|()| {
        std::fs::rename(&temp, path).with_context(|| format!("{}: cannot write", path.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.with_context(|| format!("{}: cannot write", path.display()))
}

/// The folder of a dataset, for `show`.
pub fn folder(library: &Library, id: i64) -> PathBuf {
    Layout::new(library.data_dir(), id).root().to_path_buf()
}

/// The manifest of a prepared dataset, if it has one.
pub fn manifest(data_dir: &Path, id: i64) -> Option<Manifest> {
    Layout::new(data_dir, id).read_manifest()
}
