//! `measure`: open the devices as a live session would and measure the round trip with a
//! [`LoopbackProbe`], as rvc-next's `audio_io/loopback.py` `measure` does.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::latency::{block_frames, estimate_latency_ms};
use super::loopback::{LoopbackFailure, LoopbackProbe, LoopbackResult, max_delay_secs};
use super::{Gains, LiveSession, LiveState, SessionConfig};
use crate::error::{AudioError, AudioErrorKind};

/// What one measurement saw: the result, and the session it ran in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct LoopbackRun {
    /// What the probe found.
    pub result: LoopbackResult,
    /// The session's processing rate, in Hz.
    pub sample_rate: u32,
    /// Samples per processor block.
    pub block: u32,
    /// One block's duration, in ms.
    pub block_ms: f64,
    /// What the devices reported (callback to capture, callback to playback).
    pub input_latency_ms: Option<f64>,
    /// Playback latency the output device reported, in ms; `None` when unreported.
    pub output_latency_ms: Option<f64>,
    /// The estimate for a passthrough (no engine delay) with the reported latencies: what the
    /// round trip should be.
    pub estimated_ms: f64,
    /// Input audio dropped during the measurement (any voids a found round trip).
    pub input_overflows: u32,
    /// Output callbacks that found too little audio during the measurement.
    pub output_underruns: u32,
}

/// Plays `pings` test bursts on `config`'s output and finds them in its input (a cable, a
/// virtual cable's loopback, speakers near the microphone). Monitor, gains and recording are
/// left out. A device lost during the measurement is an error.
pub fn measure(
    config: &SessionConfig,
    block_ms: f64,
    pings: usize,
    level_db: f64,
) -> Result<LoopbackRun, AudioError> {
    let config = SessionConfig {
        input: config.input.clone(),
        output: config.output.clone(),
        monitor: None,
        gains: Gains::default(),
        record: false,
        virtual_mic: false,
    };
    let (watch_tx, watch_rx) = mpsc::channel();
    let session = LiveSession::start(
        config,
        Box::new(move |rate| {
            let block = block_frames(block_ms, rate);
            let probe =
                LoopbackProbe::new(rate, block, max_delay_secs(block, rate), pings, level_db);
            let _ = watch_tx.send(probe.watch());
            Ok(Box::new(probe))
        }),
    )?;
    let watch = watch_rx
        .recv()
        .map_err(|_| failed("the loopback probe was not built".to_string()))?;
    let limit = Instant::now() + Duration::from_secs_f64(watch.duration_secs() * 2.0 + 5.0);
    while !watch.finished() {
        let stats = session.stats();
        if stats.state != LiveState::Running {
            let why = stats
                .message
                .unwrap_or_else(|| "the audio stream stopped".into());
            return Err(failed(why));
        }
        if Instant::now() > limit {
            return Err(failed(
                "the audio devices did not deliver audio in time".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = session.stats();
    let rate = session.rate();
    session.stop()?;
    let mut result = watch.result();
    if result.ok && stats.input_overflows > 0 {
        // Dropped input invalidates a detected round trip.
        result.ok = false;
        result.reason = Some(LoopbackFailure::Inconsistent);
    }
    let block = stats.block_size;
    let block_ms = 1000.0 * f64::from(block) / f64::from(rate);
    Ok(LoopbackRun {
        result,
        sample_rate: rate,
        block,
        block_ms,
        input_latency_ms: stats.input_latency_ms,
        output_latency_ms: stats.output_latency_ms,
        estimated_ms: estimate_latency_ms(
            block_ms,
            0.0,
            stats.input_latency_ms.unwrap_or(0.0),
            stats.output_latency_ms.unwrap_or(0.0),
        ),
        input_overflows: stats.input_overflows,
        output_underruns: stats.output_underruns,
    })
}

fn failed(detail: String) -> AudioError {
    AudioError::new(
        AudioErrorKind::Device,
        None,
        format!("the latency measurement failed: {detail}"),
    )
}
