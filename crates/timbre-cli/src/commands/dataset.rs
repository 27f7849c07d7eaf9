//! `timbre dataset prepare|list|show|rm`: training datasets prepared by the `dataset` job.

use super::{JobOutcome, duration, open_jobs, open_library};
use crate::output::Output;
use anyhow::Result;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use timbre_audio::dataset::DatasetReport;
use timbre_audio::enhance::Preset;
use timbre_core::dataset::{self, ModelVersion, PrepareRequest, PrepareResult};
use timbre_core::db::datasets::{self, Dataset};
use timbre_core::separation::IsolationMethod;
use timbre_nn::hubert::Embedder;
use timbre_nn::pipeline::F0Method;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Prepare (or prepare again) a dataset from takes and files: slicing, pitch, features.
    Prepare(PrepareArgs),
    /// List datasets.
    List,
    /// Show a dataset, its report and its folder.
    Show { id: i64 },
    /// Delete a dataset and its folder (its takes stay).
    Rm {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

#[derive(clap::Args)]
pub struct PrepareArgs {
    /// The dataset's name; preparing an existing name replaces its contents.
    #[arg(long)]
    name: String,
    /// The voice it belongs to (created when new).
    #[arg(long)]
    voice: Option<String>,
    /// Model rate: 32k, 40k or 48k.
    #[arg(long, default_value = "40k")]
    rate: String,
    #[arg(long, value_enum, default_value = "v2")]
    version: VersionName,
    /// rmvpe (needs rmvpe.pt in the models folder), fcpe (needs fcpe.pt), crepe (needs
    /// crepe-full.pth), crepe-tiny (needs crepe-tiny.pth), swiftf0 (needs swift-f0.onnx), pesto
    /// (needs pesto.ckpt), pm or yin.
    #[arg(long, default_value = "rmvpe")]
    f0_method: String,
    /// The content encoder the features come from, and so the one the voice converts with:
    /// contentvec, or Applio's spin, spin-v2, chinese-hubert-base, japanese-hubert-base or
    /// korean-hubert-base (from embedders/<name>/ of the models folder).
    #[arg(long, default_value = "contentvec")]
    embedder: String,
    /// Isolate the voice of each input first: `--isolate` (the first separation model of the
    /// models folder, else the rough preview), `--isolate=rough` or `--isolate=NAME`.
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "auto"
    )]
    isolate: Option<String>,
    /// Enhance each input first with this preset (after isolation).
    #[arg(long, value_enum)]
    enhance: Option<PresetName>,
    /// Take ids and audio files.
    #[arg(required = true, value_name = "TAKE_ID|FILE")]
    inputs: Vec<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum VersionName {
    V1,
    V2,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PresetName {
    Training,
    Natural,
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Prepare(args) => prepare(data_dir, out, args),
        Command::List => {
            let sets = datasets::list(&open_library(data_dir)?.conn())?;
            out.print(&sets, || {
                sets.iter().map(line).collect::<Vec<_>>().join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { id } => {
            let library = open_library(data_dir)?;
            let set = datasets::require(&library.conn(), id)?;
            let folder = timbre_core::dataset_layout::folder(&library, id);
            let take_ids = datasets::take_ids(&library.conn(), id)?;
            let value = json!({ "dataset": set, "folder": folder, "take_ids": take_ids });
            out.print(&value, || {
                let mut lines = vec![line(&set), format!("folder: {}", folder.display())];
                let report = set
                    .report
                    .clone()
                    .map(serde_json::from_value::<DatasetReport>);
                if let Some(Ok(report)) = report {
                    lines.extend(report_lines(&report));
                }
                lines.join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Rm { ids } => {
            let library = open_library(data_dir)?;
            let removed = ids
                .iter()
                .map(|&id| timbre_core::dataset::delete(&library, id))
                .collect::<Result<Vec<_>>>()?;
            out.print(&removed, || {
                removed
                    .iter()
                    .map(|d| format!("deleted dataset {} \"{}\"", d.id, d.name))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn prepare(data_dir: Option<&Path>, out: &Output, args: PrepareArgs) -> Result<ExitCode> {
    let invalid = |m: String| timbre_core::error::invalid_input(m);
    let sample_rate = match args.rate.trim_end_matches(['k', 'K']) {
        "32" | "32000" => 32_000,
        "40" | "40000" => 40_000,
        "48" | "48000" => 48_000,
        _ => {
            return Err(invalid(format!(
                "unknown rate {:?}: use 32k, 40k or 48k",
                args.rate
            )));
        }
    };
    let f0_method = F0Method::parse(&args.f0_method).map_err(|e| invalid(e.to_string()))?;
    let embedder = Embedder::of_entry(Some(&args.embedder)).map_err(|unknown| {
        invalid(format!(
            "unknown embedder {:?}: use {}",
            unknown.0,
            Embedder::ALL.map(Embedder::name).join(", ")
        ))
    })?;
    let inputs = args.inputs.iter().map(|a| super::audio_input(a)).collect();
    let system = open_jobs(data_dir)?;
    let voice_id = system.library().resolve_voice(args.voice.as_deref())?;
    let request = PrepareRequest {
        name: args.name.clone(),
        voice_id,
        inputs,
        sample_rate,
        version: match args.version {
            VersionName::V1 => ModelVersion::V1,
            VersionName::V2 => ModelVersion::V2,
        },
        f0_method: Some(f0_method),
        embedder,
        isolate: args.isolate.as_deref().map(|name| match name {
            "auto" => IsolationMethod::Auto,
            "rough" => IsolationMethod::Rough,
            model => IsolationMethod::Model(model.to_string()),
        }),
        enhance: args.enhance.map(|p| match p {
            PresetName::Training => Preset::Training,
            PresetName::Natural => Preset::Natural,
        }),
    };
    let job = dataset::submit(&system, request)?;
    let jobs = vec![(args.name.clone(), job.id)];
    let outcomes = super::run_jobs::<PrepareResult>(&system, jobs, out)?;
    let outcome = &outcomes[0];
    out.print(outcome, || prepared_lines(outcome));
    Ok(super::exit_code(&outcomes))
}

fn prepared_lines(outcome: &JobOutcome<PrepareResult>) -> String {
    let Some(result) = &outcome.result else {
        return outcome.failure_line();
    };
    let mut lines = vec![
        format!(
            "prepared   dataset {} \"{}\": {} pieces, {} ({} computed, {} from the cache)",
            result.dataset.id,
            result.dataset.name,
            result.pieces,
            duration(result.total_seconds),
            result.computed,
            result.cached,
        ),
        format!("           folder: {}", result.folder.display()),
    ];
    lines.extend(report_lines(&result.report));
    lines.join("\n")
}

fn report_lines(report: &DatasetReport) -> Vec<String> {
    let mut lines = vec![format!(
        "           input {}, sliced {}, kept {} in {} pieces ({} too loud, {} silent dropped)",
        duration(report.input_seconds),
        duration(report.sliced_seconds),
        duration(report.kept_seconds),
        report.pieces,
        report.filtered,
        report.silent_pieces,
    )];
    if let Some(pitch) = &report.pitch {
        lines.push(format!(
            "           pitch {:.0}–{:.0} Hz, median {:.0} Hz",
            pitch.low_hz, pitch.high_hz, pitch.median_hz,
        ));
    }
    if let Some(snr) = report.snr_db {
        lines.push(format!("           signal to noise ~{snr:.0} dB"));
    }
    let held = &report.held_out;
    lines.push(match held.pieces {
        0 => "           held out for judging: none (too little audio to spare)".into(),
        pieces => format!(
            "           held out for judging: {pieces} pieces, {} ({} of {})",
            duration(held.seconds),
            if held.whole_sources { "all" } else { "the end" },
            held.sources.join(", "),
        ),
    });
    lines.extend(
        report
            .warnings
            .iter()
            .map(|w| format!("           warning: {}", w.message)),
    );
    lines
}

fn line(d: &Dataset) -> String {
    format!(
        "{:>5}  {:<24} {:<9} {:>4} pieces  {:>8}  ({} takes)",
        d.id,
        d.name,
        d.status,
        d.piece_count,
        duration(d.total_secs),
        d.take_count
    )
}
