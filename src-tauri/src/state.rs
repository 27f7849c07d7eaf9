//! [`AppState`], what every command can reach: the job system (and through it the library), the
//! model cache, the Record page's capture, the Live page's stream, the resource monitor and the
//! Clean page's previews.

use crate::commands::clean::PreviewState;
use std::sync::{Arc, Mutex};
use timbre_core::Library;
use timbre_core::jobs::JobSystem;
use timbre_core::live::LiveStream;
use timbre_core::model_cache::ModelCache;
use timbre_core::monitor::ResourceMonitor;
use timbre_core::recording::Recorder;

pub struct AppState {
    pub jobs: Arc<JobSystem>,
    /// The models every job and the previews load, shared.
    pub models: Arc<ModelCache>,
    /// The Record page's capture.
    pub recorder: Arc<Recorder>,
    /// The Live page's stream.
    pub live: Mutex<Option<LiveStream>>,
    pub monitor: Mutex<ResourceMonitor>,
    pub previews: Arc<PreviewState>,
}

impl AppState {
    pub fn new(jobs: Arc<JobSystem>, models: Arc<ModelCache>) -> Self {
        AppState {
            jobs,
            models,
            recorder: Arc::default(),
            live: Mutex::new(None),
            monitor: Mutex::new(ResourceMonitor::new()),
            previews: Arc::default(),
        }
    }

    pub fn library(&self) -> &Library {
        self.jobs.library()
    }
}
