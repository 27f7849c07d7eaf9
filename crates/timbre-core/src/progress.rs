//! A job's progress as the audio code takes it.

use anyhow::Result;

/// Maps a job's `progress` (which fails once cancellation is asked for) onto the
/// `FnMut(f64) -> bool` the audio code takes, keeping the error to return.
pub(crate) struct ProgressBridge<'a> {
    report: &'a dyn Fn(f64, String) -> Result<()>,
    pub stopped: Option<anyhow::Error>,
}

impl<'a> ProgressBridge<'a> {
    pub fn new(report: &'a dyn Fn(f64, String) -> Result<()>) -> Self {
        ProgressBridge {
            report,
            stopped: None,
        }
    }

    /// Reports; false once the job must stop.
    pub fn report(&mut self, fraction: f64, message: String) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        match (self.report)(fraction, message) {
            Ok(()) => true,
            Err(err) => {
                self.stopped = Some(err);
                false
            }
        }
    }

    /// The error to return for a processing error: the reason it stopped, if it was stopped.
    pub fn error(&mut self, err: timbre_audio::enhance::ProcessError) -> anyhow::Error {
        match self.stopped.take() {
            Some(stopped) => stopped,
            None => match err {
                timbre_audio::enhance::ProcessError::Audio(audio) => audio.into(),
                timbre_audio::enhance::ProcessError::Cancelled => crate::jobs::Cancelled.into(),
            },
        }
    }
}
