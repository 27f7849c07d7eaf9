//! A file streamed through the live engine block by block, exactly as the devices would stream
//! it: decoded, mixed to mono, resampled to the device rate and cut into blocks (the last one
//! filled out with silence, and one silent block more so that the crossfade and the SOLA search
//! come out), each block's processing timed, the engine warmed up first as a live session's is.
//! For the tests, the per-block
//! benchmark, and users who want to hear what live will sound like.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::{AudioBuffer, DecodeOptions, SampleFormat};
use timbre_nn::stream::{StreamEngine, StreamParams};

use super::LiveVoice;
use crate::library::Library;
use crate::model_cache::ModelCache;

/// A file to stream through the live engine, and where to write what comes out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileStreamRequest {
    /// The audio file to stream (any format the decoder reads, cut at the
    /// `max_import_duration_secs` setting).
    pub input: PathBuf,
    /// A WAV file (32-bit float, mono, at `sample_rate`).
    pub output: PathBuf,
    /// The voice to convert to.
    pub voice: LiveVoice,
    /// The stream's parameters, as a live session would run them.
    pub params: StreamParams,
    /// The device rate the engine runs at.
    pub sample_rate: u32,
    /// Return the gated input instead of the voice (the engine's passthrough).
    #[serde(default)]
    pub passthrough: bool,
}

/// Per-block processing time against the block's duration (its budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct BlockTimes {
    /// Blocks processed.
    pub blocks: usize,
    /// One block's duration in ms: the most its processing may take to keep up live.
    pub budget_ms: f64,
    /// Mean processing time per block, in ms; 0 when no block ran.
    pub mean_ms: f64,
    /// 95th-percentile (nearest-rank) processing time per block, in ms; 0 when no block ran.
    pub p95_ms: f64,
    /// The slowest block's processing time, in ms; 0 when no block ran.
    pub max_ms: f64,
}

impl BlockTimes {
    /// Summarises per-block processing times (ms) against a block's duration `budget_ms`.
    pub fn of(times_ms: &[f64], budget_ms: f64) -> BlockTimes {
        let mut sorted = times_ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        let p95 = sorted
            .get((sorted.len() * 95).div_ceil(100).saturating_sub(1))
            .copied();
        BlockTimes {
            blocks: sorted.len(),
            budget_ms,
            mean_ms: sorted.iter().sum::<f64>() / sorted.len().max(1) as f64,
            p95_ms: p95.unwrap_or(0.0),
            max_ms: sorted.last().copied().unwrap_or(0.0),
        }
    }
}

/// What streaming a file did: where it went, the block size and the per-block timings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileStreamReport {
    /// The file streamed.
    pub input: PathBuf,
    /// The WAV written (32-bit float, mono, at `sample_rate`).
    pub output: PathBuf,
    /// The device rate the engine ran at, in Hz.
    pub sample_rate: u32,
    /// Samples in one engine block at `sample_rate`.
    pub block_samples: usize,
    /// The input's duration in seconds, before the padding to whole blocks.
    pub input_seconds: f64,
    /// Per-block processing times against the block's duration.
    pub times: BlockTimes,
    /// Blocks the speech gate kept from the voice (0 with the gate off).
    pub skipped_blocks: u64,
}

fn load_mono(path: &Path, rate: u32, max_secs: f64) -> Result<Vec<f32>> {
    let options = DecodeOptions {
        max_duration_secs: Some(max_secs),
    };
    let audio = timbre_audio::decode_file(path, &options)?.to_mono();
    let audio = if audio.sample_rate == rate {
        audio
    } else {
        timbre_audio::resample(&audio, rate)?
    };
    Ok(audio.channels.into_iter().next().unwrap_or_default())
}

/// Streams `request.input` through the engine into `request.output`.
pub fn stream_file(
    library: &Library,
    cache: &ModelCache,
    request: &FileStreamRequest,
) -> Result<FileStreamReport> {
    request.params.check()?;
    let settings = library.settings()?;
    let models = super::load_models(
        library,
        cache,
        request.voice,
        &request.params.voice,
        super::device(library)?,
    )?;
    let mut engine = StreamEngine::new(models, request.params.clone(), request.sample_rate)?;
    engine.warm_up()?;
    engine.passthrough = request.passthrough;
    let input = load_mono(
        &request.input,
        request.sample_rate,
        settings.max_import_duration_secs,
    )?;
    let block = engine.block_size();
    let input_samples = input.len();
    let mut padded = input;
    padded.resize(input_samples.div_ceil(block) * block + block, 0.0);
    let mut output = Vec::with_capacity(padded.len());
    let mut times_ms = Vec::with_capacity(padded.len() / block);
    for chunk in padded.chunks_exact(block) {
        let started = Instant::now();
        let converted = engine.process(chunk).with_context(|| {
            format!(
                "{}: block {} of {}",
                request.input.display(),
                times_ms.len() + 1,
                padded.len() / block
            )
        })?;
        times_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        output.extend_from_slice(&converted);
    }
    let written = AudioBuffer::new(request.sample_rate, vec![output]);
    timbre_audio::write_wav(&request.output, &written, SampleFormat::Float32)?;
    let budget_ms = block as f64 * 1000.0 / f64::from(request.sample_rate);
    Ok(FileStreamReport {
        input: request.input.clone(),
        output: request.output.clone(),
        sample_rate: request.sample_rate,
        block_samples: block,
        input_seconds: input_samples as f64 / f64::from(request.sample_rate),
        times: BlockTimes::of(&times_ms, budget_ms),
        skipped_blocks: engine.skipped_blocks(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_times_summarise_against_the_budget() {
        let times: Vec<f64> = (1..=20).map(f64::from).collect();
        let summary = BlockTimes::of(&times, 250.0);
        assert_eq!(summary.blocks, 20);
        assert_eq!(summary.mean_ms, 10.5);
        assert_eq!(summary.p95_ms, 19.0);
        assert_eq!(summary.max_ms, 20.0);
        assert_eq!(BlockTimes::of(&[], 10.0).mean_ms, 0.0);
    }
}
