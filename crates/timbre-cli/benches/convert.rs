//! The conversion benchmark of `make bench` (docs/PERFORMANCE.md): Timbre's conversion of the
//! input and models that `bench/make_models.py` wrote into DIR, with RMVPE pitch and no index,
//! as JSON on stdout. Not a timed test: run it with
//! `cargo bench -p timbre-cli --bench convert -- DIR [--threads N]` (DIR absolute: cargo runs
//! benchmarks in the package folder).
//!
//! It imports both voices into a fresh library under DIR, then measures, in a fresh process, the
//! conversion jobs the app and `timbre convert` run (decode, analysis, render, encode, store):
//! - cold: from exec to the first conversion stored, HuBERT, RMVPE and voice A loaded on the way;
//! - warm: another input (the same samples as float WAV, so nothing is cached), models loaded;
//! - second_model: that input with voice B: its analysis comes from the engine's cache, so this
//!   is loading voice B and rendering.
//!
//! Then, in the same process (warm, as the reference's stages are measured in its second
//! conversion: the first render in a process tends to be slower), each stage by itself through the
//! timbre-nn and timbre-audio APIs: reading the input, loading each model, RMVPE, HuBERT
//! (`pipeline::analyze` without pitch), saving and loading an analysis (the disk cache), the
//! synthesizer (`pipeline::render`) and writing the output.
//!
//! With `--profile TRACE`, last, one more warm job (on input the engine has not analysed, after
//! one such job that loads the models outside the trace) and a second-model job run under
//! torch's profiler, their stages marked, and the Chrome trace goes to TRACE
//! (`bench/profile_summary.py` reads it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::{Value, json};
use timbre_audio::{AudioBuffer, DecodeOptions, SampleFormat};
use timbre_core::convert::{self, ConvertRequest};
use timbre_core::db::jobs::JobState;
use timbre_core::input::AudioInput;
use timbre_core::jobs::JobSystem;
use timbre_core::model_import;
use timbre_core::output_format::OutputFormat;
use timbre_core::settings::Settings;
use timbre_core::{Library, handlers::job_handlers};
use timbre_nn::device::Precision;
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_nn::pipeline::{self, Analysis, ConvertOptions, PitchTracker, segments};
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::synthesizer::Synthesizer;

#[derive(Parser)]
struct Args {
    /// The folder bench/make_models.py wrote.
    dir: PathBuf,
    /// libtorch intra-op threads.
    #[arg(long, default_value_t = 2)]
    threads: i32,
    /// Writes a profiled warm and second-model job's trace here (Chrome trace JSON).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Internal: the fresh process that measures.
    #[arg(long, hide = true)]
    measure: bool,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Where the benchmark keeps its own files inside DIR.
struct Paths {
    models: PathBuf,
    input: PathBuf,
    input_float: PathBuf,
    library: PathBuf,
    output: PathBuf,
}

impl Paths {
    fn new(dir: &Path) -> Self {
        let ours = dir.join("ours");
        Self {
            models: dir.join("models"),
            input: dir.join("input.wav"),
            input_float: ours.join("input_float.wav"),
            library: ours.join("library"),
            output: ours.join("stages_output.wav"),
        }
    }
}

fn main() -> Result<()> {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    let args = Args::parse();
    tch::set_num_threads(args.threads);
    let paths = Paths::new(&args.dir);
    if args.measure {
        let mut result = conversion_jobs(&paths)?;
        result["stages"] = stages(&paths)?;
        println!("{}", serde_json::to_string_pretty(&result)?);
        if let Some(trace) = &args.profile {
            profile_jobs(&paths, trace)?;
        }
        return Ok(());
    }
    prepare(&paths)?;
    let child = Command::new(std::env::current_exe()?)
        .arg(&args.dir)
        .args(["--threads", &args.threads.to_string(), "--measure"])
        .args(
            args.profile
                .iter()
                .flat_map(|p| [std::ffi::OsStr::new("--profile"), p.as_os_str()]),
        )
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running the measurements")?;
    // What was measured before a failure (the profile comes last) is still printed.
    std::io::stdout().write_all(&child.stdout)?;
    if !child.status.success() {
        bail!("the measurements failed");
    }
    Ok(())
}

/// A fresh library with both voices imported and the models folder set, and the second input.
fn prepare(paths: &Paths) -> Result<()> {
    if !paths.input.is_file() {
        bail!(
            "{} is missing: run bench/make_models.py first, and give DIR as an absolute path \
             (cargo runs benchmarks in crates/timbre-cli)",
            paths.input.display()
        );
    }
    if paths.library.exists() {
        std::fs::remove_dir_all(&paths.library)?;
    }
    std::fs::create_dir_all(&paths.library)?;
    let library = Library::open(&paths.library)?;
    let models_dir = serde_json::to_string(&paths.models)?;
    Settings::set(&library.conn(), "models_dir", &models_dir)?;
    Settings::set(&library.conn(), "max_retries", "0")?;
    for name in ["voice_a", "voice_b"] {
        let weights = paths.models.join(format!("{name}.pth"));
        model_import::import_model(&library, &weights, None, Some(name), None)?;
    }
    let input = read_input(&paths.input)?;
    timbre_audio::write_wav(&paths.input_float, &input, SampleFormat::Float32)?;
    Ok(())
}

/// Runs in a fresh process: the cold, warm and second-model conversion jobs.
fn conversion_jobs(paths: &Paths) -> Result<Value> {
    let system = JobSystem::new(
        Arc::new(Library::open(&paths.library)?),
        job_handlers(&Default::default()),
    )?;
    let cold = run_job(&system, &paths.input, "voice_a")?;
    let since_exec = seconds_since_exec()?;
    let startup = since_exec - cold["wall_seconds"].as_f64().unwrap_or_default();
    let warm = run_job(&system, &paths.input_float, "voice_a")?;
    let second_model = run_job(&system, &paths.input_float, "voice_b")?;
    let chunking = ConvertOptions::default().chunking;
    Ok(json!({
        "implementation": "Timbre Studio (timbre-nn on tch 0.24, libtorch 2.11.0)",
        "device": device_name(timbre_nn::device::default_device()?)?,
        "threads": tch::get_num_threads(),
        "onednn_max_cpu_isa": std::env::var("ONEDNN_MAX_CPU_ISA").ok(),
        "chunking": [chunking.x_pad, chunking.x_query, chunking.x_center, chunking.x_max],
        "input_seconds": cold["result"]["input_seconds"],
        "cold": { "seconds": since_exec, "startup_seconds": startup, "job": cold },
        "warm": { "seconds": warm["wall_seconds"], "job": warm },
        "second_model": { "seconds": second_model["wall_seconds"], "job": second_model },
    }))
}

/// A warm job on input the engine has not analysed, then the same input with voice B, under
/// torch's profiler, each job a named range; the trace goes to `trace`.
fn profile_jobs(paths: &Paths, trace: &Path) -> Result<()> {
    let system = JobSystem::new(
        Arc::new(Library::open(&paths.library)?),
        job_handlers(&Default::default()),
    )?;
    // Two inputs the engine has not analysed: one loads the models and warms this process's
    // kernels outside the trace, the other (the same samples at half the level) is profiled.
    let input = read_input(&paths.input)?;
    let warm_up = paths.input_float.with_file_name("input_int24.wav");
    timbre_audio::write_wav(&warm_up, &input, SampleFormat::Int24)?;
    let profiled = paths.input_float.with_file_name("input_half.wav");
    let half = AudioBuffer::new(
        input.sample_rate,
        vec![input.channels[0].iter().map(|s| s * 0.5).collect()],
    );
    timbre_audio::write_wav(&profiled, &half, SampleFormat::Float32)?;
    run_job(&system, &warm_up, "voice_a")?;
    run_job(&system, &warm_up, "voice_b")?;
    let cuda = timbre_nn::device::default_device()?.is_cuda();
    let profiler = timbre_nn::profile::Profiler::start(cuda)?;
    for (name, model) in [("warm job", "voice_a"), ("second-model job", "voice_b")] {
        let _range = timbre_nn::profile::range(name);
        run_job(&system, &profiled, model)?;
    }
    profiler.save(trace)
}

/// Submits a conversion job and runs it in this thread; the job's result with its wall time.
fn run_job(system: &JobSystem, input: &Path, model: &str) -> Result<Value> {
    let started = Instant::now();
    let model_id = timbre_core::db::models::find(&system.library().conn(), model)?.id;
    let request = ConvertRequest {
        inputs: vec![AudioInput::File(input.to_path_buf())],
        model_ids: vec![model_id],
        options: ConvertOptions::default(),
        format: OutputFormat::Wav16,
        out_dir: None,
        effects: None,
    };
    let submitted = convert::submit(system, request)?;
    let job = system.run_job(submitted[0].id)?;
    if job.state != JobState::Succeeded {
        bail!(
            "converting {} with {model}: {}",
            input.display(),
            job.error.unwrap_or_default()
        );
    }
    Ok(json!({ "wall_seconds": started.elapsed().as_secs_f64(), "result": job.result }))
}

/// Each stage of a conversion by itself, in seconds, in the precision the jobs use.
fn stages(paths: &Paths) -> Result<Value> {
    let device = timbre_nn::device::default_device()?;
    Precision::default_for(device)?.autocast(|| stages_on(paths, device))
}

fn stages_on(paths: &Paths, device: tch::Device) -> Result<Value> {
    let options = ConvertOptions::default();
    let (input, io_read) = timed(|| read_input(&paths.input))?;
    let audio = &input.channels[0];
    let hubert_dir = timbre_core::models_folder::require_hubert(&paths.models)?;
    let (hubert, load_hubert) = timed(|| Hubert::load(&hubert_dir, device))?;
    let (rmvpe, load_rmvpe) = timed(|| Rmvpe::load(&paths.models.join("rmvpe.pt"), device))?;
    let (voice, load_voice) =
        timed(|| Synthesizer::load(&paths.models.join("voice_a.pth"), device))?;
    let padded = segments::reflect_pad(
        &timbre_audio::filter::rvc_highpass(audio),
        options.chunking.pad_samples(),
    );
    let (_, rmvpe_secs) = timed(|| PitchTracker::Rmvpe(&rmvpe).track(&padded))?;
    let (_, hubert_secs) = timed(|| {
        pipeline::analyze(
            audio.clone(),
            &hubert,
            FeatureVersion::V2,
            None,
            options.chunking,
            &mut |_| Ok(()),
        )
    })?;
    // The analysis (with pitch) that the warm job left in the library's disk cache.
    let cached = std::fs::read_dir(paths.library.join("cache/analysis"))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .context("the jobs left no analysis in the disk cache")?;
    let (analysis, analysis_load) = timed(|| Analysis::load(&cached))?;
    let scratch = paths.output.with_extension("safetensors");
    let (_, analysis_save) = timed(|| analysis.save(&scratch))?;
    std::fs::remove_file(&scratch)?;
    let (converted, synthesizer) =
        timed(|| pipeline::render(&analysis, &voice, None, &options, &mut |_| Ok(())))?;
    let output = AudioBuffer::new(converted.sample_rate, vec![converted.samples]);
    let (_, io_write) = timed(|| {
        Ok(timbre_audio::write_wav(
            &paths.output,
            &output,
            SampleFormat::Int16,
        )?)
    })?;
    Ok(json!({
        "io_read": io_read,
        "load_hubert": load_hubert,
        "load_rmvpe": load_rmvpe,
        "load_voice": load_voice,
        "rmvpe": rmvpe_secs,
        "hubert": hubert_secs,
        "analysis_save": analysis_save,
        "analysis_load": analysis_load,
        "synthesizer": synthesizer,
        "io_write": io_write,
    }))
}

/// The device and the precision its models run in, as the report names them.
fn device_name(device: tch::Device) -> Result<String> {
    let precision = Precision::default_for(device)?.name();
    Ok(match device {
        tch::Device::Cpu => format!("CPU ({precision})"),
        tch::Device::Cuda(i) => format!("CUDA device {i} ({precision})"),
        other => format!("{other:?} ({precision})"),
    })
}

/// The input as the convert job reads it: decoded, mono, 16 kHz.
fn read_input(path: &Path) -> Result<AudioBuffer> {
    let decoded = timbre_audio::decode_file(path, &DecodeOptions::default())?;
    Ok(timbre_audio::resample(&decoded.to_mono(), 16_000)?)
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let started = Instant::now();
    let value = f()?;
    Ok((value, started.elapsed().as_secs_f64()))
}

/// Wall time since this process was started, from /proc (10 ms resolution; Linux's user-visible
/// clock tick is 100 Hz on every architecture Timbre builds for).
fn seconds_since_exec() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after_name = stat.rsplit_once(')').context("/proc/self/stat")?.1;
    let start_ticks: f64 = after_name
        .split_whitespace()
        .nth(19)
        .context("/proc/self/stat")?
        .parse()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")?
        .split_whitespace()
        .next()
        .context("/proc/uptime")?
        .parse()?;
    Ok(uptime - start_ticks / 100.0)
}
