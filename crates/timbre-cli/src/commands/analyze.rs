//! `timbre analyze pitch FILE`: the pitch curve the converter tracks, in Hz per 10 ms frame (0
//! where unvoiced), by the method `--f0-method` names.

use super::open_library;
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::input::AudioInput;
use timbre_core::model_cache::ModelCache;
use timbre_nn::pipeline::F0Method;

#[derive(clap::Subcommand)]
pub enum Command {
    /// The pitch the converter tracks: Hz per 10 ms frame, 0 where unvoiced.
    Pitch {
        file: PathBuf,
        /// rmvpe (needs rmvpe.pt), fcpe (needs fcpe.pt), crepe (needs crepe-full.pth), crepe-tiny
        /// (needs crepe-tiny.pth), swiftf0 (needs swift-f0.onnx), pesto (needs pesto.ckpt), pm or
        /// yin.
        #[arg(long, default_value = "rmvpe")]
        f0_method: String,
    },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    match cmd {
        Command::Pitch { file, f0_method } => {
            let method = F0Method::parse(&f0_method)
                .map_err(|e| timbre_core::error::invalid_input(e.to_string()))?;
            let curve = timbre_core::pitch_analysis::analyze(
                &library,
                &ModelCache::default(),
                &AudioInput::File(file),
                method,
            )?;
            out.print(&curve, || {
                let mut lines = vec![format!(
                    "{}: {} of {} frames voiced, median {}",
                    curve.input,
                    curve.voiced_frames,
                    curve.f0.len(),
                    curve
                        .median_hz
                        .map_or("-".to_string(), |hz| format!("{hz:.1} Hz"))
                )];
                lines.extend(
                    curve
                        .f0
                        .iter()
                        .enumerate()
                        .map(|(i, hz)| format!("{:8.2} s  {hz:8.2}", i as f64 * curve.frame_secs)),
                );
                lines.join("\n")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}
