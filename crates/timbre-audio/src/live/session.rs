//! The live session: one processing thread that owns the processor, and a supervisor that owns
//! the device streams and reopens them when a device fails.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::devices::{Direction, audio_host, device_error};
use super::stats::{AtomicGain, AtomicMs, BlockTimes, LiveLevel, LiveState, LiveStats};
use super::streams::{Ring, Shared, Streams, open_streams, resolve, session_rate};
use super::virtual_mic::VirtualMic;
use super::{BlockProcessor, Gains, ProcessorFactory, SessionConfig};
use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

/// How often a lost device is tried again.
const REOPEN_INTERVAL: Duration = Duration::from_millis(500);
const SUPERVISE_INTERVAL: Duration = Duration::from_millis(50);
/// An input that delivers nothing this long is lost, even if it reported no error.
const INPUT_STALL_MS: u64 = 1500;
/// The longer wait for an opened input's first audio: a sound server or a Bluetooth headset
/// can take seconds to start delivering.
const INPUT_START_MS: u64 = 5000;
/// How long closing a device's streams may take before they are left to a thread of their own:
/// ALSA's PulseAudio plugin can block for ever in a stream whose sound server has died.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// What went in and came out of the processor, at the session's rate, mono.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecording {
    /// What the processor was given (after the input gain).
    pub input: AudioBuffer,
    /// What the processor returned, after the output gain.
    pub output: AudioBuffer,
}

/// A running live stream. Stopping (or dropping) it joins all its threads.
pub struct LiveSession {
    shared: Arc<Shared>,
    rate: u32,
    processing: Option<JoinHandle<Option<SessionRecording>>>,
    supervisor: Option<JoinHandle<()>>,
    /// Dropped after the streams are closed: its modules go once nothing plays into them. The
    /// device thread makes it again when the sound server restarts.
    virtual_mic: Option<Arc<Mutex<VirtualMic>>>,
}

fn processor_error(detail: String) -> AudioError {
    AudioError::new(AudioErrorKind::Processor, None, detail)
}

fn panic_message(panic: Box<dyn Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "it panicked".to_string())
}

impl LiveSession {
    /// Opens the devices and starts streaming. `factory` builds the processor on the processing
    /// thread from the session's rate (the input device's, at most 48 kHz); the devices start
    /// once it is built, with one block of silence ahead in each output.
    pub fn start(
        config: SessionConfig,
        factory: ProcessorFactory,
    ) -> Result<LiveSession, AudioError> {
        let host = audio_host();
        let input = resolve(&host, Direction::Input, config.input.as_deref())?;
        let rate = session_rate(input.sample_rate());
        resolve(&host, Direction::Output, config.output.as_deref())?;
        if let Some(monitor) = &config.monitor {
            resolve(&host, Direction::Output, Some(monitor))?;
        }
        let shared = Arc::new(Shared {
            input: Ring::new()?,
            output: Ring::new()?,
            monitor: Ring::new()?,
            input_gain: AtomicGain::new(config.gains.input_db),
            output_gain: AtomicGain::new(config.gains.output_db),
            monitor_gain: AtomicGain::new(config.gains.monitor_db),
            overflows: AtomicU32::new(0),
            underruns: AtomicU32::new(0),
            input_latency: AtomicMs::unset(),
            output_latency: AtomicMs::unset(),
            lost: Mutex::new(None),
            last_input: AtomicU64::new(0),
            input_started: AtomicBool::new(false),
            epoch: Instant::now(),
            stop: AtomicBool::new(false),
            stats: Mutex::new(LiveStats::starting(rate)),
        });
        let (ready_tx, ready_rx) = mpsc::channel();
        let processing = {
            let shared = Arc::clone(&shared);
            let (record, monitor) = (config.record, config.monitor.is_some());
            std::thread::Builder::new()
                .name("timbre-live-process".into())
                .spawn(move || process_blocks(&shared, factory, rate, record, monitor, ready_tx))
                .map_err(|e| device_error(format!("could not start the processing thread: {e}")))?
        };
        let mut session = LiveSession {
            shared,
            rate,
            processing: Some(processing),
            supervisor: None,
            virtual_mic: None,
        };
        let block = match ready_rx.recv() {
            Ok(Ok(block)) => block,
            Ok(Err(detail)) => {
                let _ = session.shutdown();
                return Err(processor_error(format!(
                    "the processor could not be built: {detail}"
                )));
            }
            Err(_) => {
                let _ = session.shutdown();
                return Err(processor_error(
                    "the processing thread ended before it started".into(),
                ));
            }
        };
        {
            let mut stats = session.shared.stats();
            stats.block_size = block as u32;
            stats.budget_ms = 1000.0 * block as f64 / f64::from(rate);
        }
        let opened = config
            .virtual_mic
            .then(VirtualMic::create)
            .transpose()
            .and_then(|mic| {
                session.shared.stats().virtual_mic = mic.as_ref().map(|mic| mic.source().into());
                session.virtual_mic = mic.map(|mic| Arc::new(Mutex::new(mic)));
                open(
                    &config,
                    &session.shared,
                    rate,
                    block,
                    session.virtual_mic.as_deref(),
                )
            });
        let streams = match opened {
            Ok(opened) => opened,
            Err(err) => {
                let _ = session.shutdown();
                return Err(err);
            }
        };
        running(&session.shared, &streams);
        let shared = Arc::clone(&session.shared);
        let mic = session.virtual_mic.clone();
        session.supervisor = Some(
            std::thread::Builder::new()
                .name("timbre-live-devices".into())
                .spawn(move || supervise(&shared, &config, rate, streams, mic.as_deref()))
                .map_err(|e| device_error(format!("could not start the device thread: {e}")))?,
        );
        Ok(session)
    }

    /// The processor's sample rate.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// A snapshot of the session's state, levels, timing and device counters.
    pub fn stats(&self) -> LiveStats {
        let shared = &*self.shared;
        let mut stats = shared.stats().clone();
        stats.input_overflows = shared.overflows.load(Ordering::Relaxed);
        stats.output_underruns = shared.underruns.load(Ordering::Relaxed);
        stats.input_latency_ms = shared.input_latency.get();
        stats.output_latency_ms = shared.output_latency.get();
        stats
    }

    /// Applies from the next callback (input) or block (outputs) on.
    pub fn set_gains(&self, gains: Gains) {
        self.shared.input_gain.set_db(gains.input_db);
        self.shared.output_gain.set_db(gains.output_db);
        self.shared.monitor_gain.set_db(gains.monitor_db);
    }

    /// Stops the devices and the processing thread; returns what went in and out when the
    /// session was started with `record`.
    pub fn stop(mut self) -> Result<Option<SessionRecording>, AudioError> {
        self.shutdown().map_err(processor_error)
    }

    fn shutdown(&mut self) -> Result<Option<SessionRecording>, String> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.input.wake();
        if let Some(supervisor) = self.supervisor.take() {
            // A panic here could only come from a device callback's thread; the streams are
            // dropped either way.
            let _ = supervisor.join();
        }
        let recording = match self.processing.take().map(JoinHandle::join) {
            Some(Ok(recording)) => Ok(recording),
            Some(Err(panic)) => Err(format!(
                "the processing thread failed: {}",
                panic_message(panic)
            )),
            None => Ok(None),
        };
        let mut stats = self.shared.stats();
        if stats.state != LiveState::Failed {
            stats.state = LiveState::Stopped;
        }
        recording
    }
}

impl Drop for LiveSession {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn running(shared: &Shared, streams: &Streams) {
    let mut stats = shared.stats();
    stats.state = LiveState::Running;
    stats.message = None;
    stats.input_device = Some(streams.input.clone());
    stats.output_device = Some(streams.output.clone());
    stats.monitor_device = streams.monitor.clone();
}

/// The processing thread: builds the processor, then takes blocks from the input ring until
/// the session stops or the processor fails.
fn process_blocks(
    shared: &Shared,
    factory: ProcessorFactory,
    rate: u32,
    record: bool,
    monitor: bool,
    ready: mpsc::Sender<Result<usize, String>>,
) -> Option<SessionRecording> {
    let mut processor: Box<dyn BlockProcessor> =
        match catch_unwind(AssertUnwindSafe(|| factory(rate))) {
            Ok(Ok(processor)) => processor,
            Ok(Err(err)) => {
                let _ = ready.send(Err(format!("{err:#}")));
                return None;
            }
            Err(panic) => {
                let _ = ready.send(Err(panic_message(panic)));
                return None;
            }
        };
    let _ = ready.send(Ok(processor.block_size().max(1)));
    let (mut heard, mut played) = (Vec::new(), Vec::new());
    let mut times = BlockTimes::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let n = processor.block_size().max(1);
        let Some(block) = shared.input.take(n, Duration::from_millis(100)) else {
            continue;
        };
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| processor.process(&block)));
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let out = match result {
            Ok(Ok(out)) => out,
            Ok(Err(err)) => {
                fail(shared, format!("{err:#}"));
                break;
            }
            Err(panic) => {
                fail(shared, panic_message(panic));
                break;
            }
        };
        let gain = shared.output_gain.linear();
        shared.output.push(&out, gain);
        if monitor {
            shared.monitor.push(&out, shared.monitor_gain.linear());
        }
        {
            let mut stats = shared.stats();
            stats.block_size = n as u32;
            stats.input_level = LiveLevel::of(&block);
            stats.output_level = LiveLevel::of(&out).scaled(gain);
            times.record(&mut stats, elapsed_ms, 1000.0 * n as f64 / f64::from(rate));
        }
        if record {
            heard.extend_from_slice(&block);
            played.extend(out.iter().map(|s| s * gain));
        }
    }
    record.then(|| SessionRecording {
        input: AudioBuffer::new(rate, vec![heard]),
        output: AudioBuffer::new(rate, vec![played]),
    })
}

fn fail(shared: &Shared, detail: String) {
    let mut stats = shared.stats();
    stats.state = LiveState::Failed;
    stats.message = Some(format!(
        "the live stream stopped: the processor failed: {detail}"
    ));
    stats.processor_error = Some(detail);
}

/// Whether an input silent for `silent_ms` counts as lost: [`INPUT_STALL_MS`] once it has
/// delivered, [`INPUT_START_MS`] before its first audio.
fn input_stalled(started: bool, silent_ms: u64) -> bool {
    silent_ms
        > if started {
            INPUT_STALL_MS
        } else {
            INPUT_START_MS
        }
}

/// Opens the streams, the output into the virtual microphone when the session has one (made
/// again first when the sound server no longer has it).
fn open(
    config: &SessionConfig,
    shared: &Arc<Shared>,
    rate: u32,
    block: usize,
    virtual_mic: Option<&Mutex<VirtualMic>>,
) -> Result<Streams, AudioError> {
    match virtual_mic {
        Some(mic) => {
            let mut mic = mic.lock().unwrap_or_else(PoisonError::into_inner);
            mic.ensure()?;
            open_streams(config, shared, rate, block, Some(mic.sink()))
        }
        None => open_streams(config, shared, rate, block, None),
    }
}

/// The device thread: holds the streams, and closes and reopens them every
/// [`REOPEN_INTERVAL`] when a device fails, until it is back.
fn supervise(
    shared: &Arc<Shared>,
    config: &SessionConfig,
    rate: u32,
    streams: Streams,
    virtual_mic: Option<&Mutex<VirtualMic>>,
) {
    let mut streams = Some(streams);
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(SUPERVISE_INTERVAL);
        if shared.stats().state == LiveState::Failed {
            break;
        }
        let lost = shared.take_lost().or_else(|| {
            let started = shared.input_started.load(Ordering::Relaxed);
            input_stalled(started, shared.millis_since_input())
                .then(|| "the input device stopped delivering audio".to_string())
        });
        let Some(why) = lost else { continue };
        close(streams.take());
        {
            let mut stats = shared.stats();
            stats.state = LiveState::Reopening;
            stats.message = Some(format!("{why}; opening it again"));
        }
        let mut next_try = Instant::now() + REOPEN_INTERVAL;
        while !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(SUPERVISE_INTERVAL);
            if Instant::now() < next_try {
                continue;
            }
            next_try = Instant::now() + REOPEN_INTERVAL;
            let block = (shared.stats().block_size as usize).max(1);
            match open(config, shared, rate, block, virtual_mic) {
                Ok(opened) => {
                    running(shared, &opened);
                    streams = Some(opened);
                    break;
                }
                Err(err) => {
                    shared.stats().message = Some(format!("{why}; opening it again: {err}"))
                }
            }
        }
    }
    close(streams);
}

/// Closes `streams` within [`CLOSE_TIMEOUT`]: a close that takes longer goes on in the
/// background, so that neither reopening nor stopping the session waits on a hung driver.
fn close(streams: Option<Streams>) {
    let Some(streams) = streams else { return };
    let (closed, wait) = mpsc::channel();
    let closing = std::thread::Builder::new()
        .name("live-close".into())
        .spawn(move || {
            drop(streams);
            let _ = closed.send(());
        });
    if closing.is_ok() && wait.recv_timeout(CLOSE_TIMEOUT).is_err() {
        eprintln!(
            "timbre: closing the audio streams took over {CLOSE_TIMEOUT:?}; left to finish in \
             the background"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_gets_longer_to_start_than_to_stall() {
        assert!(!input_stalled(false, INPUT_STALL_MS + 1));
        assert!(!input_stalled(false, INPUT_START_MS));
        assert!(input_stalled(false, INPUT_START_MS + 1));
        assert!(!input_stalled(true, INPUT_STALL_MS));
        assert!(input_stalled(true, INPUT_STALL_MS + 1));
    }
}
