//! What a live session reports while it runs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};

use super::latency::{BLOCK_SIZES_MS, BUDGET_SHARE};
use crate::analysis::to_dbfs;

/// How many per-block times [`LiveStats::recent_block_ms`] keeps.
const RECENT_BLOCKS: usize = 100;
/// Blocks of one size timed before a smaller one is proposed.
const ROOM_BLOCKS: usize = 40;
/// A smaller block is proposed when the slowest of the last [`ROOM_BLOCKS`] took under this
/// share of the block.
const ROOM_SHARE: f64 = 0.4;
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
    /// Mean processing time of every block since the start, in ms; 0 before the first.
    pub mean_block_ms: f64,
    /// The slowest block since the start, in ms; 0 before the first.
    pub max_block_ms: f64,
    /// Blocks since the start whose processing took longer than the block lasts.
    pub blocks_over_budget: u32,
    /// Whether the latest [`FALLING_BEHIND_BLOCKS`] or more blocks in a row took over `budget_ms`.
    pub falling_behind: bool,
    /// [`FALLING_BEHIND_ADVICE`] while falling behind, else `None`.
    pub advice: Option<String>,
    /// A block size (ms) to change to: a larger one while falling behind, a smaller one when
    /// the last blocks left much room; `None` while the block suits.
    pub proposed_block_ms: Option<f64>,
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
            mean_block_ms: 0.0,
            max_block_ms: 0.0,
            blocks_over_budget: 0,
            falling_behind: false,
            advice: None,
            proposed_block_ms: None,
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
    /// Consecutive blocks over budget, up to the latest.
    over_budget: u32,
    total_ms: f64,
    /// Blocks timed since the budget (the block size) last changed.
    same_size: usize,
}

impl BlockTimes {
    pub fn new() -> Self {
        BlockTimes {
            recent: VecDeque::with_capacity(RECENT_BLOCKS),
            over_budget: 0,
            total_ms: 0.0,
            same_size: 0,
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
        self.total_ms += elapsed_ms;
        stats.mean_block_ms = self.total_ms / f64::from(stats.blocks_processed);
        stats.max_block_ms = stats.max_block_ms.max(elapsed_ms);
        stats.blocks_over_budget += u32::from(elapsed_ms > budget_ms);
        stats.last_block_ms = elapsed_ms;
        stats.recent_block_ms = self.recent.iter().copied().collect();
        self.same_size = if budget_ms == stats.budget_ms {
            self.same_size + 1
        } else {
            1
        };
        stats.budget_ms = budget_ms;
        stats.falling_behind = self.over_budget >= FALLING_BEHIND_BLOCKS;
        stats.advice = stats
            .falling_behind
            .then(|| FALLING_BEHIND_ADVICE.to_string());
        let last = self.recent.len().min(self.same_size);
        let slowest = self
            .recent
            .iter()
            .rev()
            .take(last)
            .fold(0.0f64, |m, &ms| m.max(ms));
        stats.proposed_block_ms = proposed_block_ms(
            budget_ms,
            slowest,
            stats.falling_behind,
            last >= ROOM_BLOCKS,
        );
    }
}

/// The block to change to from one of `block_ms` whose latest blocks took `slowest_ms` at
/// most: falling behind, the smallest larger size whose [`BUDGET_SHARE`] holds that (the time
/// barely grows with the block: most of it is the context's); with room to spare over enough
/// blocks, the smallest smaller size that still would. `None` when the block suits.
fn proposed_block_ms(
    block_ms: f64,
    slowest_ms: f64,
    falling_behind: bool,
    timed_enough: bool,
) -> Option<f64> {
    let holds = |size: f64| slowest_ms <= BUDGET_SHARE * size;
    if falling_behind {
        let mut larger = BLOCK_SIZES_MS
            .iter()
            .copied()
            .filter(|&size| size > block_ms);
        return larger
            .clone()
            .find(|&size| holds(size))
            .or(larger.next_back());
    }
    if timed_enough && slowest_ms < ROOM_SHARE * block_ms {
        return BLOCK_SIZES_MS
            .iter()
            .copied()
            .find(|&size| size < block_ms && holds(size));
    }
    None
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
        // The whole session's numbers, beyond the recent window.
        assert_eq!(stats.blocks_over_budget, 3);
        assert_eq!(stats.max_block_ms, 30.0);
        assert!((stats.mean_block_ms - (100.0 + 200.0) / 204.0).abs() < 1e-9);
    }

    #[test]
    fn a_larger_block_is_proposed_when_falling_behind_and_a_smaller_one_when_there_is_room() {
        // 120 ms per block: 150 ms blocks (120 ≤ 0.8 × 150) hold it, 100 ms ones do not.
        assert_eq!(proposed_block_ms(100.0, 120.0, true, false), Some(150.0));
        // Nothing holds it: the largest size.
        assert_eq!(proposed_block_ms(250.0, 2000.0, true, true), Some(750.0));
        assert_eq!(proposed_block_ms(750.0, 2000.0, true, true), None);
        // 30 ms per 250 ms block: 40 ms blocks hold it (30 ≤ 32).
        assert_eq!(proposed_block_ms(250.0, 30.0, false, true), Some(40.0));
        assert_eq!(
            proposed_block_ms(250.0, 30.0, false, false),
            None,
            "not timed enough"
        );
        assert_eq!(
            proposed_block_ms(250.0, 150.0, false, true),
            None,
            "no room"
        );

        let mut stats = LiveStats::starting(48000);
        let mut times = BlockTimes::new();
        for _ in 0..ROOM_BLOCKS - 1 {
            times.record(&mut stats, 30.0, 250.0);
        }
        assert_eq!(stats.proposed_block_ms, None);
        times.record(&mut stats, 30.0, 250.0);
        assert_eq!(stats.proposed_block_ms, Some(40.0));
        // A new block size starts its count again.
        times.record(&mut stats, 30.0, 40.0);
        assert_eq!(stats.proposed_block_ms, None);
        for _ in 0..FALLING_BEHIND_BLOCKS {
            times.record(&mut stats, 90.0, 40.0);
        }
        assert_eq!(stats.proposed_block_ms, Some(150.0), "{stats:?}");
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
