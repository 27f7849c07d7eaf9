//! Pitch and content features of dataset pieces, as RVC's training extraction writes them
//! (`extract_f0_print.py` / `extract_f0_rmvpe.py`: `f0nsf` in Hz as tracked, unvoiced frames
//! left at 0, and the coarse `f0` of the same mapping conversion uses; `extract_feature_print.py`:
//! HuBERT over the whole 16 kHz piece, v1 = `final_proj` of layer 9, v2 = the last layer), and
//! their persistent cache under `<data dir>/cache/dataset-features/`, keyed by the piece's
//! 16 kHz content, the extractor weights' content and the parameters.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use tch::{Device, Kind, Tensor};
use timbre_nn::hubert::{Embedder, FeatureVersion, Hubert};
use timbre_nn::pipeline::pitch::coarse;
use timbre_nn::pipeline::{F0Method, PitchTracker};

use crate::model_cache::{ModelCache, Shared};
use crate::pitch::{self, PitchModel};
use crate::separation::Separators;
use crate::{hashing, models_folder};

/// Bumped when what a cache entry holds, or how it is computed, changes.
const CACHE_FORMAT: &str = "dataset-features-1";

/// The extractor files a preparation uses and their content hashes.
#[derive(Debug, Clone)]
pub struct ExtractorFiles {
    /// The content encoder: the HuBERT checkpoint (`hubert_base.pt`) or ContentVec folder, or
    /// another embedder's folder, in the models folder.
    pub hubert: PathBuf,
    /// Content hash of the HuBERT file (or of the folder's files), part of every cache key.
    pub hubert_sha256: String,
    /// The pitch method's weights (RMVPE, FCPE), None for the weight-free ones.
    pub pitch_model: Option<PathBuf>,
    /// Content hash of the pitch weights; None exactly when `pitch_model` is None.
    pub pitch_model_sha256: Option<String>,
}

/// HuBERT, RMVPE and the separation models from the process's model cache, on the extraction
/// device, and the content hashes of the extractor files (hashed once per file version).
pub struct Extractors {
    models: Arc<ModelCache>,
    hashes: HashMap<String, String>,
    /// Where models load; until set, `timbre_nn::device::default_device`.
    device: Option<Device>,
}

impl Extractors {
    /// Extractors loading through `models` on the default device, no file hashed yet.
    pub fn new(models: Arc<ModelCache>) -> Extractors {
        Extractors {
            models,
            hashes: HashMap::new(),
            device: None,
        }
    }

    /// Finds the files the pitch method and `embedder` need in `models_dir`, refusing clearly
    /// when one is missing (a custom embedder is not one to train on: the voice could not name
    /// it).
    pub fn files(
        &mut self,
        models_dir: &Path,
        method: Option<F0Method>,
        embedder: Embedder,
    ) -> Result<ExtractorFiles> {
        if embedder == Embedder::Custom {
            return Err(crate::error::invalid_input(
                "a dataset cannot be prepared with a custom embedder: choose contentvec or one \
                 of Applio's (spin, spin-v2, chinese-hubert-base, japanese-hubert-base, \
                 korean-hubert-base)",
            ));
        }
        let hubert = models_folder::require_embedder(models_dir, embedder)?;
        let pitch_model = match method {
            Some(method) => pitch::model_file(models_dir, method)?,
            None => None,
        };
        Ok(ExtractorFiles {
            hubert_sha256: self.content_hash(&hubert)?,
            pitch_model_sha256: pitch_model
                .as_deref()
                .map(|p| self.content_hash(p))
                .transpose()?,
            hubert,
            pitch_model,
        })
    }

    /// Loads models on `device` from now on.
    pub fn use_device(&mut self, device: Device) {
        self.device = Some(device);
    }

    fn device(&self) -> Result<Device> {
        match self.device {
            Some(device) => Ok(device),
            None => timbre_nn::device::default_device(),
        }
    }

    /// The process's model cache the extractors load through.
    pub fn models(&self) -> &ModelCache {
        &self.models
    }

    /// Separation models from the same cache, on the extraction device.
    pub fn separators(&self) -> Result<Separators<'_>> {
        Ok(Separators::new(&self.models, self.device()?))
    }

    /// The HuBERT model of `files`, loaded on the extraction device (or shared from the cache).
    pub fn hubert(&self, files: &ExtractorFiles) -> Result<Shared<Hubert>> {
        Ok(self.models.hubert(&files.hubert, self.device()?)?.0)
    }

    /// The network of `method` when it has one.
    pub fn pitch_model(
        &self,
        files: &ExtractorFiles,
        method: F0Method,
    ) -> Result<Option<PitchModel>> {
        match &files.pitch_model {
            Some(path) => PitchModel::load(&self.models, method, path, self.device()?),
            None => Ok(None),
        }
    }

    fn content_hash(&mut self, path: &Path) -> Result<String> {
        let identity = hashing::identity(path)?;
        if let Some(sha) = self.hashes.get(&identity) {
            return Ok(sha.clone());
        }
        let sha = hashing::content_sha256(path)?;
        self.hashes.insert(identity, sha.clone());
        Ok(sha)
    }
}

/// SHA-256 of samples as little-endian f32 bytes.
pub fn samples_sha256(samples: &[f32]) -> String {
    let mut hasher = Sha256::new();
    for s in samples {
        hasher.update(s.to_le_bytes());
    }
    hashing::hex(&hasher.finalize())
}

/// The cache key of one piece's features: its 16 kHz content, the extractor weights and
/// everything that shapes the result.
pub fn cache_key(
    piece_16k_sha256: &str,
    files: &ExtractorFiles,
    version: FeatureVersion,
    method: Option<F0Method>,
) -> String {
    hashing::cache_key(&[
        CACHE_FORMAT,
        piece_16k_sha256,
        &files.hubert_sha256,
        &format!("{version:?}"),
        method.map_or("none", F0Method::name),
        files.pitch_model_sha256.as_deref().unwrap_or("-"),
    ])
}

/// Cached features: one safetensors file per piece, holding `features` `[frames, dim]` f32 and,
/// with pitch, `f0` (coarse 1..=255, i64) and `f0nsf` (Hz, f32), one value per 10 ms.
pub struct FeatureCache {
    dir: PathBuf,
}

impl FeatureCache {
    /// The cache under `cache_dir/dataset-features/`; nothing is created until an entry is stored.
    pub fn new(cache_dir: &Path) -> FeatureCache {
        FeatureCache {
            dir: cache_dir.join("dataset-features"),
        }
    }

    /// Where the entry `key` lives: `<dir>/<first two characters of key>/<key>.safetensors`.
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(key.get(..2).unwrap_or("00"))
            .join(format!("{key}.safetensors"))
    }

    /// Entries are written whole and renamed into place, so one that exists is complete.
    pub fn contains(&self, key: &str) -> bool {
        self.path(key).is_file()
    }

    /// Writes `features` (and, given the f0 in Hz, its coarse and fine pitch) as the entry `key`,
    /// atomically; returns the entry's path.
    pub fn store(&self, key: &str, features: &Tensor, f0: Option<&[f32]>) -> Result<PathBuf> {
        let path = self.path(key);
        let dir = path.parent().context("cache path has no folder")?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        let mut tensors = vec![("features", features.to_kind(Kind::Float).contiguous())];
        if let Some(f0) = f0 {
            tensors.push(("f0", Tensor::from_slice(&coarse(f0))));
            tensors.push(("f0nsf", Tensor::from_slice(f0)));
        }
        let temp = dir.join(format!(".{key}.{}.tmp", uuid::Uuid::new_v4()));
        Tensor::write_safetensors(&tensors, &temp)
            .with_context(|| format!("{}: cannot write", temp.display()))?;
        std::fs::rename(&temp, &path)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        Ok(path)
    }
}

/// A piece's f0 in Hz, one value per 10 ms frame (`samples / 160 + 1`), unvoiced frames 0.
pub fn pitch(tracker: &PitchTracker, audio_16k: &[f32]) -> Result<Vec<f32>> {
    tracker.track(audio_16k)
}

/// What a feature file holds: shapes of `features`, and the number of pitch frames.
pub fn read_shapes(path: &Path) -> Result<(Vec<i64>, Option<i64>)> {
    let tensors = Tensor::read_safetensors(path)
        .with_context(|| format!("{}: not a feature file", path.display()))?;
    let shape = |name: &str| {
        tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.size())
    };
    let features =
        shape("features").with_context(|| format!("{}: has no features", path.display()))?;
    Ok((features, shape("f0nsf").map(|s| s[0])))
}
