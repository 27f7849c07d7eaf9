//! `timbre record` (a take from an input device, of a set length, with a level meter on a
//! terminal) and `timbre devices` (the input devices).

use super::{duration, open_library};
use crate::output::Output;
use anyhow::{Context, Result};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use timbre_audio::record::{self, RecordOptions, Recording};

#[derive(clap::Args)]
pub struct Args {
    /// How long to record.
    #[arg(long)]
    seconds: f64,
    /// Input device name (see `timbre devices`); the default device otherwise.
    #[arg(long)]
    device: Option<String>,
    /// Put the take under this voice (created if new).
    #[arg(long)]
    voice: Option<String>,
    /// Name of the take.
    #[arg(long)]
    name: Option<String>,
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    if !(args.seconds > 0.0 && args.seconds <= 3.0 * 3600.0) {
        return Err(timbre_core::error::invalid_input(
            "--seconds must be between 0 and 10800",
        ));
    }
    let library = open_library(data_dir)?;
    let voice_id = library.resolve_voice(args.voice.as_deref())?;
    let meter = !out.json && std::io::stderr().is_terminal();
    let options = RecordOptions {
        device: args.device.clone(),
        max_duration_secs: Some(args.seconds),
    };
    let recording = Recording::start(options, move |level, seconds| {
        if meter {
            let bars = ((level.peak.clamp(0.0, 1.0)) * 40.0) as usize;
            let clip = if level.clipping { " CLIP" } else { "" };
            eprint!(
                "\r\x1b[2K{} {:<40}{clip}",
                duration(seconds),
                "#".repeat(bars)
            );
        }
    })?;
    out.note(&format!("recording {} s…", args.seconds));
    // Frames, not wall time, decide the length; allow a slow device generous slack.
    let timeout = Duration::from_secs_f64(args.seconds * 2.0 + 10.0);
    recording.wait_for_seconds(args.seconds, timeout)?;
    let audio = recording.stop()?;
    out.note("");
    let take =
        timbre_core::take_files::save_recording(&library, &audio, args.name.as_deref(), voice_id)
            .context("saving the recording")?;
    out.print(&take, || {
        format!(
            "recorded take {} \"{}\" ({})",
            take.id,
            take.name,
            duration(take.duration_secs)
        )
    });
    Ok(ExitCode::SUCCESS)
}

pub fn devices(out: &Output) -> Result<ExitCode> {
    let devices = record::list_input_devices()?;
    out.print(&devices, || {
        if devices.is_empty() {
            return "no input devices found".into();
        }
        devices
            .iter()
            .map(|d| {
                let default = if d.is_default { " (default)" } else { "" };
                format!(
                    "{}{default}  {} ch, {} Hz",
                    d.name, d.channels, d.sample_rate
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
