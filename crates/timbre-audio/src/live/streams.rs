//! The device side of a live session: the rings between the audio callbacks and the processing
//! thread, and the cpal streams that feed and drain them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, StreamTrait};
use cpal::{FromSample, SizedSample};

use super::SessionConfig;
use super::devices::{Direction, audio_host, default_config, device_error, find_device};
use super::stats::{AtomicGain, AtomicMs, LiveDevice, LiveStats};
use super::virtual_mic;
use crate::error::AudioError;
use crate::resample::StreamResampler;

/// Mono samples between a device callback and the processing thread, converted between the
/// device's rate and the session's on the way in.
pub(crate) struct Ring {
    state: Mutex<RingState>,
    ready: Condvar,
}

struct RingState {
    samples: VecDeque<f32>,
    resampler: StreamResampler,
    capacity: usize,
    /// Set by the first audio pushed after a reset.
    primed: bool,
    scratch: Vec<f32>,
}

impl Ring {
    pub fn new() -> Result<Ring, AudioError> {
        Ok(Ring {
            state: Mutex::new(RingState {
                samples: VecDeque::new(),
                resampler: StreamResampler::new(1, 1)?,
                capacity: 0,
                primed: false,
                scratch: Vec::new(),
            }),
            ready: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, RingState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Empties the ring for a (re)opened device: converts `from` → `to` Hz from now on, holds at
    /// most `capacity` samples, and starts with `prefill` samples of silence.
    pub fn reset(
        &self,
        from: u32,
        to: u32,
        capacity: usize,
        prefill: usize,
    ) -> Result<(), AudioError> {
        let mut state = self.lock();
        state.resampler = StreamResampler::new(from, to)?;
        state.samples.clear();
        state.samples.extend(std::iter::repeat_n(0.0, prefill));
        state.capacity = capacity.max(prefill);
        state.primed = false;
        Ok(())
    }

    /// Adds samples at the source rate; returns how many were dropped (oldest first) because
    /// the ring was full.
    pub fn push(&self, samples: &[f32], gain: f32) -> usize {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.scratch.clear();
        if state.resampler.push(samples, &mut state.scratch).is_err() {
            return samples.len();
        }
        state.samples.extend(state.scratch.iter().map(|s| s * gain));
        state.primed = true;
        let dropped = state.samples.len().saturating_sub(state.capacity);
        state.samples.drain(..dropped);
        drop(guard);
        self.ready.notify_all();
        dropped
    }

    /// Waits up to `timeout` for `n` samples and takes them.
    pub fn take(&self, n: usize, timeout: Duration) -> Option<Vec<f32>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while state.samples.len() < n {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state = self
                .ready
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Some(state.samples.drain(..n).collect())
    }

    /// Fills `out` from the ring, silence where it runs short; true when it ran short of audio
    /// it should have had (an underrun). Until the first processed audio arrives it plays
    /// silence and keeps the prefill, so the prefill is a block of headroom ahead of every
    /// processed block, as with rvc-next's block-sized duplex callbacks.
    pub fn fill(&self, out: &mut [f32]) -> bool {
        let mut state = self.lock();
        if !state.primed {
            out.fill(0.0);
            return false;
        }
        let n = out.len().min(state.samples.len());
        for (o, s) in out.iter_mut().zip(state.samples.drain(..n)) {
            *o = s;
        }
        out[n..].fill(0.0);
        n < out.len() && state.primed
    }

    pub fn wake(&self) {
        self.ready.notify_all();
    }
}

/// What the processing thread, the supervisor and the audio callbacks share.
pub(crate) struct Shared {
    pub input: Ring,
    pub output: Ring,
    pub monitor: Ring,
    pub input_gain: AtomicGain,
    pub output_gain: AtomicGain,
    pub monitor_gain: AtomicGain,
    pub overflows: AtomicU32,
    pub underruns: AtomicU32,
    pub input_latency: AtomicMs,
    pub output_latency: AtomicMs,
    /// Why a device stopped, set by its error callback; the supervisor reopens.
    pub lost: Mutex<Option<String>>,
    /// Milliseconds since `epoch` of the latest input callback (a stalled device is lost too).
    pub last_input: AtomicU64,
    /// Whether the input has delivered since the streams were opened.
    pub input_started: AtomicBool,
    pub epoch: Instant,
    pub stop: AtomicBool,
    pub stats: Mutex<LiveStats>,
}

impl Shared {
    pub fn stats(&self) -> MutexGuard<'_, LiveStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn take_lost(&self) -> Option<String> {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn mark_lost(&self, what: &str, err: &cpal::Error) {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| format!("the {what} device stopped: {err}"));
        self.input.wake();
    }

    pub fn millis_since_input(&self) -> u64 {
        let now = self.epoch.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_input.load(Ordering::Relaxed))
    }
}

/// The open streams; dropping them closes the devices.
pub(crate) struct Streams {
    _streams: Vec<cpal::Stream>,
    pub input: LiveDevice,
    pub output: LiveDevice,
    pub monitor: Option<LiveDevice>,
}

/// The session's rate for an input device rate: its own, at most 48 kHz.
pub(crate) fn session_rate(input_rate: u32) -> u32 {
    input_rate.min(48000)
}

pub(crate) struct Resolved {
    device: cpal::Device,
    config: cpal::SupportedStreamConfig,
    info: LiveDevice,
}

pub(crate) fn resolve(
    host: &cpal::Host,
    direction: Direction,
    wanted: Option<&str>,
) -> Result<Resolved, AudioError> {
    let device = find_device(host, direction, wanted)?;
    let word = if direction == Direction::Input {
        "input"
    } else {
        "output"
    };
    let name = wanted.map_or_else(
        || {
            device
                .description()
                .map_or_else(|_| "default".to_string(), |d| d.name().to_string())
        },
        str::to_string,
    );
    let config = default_config(&device, direction).map_err(|e| {
        device_error(format!(
            "the {word} device \"{name}\" cannot be opened: {e}"
        ))
    })?;
    let info = LiveDevice {
        name,
        sample_rate: config.sample_rate(),
        channels: config.channels(),
    };
    Ok(Resolved {
        device,
        config,
        info,
    })
}

impl Resolved {
    pub fn sample_rate(&self) -> u32 {
        self.info.sample_rate
    }
}

/// Opens the configured devices (again), resets the rings to their rates with one block of
/// output prefill, and starts the streams; the output's stream then plays into `output_sink`
/// (the virtual microphone's) when one is given.
pub(crate) fn open_streams(
    config: &SessionConfig,
    shared: &Arc<Shared>,
    rate: u32,
    block: usize,
    output_sink: Option<&str>,
) -> Result<Streams, AudioError> {
    let host = audio_host();
    let input = resolve(&host, Direction::Input, config.input.as_deref())?;
    let output = resolve(&host, Direction::Output, config.output.as_deref())?;
    let monitor = config
        .monitor
        .as_deref()
        .map(|name| resolve(&host, Direction::Output, Some(name)))
        .transpose()?;
    let scaled = |to: u32| (block as u64 * u64::from(to) / u64::from(rate)) as usize;
    shared
        .input
        .reset(input.sample_rate(), rate, rate as usize + 4 * block, 0)?;
    for (ring, device) in [
        (&shared.output, Some(&output)),
        (&shared.monitor, monitor.as_ref()),
    ] {
        if let Some(device) = device {
            let to = device.sample_rate();
            ring.reset(rate, to, 2 * to as usize + scaled(to) * 4, scaled(to))?;
        }
    }
    *shared.lost.lock().unwrap_or_else(PoisonError::into_inner) = None;
    shared.input_started.store(false, Ordering::Relaxed);
    shared
        .last_input
        .store(shared.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    let playing_before = output_sink
        .map(|_| virtual_mic::own_playback())
        .transpose()?;
    let mut streams = vec![build(&input, Role::Input, shared)?];
    streams.push(build(&output, Role::Output, shared)?);
    if let Some(monitor) = &monitor {
        streams.push(build(monitor, Role::Monitor, shared)?);
    }
    for stream in &streams {
        stream
            .play()
            .map_err(|e| device_error(format!("could not start the audio devices: {e}")))?;
    }
    if let (Some(sink), Some(before)) = (output_sink, &playing_before) {
        virtual_mic::route_output(sink, before)?;
    }
    Ok(Streams {
        _streams: streams,
        input: input.info,
        output: output.info,
        monitor: monitor.map(|m| m.info),
    })
}

/// Callbacks every [`PERIOD_MS`] where the device allows it. Left to the backend, PulseAudio's
/// ALSA plugin picks periods of seconds, and capture arrives in bursts that far apart.
const PERIOD_MS: u32 = 10;

fn period(config: &cpal::SupportedStreamConfig) -> cpal::BufferSize {
    match *config.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max } => {
            cpal::BufferSize::Fixed((config.sample_rate() * PERIOD_MS / 1000).clamp(min, max))
        }
        cpal::SupportedBufferSize::Unknown => cpal::BufferSize::Default,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Input,
    Output,
    Monitor,
}

impl Role {
    fn word(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Monitor => "monitor",
        }
    }
}

fn build(
    resolved: &Resolved,
    role: Role,
    shared: &Arc<Shared>,
) -> Result<cpal::Stream, AudioError> {
    use cpal::SampleFormat as F;
    let format = resolved.config.sample_format();
    let stream = match format {
        F::I8 => typed::<i8>(resolved, role, shared),
        F::I16 => typed::<i16>(resolved, role, shared),
        F::I24 => typed::<cpal::I24>(resolved, role, shared),
        F::I32 => typed::<i32>(resolved, role, shared),
        F::U8 => typed::<u8>(resolved, role, shared),
        F::U16 => typed::<u16>(resolved, role, shared),
        F::U32 => typed::<u32>(resolved, role, shared),
        F::F32 => typed::<f32>(resolved, role, shared),
        F::F64 => typed::<f64>(resolved, role, shared),
        other => {
            return Err(device_error(format!(
                "the {} device \"{}\" uses an unsupported sample format ({other})",
                role.word(),
                resolved.info.name
            )));
        }
    };
    stream.map_err(|e| {
        device_error(format!(
            "could not open the {} device \"{}\": {e}",
            role.word(),
            resolved.info.name
        ))
    })
}

fn typed<T>(
    resolved: &Resolved,
    role: Role,
    shared: &Arc<Shared>,
) -> Result<cpal::Stream, cpal::Error>
where
    T: SizedSample + FromSample<f32>,
    f32: FromSample<T>,
{
    let mut config = resolved.config.config();
    config.buffer_size = period(&resolved.config);
    let channels = usize::from(config.channels.max(1));
    let on_error = {
        let shared = Arc::clone(shared);
        move |err: cpal::Error| {
            use cpal::ErrorKind as K;
            match err.kind() {
                K::Xrun if role == Role::Input => {
                    shared.overflows.fetch_add(1, Ordering::Relaxed);
                }
                K::Xrun => {
                    shared.underruns.fetch_add(1, Ordering::Relaxed);
                }
                K::DeviceChanged | K::RealtimeDenied => {}
                _ => shared.mark_lost(role.word(), &err),
            }
        }
    };
    let shared = Arc::clone(shared);
    if role == Role::Input {
        let mut mono = Vec::new();
        let on_data = move |data: &[T], info: &cpal::InputCallbackInfo| {
            let stamp = info.timestamp();
            if let Some(latency) = stamp.callback.checked_duration_since(stamp.capture) {
                shared.input_latency.set(latency.as_secs_f64() * 1000.0);
            }
            let now = shared.epoch.elapsed().as_millis() as u64;
            shared.last_input.store(now, Ordering::Relaxed);
            shared.input_started.store(true, Ordering::Relaxed);
            mono.clear();
            mono.extend(data.chunks(channels).map(|frame| {
                frame.iter().map(|&s| s.to_sample::<f32>()).sum::<f32>() / channels as f32
            }));
            let dropped = shared.input.push(&mono, shared.input_gain.linear());
            if dropped > 0 {
                shared.overflows.fetch_add(1, Ordering::Relaxed);
            }
        };
        return resolved
            .device
            .build_input_stream(config, on_data, on_error, None);
    }
    let mut mono = Vec::new();
    let on_data = move |data: &mut [T], info: &cpal::OutputCallbackInfo| {
        let ring = if role == Role::Output {
            let stamp = info.timestamp();
            if let Some(latency) = stamp.playback.checked_duration_since(stamp.callback) {
                shared.output_latency.set(latency.as_secs_f64() * 1000.0);
            }
            &shared.output
        } else {
            &shared.monitor
        };
        mono.resize(data.len() / channels, 0.0);
        if ring.fill(&mut mono) && role == Role::Output {
            shared.underruns.fetch_add(1, Ordering::Relaxed);
        }
        for (frame, &s) in data.chunks_mut(channels).zip(&mono) {
            frame.fill(T::from_sample(s));
        }
    };
    resolved
        .device
        .build_output_stream(config, on_data, on_error, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_ring_keeps_its_prefill_until_the_first_block() {
        let ring = Ring::new().unwrap();
        ring.reset(48000, 48000, 100, 4).unwrap();
        let mut out = [1.0; 3];
        // Before any processed audio: silence, no underrun, the prefill stays.
        assert!(!ring.fill(&mut out));
        assert_eq!(out, [0.0; 3]);
        assert_eq!(ring.push(&[0.5, 0.5], 0.5), 0);
        let mut out = [1.0; 8];
        // The prefill, then the block at its gain, then an underrun.
        assert!(ring.fill(&mut out));
        assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 0.25, 0.25, 0.0, 0.0]);
    }

    #[test]
    fn input_ring_drops_the_oldest_when_full_and_gathers_blocks() {
        let ring = Ring::new().unwrap();
        ring.reset(16000, 16000, 4, 0).unwrap();
        assert_eq!(ring.push(&[1.0, 2.0, 3.0], 1.0), 0);
        assert_eq!(ring.push(&[4.0, 5.0, 6.0], 1.0), 2);
        assert_eq!(ring.take(5, Duration::from_millis(1)), None);
        assert_eq!(ring.take(4, Duration::ZERO), Some(vec![3.0, 4.0, 5.0, 6.0]));
    }

    #[test]
    fn ring_converts_rates_on_the_way_in() {
        let ring = Ring::new().unwrap();
        ring.reset(96000, 48000, 96000, 0).unwrap();
        ring.push(&vec![0.1; 9600], 1.0);
        // The resampler holds back up to a chunk; what came out is half as long.
        let state = ring.lock();
        let got = state.samples.len();
        assert!((3000..=4800).contains(&got), "{got}");
        assert!(
            state
                .samples
                .iter()
                .skip(got / 2)
                .all(|s| (s - 0.1).abs() < 0.01)
        );
    }

    #[test]
    fn session_rate_is_the_input_rate_at_most_48_khz() {
        assert_eq!(session_rate(44100), 44100);
        assert_eq!(session_rate(96000), 48000);
    }
}
