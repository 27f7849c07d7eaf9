pub mod import;
pub mod jobs;
pub mod library;
pub mod record;
pub mod settings;

use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use timbre_core::Library;
use timbre_core::jobs::JobSystem;

pub fn open_library(data_dir: Option<&Path>) -> Result<Arc<Library>> {
    let dir = timbre_core::library::resolve_data_dir(data_dir)?;
    Ok(Arc::new(Library::open(&dir)?))
}

pub fn open_jobs(data_dir: Option<&Path>) -> Result<Arc<JobSystem>> {
    JobSystem::new(open_library(data_dir)?, timbre_core::job_handlers())
}

pub fn duration(secs: f64) -> String {
    format!("{}:{:04.1}", (secs / 60.0).floor() as u64, secs % 60.0)
}
