//! Samples resources into `metrics` while a job runs, and raises each alert once per job.

use crate::db::{self, job_events::Level};
use crate::library::Library;
use crate::monitor::ResourceMonitor;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Sampler {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Sampler {
    pub fn start(library: Arc<Library>, job_id: i64) -> Sampler {
        let (stop, stopped) = channel();
        let thread = std::thread::spawn(move || {
            let settings = library.settings().unwrap_or_default();
            let interval = Duration::from_millis(settings.monitor_interval_ms.max(50));
            let mut monitor = ResourceMonitor::new();
            let mut alerted = HashSet::new();
            loop {
                let snapshot = monitor.snapshot();
                let conn = library.conn();
                // Metrics are best effort: a failed sample must never fail the job.
                let _ = db::metrics::insert_many(&conn, job_id, &db::now(), &snapshot.metrics());
                for alert in snapshot.alerts(&settings) {
                    if alerted.insert(alert.metric.clone()) {
                        let data = serde_json::to_value(&alert).unwrap_or_default();
                        let _ = db::job_events::insert(&conn, job_id, Level::Warn, "alert", &data);
                    }
                }
                drop(conn);
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    _ => break,
                }
            }
        });
        Sampler { stop, thread }
    }

    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
