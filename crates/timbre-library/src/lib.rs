//! Timbre Studio's library: the SQLite database, the content store, the job system, the resource
//! monitor and settings. No libtorch and no Tauri here: the job kinds that run models live in
//! `timbre-core`, which registers them with the job system.

#![forbid(unsafe_code)]

pub mod db;
pub mod error;
pub mod jobs;
pub mod library;
pub mod monitor;
pub mod settings;
pub mod store;
#[cfg(test)]
mod store_properties;
mod temp_sweep;

pub use error::{ErrorKind, ErrorReport};
pub use library::{Library, Notification};
