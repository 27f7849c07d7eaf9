use crate::commands::clean::PreviewState;
use crate::commands::record::ActiveRecording;
use std::sync::{Arc, Mutex};
use timbre_core::Library;
use timbre_core::jobs::JobSystem;
use timbre_core::monitor::ResourceMonitor;

pub struct AppState {
    pub jobs: Arc<JobSystem>,
    pub recording: Mutex<Option<ActiveRecording>>,
    pub monitor: Mutex<ResourceMonitor>,
    pub previews: Arc<PreviewState>,
}

impl AppState {
    pub fn new(jobs: Arc<JobSystem>) -> Self {
        AppState {
            jobs,
            recording: Mutex::new(None),
            monitor: Mutex::new(ResourceMonitor::new()),
            previews: Arc::default(),
        }
    }

    pub fn library(&self) -> &Library {
        self.jobs.library()
    }
}
