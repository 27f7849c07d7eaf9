//! `cargo bench -p timbre-nn --bench synthesizer`: the synthesizer network alone, as RVC's
//! `net_g.infer`: a full-size random-weight v2 40k generator with pitch turning `BENCH_SECS`
//! (default 60) seconds of features into audio, on the app's device and precision
//! (`TIMBRE_DEVICE`, `TIMBRE_PRECISION`). Prints the seconds of each of `BENCH_RUNS` (default 3)
//! runs after one warm-up, and the real-time factor of the best.

use std::time::Instant;

use anyhow::Result;
use tch::{Device, Kind, Tensor};
use timbre_nn::device::{Precision, default_device};
use timbre_nn::synthesizer::{Noise, TrainableSynthesizer};
use timbre_nn::train::config::TrainingConfig;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<()> {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    let secs: i64 = env_or("BENCH_SECS", 60);
    let runs: usize = env_or("BENCH_RUNS", 3);
    tch::set_num_threads(env_or("BENCH_THREADS", 2));
    let device = default_device()?;
    let precision = Precision::default_for(device)?;
    tch::manual_seed(0);
    let model =
        TrainableSynthesizer::new(&TrainingConfig::rvc("v2", 40000)?.model, "v2", true, device)?
            .synthesizer()?;
    // 100 feature frames per second (HuBERT's 50, doubled), as the pipeline feeds them.
    let frames = secs * 100;
    let phone = Tensor::randn([1, frames, 768], (Kind::Float, device));
    let lengths = Tensor::from_slice(&[frames]).to_device(device);
    let time = Tensor::arange(frames, (Kind::Float, device)) / 100.0;
    let pitchf = (time * 2.0 * std::f64::consts::PI * 0.5).sin() * 60.0 + 180.0;
    let pitch = ((pitchf.log() - 50f64.ln()) / (1100f64.ln() - 50f64.ln()) * 254.0 + 1.0)
        .to_kind(Kind::Int64)
        .unsqueeze(0);
    let pitchf = pitchf.unsqueeze(0);
    let infer = || {
        precision.autocast(|| {
            let audio = model.infer(
                &phone,
                &lengths,
                Some(&pitch),
                Some(&pitchf),
                0,
                Noise::None,
            )?;
            // Reading a value waits for the device to finish.
            Ok(audio.abs().max().double_value(&[]))
        })
    };
    println!(
        "synthesizer benchmark: v2 40k, {secs} s, {device:?}, {}",
        precision.name()
    );
    // The first run in a process compiles every kernel; the later ones find them in oneDNN's
    // cache when it is on (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`).
    let started = Instant::now();
    infer()?;
    println!("  first run: {:.3} s", started.elapsed().as_secs_f64());
    let mut best = f64::INFINITY;
    for run in 1..=runs {
        let started = Instant::now();
        let peak = infer()?;
        let elapsed = started.elapsed().as_secs_f64();
        best = best.min(elapsed);
        println!("  run {run}: {elapsed:.3} s (peak {peak:.3})");
    }
    println!("  best {best:.3} s = {:.0}x real time", secs as f64 / best);
    if device == Device::Cpu {
        return Ok(());
    }
    tch::Cuda::cudnn_set_benchmark(true);
    infer()?;
    let started = Instant::now();
    infer()?;
    println!(
        "  with cudnn.benchmark: {:.3} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
