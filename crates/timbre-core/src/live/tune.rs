//! The `live_tune` job: the smallest block this machine converts live with the chosen voice,
//! pitch method and context. Block sizes are tried from the smallest up, each on the live engine
//! exactly as a stream runs it (built and warmed up, then fed a voiced test signal block by
//! block); the first whose every block takes at most [`BUDGET_SHARE`] of its duration is the
//! pick, so a stream with it keeps up with room to spare. The crossfade is the requested one, cut
//! to the block where it is longer.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timbre_nn::stream::{StreamEngine, StreamParams};

use super::LiveVoice;
use super::file::BlockTimes;
use crate::db::jobs::{Job, Lane};
use crate::jobs::{JobContext, JobHandler, JobKind, JobSystem, Need, Needs};
use crate::model_cache::ModelCache;

/// The job kind.
const KIND: JobKind = JobKind::LiveTune;

pub use timbre_audio::live::latency::{BLOCK_SIZES_MS, BUDGET_SHARE};

/// Seconds of test signal each block size runs (at least [`MIN_BLOCKS`] blocks).
const RUN_SECONDS: f64 = 1.5;
const MIN_BLOCKS: usize = 6;

/// What to tune for: the voice and the stream's parameters (all but block and crossfade kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TuneRequest {
    /// The voice the stream will convert to.
    pub voice: LiveVoice,
    /// The stream's parameters; the pick changes only `block_ms` and `crossfade_ms`.
    pub params: StreamParams,
    /// The device rate the engine runs at, in Hz.
    #[serde(default = "default_rate")]
    pub sample_rate: u32,
}

fn default_rate() -> u32 {
    48_000
}

/// One block size as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TuneCandidate {
    /// The block tried, in ms.
    pub block_ms: f64,
    /// The crossfade it ran with, in ms.
    pub crossfade_ms: f64,
    /// Its per-block processing times; a size is left after the first block over the limit.
    pub times: BlockTimes,
    /// Whether every block took at most [`BUDGET_SHARE`] of its duration.
    pub keeps_up: bool,
}

/// What a `live_tune` job gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TuneReport {
    /// Every block size tried, smallest first; the last is the pick when there is one.
    pub candidates: Vec<TuneCandidate>,
    /// The request's parameters with the picked block and crossfade; None when even the largest
    /// block does not keep up (a lighter pitch method or a shorter context would).
    pub params: Option<StreamParams>,
    /// The pick's latency from the engine alone (block gathered, engine delay, output prefill);
    /// the devices add theirs (`timbre live measure` finds the whole round trip).
    pub latency_ms: Option<f64>,
    /// The share of a block's duration the pick's blocks may take, as a fraction.
    pub budget_share: f64,
}

/// Queues a tuning run after checking the parameters.
pub fn submit(system: &JobSystem, request: TuneRequest) -> Result<Job> {
    request.params.check()?;
    system.submit(KIND, serde_json::to_value(&request)?)
}

/// Runs `live_tune` jobs on the models of the process's cache.
pub struct TuneHandler {
    models: Arc<ModelCache>,
}

impl TuneHandler {
    /// A handler loading its models through `models`.
    pub fn new(models: Arc<ModelCache>) -> TuneHandler {
        TuneHandler { models }
    }
}

impl JobHandler for TuneHandler {
    fn kind(&self) -> JobKind {
        KIND
    }

    fn needs(&self) -> Needs {
        Needs {
            required: &[Need::Hubert, Need::Device],
            optional: &[Need::Rmvpe],
        }
    }

    /// It times the engine: alone on the device, or the times are another job's too.
    fn lane(&self) -> Lane {
        Lane::Gpu
    }

    fn resumable(&self) -> bool {
        true
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        let request: TuneRequest = ctx.params()?;
        let library = ctx.library();
        let models = super::load_models(
            library,
            &self.models,
            request.voice,
            &request.params.voice,
            super::device(library)?,
        )?;
        let rate = request.sample_rate;
        let signal = voiced_signal(
            rate,
            RUN_SECONDS + BLOCK_SIZES_MS[BLOCK_SIZES_MS.len() - 1] / 1000.0,
        );
        let mut candidates = Vec::new();
        for (i, &block_ms) in BLOCK_SIZES_MS.iter().enumerate() {
            let params = request.params.with_block(block_ms);
            ctx.progress(
                i as f64 / BLOCK_SIZES_MS.len() as f64,
                format!("timing {block_ms:.0} ms blocks"),
            )?;
            if params.check().is_err() {
                continue;
            }
            let mut engine = StreamEngine::new(models.clone(), params.clone(), rate)?;
            engine.warm_up()?;
            let candidate = time_blocks(&mut engine, &params, &signal, rate)?;
            let keeps_up = candidate.keeps_up;
            candidates.push(candidate);
            if keeps_up {
                let latency = super::estimated_latency_ms(&params, false, rate, 0.0, 0.0);
                return Ok(serde_json::to_value(TuneReport {
                    candidates,
                    params: Some(params),
                    latency_ms: Some(latency),
                    budget_share: BUDGET_SHARE,
                })?);
            }
        }
        Ok(serde_json::to_value(TuneReport {
            candidates,
            params: None,
            latency_ms: None,
            budget_share: BUDGET_SHARE,
        })?)
    }
}

/// Runs `signal` through `engine` block by block, stopping at the first block over the limit.
fn time_blocks(
    engine: &mut StreamEngine,
    params: &StreamParams,
    signal: &[f32],
    rate: u32,
) -> Result<TuneCandidate> {
    let block = engine.block_size();
    let budget_ms = block as f64 * 1000.0 / f64::from(rate);
    let blocks = ((RUN_SECONDS * f64::from(rate)) as usize / block).max(MIN_BLOCKS);
    let mut times_ms = Vec::with_capacity(blocks);
    let mut keeps_up = true;
    for chunk in signal.chunks_exact(block).take(blocks) {
        let started = Instant::now();
        engine.process(chunk)?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        times_ms.push(ms);
        if ms > BUDGET_SHARE * budget_ms {
            keeps_up = false;
            break;
        }
    }
    Ok(TuneCandidate {
        block_ms: params.block_ms,
        crossfade_ms: params.crossfade_ms,
        times: BlockTimes::of(&times_ms, budget_ms),
        keeps_up,
    })
}

/// A voice-like test signal: a 140 Hz tone with harmonics, a slow vibrato and a syllable-rate
/// swell, at about -12 dBFS, so the gate passes it and the pitch tracker has a voice to follow.
fn voiced_signal(rate: u32, seconds: f64) -> Vec<f32> {
    let rate = f64::from(rate);
    let mut phase = 0.0f64;
    (0..(seconds * rate) as usize)
        .map(|n| {
            let t = n as f64 / rate;
            let f0 = 140.0 * (1.0 + 0.03 * (std::f64::consts::TAU * 5.0 * t).sin());
            phase += std::f64::consts::TAU * f0 / rate;
            let voiced: f64 = (1..=6).map(|k| (k as f64 * phase).sin() / k as f64).sum();
            let swell = 0.6 + 0.4 * (std::f64::consts::TAU * 4.0 * t).sin().abs();
            (0.15 * swell * voiced) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_signal_is_voiced_and_loud_enough_for_the_gate() {
        let signal = voiced_signal(16_000, 1.0);
        assert_eq!(signal.len(), 16_000);
        let peak = signal.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        let rms = (signal.iter().map(|s| s * s).sum::<f32>() / signal.len() as f32).sqrt();
        assert!(
            peak < 1.0 && 20.0 * rms.log10() > -30.0,
            "peak {peak}, rms {rms}"
        );
        let f0 = timbre_audio::pitch::yin::track(&signal, 50.0, 1100.0);
        let voiced: Vec<f32> = f0.iter().copied().filter(|&hz| hz > 0.0).collect();
        assert!(voiced.len() * 10 > f0.len() * 9, "mostly unvoiced: {f0:?}");
        assert!(
            voiced.iter().all(|hz| (130.0..150.0).contains(hz)),
            "{f0:?}"
        );
    }
}
