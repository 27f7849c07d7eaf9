//! `cargo bench -p timbre-nn --bench train_step`: RVC training steps of the real v2 40k
//! generator with pitch and the v2 discriminator, on batches of 3.7 s pieces (RVC's longest),
//! on the app's device and precision (`TIMBRE_DEVICE`, `TIMBRE_PRECISION`: fp16 on CUDA).
//! `BENCH_BATCHES` (default `4,8`), `BENCH_STEPS` timed steps after one warm-up (default 5),
//! `BENCH_THREADS` (default 2). Prints seconds per step and the process's peak RSS;
//! `bench/train_reference.py` runs rvc-next's step on the same shapes for the ratio.
//! `BENCH_PROFILE=TRACE`: then three more steps of the last batch size under torch's profiler,
//! each a named range, their Chrome trace to TRACE (`bench/profile_summary.py` reads it).
//! `BENCH_RANKS=N`: data-parallel over N processes of this benchmark on this machine (each a
//! batch of the size given, `BENCH_THREADS / N` threads on the CPU, `cuda:<rank>` on CUDA), and
//! the gradients' all-reduce time and volume per step; `BENCH_GROUP=gloo|nccl` picks the
//! collective library (default: NCCL on CUDA, Gloo on the CPU), which also runs with one rank.
//! Pieces per second count every rank's.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use tch::{Device, Kind, Tensor};
use timbre_nn::device::{Precision, default_device};
use timbre_nn::train::batch::Batch;
use timbre_nn::train::config::TrainingConfig;
use timbre_nn::train::spectrogram::Spectrograms;
use timbre_nn::train::trainer::Trainer;
use timbre_torch_ext::distributed::{GroupBackend, ProcessGroup, Rendezvous};

const PIECE_FRAMES: i64 = 370;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// `size` pieces of a gliding sawtooth with random features, as the collate gives them.
fn batch(config: &TrainingConfig, size: i64, device: Device) -> Batch {
    let hop = config.data.hop_length;
    let samples = PIECE_FRAMES * hop;
    let rate = f64::from(config.data.sampling_rate);
    let time = Tensor::arange(samples, (Kind::Double, Device::Cpu)) / rate;
    let waves: Vec<Tensor> = (0..size)
        .map(|i| {
            let hz = 110.0 + 20.0 * i as f64;
            ((&time * hz).frac() * 0.6 - 0.3).to_kind(Kind::Float)
        })
        .collect();
    let wave = Tensor::stack(&waves, 0);
    let spec = Spectrograms::new(config.data, Device::Cpu).linear(&wave);
    let hz = (Tensor::arange(size, (Kind::Float, Device::Cpu)) * 20.0 + 110.0)
        .unsqueeze(1)
        .expand([size, PIECE_FRAMES], false)
        .contiguous();
    let pitch =
        ((hz.log() - 50f64.ln()) / (1100f64.ln() - 50f64.ln()) * 254.0 + 1.0).to_kind(Kind::Int64);
    let lengths = Tensor::full([size], PIECE_FRAMES, (Kind::Int64, Device::Cpu));
    Batch {
        phone: Tensor::randn([size, PIECE_FRAMES, 768], (Kind::Float, Device::Cpu)),
        phone_lengths: lengths.copy(),
        pitch: Some(pitch),
        pitchf: Some(hz),
        spec,
        spec_lengths: lengths,
        wave: wave.unsqueeze(1),
        wave_lengths: Tensor::full([size], samples, (Kind::Int64, Device::Cpu)),
        sid: Tensor::zeros([size], (Kind::Int64, Device::Cpu)),
    }
    .to_device(device)
}

/// Starts `ranks` processes of this benchmark as the ranks of one group and waits for them.
fn run_ranks(ranks: usize) -> Result<()> {
    let port = timbre_test_support::free_port();
    let threads = (env_or("BENCH_THREADS", 2) / ranks).max(1);
    let children: Vec<_> = (0..ranks)
        .map(|rank| {
            let rendezvous =
                Rendezvous::on_this_machine(port, rank, ranks, std::time::Duration::from_secs(600));
            std::process::Command::new(std::env::current_exe()?)
                .envs(rendezvous.env_vars())
                .env("BENCH_THREADS", threads.to_string())
                .spawn()
        })
        .collect::<std::io::Result<_>>()?;
    for mut child in children {
        anyhow::ensure!(child.wait()?.success(), "a rank failed");
    }
    Ok(())
}

/// This process's group, when it is one rank of `BENCH_RANKS` or `BENCH_GROUP` asks for one.
fn group(device: Device) -> Result<Option<Arc<ProcessGroup>>> {
    let rendezvous = match Rendezvous::from_env() {
        Ok(rendezvous) => rendezvous,
        Err(_) if std::env::var("BENCH_GROUP").is_ok() => Rendezvous::on_this_machine(
            timbre_test_support::free_port(),
            0,
            1,
            std::time::Duration::from_secs(600),
        ),
        Err(_) => return Ok(None),
    };
    let backend = match std::env::var("BENCH_GROUP").as_deref() {
        Ok("gloo") => GroupBackend::Gloo,
        Ok("nccl") => GroupBackend::Nccl(rendezvous.local_rank),
        _ => GroupBackend::for_device(device),
    };
    Ok(Some(Arc::new(ProcessGroup::join(&rendezvous, backend)?)))
}

fn main() -> Result<()> {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    let ranks: usize = env_or("BENCH_RANKS", 1);
    if ranks > 1 && std::env::var("RANK").is_err() {
        return run_ranks(ranks);
    }
    let steps: usize = env_or("BENCH_STEPS", 5);
    let batches: String = env_or("BENCH_BATCHES", "4,8".to_string());
    tch::set_num_threads(env_or("BENCH_THREADS", 2));
    let mut device = default_device()?;
    if let (Device::Cuda(_), Ok(rendezvous)) = (device, Rendezvous::from_env()) {
        device = Device::Cuda(rendezvous.local_rank);
    }
    let precision = Precision::default_for(device)?;
    let group = group(device)?;
    let rank = group.as_ref().map_or(0, |g| g.rank());
    if rank == 0 {
        println!(
            "training step benchmark: v2 40k with pitch, {PIECE_FRAMES}-frame pieces, {device:?}, {}{}",
            precision.name(),
            group
                .as_ref()
                .map_or(String::new(), |g| format!(", {} ranks", g.world()))
        );
    }
    let mut last_trainer = None;
    for size in batches
        .split(',')
        .filter_map(|b| b.trim().parse::<i64>().ok())
    {
        let config = TrainingConfig::rvc("v2", 40000)?;
        let mut trainer = Trainer::new(config.clone(), true, device, precision)?;
        if let Some(group) = &group {
            trainer.join_group(Arc::clone(group))?;
        }
        let batch = batch(&config, size, device);
        trainer.step(&batch)?;
        let before = trainer.all_reduced().unwrap_or_default();
        let started = Instant::now();
        let mut last = None;
        for _ in 0..steps {
            last = Some(trainer.step(&batch)?);
        }
        let per_step = started.elapsed().as_secs_f64() / steps as f64;
        let losses = last.unwrap_or_default();
        if let Some(after) = trainer.all_reduced() {
            let seconds = (after.seconds - before.seconds) / steps as f64;
            let mib = (after.bytes - before.bytes) as f64 / steps as f64 / (1 << 20) as f64;
            println!(
                "  rank {rank}, batch {size} a rank: gradients' all-reduce {seconds:.3} s a step \
                 ({:.1} % of it), {mib:.1} MiB a step",
                100.0 * seconds / per_step
            );
        }
        if rank > 0 {
            continue;
        }
        let world = group.as_ref().map_or(1, |g| g.world());
        println!(
            "  batch {size}: {per_step:.3} s per step ({:.1} pieces/s), mel {:.1}, g {:.1}, d {:.2}; \
             peak RSS {:.0} MiB",
            (size * world as i64) as f64 / per_step,
            losses.mel,
            losses.g_total,
            losses.d_total,
            peak_rss_mib()
        );
        last_trainer = Some((trainer, batch));
    }
    // Alone only: the other ranks do not take these steps.
    let profiled = last_trainer.filter(|_| ranks == 1);
    if let (Ok(trace), Some((mut trainer, batch))) = (std::env::var("BENCH_PROFILE"), profiled) {
        let profiler = timbre_nn::profile::Profiler::start(device.is_cuda())?;
        for _ in 0..3 {
            let _range = timbre_nn::profile::range("training step");
            trainer.step(&batch)?;
        }
        profiler.save(std::path::Path::new(&trace))?;
    }
    Ok(())
}
