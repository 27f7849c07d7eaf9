//! Timbre Studio's core: the library (SQLite + content store), the job system, the resource
//! monitor and settings. No Tauri here: `src-tauri` and `timbre-cli` are thin adapters over it.

pub mod clean;
pub mod convert;
pub mod dataset;
pub mod db;
pub mod devices;
pub mod error;
pub mod hashing;
pub mod import;
pub mod input;
pub mod jobs;
pub mod library;
pub mod models_folder;
pub mod monitor;
pub mod output_format;
pub mod settings;
pub mod store;
pub mod train;

use std::sync::Arc;

pub use error::{ErrorKind, ErrorReport};
pub use library::{Library, Notification};

/// Every job kind this build can run.
pub fn job_handlers() -> Vec<Arc<dyn jobs::JobHandler>> {
    vec![
        Arc::new(import::ImportHandler),
        Arc::new(convert::ConvertHandler::new()),
        Arc::new(clean::EnhanceHandler),
        Arc::new(clean::IsolateHandler::new()),
        Arc::new(dataset::DatasetHandler::default()),
        Arc::new(train::TrainHandler),
    ]
}
