//! The app's recording: one capture at a time on a thread of its own, which owns the audio
//! stream (cpal's streams stay on the thread that made them), reporting its level as it goes;
//! stopped, it becomes a take (`take_files::save_recording`), or is thrown away. The `timbre record`
//! command records for a set time on its own thread instead (`timbre_audio::record`).

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

use anyhow::{Context, Result};
use timbre_audio::AudioBuffer;
use timbre_audio::analysis::Level;
use timbre_audio::record::{RecordOptions, Recording};

use crate::db::takes::Take;
use crate::library::Library;

/// The longest recording kept (three hours): capture stops there by itself.
pub const MAX_RECORDING_SECS: f64 = 3.0 * 3600.0;

/// The app's recorder: empty, or one capture running.
#[derive(Default)]
pub struct Recorder {
    active: Mutex<Option<Capture>>,
}

/// A capture running on its own thread.
struct Capture {
    stop: Sender<()>,
    captured: Receiver<Result<AudioBuffer, timbre_audio::AudioError>>,
}

impl Capture {
    fn start(
        device: Option<String>,
        on_level: impl FnMut(Level, f64) + Send + 'static,
    ) -> Result<Capture> {
        let (started_tx, started) = channel();
        let (stop, stop_requested) = channel::<()>();
        let (captured_tx, captured) = channel();
        std::thread::spawn(move || {
            let options = RecordOptions {
                device,
                max_duration_secs: Some(MAX_RECORDING_SECS),
            };
            match Recording::start(options, on_level) {
                Err(err) => {
                    let _ = started_tx.send(Err(err));
                }
                Ok(recording) => {
                    let _ = started_tx.send(Ok(()));
                    let _ = stop_requested.recv();
                    let _ = captured_tx.send(recording.stop());
                }
            }
        });
        started
            .recv()
            .context("the recording thread ended before starting")??;
        Ok(Capture { stop, captured })
    }

    fn finish(self) -> Result<AudioBuffer> {
        let _ = self.stop.send(());
        Ok(self
            .captured
            .recv()
            .context("the recording thread ended unexpectedly")??)
    }
}

impl Recorder {
    /// Starts capturing from `device` (the default input when None); `on_level` hears the
    /// level and the seconds captured, from the capture thread. Refused while one runs.
    pub fn start(
        &self,
        device: Option<String>,
        on_level: impl FnMut(Level, f64) + Send + 'static,
    ) -> Result<()> {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if active.is_some() {
            return Err(crate::error::busy("a recording is already running"));
        }
        *active = Some(Capture::start(device, on_level)?);
        Ok(())
    }

    fn take_active(&self) -> Result<Capture> {
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| crate::error::invalid_input("no recording is running"))
    }

    /// Stops the capture and saves it as a take (encoded, stored and described).
    pub fn stop(
        &self,
        library: &Library,
        name: Option<&str>,
        voice_id: Option<i64>,
    ) -> Result<Take> {
        let audio = self.take_active()?.finish()?;
        crate::take_files::save_recording(library, &audio, name, voice_id)
    }

    /// Stops the capture and throws it away.
    pub fn cancel(&self) -> Result<()> {
        self.take_active()?.finish()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    const CHILD_ENV: &str = "TIMBRE_RECORDER_TEST_DATA_DIR";

    #[test]
    fn stop_without_a_recording_and_a_second_start_are_refused() {
        let recorder = Recorder::default();
        let err = recorder.cancel().unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::InvalidInput);
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path()).unwrap();
        assert!(recorder.stop(&library, None, None).is_err());
    }

    /// alsa-lib reads its configuration once per process, so the capture runs in a child (this
    /// test binary again) whose HOME holds a fake capture device (`timbre_audio::record`).
    #[test]
    fn a_recording_from_a_fake_device_becomes_a_take_and_a_busy_recorder_refuses_another() {
        let home = tempfile::tempdir().unwrap();
        let raw = home.path().join("sine.raw");
        let sine = timbre_audio::signal::sine(16_000, 440.0, 5.0, 0.5);
        let asoundrc = timbre_audio::record::fake_alsa_device(&raw, &sine).unwrap();
        std::fs::write(home.path().join(".asoundrc"), asoundrc).unwrap();
        let data = home.path().join("library");
        let (passed, log) = timbre_test_support::run_in_fake_audio_home(
            "recording::tests::recorder_in_a_child",
            home.path(),
            &[(CHILD_ENV, data.as_os_str())],
        );
        assert!(passed, "the child's recording failed:\n{log}");
        let library = Library::open(&data).unwrap();
        let takes = crate::db::takes::list(&library.conn(), None).unwrap();
        assert_eq!(takes.len(), 1, "{log}");
        assert_eq!(takes[0].name, "fake mic");
        assert!(takes[0].duration_secs >= 1.0, "{:?}", takes[0]);
    }

    #[test]
    #[ignore = "run by the test above in a child process with a fake capture device"]
    fn recorder_in_a_child() {
        let data = std::env::var_os(CHILD_ENV).expect("run by the parent test");
        let library = Library::open(std::path::Path::new(&data)).unwrap();
        let recorder = Recorder::default();
        let heard = Arc::new(AtomicU64::new(0));
        let seconds = Arc::clone(&heard);
        recorder
            .start(None, move |_, s| {
                seconds.store(s.to_bits(), Ordering::SeqCst)
            })
            .unwrap();
        let err = recorder.start(None, |_, _| {}).unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::Busy);
        let deadline = Instant::now() + Duration::from_secs(20);
        while f64::from_bits(heard.load(Ordering::SeqCst)) < 1.0 {
            assert!(Instant::now() < deadline, "no second of audio arrived");
            std::thread::sleep(Duration::from_millis(10));
        }
        recorder.stop(&library, Some("fake mic"), None).unwrap();
    }
}
