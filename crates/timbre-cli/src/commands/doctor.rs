//! `timbre doctor`: what this machine and library can do (libtorch and GPUs, devices, audio
//! inputs, free space, assets) and what each job kind lacks, as `timbre_core::doctor` reports it.

use super::open_library;
use crate::output::Output;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use timbre_core::disk::human_bytes;
use timbre_core::doctor;

pub fn run(data_dir: Option<&Path>, out: &Output) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    let report = doctor::report(&library)?;
    out.print(&report, || {
        let torch = &report.libtorch;
        let runtime = match (&torch.cuda_runtime, &torch.cuda_runtime_problem) {
            (Some(library), None) => format!("CPU + CUDA ({library})"),
            (Some(library), Some(problem)) => format!("CPU + CUDA ({library}; {problem})"),
            (None, Some(problem)) => format!("CPU ({problem})"),
            (None, None) => "CPU".to_owned(),
        };
        let mut lines = vec![
            format!("libtorch {}: runtime {runtime}", torch.version),
            format!(
                "libtorch: CUDA {}, cuDNN {}, NVIDIA driver {}",
                yes_no(torch.cuda),
                yes_no(torch.cudnn),
                yes_no(torch.nvidia_driver)
            ),
        ];
        lines.extend(torch.gpus.iter().map(|g| {
            let memory = g
                .memory_bytes
                .map_or(String::new(), |m| format!(", {}", human_bytes(m)));
            format!(
                "  {} {}{memory}",
                g.device,
                g.name.as_deref().unwrap_or("(unnamed)")
            )
        }));
        let devices = &report.devices;
        lines.push(format!(
            "devices: main {}, extraction {}{}",
            devices.main.as_deref().unwrap_or("?"),
            devices.extraction.as_deref().unwrap_or("?"),
            devices
                .problem
                .as_ref()
                .map_or(String::new(), |p| format!(" ({p})"))
        ));
        lines.push(match &report.audio_problem {
            Some(problem) => format!("audio inputs: none ({problem})"),
            None if report.audio_inputs.is_empty() => "audio inputs: none".into(),
            None => format!(
                "audio inputs: {}",
                report
                    .audio_inputs
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
        lines.push(format!(
            "data dir: {} ({} free)",
            report.data_dir.display(),
            report.data_dir_free_bytes.map_or("?".into(), human_bytes)
        ));
        lines.push(format!("models folder: {}", report.models_dir.display()));
        lines.extend(
            report
                .assets
                .iter()
                .map(|s| format!("  {:<9} {}", s.state.label(), s.asset.name)),
        );
        lines.push("jobs:".into());
        for job in &report.jobs {
            let state = if job.ready { "ready" } else { "blocked" };
            lines.push(format!("  {state:<8} {}", job.kind));
            lines.extend(job.lacks.iter().map(|l| format!("           lacks {l}")));
            lines.extend(
                job.would_use
                    .iter()
                    .map(|w| format!("           would use {w}")),
            );
        }
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

fn yes_no(flag: bool) -> &'static str {
    if flag { "yes" } else { "no" }
}
