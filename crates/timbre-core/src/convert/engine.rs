//! The models conversion runs and the caches that make repeated work cheap. One engine lives in
//! the convert handler behind a mutex, so one worker thread at a time owns the models.
//!
//! - Voice models and indexes: an LRU keyed by content hash, bounded by a memory budget.
//! - HuBERT and RMVPE: loaded once, reloaded when the file changes.
//! - Analyses (features + pitch of an input): on disk under `<data dir>/cache/analysis/`, keyed
//!   by the input's content and everything that shaped them, so converting the same input with
//!   another model or other render parameters skips them; written segment by segment while they
//!   are computed and read back one segment at a time. The memory LRU keeps their small parts
//!   (pitch, envelope, segments; features only when the disk cache is unavailable) within
//!   [`ANALYSIS_MEMORY_BUDGET`], and never an analysis over [`ANALYSIS_MEMORY_MAX`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use lru::LruCache;
use tch::Device;
use timbre_nn::device::Precision;
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::pipeline::{
    self, Analysis, ConvertOptions, F0Method, OutputSink, PitchTracker, Rendered,
};
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::synthesizer::Synthesizer;

use crate::hashing;

/// Bytes of analyses kept in memory.
pub const ANALYSIS_MEMORY_BUDGET: u64 = 256 << 20;
/// An analysis holding more than this in memory is used once and not kept.
pub const ANALYSIS_MEMORY_MAX: u64 = 64 << 20;

/// A loaded shared extractor and the identity of the file it came from.
struct Loaded<T> {
    identity: String,
    model: T,
}

pub struct Engine {
    device: Device,
    precision: Precision,
    memory_budget: u64,
    voices: LruCache<String, (Synthesizer, u64)>,
    indexes: LruCache<String, (IvfFlatIndex, u64)>,
    hubert: Option<Loaded<Hubert>>,
    rmvpe: Option<Loaded<Rmvpe>>,
    analyses: LruCache<String, Analysis>,
    analysis_dir: PathBuf,
}

/// Whether a lookup was served from a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheUse {
    Memory,
    Disk,
    Computed,
}

impl CacheUse {
    pub fn name(self) -> &'static str {
        match self {
            CacheUse::Memory => "memory",
            CacheUse::Disk => "disk",
            CacheUse::Computed => "computed",
        }
    }
}

/// A stored file and its content hash.
pub struct StoredFile<'a> {
    pub sha256: &'a str,
    pub path: &'a Path,
}

/// One conversion for the engine to run.
pub struct Request<'a> {
    pub input_sha256: &'a str,
    pub audio_16k: &'a [f32],
    pub voice: StoredFile<'a>,
    pub index: Option<StoredFile<'a>>,
    pub options: &'a ConvertOptions,
    pub models_dir: &'a Path,
}

pub struct Outcome {
    pub rendered: Rendered,
    pub voice_cache: CacheUse,
    pub analysis_cache: CacheUse,
    pub analysis_secs: f64,
    pub render_secs: f64,
}

impl Engine {
    pub fn new(
        device: Device,
        precision: Precision,
        memory_budget: u64,
        cache_dir: &Path,
    ) -> Engine {
        Engine {
            device,
            precision,
            memory_budget,
            voices: LruCache::unbounded(),
            indexes: LruCache::unbounded(),
            hubert: None,
            rmvpe: None,
            analyses: LruCache::unbounded(),
            analysis_dir: cache_dir.join("analysis"),
        }
    }

    pub fn device(&self) -> Device {
        self.device
    }

    /// Converts one input in the engine's precision: the analysis from a cache when it can,
    /// then the render, whose output goes to `sink` piece by piece.
    pub fn convert(
        &mut self,
        request: &Request,
        sink: &mut dyn OutputSink,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<Outcome> {
        let precision = self.precision;
        precision.autocast(|| self.convert_in_precision(request, sink, progress))
    }

    fn convert_in_precision(
        &mut self,
        request: &Request,
        sink: &mut dyn OutputSink,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<Outcome> {
        let voice_cache = self.load_voice(&request.voice)?;
        if let Some(index) = &request.index {
            self.load_index(index)?;
        }
        let info = self.voice_info(request.voice.sha256)?.clone();
        if let Some(index) = &request.index {
            let dim = self
                .indexes
                .peek(index.sha256)
                .map_or(0, |(i, _)| i.dim() as i64);
            super::model_import::check_index_fits(index.path, dim, request.voice.path, &info)?;
        }
        let version = if info.feature_dim == 256 {
            FeatureVersion::V1
        } else {
            FeatureVersion::V2
        };
        let f0_method = info.f0.then_some(request.options.f0_method);
        let started = Instant::now();
        let (key, analysis_cache, uncached) =
            self.ensure_analysis(request, version, f0_method, &mut |f| progress(0.6 * f))?;
        let analysis_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let analysis = match &uncached {
            Some(analysis) => analysis,
            None => self
                .analyses
                .peek(&key)
                .context("the analysis left the cache")?,
        };
        let (model, _) = self
            .voices
            .peek(request.voice.sha256)
            .context("the voice model left the cache")?;
        let index = request
            .index
            .as_ref()
            .and_then(|i| self.indexes.peek(i.sha256))
            .map(|(i, _)| i);
        let rendered =
            pipeline::render_to(analysis, model, index, request.options, sink, &mut |f| {
                progress(0.6 + 0.4 * f)
            })?;
        Ok(Outcome {
            rendered,
            voice_cache,
            analysis_cache,
            analysis_secs,
            render_secs: started.elapsed().as_secs_f64(),
        })
    }

    fn voice_info(&mut self, sha256: &str) -> Result<&timbre_nn::synthesizer::ModelInfo> {
        Ok(self
            .voices
            .peek(sha256)
            .context("the voice model left the cache")?
            .0
            .info())
    }

    fn load_voice(&mut self, file: &StoredFile) -> Result<CacheUse> {
        if self.voices.get(file.sha256).is_some() {
            return Ok(CacheUse::Memory);
        }
        let model = Synthesizer::load(file.path, self.device)?;
        self.voices
            .put(file.sha256.to_string(), (model, file_cost(file.path)));
        self.evict_to_budget();
        Ok(CacheUse::Computed)
    }

    fn load_index(&mut self, file: &StoredFile) -> Result<()> {
        if self.indexes.get(file.sha256).is_some() {
            return Ok(());
        }
        let index = IvfFlatIndex::read(file.path)?;
        let cost = std::fs::metadata(file.path).map_or(0, |m| m.len());
        self.indexes.put(file.sha256.to_string(), (index, cost));
        self.evict_to_budget();
        Ok(())
    }

    fn cached_bytes(&self) -> u64 {
        self.voices.iter().map(|(_, (_, c))| c).sum::<u64>()
            + self.indexes.iter().map(|(_, (_, c))| c).sum::<u64>()
    }

    /// Drops least recently used voice models, then indexes, until the budget holds; the most
    /// recent one of each stays even when it alone is over budget.
    fn evict_to_budget(&mut self) {
        while self.cached_bytes() > self.memory_budget && self.voices.len() > 1 {
            self.voices.pop_lru();
        }
        while self.cached_bytes() > self.memory_budget && self.indexes.len() > 1 {
            self.indexes.pop_lru();
        }
    }

    /// Frees every cached model (after an out-of-memory failure, or on request).
    pub fn free(&mut self) {
        self.voices.clear();
        self.indexes.clear();
        self.analyses.clear();
        self.hubert = None;
        self.rmvpe = None;
    }

    /// Finds or computes the analysis of the request's input; returns its key, and the analysis
    /// itself when it is too big to stay in the memory cache.
    fn ensure_analysis(
        &mut self,
        request: &Request,
        version: FeatureVersion,
        f0_method: Option<F0Method>,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<(String, CacheUse, Option<Analysis>)> {
        let hubert_path = crate::models_folder::require_hubert(request.models_dir)?;
        let hubert_identity = hashing::identity(&hubert_path)?;
        let rmvpe_path = match f0_method {
            Some(F0Method::Rmvpe) => Some(crate::models_folder::find_rmvpe(request.models_dir).ok_or_else(|| {
                crate::error::not_found(format!(
                    "pitch method rmvpe needs rmvpe.pt in {}: put it there, or choose pm or yin",
                    request.models_dir.display()
                ))
            })?),
            _ => None,
        };
        let rmvpe_identity = rmvpe_path.as_deref().map(hashing::identity).transpose()?;
        let chunking = request.options.chunking;
        let key = hashing::cache_key(&[
            request.input_sha256,
            &hubert_identity,
            &format!("{version:?}"),
            f0_method.map_or("none", F0Method::name),
            rmvpe_identity.as_deref().unwrap_or("-"),
            &serde_json::to_string(&chunking)?,
            // Features computed on another device or precision differ in their last bits.
            &format!("{:?} {}", self.device, self.precision.name()),
        ]);
        if self.analyses.get(&key).is_some() {
            return Ok((key, CacheUse::Memory, None));
        }
        let disk_path = self.analysis_dir.join(format!("{key}.safetensors"));
        if let Ok(analysis) = Analysis::load(&disk_path) {
            let uncached = self.keep_analysis(&key, analysis);
            return Ok((key, CacheUse::Disk, uncached));
        }
        self.load_hubert(&hubert_path, hubert_identity)?;
        if let (Some(path), Some(identity)) = (&rmvpe_path, rmvpe_identity) {
            self.load_rmvpe(path, identity)?;
        }
        let hubert = &self.hubert.as_ref().context("HuBERT is not loaded")?.model;
        let tracker = match f0_method {
            None => None,
            Some(F0Method::Rmvpe) => Some(PitchTracker::Rmvpe(
                &self.rmvpe.as_ref().context("RMVPE is not loaded")?.model,
            )),
            Some(F0Method::Pm) => Some(PitchTracker::Pm),
            Some(F0Method::Yin) => Some(PitchTracker::Yin),
        };
        // Features go to the disk cache as they are computed, so a long input never holds
        // them all; without a cache folder they stay in memory.
        let analysis = match std::fs::create_dir_all(&self.analysis_dir) {
            Ok(()) => pipeline::analyze_to_file(
                request.audio_16k,
                hubert,
                version,
                tracker.as_ref(),
                chunking,
                &disk_path,
                progress,
            )?,
            Err(err) => {
                eprintln!("timbre: not caching the analysis: {err}");
                pipeline::analyze(
                    request.audio_16k,
                    hubert,
                    version,
                    tracker.as_ref(),
                    chunking,
                    progress,
                )?
            }
        };
        let uncached = self.keep_analysis(&key, analysis);
        Ok((key, CacheUse::Computed, uncached))
    }

    /// Puts an analysis in the memory cache within its budget, or hands it back when it alone
    /// is over [`ANALYSIS_MEMORY_MAX`].
    fn keep_analysis(&mut self, key: &str, analysis: Analysis) -> Option<Analysis> {
        if analysis.memory_bytes() > ANALYSIS_MEMORY_MAX {
            return Some(analysis);
        }
        self.analyses.put(key.to_string(), analysis);
        while self.analyses.len() > 1
            && self
                .analyses
                .iter()
                .map(|(_, a)| a.memory_bytes())
                .sum::<u64>()
                > ANALYSIS_MEMORY_BUDGET
        {
            self.analyses.pop_lru();
        }
        None
    }

    /// Bytes the memory cache of analyses holds.
    pub fn analysis_memory_bytes(&self) -> u64 {
        self.analyses.iter().map(|(_, a)| a.memory_bytes()).sum()
    }

    fn load_hubert(&mut self, path: &Path, identity: String) -> Result<()> {
        if self.hubert.as_ref().is_none_or(|h| h.identity != identity) {
            let model = Hubert::load(path, self.device)?;
            self.hubert = Some(Loaded { identity, model });
        }
        Ok(())
    }

    fn load_rmvpe(&mut self, path: &Path, identity: String) -> Result<()> {
        if self.rmvpe.as_ref().is_none_or(|r| r.identity != identity) {
            let model = Rmvpe::load(path, self.device)?;
            self.rmvpe = Some(Loaded { identity, model });
        }
        Ok(())
    }
}

/// Memory a loaded voice model takes, from its file: half-precision files double in float32.
fn file_cost(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len() * 2)
}
