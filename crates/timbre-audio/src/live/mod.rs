//! Live conversion's device side: a [`LiveSession`] captures the input device, hands blocks to
//! a [`BlockProcessor`] on one processing thread, and plays what it returns on the output (and
//! an optional monitor) device, each device at its own rate. Also the latency estimate and its
//! measurement through a real loop ([`loopback`]).

pub(crate) mod devices;
pub mod latency;
pub mod loopback;
mod measure;
mod session;
mod stats;
mod streams;
pub mod virtual_mic;

pub use devices::{OutputDevice, list_input_devices, list_output_devices};
pub use measure::{LoopbackRun, measure};
pub use session::{LiveSession, SessionRecording};
pub use stats::{
    FALLING_BEHIND_ADVICE, FALLING_BEHIND_BLOCKS, LiveDevice, LiveLevel, LiveState, LiveStats,
};

/// Turns each block of input into a block of output. Mono, at the session's rate.
///
/// It is built on the processing thread by the factory given to [`LiveSession::start`] and
/// stays there, so it need not be `Send`.
pub trait BlockProcessor {
    /// How many samples the next `process` call takes; may change between calls (the session
    /// then gathers blocks of the new size).
    fn block_size(&self) -> usize;
    /// Should return as many samples as it was given (more or fewer shift the output).
    fn process(&mut self, input: &[f32]) -> anyhow::Result<Vec<f32>>;
}

/// Builds the processor on the processing thread, given the session's rate.
pub type ProcessorFactory =
    Box<dyn FnOnce(u32) -> anyhow::Result<Box<dyn BlockProcessor>> + Send + 'static>;

#[derive(Debug, Clone, Default, PartialEq)]
/// Devices, gains and recording for a [`LiveSession`].
pub struct SessionConfig {
    /// Device names from [`list_input_devices`] / [`list_output_devices`] (or backend ids);
    /// `None` for the default.
    pub input: Option<String>,
    /// Output device for the processed audio; `None` for the default.
    pub output: Option<String>,
    /// A second output that also plays the processed audio, with its own gain.
    pub monitor: Option<String>,
    /// Initial gains; [`LiveSession::set_gains`] changes them while running.
    pub gains: Gains,
    /// Keep the session's input and output to return from [`LiveSession::stop`].
    pub record: bool,
    /// Play the output into a [`virtual_mic::VirtualMic`] made for the session, which other
    /// programs can record from, instead of the output device.
    pub virtual_mic: bool,
}

/// Gains in dB, applied to the input before processing and to each output after it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize, ts_rs::TS,
)]
pub struct Gains {
    /// Gain applied to the captured input, in dB.
    pub input_db: f32,
    /// Gain applied to the processed audio on the output device, in dB.
    pub output_db: f32,
    /// Gain applied to the processed audio on the monitor device, in dB.
    pub monitor_db: f32,
}
