//! `make bench-isolate`: full-size random-weight BS-RoFormer and Mel-Band RoFormer separating
//! generated stereo 44.1 kHz audio, streamed in 10 s blocks as the `isolate` job does.
//! Prints seconds per minute of audio and the peak memory (VmHWM) of each separation.
//!
//! `BENCH_SECS` (default 30) seconds of audio, `BENCH_THREADS` (default 2) libtorch threads,
//! `BENCH_MODELS` (default `bs,mel`); the device and precision are the app's (CUDA in float16
//! when there is one; `TIMBRE_DEVICE`, `TIMBRE_PRECISION`). With `BENCH_WRITE_DIR` set it only
//! writes each model's checkpoint and config there (`<config name>.ckpt`, `.yaml`), as a models
//! folder's `separation/` holds them (`make bench-cover` uses this). On CUDA one untimed 10 s
//! separation comes first (libraries' start-up and first kernels, as `bench/isolate_reference.py`
//! warms MSST up).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use tch::{Kind, Tensor};
use timbre_nn::checkpoint::{Value, write_torch_file};
use timbre_nn::device::Precision;
use timbre_nn::separation::{Config, Roformer, RoformerKind, Separator};

const RATE: i64 = 44_100;
const BLOCK_SECS: i64 = 10;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A field of `/proc/self/status` in MiB.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Starts a new peak: the kernel resets VmHWM to the current RSS.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The random-weight model of `config_yaml` written as a real checkpoint, `dir/<name>.ckpt`,
/// beside its config, `dir/<name>.yaml`; returns both paths.
fn write_random_model(
    dir: &Path,
    name: &str,
    kind: RoformerKind,
    config_yaml: &str,
) -> Result<(PathBuf, PathBuf)> {
    let config_path = dir.join(format!("{name}.yaml"));
    std::fs::write(&config_path, config_yaml)?;
    let config = Config::from_yaml(config_yaml)?;
    let (_, weights) = Roformer::random(kind, &config.model)?;
    let mut names: Vec<&str> = weights.names().collect();
    names.sort_unstable();
    let params: i64 = names
        .iter()
        .map(|n| weights.get(n).map(|t| t.numel() as i64))
        .sum::<Result<i64>>()?;
    let entries = names
        .iter()
        .map(|name| {
            Ok((
                Value::Str(name.to_string()),
                Value::Tensor(weights.get(name)?),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let checkpoint = dir.join(format!("{name}.ckpt"));
    write_torch_file(&checkpoint, &Value::ordered_dict(entries))?;
    println!(
        "  {kind:?}: {:.1} M parameters, checkpoint {:.0} MB",
        params as f64 / 1e6,
        std::fs::metadata(&checkpoint)?.len() as f64 / 1e6
    );
    Ok((checkpoint, config_path))
}

/// The random-weight model of `config_yaml`, written as a real checkpoint and loaded from it.
fn random_separator(dir: &Path, kind: RoformerKind, config_yaml: &str) -> Result<Separator> {
    let (checkpoint, config_path) = write_random_model(dir, "model", kind, config_yaml)?;
    let device = timbre_nn::device::default_device()?;
    let weight_kind = Precision::default_for(device)?.weight_kind();
    Separator::load_on(&checkpoint, &config_path, None, device, weight_kind)
        .context("loading the written checkpoint")
}

/// Block `index` of a music-like test mix: a few harmonic tones per channel plus noise.
fn mix_block(index: i64, frames: i64) -> Tensor {
    let t = (Tensor::arange(frames, (Kind::Double, tch::Device::Cpu)) + index * BLOCK_SECS * RATE)
        / RATE as f64;
    let tone = |freq: f64, amp: f64| (&t * (2.0 * std::f64::consts::PI * freq)).sin() * amp;
    let left = tone(220.0, 0.2) + tone(330.0, 0.1) + tone(440.0, 0.05);
    let right = tone(220.0, 0.15) + tone(277.2, 0.1) + tone(554.4, 0.05);
    let noise = Tensor::randn([2, frames], (Kind::Double, tch::Device::Cpu)) * 0.02;
    (Tensor::stack(&[left, right], 0) + noise).to_kind(Kind::Float)
}

fn bench(kind: RoformerKind, config_yaml: &str, secs: i64) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let separator = random_separator(dir.path(), kind, config_yaml)?;
    println!(
        "  made, written and loaded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if timbre_nn::device::default_device()?.is_cuda() {
        separate(&separator, BLOCK_SECS.min(secs) * RATE)?;
    }
    let total = secs * RATE;
    let rss_before = status_mib("VmRSS:");
    reset_peak();
    let started = Instant::now();
    let check = separate(&separator, total)?;
    let elapsed = started.elapsed().as_secs_f64();
    anyhow::ensure!(check.is_finite(), "the output is not finite");
    println!(
        "  {kind:?}: {secs} s of stereo 44.1 kHz in {elapsed:.1} s = {:.1} s per audio minute \
         (RTF {:.3}); peak RSS {:.0} MiB (model loaded: {rss_before:.0} MiB)",
        elapsed / secs as f64 * 60.0,
        elapsed / secs as f64,
        status_mib("VmHWM:"),
    );
    Ok(())
}

/// Streams `total` frames of the mix through `separator` in blocks, as the job does; the sum of
/// the stems' magnitudes, which reads every output back.
fn separate(separator: &Separator, total: i64) -> Result<f64> {
    let mut stream = separator.stream(2, Some(total), None)?;
    let (mut out_frames, mut block) = (0, 0);
    let mut check = 0.0;
    while block * BLOCK_SECS * RATE < total {
        let frames = (BLOCK_SECS * RATE).min(total - block * BLOCK_SECS * RATE);
        if let Some(part) = stream.push(&mix_block(block, frames), |_, _| true)? {
            out_frames += part.stems.size()[2];
            check += part.stems.abs().sum(Kind::Double).double_value(&[]);
        }
        block += 1;
    }
    if let Some(part) = stream.finish(|_, _| true)? {
        out_frames += part.stems.size()[2];
        check += part.stems.abs().sum(Kind::Double).double_value(&[]);
    }
    anyhow::ensure!(out_frames == total, "{out_frames} frames out of {total}");
    Ok(check)
}

fn main() -> Result<()> {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    let secs: i64 = env_or("BENCH_SECS", 30);
    let threads: i32 = env_or("BENCH_THREADS", 2);
    let models: String = env_or("BENCH_MODELS", "bs,mel".to_string());
    tch::set_num_threads(threads);
    tch::manual_seed(0);
    let device = timbre_nn::device::default_device()?;
    println!(
        "separation benchmark: {secs} s of audio, {threads} libtorch threads, {device:?}, {}",
        Precision::default_for(device)?.name()
    );
    let configs = [
        (
            "bs",
            "bs_roformer_viperx_317",
            RoformerKind::BsRoformer,
            include_str!("configs/bs_roformer_viperx_317.yaml"),
        ),
        (
            "mel",
            "mel_band_roformer_kj",
            RoformerKind::MelBandRoformer,
            include_str!("configs/mel_band_roformer_kj.yaml"),
        ),
    ];
    let write_dir = std::env::var_os("BENCH_WRITE_DIR").map(PathBuf::from);
    for (short, name, kind, yaml) in configs {
        if !models.split(',').any(|m| m.trim() == short) {
            continue;
        }
        match &write_dir {
            Some(dir) => {
                write_random_model(dir, name, kind, yaml)?;
            }
            None => bench(kind, yaml, secs)?,
        }
    }
    Ok(())
}
