//! Conversion's engine: the models come from the process's [`ModelCache`], and the analyses
//! (features + pitch of an input) have caches of their own, since only conversion makes them.
//! One engine lives in the convert handler behind a mutex, so one worker thread at a time runs it.
//!
//! Analyses live on disk under `<data dir>/cache/analysis/`, keyed by the input's content and
//! everything that shaped them, so converting the same input with another model or other render
//! parameters skips them; written segment by segment while they are computed and read back one
//! segment at a time. The memory LRU keeps their small parts (pitch, envelope, segments; features
//! only when the disk cache is unavailable) within [`ANALYSIS_MEMORY_BUDGET`], and never an
//! analysis over [`ANALYSIS_MEMORY_MAX`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use lru::LruCache;
use tch::Device;
use timbre_nn::device::Precision;
use timbre_nn::hubert::FeatureVersion;
use timbre_nn::pipeline::{self, Analysis, ConvertOptions, F0Method, OutputSink, Rendered};

use crate::hashing;
use crate::model_cache::{CacheUse, ModelCache, StoredFile};
use crate::pitch::{self, PitchModel};

/// Bytes of analyses kept in memory.
pub const ANALYSIS_MEMORY_BUDGET: u64 = 256 << 20;
/// An analysis holding more than this in memory is used once and not kept.
pub const ANALYSIS_MEMORY_MAX: u64 = 64 << 20;

/// Converts inputs on one device in one precision: models from the model cache, analyses
/// cached in memory and on disk.
pub struct Engine {
    device: Device,
    precision: Precision,
    models: Arc<ModelCache>,
    analyses: LruCache<String, Analysis>,
    analysis_dir: PathBuf,
}

/// One conversion for the engine to run.
pub struct Request<'a> {
    pub input_sha256: &'a str,
    /// The input, handed over: the analysis filters and pads it in place.
    pub audio_16k: Vec<f32>,
    pub voice: StoredFile<'a>,
    pub index: Option<StoredFile<'a>>,
    pub options: &'a ConvertOptions,
    pub models_dir: &'a Path,
    /// The content-feature extractor of the voice's embedder.
    pub extractor: &'a Path,
}

pub struct Outcome {
    pub rendered: Rendered,
    pub voice_cache: CacheUse,
    pub analysis_cache: CacheUse,
    pub analysis_secs: f64,
    pub render_secs: f64,
}

impl Engine {
    /// An engine on `device` in `precision`, its models from `models`, its analyses cached on disk
    /// under `<cache_dir>/analysis`.
    pub fn new(
        device: Device,
        precision: Precision,
        models: Arc<ModelCache>,
        cache_dir: &Path,
    ) -> Engine {
        Engine {
            device,
            precision,
            models,
            analyses: LruCache::unbounded(),
            analysis_dir: cache_dir.join("analysis"),
        }
    }

    /// The device the engine runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Converts one input in the engine's precision: the analysis from a cache when it can,
    /// then the render, whose output goes to `sink` piece by piece.
    pub fn convert(
        &mut self,
        request: Request,
        sink: &mut dyn OutputSink,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<Outcome> {
        let precision = self.precision;
        precision.autocast(|| self.convert_in_precision(request, sink, progress))
    }

    fn convert_in_precision(
        &mut self,
        mut request: Request,
        sink: &mut dyn OutputSink,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<Outcome> {
        let audio_16k = std::mem::take(&mut request.audio_16k);
        let load_range = timbre_nn::profile::range("voice");
        let (voice, voice_cache) = self.models.voice(&request.voice, self.device)?;
        let index = match &request.index {
            Some(file) => Some(self.models.index(file)?.0),
            None => None,
        };
        let voice = voice.lock();
        let index = index.as_ref().map(|i| i.lock());
        let info = voice.info().clone();
        if let (Some(index), Some(file)) = (&index, &request.index) {
            super::model_import::check_index_fits(
                file.path,
                index.dim() as i64,
                request.voice.path,
                &info,
            )?;
        }
        drop(load_range);
        let version = info.feature_version()?;
        let f0_method = info.f0.then_some(request.options.voice.f0_method);
        let started = Instant::now();
        let analysis_range = timbre_nn::profile::range("analysis");
        let (key, analysis_cache, uncached) = self.ensure_analysis(
            &request,
            audio_16k,
            version,
            f0_method,
            info.energy,
            &mut |f| progress(0.6 * f),
        )?;
        drop(analysis_range);
        let analysis_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let _range = timbre_nn::profile::range("render");
        let analysis = match &uncached {
            Some(analysis) => analysis,
            None => self
                .analyses
                .peek(&key)
                .context("the analysis left the cache")?,
        };
        let rendered = pipeline::render_to(
            analysis,
            &voice,
            index.as_deref(),
            request.options,
            sink,
            &mut |f| progress(0.6 + 0.4 * f),
        )?;
        Ok(Outcome {
            rendered,
            voice_cache,
            analysis_cache,
            analysis_secs,
            render_secs: started.elapsed().as_secs_f64(),
        })
    }

    /// Empties the memory cache of analyses (the models are the model cache's to free).
    pub fn free(&mut self) {
        self.analyses.clear();
    }

    /// Finds or computes the analysis of the request's input; returns its key, and the analysis
    /// itself when it is too big to stay in the memory cache. An energy voice (`energy`) never
    /// takes a cached analysis without the energy curve (one saved before analyses held it): the
    /// input is analysed again, and the new analysis replaces it under the same key.
    fn ensure_analysis(
        &mut self,
        request: &Request,
        audio_16k: Vec<f32>,
        version: FeatureVersion,
        f0_method: Option<F0Method>,
        energy: bool,
        progress: &mut dyn FnMut(f64) -> Result<()>,
    ) -> Result<(String, CacheUse, Option<Analysis>)> {
        // The extractor is in the key (by its identity): each embedder has its own analyses.
        let hubert_path = request.extractor;
        let hubert_identity = hashing::identity(hubert_path)?;
        let pitch_file = match f0_method {
            Some(method) => pitch::model_file(request.models_dir, method)?,
            None => None,
        };
        let pitch_identity = pitch_file.as_deref().map(hashing::identity).transpose()?;
        let chunking = request.options.chunking;
        let key = hashing::cache_key(&[
            request.input_sha256,
            &hubert_identity,
            &format!("{version:?}"),
            f0_method.map_or("none", F0Method::name),
            pitch_identity.as_deref().unwrap_or("-"),
            &serde_json::to_string(&chunking)?,
            // Features computed on another device or precision differ in their last bits.
            &format!("{:?} {}", self.device, self.precision.name()),
        ]);
        let serves = |analysis: &Analysis| !energy || analysis.energy.is_some();
        if self.analyses.get(&key).is_some_and(serves) {
            return Ok((key, CacheUse::Memory, None));
        }
        let disk_path = self.analysis_dir.join(format!("{key}.safetensors"));
        if let Ok(analysis) = Analysis::load(&disk_path)
            && serves(&analysis)
        {
            let uncached = self.keep_analysis(&key, analysis);
            return Ok((key, CacheUse::Disk, uncached));
        }
        // HuBERT before the pitch model, as every job takes them, so two jobs never wait on
        // each other.
        let hubert = self.models.hubert(hubert_path, self.device)?.0;
        let pitch_model = match (f0_method, &pitch_file) {
            (Some(method), Some(file)) => {
                PitchModel::load(&self.models, method, file, self.device)?
            }
            _ => None,
        };
        let hubert = hubert.lock();
        let pitch_model = pitch_model.as_ref().map(PitchModel::lock);
        let hubert = &*hubert;
        let tracker = f0_method
            .map(|method| pitch::tracker(method, pitch_model.as_ref()))
            .transpose()?;
        // Features go to the disk cache as they are computed, so a long input never holds
        // them all; without a cache folder they stay in memory.
        let analysis = match std::fs::create_dir_all(&self.analysis_dir) {
            Ok(()) => pipeline::analyze_to_file(
                audio_16k,
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
                    audio_16k,
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
}
