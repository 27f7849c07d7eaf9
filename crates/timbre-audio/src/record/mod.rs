//! Microphone capture through cpal (ALSA on Linux).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, StreamTrait};
use cpal::{FromSample, SizedSample};

use crate::analysis::{Level, LevelMeter};
use crate::buffer::AudioBuffer;
use crate::error::AudioError;
use crate::live::devices::{Direction, audio_host, device_error, find_device};

mod fake_alsa;
pub use fake_alsa::{fake_alsa_config, fake_alsa_device};

const LEVEL_INTERVAL: Duration = Duration::from_millis(50);
const LEVEL_WINDOW_SECS: f32 = 0.1;
/// Captured audio is kept in blocks of this length so the audio callback never moves what
/// it already stored (one growing Vec would copy everything on each reallocation).
const BLOCK_SECS: usize = 1;

#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
/// A capture device and its default format.
pub struct InputDevice {
    /// Pass this back as [`RecordOptions::device`] to record from the device.
    pub name: String,
    /// Whether this is the host's default input device.
    pub is_default: bool,
    /// Channel count of the device's default configuration.
    pub channels: u16,
    /// Sample rate of the device's default configuration, in Hz.
    pub sample_rate: u32,
}

#[derive(Debug, Clone, Default, PartialEq)]
/// Which device to record from, and for how long at most.
pub struct RecordOptions {
    /// A name from [`list_input_devices`] (or a backend device id); `None` for the default.
    pub device: Option<String>,
    /// Capture stops accepting audio after exactly this many seconds of frames.
    pub max_duration_secs: Option<f64>,
}

/// Devices that can capture, with their default format. Devices that fail to report a
/// capture configuration are left out.
pub use crate::live::list_input_devices;

#[derive(Default)]
struct Capture {
    /// Interleaved samples; every block but the last holds exactly `block_samples`.
    blocks: Vec<Vec<f32>>,
    block_samples: usize,
    /// Total samples in `blocks`.
    len: usize,
    error: Option<String>,
}

impl Capture {
    fn push<T: SizedSample>(&mut self, mut data: &[T])
    where
        f32: FromSample<T>,
    {
        self.len += data.len();
        while !data.is_empty() {
            let block = match self.blocks.last_mut() {
                Some(block) if block.len() < self.block_samples => block,
                _ => {
                    self.blocks.push(Vec::with_capacity(self.block_samples));
                    self.blocks.last_mut().expect("just pushed")
                }
            };
            let n = (self.block_samples - block.len()).min(data.len());
            block.extend(data[..n].iter().map(|&s| s.to_sample::<f32>()));
            data = &data[n..];
        }
    }

    /// The samples from index `from` on, as consecutive slices.
    fn since(&self, from: usize) -> impl Iterator<Item = &[f32]> {
        let (first, skip) = (from / self.block_samples, from % self.block_samples);
        self.blocks
            .iter()
            .skip(first)
            .enumerate()
            .map(move |(i, block)| {
                if i == 0 {
                    &block[skip.min(block.len())..]
                } else {
                    &block[..]
                }
            })
    }
}

struct Shared {
    capture: Mutex<Capture>,
    grew: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Capture> {
        self.capture.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running capture on its own cpal stream.
pub struct Recording {
    stream: cpal::Stream,
    shared: Arc<Shared>,
    sample_rate: u32,
    channels: u16,
    /// Interleaved sample count at which capture stops, from `max_duration_secs`.
    max_samples: Option<usize>,
    level_thread: (mpsc::Sender<()>, JoinHandle<()>),
}

impl Recording {
    /// Starts capturing from the chosen device in its default format. `on_level` is called
    /// about 20 times a second from a separate thread, with the level of the latest audio and
    /// the seconds captured so far.
    pub fn start(
        opts: RecordOptions,
        on_level: impl FnMut(Level, f64) + Send + 'static,
    ) -> Result<Recording, AudioError> {
        let host = audio_host();
        let device = find_device(&host, Direction::Input, opts.device.as_deref())?;
        let config = device
            .default_input_config()
            .map_err(|e| device_error(format!("the input device cannot record: {e}")))?;
        let (sample_rate, channels) = (config.sample_rate(), config.channels());
        let max_samples = opts.max_duration_secs.map(|secs| {
            (secs * f64::from(sample_rate)).round().max(0.0) as usize * usize::from(channels)
        });

        let capture = Capture {
            block_samples: (sample_rate as usize * BLOCK_SECS * usize::from(channels)).max(1),
            ..Capture::default()
        };
        let shared = Arc::new(Shared {
            capture: Mutex::new(capture),
            grew: Condvar::new(),
        });

        let stream = build_stream(&device, config, Arc::clone(&shared), max_samples)?;
        stream
            .play()
            .map_err(|e| device_error(format!("could not start recording: {e}")))?;
        let level_thread =
            spawn_level_thread(Arc::clone(&shared), sample_rate, channels, on_level)?;
        Ok(Recording {
            stream,
            shared,
            sample_rate,
            channels,
            max_samples,
            level_thread,
        })
    }

    /// Seconds of audio captured so far.
    pub fn seconds_captured(&self) -> f64 {
        seconds(self.shared.lock().len, self.sample_rate, self.channels)
    }

    /// Blocks until `secs` seconds of frames have been captured (capped at
    /// `max_duration_secs`), the device fails, or `timeout` passes.
    pub fn wait_for_seconds(&self, secs: f64, timeout: Duration) -> Result<(), AudioError> {
        let frames = (secs * f64::from(self.sample_rate)).round().max(0.0) as usize;
        let mut target = frames * usize::from(self.channels);
        if let Some(max) = self.max_samples {
            target = target.min(max);
        }
        let deadline = Instant::now() + timeout;
        let mut capture = self.shared.lock();
        loop {
            if capture.len >= target {
                return Ok(());
            }
            if let Some(err) = &capture.error {
                return Err(device_error(format!("recording stopped: {err}")));
            }
            let now = Instant::now();
            if now >= deadline {
                let got = seconds(capture.len, self.sample_rate, self.channels);
                return Err(device_error(format!(
                    "timed out after {:.1} s waiting for {secs:.2} s of audio (got {got:.2} s)",
                    timeout.as_secs_f64()
                )));
            }
            capture = self
                .shared
                .grew
                .wait_timeout(capture, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Stops the stream and returns everything captured.
    pub fn stop(self) -> Result<AudioBuffer, AudioError> {
        let Recording {
            stream,
            shared,
            sample_rate,
            channels,
            level_thread: (stop_levels, level_thread),
            ..
        } = self;
        drop(stream);
        drop(stop_levels);
        // A panic in the caller's level callback must not lose the recording.
        let _ = level_thread.join();
        let capture = std::mem::take(&mut *shared.lock());
        if let (0, Some(err)) = (capture.len, capture.error) {
            return Err(device_error(format!("recording failed: {err}")));
        }
        let samples = capture.blocks.concat();
        Ok(AudioBuffer::from_interleaved(
            sample_rate,
            channels,
            &samples,
        ))
    }
}

fn seconds(samples: usize, rate: u32, channels: u16) -> f64 {
    samples as f64 / f64::from(channels.max(1)) / f64::from(rate.max(1))
}

fn spawn_level_thread(
    shared: Arc<Shared>,
    rate: u32,
    channels: u16,
    mut on_level: impl FnMut(Level, f64) + Send + 'static,
) -> Result<(mpsc::Sender<()>, JoinHandle<()>), AudioError> {
    let (stop, stopped) = mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("timbre-record-level".into())
        .spawn(move || {
            let mut meter = LevelMeter::new(rate, LEVEL_WINDOW_SECS);
            let mut seen = 0;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(LEVEL_INTERVAL) {
                let (level, secs) = {
                    let capture = shared.lock();
                    for samples in capture.since(seen) {
                        meter.push_interleaved(samples, channels);
                    }
                    seen = capture.len;
                    (meter.reading(), seconds(seen, rate, channels))
                };
                on_level(level, secs);
            }
        })
        .map_err(|e| device_error(format!("could not start the level meter: {e}")))?;
    Ok((stop, handle))
}

fn build_stream(
    device: &cpal::Device,
    config: cpal::SupportedStreamConfig,
    shared: Arc<Shared>,
    max_samples: Option<usize>,
) -> Result<cpal::Stream, AudioError> {
    use cpal::SampleFormat as F;
    let format = config.sample_format();
    let config = config.config();
    let stream = match format {
        F::I8 => typed_stream::<i8>(device, config, shared, max_samples),
        F::I16 => typed_stream::<i16>(device, config, shared, max_samples),
        F::I24 => typed_stream::<cpal::I24>(device, config, shared, max_samples),
        F::I32 => typed_stream::<i32>(device, config, shared, max_samples),
        F::U8 => typed_stream::<u8>(device, config, shared, max_samples),
        F::U16 => typed_stream::<u16>(device, config, shared, max_samples),
        F::U32 => typed_stream::<u32>(device, config, shared, max_samples),
        F::F32 => typed_stream::<f32>(device, config, shared, max_samples),
        F::F64 => typed_stream::<f64>(device, config, shared, max_samples),
        other => {
            return Err(device_error(format!(
                "the input device uses an unsupported sample format ({other})"
            )));
        }
    };
    stream.map_err(|e| device_error(format!("could not open the input device: {e}")))
}

fn typed_stream<T>(
    device: &cpal::Device,
    config: cpal::StreamConfig,
    shared: Arc<Shared>,
    max_samples: Option<usize>,
) -> Result<cpal::Stream, cpal::Error>
where
    T: SizedSample,
    f32: FromSample<T>,
{
    let on_error = {
        let shared = Arc::clone(&shared);
        move |err: cpal::Error| {
            use cpal::ErrorKind as K;
            // Glitches and route changes leave the stream running.
            if matches!(err.kind(), K::Xrun | K::DeviceChanged | K::RealtimeDenied) {
                return;
            }
            shared.lock().error.get_or_insert_with(|| err.to_string());
            shared.grew.notify_all();
        }
    };
    let on_data = move |data: &[T], _: &cpal::InputCallbackInfo| {
        let mut capture = shared.lock();
        let room = max_samples.map_or(data.len(), |max| max.saturating_sub(capture.len));
        capture.push(&data[..room.min(data.len())]);
        drop(capture);
        shared.grew.notify_all();
    };
    device.build_input_stream(config, on_data, on_error, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_blocks_keep_order_across_boundaries() {
        let mut capture = Capture {
            block_samples: 4,
            ..Capture::default()
        };
        capture.push(&[1i16, 2, 3]);
        capture.push(&[4i16, 5, 6, 7, 8, 9, 10]);
        assert_eq!(capture.len, 10);
        assert_eq!(
            capture.blocks.iter().map(Vec::len).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        let scale = 1.0 / 32768.0;
        let tail: Vec<f32> = capture.since(5).flatten().copied().collect();
        assert_eq!(tail, [6.0, 7.0, 8.0, 9.0, 10.0].map(|x: f32| x * scale));
        assert_eq!(capture.since(10).flatten().count(), 0);
        assert_eq!(capture.blocks.concat().len(), 10);
    }

    #[test]
    fn seconds_counts_frames() {
        assert_eq!(seconds(32000, 16000, 2), 1.0);
        assert_eq!(seconds(0, 0, 0), 0.0);
    }
}
