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
pub mod cuda_runtime;
pub mod dataset;
pub mod dataset_layout;
pub mod derived;
pub mod devices;
pub mod disk;
pub mod doctor;
pub mod effects;
pub mod fetch;
pub mod handlers;
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
pub mod updates;
pub mod voice_engine;
pub mod voice_import;

pub use timbre_library::{db, error, jobs, library, monitor, settings, store};

pub use error::{ErrorKind, ErrorReport};
pub use library::{Library, Notification};
