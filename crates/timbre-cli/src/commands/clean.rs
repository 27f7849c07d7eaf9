//! `timbre enhance` and `timbre isolate`: one job per input; the results land in the library as
//! takes linked to their input (a file input is imported with them).

use super::open_jobs;
use crate::output::Output;
use anyhow::Result;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_audio::enhance::{EnhanceOptions, Preset};
use timbre_core::clean::{CleanInput, EnhanceParams, IsolateParams, IsolationMethod};
use timbre_core::convert::OutputFormat;

/// Where the inputs come from, shared by both commands.
#[derive(clap::Args)]
pub struct Inputs {
    /// Audio files.
    #[arg(required_unless_present = "takes")]
    files: Vec<PathBuf>,
    /// A take of the library, by id (repeatable).
    #[arg(long = "take", value_name = "ID")]
    takes: Vec<i64>,
    /// Also copy the results into this folder (they are kept in the library either way).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// wav16, wav24, wav-float or flac.
    #[arg(long, default_value = "wav-float")]
    format: String,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PresetName {
    /// Clean speech for training: mono, denoised, pauses shortened, -20 LUFS.
    Training,
    /// Keep natural: channels and pauses kept, noise halved, -23 LUFS.
    Natural,
}

#[derive(clap::Args)]
pub struct EnhanceArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[arg(long, value_enum, default_value = "training")]
    preset: PresetName,
    /// Keep the channels as they are.
    #[arg(long)]
    no_mono: bool,
    /// No high-pass (rumble removal).
    #[arg(long)]
    no_high_pass: bool,
    /// No click repair.
    #[arg(long)]
    no_declick: bool,
    /// No RNNoise denoising.
    #[arg(long)]
    no_denoise: bool,
    /// Keep silences and pauses.
    #[arg(long)]
    no_trim: bool,
    /// Keep the level as it is.
    #[arg(long)]
    no_loudness: bool,
    /// No true-peak limiter.
    #[arg(long)]
    no_limit: bool,
    /// High-pass cutoff in Hz.
    #[arg(long, value_name = "HZ")]
    high_pass: Option<f64>,
    /// Denoising strength, 0 (none) to 1 (full).
    #[arg(long, value_name = "STRENGTH")]
    denoise: Option<f32>,
    /// Target integrated loudness in LUFS.
    #[arg(long, value_name = "LUFS", allow_hyphen_values = true)]
    loudness: Option<f64>,
    /// True-peak ceiling in dBTP.
    #[arg(long, value_name = "DBTP", allow_hyphen_values = true)]
    ceiling: Option<f64>,
    /// Shorten pauses longer than this to it, in seconds.
    #[arg(long, value_name = "SECS")]
    max_pause: Option<f64>,
}

#[derive(clap::Args)]
pub struct IsolateArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// A separation model of the models folder (separation/NAME.ckpt + NAME.yaml); default: the
    /// first there, else the rough preview.
    #[arg(long, value_name = "NAME", conflicts_with = "rough")]
    model: Option<String>,
    /// The weight-free rough preview (stereo centre + REPET-SIM), even with a model there.
    #[arg(long)]
    rough: bool,
    /// Separate only this many seconds from the middle, to judge the result quickly.
    #[arg(long, value_name = "SECS")]
    preview: Option<f64>,
}

pub fn enhance(data_dir: Option<&Path>, out: &Output, args: EnhanceArgs) -> Result<ExitCode> {
    let options = enhance_options(&args);
    let format = parse_format(&args.inputs.format)?;
    let out_dir = args
        .inputs
        .out
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    run_jobs(data_dir, out, "enhance", &args.inputs, |input| {
        serde_json::to_value(EnhanceParams {
            input,
            options: options.clone(),
            format,
            out_dir: out_dir.clone(),
        })
    })
}

pub fn isolate(data_dir: Option<&Path>, out: &Output, args: IsolateArgs) -> Result<ExitCode> {
    let method = match (&args.model, args.rough) {
        (Some(name), _) => IsolationMethod::Model(name.clone()),
        (None, true) => IsolationMethod::Rough,
        (None, false) => IsolationMethod::Auto,
    };
    let format = parse_format(&args.inputs.format)?;
    let out_dir = args
        .inputs
        .out
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    run_jobs(data_dir, out, "isolate", &args.inputs, |input| {
        serde_json::to_value(IsolateParams {
            input,
            method: method.clone(),
            preview_secs: args.preview,
            enhance: None,
            format,
            out_dir: out_dir.clone(),
        })
    })
}

fn enhance_options(args: &EnhanceArgs) -> EnhanceOptions {
    let mut options = match args.preset {
        PresetName::Training => Preset::Training,
        PresetName::Natural => Preset::Natural,
    }
    .options();
    let set = |value: Option<f64>, default: Option<f64>| value.or(default);
    options.mono &= !args.no_mono;
    options.declick &= !args.no_declick;
    options.high_pass_hz = set(args.high_pass, options.high_pass_hz).filter(|_| !args.no_high_pass);
    options.denoise_strength = args
        .denoise
        .or(options.denoise_strength)
        .filter(|_| !args.no_denoise);
    options.loudness_lufs = set(args.loudness, options.loudness_lufs).filter(|_| !args.no_loudness);
    options.true_peak_ceiling_db =
        set(args.ceiling, options.true_peak_ceiling_db).filter(|_| !args.no_limit);
    if let Some(max_pause) = args.max_pause {
        let trim = options.trim.get_or_insert_with(Default::default);
        trim.max_pause_secs = Some(max_pause);
    }
    if args.no_trim {
        options.trim = None;
    }
    options
}

fn parse_format(name: &str) -> Result<OutputFormat> {
    serde_json::from_value(Value::String(name.replace('-', "_"))).map_err(|_| {
        timbre_core::error::invalid_input(format!(
            "unknown output format {name:?}: use wav16, wav24, wav-float or flac"
        ))
    })
}

/// Submits one `kind` job per input, waits for them all and prints a line (and its notes) each.
fn run_jobs(
    data_dir: Option<&Path>,
    out: &Output,
    kind: &str,
    inputs: &Inputs,
    params: impl Fn(CleanInput) -> serde_json::Result<Value>,
) -> Result<ExitCode> {
    let system = open_jobs(data_dir)?;
    let mut jobs = Vec::new();
    for file in &inputs.files {
        let input = CleanInput::File(std::path::absolute(file)?);
        jobs.push((
            file.display().to_string(),
            system.submit(kind, params(input)?)?.id,
        ));
    }
    for &take in &inputs.takes {
        let job = system.submit(kind, params(CleanInput::Take(take))?)?;
        jobs.push((format!("take {take}"), job.id));
    }
    let results = super::run_jobs(&system, jobs, out)?;
    out.print(&results, || {
        results
            .iter()
            .map(|r| result_lines(kind, r))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(if results.iter().all(|r| r["ok"] == true) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn result_lines(kind: &str, r: &Value) -> String {
    let input = r["input"].as_str().unwrap_or_default();
    if r["ok"] != true {
        let error = r["error"].as_str().unwrap_or("unknown error");
        return format!("failed     {input}: {error}");
    }
    let result = &r["result"];
    let takes: Vec<String> = result["takes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "take {} {:?}",
                t["take"]["id"],
                t["take"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let mut lines = match kind {
        "enhance" => vec![format!(
            "enhanced   {input} -> {} ({})",
            takes.join(", "),
            enhance_summary(&result["report"])
        )],
        _ => vec![
            format!("isolated   {input} -> {}", takes.join(", ")),
            format!(
                "           {}",
                result["description"].as_str().unwrap_or_default()
            ),
        ],
    };
    lines.extend(
        result["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|note| format!("           note: {note}")),
    );
    lines.join("\n")
}

fn enhance_summary(report: &Value) -> String {
    let number = |key: &str| report[key].as_f64();
    let mut parts = Vec::new();
    if let Some(db) = number("noise_removed_db") {
        parts.push(format!("denoised {db:.1} dB"));
    }
    if let Some(clicks) = report["clicks_repaired"].as_u64().filter(|&n| n > 0) {
        parts.push(format!("{clicks} clicks repaired"));
    }
    if let Some(secs) = number("seconds_trimmed") {
        parts.push(format!("{secs:.1} s of silence trimmed"));
    }
    if let (Some(gain), Some(lufs)) = (number("gain_db"), number("loudness_lufs")) {
        parts.push(format!("{gain:+.1} dB to {lufs:.1} LUFS"));
    }
    if let Some(peaks) = report["peaks_limited"].as_u64().filter(|&n| n > 0) {
        parts.push(format!("{peaks} peaks limited"));
    }
    if parts.is_empty() {
        "unchanged".to_string()
    } else {
        parts.join(", ")
    }
}
