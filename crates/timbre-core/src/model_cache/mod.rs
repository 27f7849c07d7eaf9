//! One cache of loaded models for the whole process: HuBERT, RMVPE, voices, indexes and
//! separation models, shared by every job kind and by the app's previews, so a model that one
//! job loaded is a hit for the next whatever its kind. Entries are keyed by kind, the identity
//! of the file (its content hash where the library knows it, else path, size and time), the
//! device and the weights' precision; the whole cache is bounded by the `model_cache_mb`
//! setting, least recently used first out; the out-of-memory path empties it.
//!
//! A model is handed out as [`Shared`]: the cache and every user hold it together, so evicting
//! a model that a job is still running frees it when that job lets go.

mod loaders;

pub use loaders::StoredFile;

use std::any::Any;
use std::sync::{Mutex, MutexGuard};

use anyhow::{Result, anyhow};
use lru::LruCache;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use timbre_nn::Shared;

/// Whether a lookup was served from a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CacheUse {
    /// Served from memory: the model or analysis was already loaded.
    Memory,
    /// Read back from a cache on disk (analyses only).
    Disk,
    /// Not cached: loaded or computed afresh.
    Computed,
}

impl CacheUse {
    /// The lower-case name, as serialised: `memory`, `disk` or `computed`.
    pub fn name(self) -> &'static str {
        match self {
            CacheUse::Memory => "memory",
            CacheUse::Disk => "disk",
            CacheUse::Computed => "computed",
        }
    }
}

/// What kind of model a cache entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// A HuBERT/ContentVec feature extractor.
    Hubert,
    /// An RMVPE pitch network.
    Rmvpe,
    /// An FCPE pitch network.
    Fcpe,
    /// A CREPE pitch network (full or tiny).
    Crepe,
    /// A SwiftF0 pitch network.
    SwiftF0,
    /// A PESTO pitch network.
    Pesto,
    /// A voice's synthesizer (an RVC `.pth`).
    Voice,
    /// A voice's feature index (`.index`), searched on the CPU.
    Index,
    /// A RoFormer separation model.
    Separator,
}

/// What makes two loads the same model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelKey {
    /// The kind of model.
    pub kind: ModelKind,
    /// The file's content SHA-256 when it is in the store, else the path, size and modification
    /// time of its file (or of every file of its folder).
    pub identity: String,
    /// The device, as tch's `Device` debug-prints it (`Cpu`, `Cuda(0)`).
    pub device: String,
    /// The weights' precision: `fp32`, `fp16` or `bf16`.
    pub precision: String,
}

/// A `Shared<T>` of any model type.
trait HeldModel: Any + Send + Sync {
    fn holders(&self) -> usize;
}

impl<T: Send + 'static> HeldModel for Shared<T> {
    fn holders(&self) -> usize {
        Shared::holders(self)
    }
}

struct Entry {
    model: Box<dyn HeldModel>,
    name: String,
    bytes: u64,
    hits: u64,
}

struct State {
    budget: u64,
    entries: LruCache<ModelKey, Entry>,
    hits: u64,
    misses: u64,
    evictions: u64,
}

/// The process's cache of loaded models, bounded in bytes, least recently used out first.
pub struct ModelCache {
    state: Mutex<State>,
}

/// One cached model, as the Jobs page lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CachedModel {
    /// The kind of model.
    pub kind: ModelKind,
    /// What the user calls it: the voice's or separation model's name, else its file's name.
    pub name: String,
    /// The device it is loaded on (`Cpu`, `Cuda(0)`).
    pub device: String,
    /// The weights' precision: `fp32`, `fp16` or `bf16`.
    pub precision: String,
    /// What it counts for against the budget, in bytes: its weights' size on disk (doubled for
    /// voices).
    pub bytes: u64,
    /// Lookups it has served since it was loaded.
    pub hits: u64,
    /// A job holds it now.
    pub in_use: bool,
}

/// What the cache holds and how well it has served, most recently used model first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelCacheReport {
    /// The most the models may hold, in bytes (the `model_cache_mb` setting).
    pub budget_bytes: u64,
    /// What the cached models hold, in bytes; over the budget only when the newest model alone is.
    pub used_bytes: u64,
    /// Lookups served from the cache since it was created.
    pub hits: u64,
    /// Lookups that had to load their model.
    pub misses: u64,
    /// Models dropped to fit the budget (emptying the cache not counted).
    pub evictions: u64,
    /// The cached models, most recently used first.
    pub models: Vec<CachedModel>,
}

/// Bounded by the setting's default until a job reads the library's settings.
impl Default for ModelCache {
    fn default() -> Self {
        ModelCache::with_budget_mb(crate::settings::Settings::default().model_cache_mb)
    }
}

impl ModelCache {
    /// An empty cache of at most `budget_bytes` (the newest model stays even when it alone is
    /// over).
    pub fn new(budget_bytes: u64) -> ModelCache {
        ModelCache {
            state: Mutex::new(State {
                budget: budget_bytes,
                entries: LruCache::unbounded(),
                hits: 0,
                misses: 0,
                evictions: 0,
            }),
        }
    }

    /// A cache bounded by the `model_cache_mb` setting.
    pub fn with_budget_mb(mb: u64) -> ModelCache {
        ModelCache::new(mb.saturating_mul(1 << 20))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follows a changed `model_cache_mb` setting, evicting what no longer fits.
    pub fn set_budget_mb(&self, mb: u64) {
        let mut state = self.state();
        state.budget = mb.saturating_mul(1 << 20);
        state.evict_to_budget();
    }

    /// The model under `key`, or the one `load` gives (with the bytes it takes), kept for next
    /// time. Loads run under the cache's lock, so two jobs asking for one model load it once.
    pub fn get_or_load<T: Send + 'static>(
        &self,
        key: ModelKey,
        name: &str,
        load: impl FnOnce() -> Result<(T, u64)>,
    ) -> Result<(Shared<T>, CacheUse)> {
        let mut state = self.state();
        if let Some(entry) = state.entries.get_mut(&key) {
            entry.hits += 1;
            let model = (entry.model.as_ref() as &dyn Any)
                .downcast_ref::<Shared<T>>()
                .ok_or_else(|| {
                    anyhow!("the model cache holds {name} as another type than asked for")
                })?
                .clone();
            state.hits += 1;
            return Ok((model, CacheUse::Memory));
        }
        state.misses += 1;
        let (model, bytes) = load()?;
        let model = Shared::new(model);
        state.entries.put(
            key,
            Entry {
                model: Box::new(model.clone()),
                name: name.to_string(),
                bytes,
                hits: 0,
            },
        );
        state.evict_to_budget();
        Ok((model, CacheUse::Computed))
    }

    /// Drops every model (after an out-of-memory failure, or on request); jobs holding one keep
    /// it until they finish.
    pub fn clear(&self) {
        self.state().entries.clear();
    }

    /// What the cache holds now, and how well it has served.
    pub fn report(&self) -> ModelCacheReport {
        let state = self.state();
        ModelCacheReport {
            budget_bytes: state.budget,
            used_bytes: state.used_bytes(),
            hits: state.hits,
            misses: state.misses,
            evictions: state.evictions,
            models: state
                .entries
                .iter()
                .map(|(key, entry)| CachedModel {
                    kind: key.kind,
                    name: entry.name.clone(),
                    device: key.device.clone(),
                    precision: key.precision.clone(),
                    bytes: entry.bytes,
                    hits: entry.hits,
                    in_use: entry.model.holders() > 1,
                })
                .collect(),
        }
    }
}

impl State {
    fn used_bytes(&self) -> u64 {
        self.entries.iter().map(|(_, e)| e.bytes).sum()
    }

    /// Least recently used first; the most recent model stays even when it alone is over.
    fn evict_to_budget(&mut self) {
        while self.entries.len() > 1 && self.used_bytes() > self.budget {
            self.entries.pop_lru();
            self.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests;
