//! What a live session reports while it runs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::analysis::to_dbfs;

/// How many per-block times [`LiveStats::recent_block_ms`] keeps.
const RECENT_BLOCKS: usize = 100;
/// Over budget this many blocks in a row is falling behind, not a hiccup.
pub const FALLING_BEHIND_BLOCKS: u32 = 3;
/// What [`LiveStats::advice`] says while the session is falling behind.
pub const FALLING_BEHIND_ADVICE: &str = "The conversion takes longer than a block lasts, so the \
    output will break up. Use a larger block, a shorter extra context, the fcpe or pm pitch \
    method, or a GPU.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "LiveState")]
/// Where a live session is in its life.
pub enum LiveState {
    /// Building the processor and opening the devices.
    Starting,
    /// Streaming.
    Running,
    /// A device failed; it is being opened again every half second.
    Reopening,
    /// Stopped on request.
    Stopped,
    /// The processor failed; the session no longer streams (see `message`).
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, ts_rs::TS)]
/// Level of one block of audio, in dBFS, floored at -120.
pub struct LiveLevel {
    /// Largest absolute sample, in dBFS.
    pub peak_db: f32,
    /// Root mean square, in dBFS.
    pub rms_db: f32,
}

impl LiveLevel {
    /// The floor: -120 dBFS for both.
    pub const SILENT: LiveLevel = LiveLevel {
        peak_db: -120.0,
        rms_db: -120.0,
    };

    /// Level of `samples`; [`LiveLevel::SILENT`] for none.
    pub fn of(samples: &[f32]) -> LiveLevel {
        if samples.is_empty() {
            return LiveLevel::SILENT;
        }
        let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        let mean_square =
            samples.iter().map(|s| f64::from(s * s)).sum::<f64>() / samples.len() as f64;
        LiveLevel {
            peak_db: to_dbfs(peak),
            rms_db: to_dbfs(mean_square.sqrt() as f32),
        }
    }

    /// The level after a linear gain.
    pub fn scaled(self, gain: f32) -> LiveLevel {
        let db = to_dbfs(gain);
        let floor = LiveLevel::SILENT.peak_db;
        LiveLevel {
            peak_db: (self.peak_db + db).max(floor),
            rms_db: (self.rms_db + db).max(floor),
        }
    }
}

/// One opened device, as the session uses it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct LiveDevice {
    /// The name the device was asked for, or its description when the default was taken.
    pub name: String,
    /// Rate the device runs at (its default configuration's), in Hz.
    pub sample_rate: u32,
    /// Channels the device runs with (its default configuration's).
    pub channels: u16,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
/// A snapshot of a live session's state, devices, levels and timing.
pub struct LiveStats {
    /// Where the session is in its life.
    pub state: LiveState,
    /// Why the state is what it is (the lost device, the processor's error), in plain words.
    pub message: Option<String>,
    /// The rate the processor works at: the input device's, at most 48 kHz.
    pub sample_rate: u32,
    /// Samples per processor block; 0 until the processor is built.
    pub block_size: u32,
    /// The capture device; `None` until the devices are open.
    pub input_device: Option<LiveDevice>,
    /// The playback device; `None` until the devices are open.
    pub output_device: Option<LiveDevice>,
    /// The monitor device; `None` without a monitor or until it is open.
    pub monitor_device: Option<LiveDevice>,
    /// Level of the latest block given to the processor (after the input gain).
    pub input_level: LiveLevel,
    /// Level of the latest processed block after the output gain.
    pub output_level: LiveLevel,
    /// Input audio dropped because the processing thread did not take it in time, or the
    /// device's own overruns.
    pub input_overflows: u32,
    /// Output callbacks that found too little processed audio, or the device's own underruns.
    pub output_underruns: u32,
    /// Blocks the processor has handled.
    pub blocks_processed: u32,
    /// A block's duration: the time `process` may take.
    pub budget_ms: f64,
    /// Wall-clock time the latest block took to process, in ms.
    pub last_block_ms: f64,
    /// The latest per-block processing times, oldest first.
    pub recent_block_ms: Vec<f64>,
    /// Whether the latest [`FALLING_BEHIND_BLOCKS`] or more blocks in a row took over `budget_ms`.
    pub falling_behind: bool,
    /// [`FALLING_BEHIND_ADVICE`] while falling behind, else `None`.
    pub advice: Option<String>,
    /// What the devices report between the callback and the converter (capture, playback).
    pub input_latency_ms: Option<f64>,
    /// Playback latency the output device reports, in ms; `None` when unreported.
    pub output_latency_ms: Option<f64>,
    /// The processor's error or panic message once it has failed.
    pub processor_error: Option<String>,
    /// The virtual microphone's source name on the sound server while the session feeds one.
    pub virtual_mic: Option<String>,
}

impl LiveStats {
    pub(crate) fn starting(sample_rate: u32) -> LiveStats {
        LiveStats {
            state: LiveState::Starting,
            message: None,
            sample_rate,
            block_size: 0,
            input_device: None,
            output_device: None,
            monitor_device: None,
            input_level: LiveLevel::SILENT,
            output_level: LiveLevel::SILENT,
            input_overflows: 0,
            output_underruns: 0,
            blocks_processed: 0,
            budget_ms: 0.0,
            last_block_ms: 0.0,
            recent_block_ms: Vec::new(),
            falling_behind: false,
            advice: None,
            input_latency_ms: None,
            output_latency_ms: None,
            processor_error: None,
            virtual_mic: None,
        }
    }
}

/// The processing thread's side of the numbers: timing and levels per block.
pub(crate) struct BlockTimes {
    recent: VecDeque<f64>,
    over_budget: u32,
}

impl BlockTimes {
    pub fn new() -> Self {
        BlockTimes {
            recent: VecDeque::with_capacity(RECENT_BLOCKS),
            over_budget: 0,
        }
    }

    /// Records one block's processing time against its budget.
    pub fn record(&mut self, stats: &mut LiveStats, elapsed_ms: f64, budget_ms: f64) {
        if self.recent.len() == RECENT_BLOCKS {
            self.recent.pop_front();
        }
        self.recent.push_back(elapsed_ms);
        self.over_budget = if elapsed_ms > budget_ms {
            self.over_budget + 1
        } else {
            0
        };
        stats.blocks_processed += 1;
        stats.last_block_ms = elapsed_ms;
        stats.budget_ms = budget_ms;
        stats.recent_block_ms = self.recent.iter().copied().collect();
        stats.falling_behind = self.over_budget >= FALLING_BEHIND_BLOCKS;
        stats.advice = stats
            .falling_behind
            .then(|| FALLING_BEHIND_ADVICE.to_string());
    }
}

/// An `f64` shared with audio callbacks; NaN means "not reported".
pub(crate) struct AtomicMs(AtomicU32);

impl AtomicMs {
    pub fn unset() -> Self {
        AtomicMs(AtomicU32::new(f32::NAN.to_bits()))
    }

    pub fn set(&self, ms: f64) {
        self.0.store((ms as f32).to_bits(), Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<f64> {
        let v = f32::from_bits(self.0.load(Ordering::Relaxed));
        (!v.is_nan()).then_some(f64::from(v))
    }
}

/// A gain in dB shared with the audio threads, stored as its linear factor.
pub(crate) struct AtomicGain(AtomicU32);

impl AtomicGain {
    pub fn new(db: f32) -> Self {
        let gain = AtomicGain(AtomicU32::new(0));
        gain.set_db(db);
        gain
    }

    pub fn set_db(&self, db: f32) {
        let linear = 10f32.powf(db / 20.0);
        self.0.store(linear.to_bits(), Ordering::Relaxed);
    }

    pub fn linear(&self) -> f32 {
        f32::from_bits(self.0.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falling_behind_after_consecutive_blocks_over_budget() {
        let mut stats = LiveStats::starting(48000);
        let mut times = BlockTimes::new();
        times.record(&mut stats, 30.0, 20.0);
        times.record(&mut stats, 30.0, 20.0);
        assert!(!stats.falling_behind);
        times.record(&mut stats, 30.0, 20.0);
        assert!(stats.falling_behind);
        assert!(stats.advice.as_deref().unwrap().contains("larger block"));
        times.record(&mut stats, 10.0, 20.0);
        assert!(!stats.falling_behind && stats.advice.is_none());
        assert_eq!(stats.blocks_processed, 4);
        assert_eq!(stats.recent_block_ms, [30.0, 30.0, 30.0, 10.0]);
        for _ in 0..200 {
            times.record(&mut stats, 1.0, 20.0);
        }
        assert_eq!(stats.recent_block_ms.len(), RECENT_BLOCKS);
    }

    #[test]
    fn levels_in_dbfs() {
        let level = LiveLevel::of(&[0.5, -0.5, 0.5, -0.5]);
        assert!((level.peak_db + 6.02).abs() < 0.01 && (level.rms_db + 6.02).abs() < 0.01);
        assert_eq!(LiveLevel::of(&[]), LiveLevel::SILENT);
    }

    #[test]
    fn shared_numbers_round_trip() {
        let ms = AtomicMs::unset();
        assert_eq!(ms.get(), None);
        ms.set(12.5);
        assert_eq!(ms.get(), Some(12.5));
        let gain = AtomicGain::new(-6.0);
        assert!((gain.linear() - 0.501).abs() < 0.001);
        gain.set_db(0.0);
        assert_eq!(gain.linear(), 1.0);
    }

    #[test]
    fn stats_serialize_snake_case_state() {
        let json = serde_json::to_value(LiveStats::starting(44100)).unwrap();
        assert_eq!(json["state"], "starting");
        assert_eq!(json["sample_rate"], 44100);
    }
}
