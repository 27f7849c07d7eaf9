//! `timbre live devices|run|measure|file|tune`: the devices, a stream from input to output until
//! Ctrl-C (a line of numbers each second), the round trip measured, a file streamed through the
//! live engine block by block as the devices would stream it, and the smallest block this
//! machine keeps up with (`live_tune.rs`).

use super::open_library;
use super::voice_args::VoiceArgs;
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use timbre_audio::live::loopback::LoopbackFailure;
use timbre_audio::live::{Gains, LiveState};
use timbre_core::db::models;
use timbre_core::live::file::{self, FileStreamReport, FileStreamRequest};
use timbre_core::live::{self, LatencyMeasurement, LiveRequest, LiveStatus, LiveStream, LiveVoice};
use timbre_core::model_cache::ModelCache;
use timbre_nn::stream::StreamParams;

#[derive(clap::Subcommand)]
pub enum Command {
    /// The input and output devices live conversion can use, with their defaults.
    Devices,
    /// Converts the input device into the output device until Ctrl-C (or --seconds), printing
    /// once a second the per-block time against its budget, the latency and the dropouts.
    Run {
        #[command(flatten)]
        devices: DeviceArgs,
        /// Keep the input and the output, saved as two linked takes at the end.
        #[arg(long)]
        record: bool,
        /// Play the voice into "Timbre Studio voice", a microphone other programs (a call, a
        /// game, OBS) can pick, made while the stream runs, instead of the output device.
        #[arg(long)]
        virtual_mic: bool,
        /// Change the block size as the stream proposes: larger while it falls behind, smaller
        /// when the machine has room.
        #[arg(long)]
        auto_block: bool,
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<f64>,
        #[command(flatten)]
        stream: StreamArgs,
    },
    /// Measures the real round trip: test bursts played on the output are found again in the
    /// input (a cable, a virtual cable's loopback, speakers near the microphone); the latency of
    /// a stream with these parameters is that round trip plus the engine's own delay.
    Measure {
        #[command(flatten)]
        devices: DeviceArgs,
        #[arg(long, default_value_t = StreamParams::default().block_ms, allow_hyphen_values = true)]
        block_ms: f64,
        #[arg(long, default_value_t = StreamParams::default().crossfade_ms, allow_hyphen_values = true)]
        crossfade_ms: f64,
    },
    /// Streams a file through the live engine exactly as the devices would, block by block
    /// (deterministic unless --seed), and reports the per-block processing time.
    File {
        input: PathBuf,
        /// The streamed output (WAV, 32-bit float, mono, at --rate).
        #[arg(long)]
        out: PathBuf,
        /// The device rate to stream at (Hz).
        #[arg(long, default_value_t = 48_000)]
        rate: u32,
        #[command(flatten)]
        stream: StreamArgs,
    },
    /// Finds the smallest block this machine keeps up with for the voice, pitch method and
    /// context given (every block within 80 % of its duration), then, with --measure, the real
    /// round trip with it.
    Tune {
        /// The device rate to tune at (Hz).
        #[arg(long, default_value_t = 48_000)]
        rate: u32,
        /// Also measure the round trip through the devices with the pick (`live measure`).
        #[arg(long)]
        measure: bool,
        #[command(flatten)]
        devices: DeviceArgs,
        #[command(flatten)]
        stream: StreamArgs,
    },
}

#[derive(clap::Args)]
pub struct DeviceArgs {
    /// Input device (a name from `timbre live devices`); the default one if left out.
    #[arg(long)]
    pub(super) input: Option<String>,
    /// Output device; the default one if left out.
    #[arg(long)]
    pub(super) output: Option<String>,
    /// A second output that also plays the voice.
    #[arg(long)]
    monitor: Option<String>,
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    input_gain_db: f32,
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    output_gain_db: f32,
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    monitor_gain_db: f32,
}

/// The voice and the engine's parameters, as `timbre live` takes them everywhere.
#[derive(clap::Args)]
pub struct StreamArgs {
    /// A model of the library (id or name).
    #[arg(long, short)]
    model: String,
    /// Leave the voice's index out.
    #[arg(long)]
    no_index: bool,
    /// Block length (ms): larger blocks cost latency, smaller ones need a faster machine.
    #[arg(long, default_value_t = StreamParams::default().block_ms, allow_hyphen_values = true)]
    block_ms: f64,
    #[arg(long, default_value_t = StreamParams::default().crossfade_ms, allow_hyphen_values = true)]
    crossfade_ms: f64,
    /// Extra context the model hears before each block (ms).
    #[arg(long, default_value_t = StreamParams::default().context_ms, allow_hyphen_values = true)]
    context_ms: f64,
    /// Input below this level (dB) is silenced; -60 turns the gate off.
    #[arg(long, default_value_t = StreamParams::default().threshold_db, allow_hyphen_values = true)]
    threshold_db: f32,
    #[command(flatten)]
    voice: VoiceArgs,
    /// Denoise the input (RNNoise) before the voice hears it; adds 10 ms.
    #[arg(long)]
    input_denoise: bool,
    /// Denoise the converted output (RNNoise); adds 10 ms.
    #[arg(long)]
    output_denoise: bool,
    /// Skip the voice on blocks without speech (voice activity detection): silence costs no
    /// compute and lets no noise through.
    #[arg(long)]
    speech_gate: bool,
    /// Hear the (gated) input instead of the voice.
    #[arg(long)]
    passthrough: bool,
}

impl StreamArgs {
    pub(super) fn params(&self) -> Result<StreamParams> {
        let params = StreamParams {
            voice: self.voice.params()?,
            block_ms: self.block_ms,
            crossfade_ms: self.crossfade_ms,
            context_ms: self.context_ms,
            threshold_db: self.threshold_db,
            input_denoise: self.input_denoise,
            output_denoise: self.output_denoise,
            speech_gate: self.speech_gate,
            ..StreamParams::default()
        };
        params
            .check()
            .map_err(|e| timbre_core::error::invalid_input(e.to_string()))?;
        Ok(params)
    }

    pub(super) fn voice(&self, library: &timbre_core::Library) -> Result<LiveVoice> {
        Ok(LiveVoice {
            model_id: models::find(&library.conn(), &self.model)?.id,
            use_index: !self.no_index,
        })
    }
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Devices => devices(out),
        Command::Measure {
            devices,
            block_ms,
            crossfade_ms,
        } => {
            let report =
                live::measure_latency(devices.input, devices.output, block_ms, crossfade_ms)?;
            out.print(&report, || measure_lines(&report));
            Ok(if report.measurement.result.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Run {
            devices,
            record,
            virtual_mic,
            auto_block,
            seconds,
            stream,
        } => {
            let library = open_library(data_dir)?;
            let request = LiveRequest {
                voice: stream.voice(&library)?,
                params: stream.params()?,
                passthrough: stream.passthrough,
                input: devices.input,
                output: devices.output,
                monitor: devices.monitor,
                gains: Gains {
                    input_db: devices.input_gain_db,
                    output_db: devices.output_gain_db,
                    monitor_db: devices.monitor_gain_db,
                },
                record,
                virtual_mic,
                measured_latency_ms: None,
            };
            run_stream(library, request, seconds, auto_block, out)
        }
        Command::File {
            input,
            out: output,
            rate,
            stream,
        } => {
            let library = open_library(data_dir)?;
            let request = FileStreamRequest {
                input,
                output,
                voice: stream.voice(&library)?,
                params: stream.params()?,
                sample_rate: rate,
                passthrough: stream.passthrough,
            };
            let report = file::stream_file(&library, &ModelCache::default(), &request)?;
            out.print(&report, || file_line(&report));
            Ok(ExitCode::SUCCESS)
        }
        Command::Tune {
            rate,
            measure,
            devices,
            stream,
        } => super::live_tune::run(data_dir, out, &stream, rate, measure.then_some(devices)),
    }
}

fn file_line(report: &FileStreamReport) -> String {
    let t = &report.times;
    format!(
        "streamed   {} -> {} ({:.1} s in {} blocks of {:.0} ms: {:.1} ms each on average, \
         {:.1} ms at the 95th percentile, {:.1} ms at most; {} without speech skipped)",
        report.input.display(),
        report.output.display(),
        report.input_seconds,
        t.blocks,
        t.budget_ms,
        t.mean_ms,
        t.p95_ms,
        t.max_ms,
        report.skipped_blocks
    )
}

fn devices(out: &Output) -> Result<ExitCode> {
    let list = live::devices()?;
    out.print(&list, || {
        let line = |name: &str, default: bool, channels: u16, rate: u32| {
            let default = if default { " (default)" } else { "" };
            format!("  {name}{default}  {channels} ch, {rate} Hz")
        };
        let mut lines = vec!["inputs:".to_string()];
        lines.extend(
            list.inputs
                .iter()
                .map(|d| line(&d.name, d.is_default, d.channels, d.sample_rate)),
        );
        lines.push("outputs:".into());
        lines.extend(
            list.outputs
                .iter()
                .map(|d| line(&d.name, d.is_default, d.channels, d.sample_rate)),
        );
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

pub(super) fn measure_lines(report: &LatencyMeasurement) -> String {
    let run = &report.measurement;
    match (run.result.round_trip_ms, report.stream_latency_ms) {
        (Some(ms), Some(stream_ms)) if run.result.ok => format!(
            "round trip {ms:.1} ms ({} of {} bursts found, jitter {:.1} ms; the estimate was \
             {:.1} ms)\nlive latency with these settings: {stream_ms:.1} ms (the round trip \
             + the engine's crossfade and search)",
            run.result.delays.len(),
            run.result.pings,
            run.result.jitter_ms().unwrap_or(0.0),
            run.estimated_ms,
        ),
        _ => format!(
            "no round trip found ({}): connect the output to the input (a cable, a virtual \
             cable's loopback, or speakers near the microphone) and raise the volume",
            match run.result.reason {
                Some(LoopbackFailure::Inconsistent) => "the bursts came back at different delays",
                _ => "too few bursts came back",
            }
        ),
    }
}

/// Runs a stream until Ctrl-C or `seconds`, with a line of numbers each second.
fn run_stream(
    library: std::sync::Arc<timbre_core::Library>,
    request: LiveRequest,
    seconds: Option<f64>,
    auto_block: bool,
    out: &Output,
) -> Result<ExitCode> {
    let interrupted = std::sync::Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))?;
    let mut stream = LiveStream::start(library, Default::default(), request)?;
    if let Some(source) = &stream.status().stats.virtual_mic {
        out.note(&format!(
            "other programs can record the voice from \"{}\" ({source})",
            timbre_audio::live::virtual_mic::DESCRIPTION
        ));
    }
    let started = Instant::now();
    let mut next_line = started + Duration::from_secs(1);
    let mut failed = None;
    while !interrupted.load(Ordering::Relaxed)
        && seconds.is_none_or(|s| started.elapsed().as_secs_f64() < s)
    {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() < next_line {
            continue;
        }
        next_line += Duration::from_secs(1);
        let status = stream.status();
        out.line(&status, || status_line(&status));
        if let Some(block_ms) = status.stats.proposed_block_ms
            && auto_block
            && block_ms != status.params.block_ms
        {
            stream.set_params(status.params.with_block(block_ms))?;
            out.note(&format!("block size changed to {block_ms:.0} ms"));
        }
        if status.stats.state == LiveState::Failed {
            failed = status.stats.message.clone();
            break;
        }
    }
    let recorded = stream.stop()?;
    if let Some(session) = &recorded {
        out.note(&format!(
            "saved take {} (input) and take {} (output)",
            session.input.id, session.output.id
        ));
    }
    match failed {
        Some(why) => Err(anyhow::anyhow!("the live stream stopped: {why}")),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn status_line(status: &LiveStatus) -> String {
    let s = &status.stats;
    let mut line = format!(
        "{:?}  block {:.1}/{:.0} ms  latency ~{:.0} ms  in {:.0} dB  out {:.0} dB  overflows {}  underruns {}",
        s.state,
        s.last_block_ms,
        s.budget_ms,
        status.estimated_latency_ms,
        s.input_level.peak_db,
        s.output_level.peak_db,
        s.input_overflows,
        s.output_underruns
    );
    if let Some(advice) = s.advice.as_ref().filter(|_| s.falling_behind) {
        line.push_str(&format!("\n  {advice}"));
    }
    if let Some(message) = &s.message {
        line.push_str(&format!("\n  {message}"));
    }
    line
}
