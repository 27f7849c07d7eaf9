//! Timbre Studio's core: the job kinds (import, convert, clean, dataset, train, downloads,
//! voice imports) and the devices they run on, over the library of `timbre-library`, whose
//! modules it re-exports. No Tauri here: `src-tauri` and `timbre-cli` are thin adapters over it.
//!
//! Job modules are leaves: what two kinds share lives in a service module (`voice_engine`,
//! `separation`, `derived`, `take_files`, `model_import`, `dataset_layout`, `input`, `pitch`…)
//! that they both use, never in one of them.

#![forbid(unsafe_code)]

pub mod assets;
pub mod clean;
pub mod convert;
pub mod cover;
pub mod dataset;
pub mod dataset_layout;
pub mod derived;
pub mod devices;
pub mod disk;
pub mod doctor;
pub mod effects;
pub mod fetch;
pub mod hashing;
pub mod import;
pub mod input;
pub mod library_export;
pub mod live;
pub mod model_cache;
pub mod model_import;
pub mod models_folder;
mod out_folder;
pub mod output_format;
pub mod pitch;
pub mod pitch_analysis;
mod progress;
pub mod recording;
pub mod reveal;
pub mod separation;
pub mod take_files;
pub mod torch_errors;
pub mod train;
pub mod voice_engine;
pub mod voice_import;

pub use timbre_library::{db, error, jobs, library, monitor, settings, store};

use std::sync::Arc;

pub use error::{ErrorKind, ErrorReport};
pub use library::{Library, Notification};

/// Every job kind this build can run, the model-loading ones sharing `models`; libtorch's
/// out-of-memory failures in any of them reach the job system typed.
pub fn job_handlers(models: &Arc<model_cache::ModelCache>) -> Vec<Arc<dyn jobs::JobHandler>> {
    let engine = voice_engine::SharedEngine::new(models.clone());
    let kinds: [Arc<dyn jobs::JobHandler>; 9] = [
        Arc::new(import::ImportHandler),
        Arc::new(convert::ConvertHandler::new(engine.clone())),
        Arc::new(clean::EnhanceHandler),
        Arc::new(clean::IsolateHandler::new(models.clone())),
        Arc::new(cover::CoverHandler::new(engine)),
        Arc::new(dataset::DatasetHandler::new(models.clone())),
        Arc::new(train::TrainHandler),
        Arc::new(assets::DownloadHandler),
        Arc::new(voice_import::VoiceImportHandler),
    ];
    kinds
        .into_iter()
        .map(|kind| Arc::new(torch_errors::TypedTorchErrors(kind)) as Arc<dyn jobs::JobHandler>)
        .collect()
}
