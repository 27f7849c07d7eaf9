//! The live engine's per-block processing time (docs/PERFORMANCE.md, "Live blocks"): the
//! benchmark's full-size random-weight models (bench/make_models.py: HuBERT base, RMVPE, a v2 40k
//! voice) streaming its voice-like input at 48 kHz, RMVPE pitch, no index, at several block sizes
//! with the reference's defaults otherwise (crossfade 50 ms, context 2.5 s). Per block size: a
//! few blocks to warm up, then the median and 95th percentile of the rest. Prints JSON; bench/
//! live_reference.py times rvc-next's `StreamEngine` the same way. On CUDA each block size runs
//! twice, with the block's CUDA graphs and without, and the JSON says whether the graphs were
//! replayed and how far the two outputs differ (the seedless blocks draw no noise).
//!
//! `cargo bench -p timbre-nn --bench live_block -- DIR [--threads N] [--blocks 250,100]
//! [--device cpu|cuda]` (DIR absolute: make_models.py's output folder).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use timbre_audio::DecodeOptions;
use timbre_nn::Shared;
use timbre_nn::hubert::Hubert;
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::stream::{StreamEngine, StreamModels, StreamParams};
use timbre_nn::synthesizer::Synthesizer;
use timbre_test_support::max_abs_difference;

const RATE: u32 = 48_000;
const WARMUP_BLOCKS: usize = 3;
/// Seconds of input timed at each block size.
const TIMED_SECONDS: f64 = 10.0;

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn percentile(sorted: &[f64], share: f64) -> f64 {
    sorted[((sorted.len() as f64 * share).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.iter()
            .find(|a| !a.starts_with('-') && PathBuf::from(a).is_absolute())
            .context("give the folder bench/make_models.py wrote (absolute)")?,
    );
    let threads: i32 = arg(&args, "--threads").unwrap_or("2").parse()?;
    tch::set_num_threads(threads);
    let device = timbre_nn::device::parse_device(arg(&args, "--device").unwrap_or("cpu"))?;
    let blocks: Vec<f64> = arg(&args, "--blocks")
        .unwrap_or("250,150,100,50")
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let models = dir.join("models");
    let stream_models = StreamModels {
        hubert: Shared::new(Hubert::load(&models.join("contentvec"), device)?),
        voice: Shared::new(Synthesizer::load(&models.join("voice_a.pth"), device)?),
        index: None,
        rmvpe: Some(Shared::new(Rmvpe::load(&models.join("rmvpe.pt"), device)?)),
        fcpe: None,
        swift_f0: None,
        pesto: None,
    };
    let input = timbre_audio::decode_file(&dir.join("input.wav"), &DecodeOptions::default())?;
    let input = timbre_audio::resample(&input, RATE)?.channels.remove(0);
    let graph_modes: &[bool] = if device.is_cuda() {
        &[true, false]
    } else {
        &[false]
    };
    let mut results = Vec::new();
    for block_ms in blocks {
        let params = StreamParams {
            block_ms,
            ..StreamParams::default()
        };
        let mut outputs: Vec<Vec<f32>> = Vec::new();
        for &graphs in graph_modes {
            let mut engine = StreamEngine::new(stream_models.clone(), params.clone(), RATE)?;
            engine.set_cuda_graphs(graphs);
            let block = engine.block_size();
            let count = WARMUP_BLOCKS + (TIMED_SECONDS * f64::from(RATE)) as usize / block;
            let mut times_ms = Vec::with_capacity(count);
            let mut output = Vec::with_capacity(count * block);
            for chunk in input.chunks_exact(block).cycle().take(count) {
                let started = Instant::now();
                output.extend(engine.process(chunk)?);
                if let tch::Device::Cuda(index) = device {
                    tch::Cuda::synchronize(index as i64);
                }
                times_ms.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            let mut timed = times_ms.split_off(WARMUP_BLOCKS);
            timed.sort_by(f64::total_cmp);
            let mut result = serde_json::json!({
                "block_ms": block as f64 * 1000.0 / f64::from(RATE),
                "blocks": timed.len(),
                "median_ms": percentile(&timed, 0.5),
                "p95_ms": percentile(&timed, 0.95),
            });
            if device.is_cuda() {
                result["cuda_graphs"] = serde_json::json!(graphs);
                result["graphs_replayed"] = serde_json::json!(engine.cuda_graphs().captured());
            }
            if let Some(first) = outputs.first() {
                let difference = max_abs_difference(first, &output);
                result["max_difference_from_graphs"] = serde_json::json!(difference);
            }
            outputs.push(output);
            results.push(result);
        }
    }
    let report = serde_json::json!({
        "implementation": "Timbre Studio",
        "device": format!("{device:?}"),
        "threads": tch::get_num_threads(),
        "sample_rate": RATE,
        "crossfade_ms": StreamParams::default().crossfade_ms,
        "context_ms": StreamParams::default().context_ms,
        "results": results,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
