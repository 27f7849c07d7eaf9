//! `timbre enhance` and `timbre isolate`: one job per input; the results land in the library as
//! takes linked to their input (a file input is imported with them).

use super::{JobOutcome, open_jobs};
use crate::output::Output;
use anyhow::Result;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_audio::enhance::{EnhanceOptions, EnhanceReport, Preset};
use timbre_core::clean::{self, CleanRequest, EnhanceResult, IsolateResult};
use timbre_core::derived::SavedTake;
use timbre_core::input::AudioInput;
use timbre_core::separation::IsolationMethod;

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
    #[arg(long, value_name = "HZ", allow_hyphen_values = true)]
    high_pass: Option<f64>,
    /// Denoising strength, 0 (none) to 1 (full).
    #[arg(long, value_name = "STRENGTH", allow_hyphen_values = true)]
    denoise: Option<f32>,
    /// Target integrated loudness in LUFS.
    #[arg(long, value_name = "LUFS", allow_hyphen_values = true)]
    loudness: Option<f64>,
    /// True-peak ceiling in dBTP.
    #[arg(long, value_name = "DBTP", allow_hyphen_values = true)]
    ceiling: Option<f64>,
    /// Shorten pauses longer than this to it, in seconds.
    #[arg(long, value_name = "SECS", allow_hyphen_values = true)]
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
    #[arg(long, value_name = "SECS", allow_hyphen_values = true)]
    preview: Option<f64>,
}

pub fn enhance(data_dir: Option<&Path>, out: &Output, args: EnhanceArgs) -> Result<ExitCode> {
    let request = request(&args.inputs, None, Some(enhance_options(&args)), None)?;
    run_jobs(
        data_dir,
        out,
        &args.inputs,
        request,
        |o: &JobOutcome<EnhanceResult>| {
            let result = o.result.as_ref()?;
            let line = format!(
                "enhanced   {} -> {} ({})",
                o.input,
                take_names(&result.takes),
                enhance_summary(&result.report)
            );
            Some((vec![line], result.notes.clone()))
        },
    )
}

pub fn isolate(data_dir: Option<&Path>, out: &Output, args: IsolateArgs) -> Result<ExitCode> {
    let method = match (&args.model, args.rough) {
        (Some(name), _) => IsolationMethod::Model(name.clone()),
        (None, true) => IsolationMethod::Rough,
        (None, false) => IsolationMethod::Auto,
    };
    let request = request(&args.inputs, Some(method), None, args.preview)?;
    run_jobs(
        data_dir,
        out,
        &args.inputs,
        request,
        |o: &JobOutcome<IsolateResult>| {
            let result = o.result.as_ref()?;
            let lines = vec![
                format!("isolated   {} -> {}", o.input, take_names(&result.takes)),
                format!("           {}", result.description),
            ];
            Some((lines, result.notes.clone()))
        },
    )
}

fn request(
    inputs: &Inputs,
    isolation: Option<IsolationMethod>,
    enhance: Option<EnhanceOptions>,
    preview_secs: Option<f64>,
) -> Result<CleanRequest> {
    Ok(CleanRequest {
        inputs: input_list(inputs).into_iter().map(|(_, i)| i).collect(),
        isolation,
        enhance,
        preview_secs,
        format: inputs.format.parse()?,
        out_dir: inputs.out.clone(),
    })
}

/// The inputs, files first then takes, each with its label.
fn input_list(inputs: &Inputs) -> Vec<(String, AudioInput)> {
    let files = inputs
        .files
        .iter()
        .map(|f| (f.display().to_string(), AudioInput::File(f.clone())));
    let takes = inputs
        .takes
        .iter()
        .map(|&id| (format!("take {id}"), AudioInput::Take(id)));
    files.chain(takes).collect()
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

/// Submits the request, waits for its jobs and prints a line (and its notes) each: `lines`
/// gives a succeeded job's lines and notes.
fn run_jobs<T: DeserializeOwned + serde::Serialize>(
    data_dir: Option<&Path>,
    out: &Output,
    inputs: &Inputs,
    request: CleanRequest,
    lines: impl Fn(&JobOutcome<T>) -> Option<(Vec<String>, Vec<String>)>,
) -> Result<ExitCode> {
    let system = open_jobs(data_dir)?;
    let labels = input_list(inputs).into_iter().map(|(label, _)| label);
    let job_ids = clean::submit(&system, request)?
        .into_iter()
        .map(|job| job.id);
    let jobs = labels.zip(job_ids).collect();
    let outcomes = super::run_jobs::<T>(&system, jobs, out)?;
    out.print(&outcomes, || {
        outcomes
            .iter()
            .map(|o| match lines(o) {
                Some((mut lines, notes)) => {
                    lines.extend(notes.iter().map(|n| format!("           note: {n}")));
                    lines.join("\n")
                }
                None => o.failure_line(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(super::exit_code(&outcomes))
}

fn take_names(takes: &[SavedTake]) -> String {
    takes
        .iter()
        .map(|t| format!("take {} {:?}", t.take.id, t.take.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn enhance_summary(report: &EnhanceReport) -> String {
    let mut parts = Vec::new();
    if let Some(db) = report.noise_removed_db {
        parts.push(format!("denoised {db:.1} dB"));
    }
    if let Some(clicks) = report.clicks_repaired.filter(|&n| n > 0) {
        parts.push(format!("{clicks} clicks repaired"));
    }
    if let Some(secs) = report.seconds_trimmed {
        parts.push(format!("{secs:.1} s of silence trimmed"));
    }
    if let (Some(gain), Some(lufs)) = (report.gain_db, report.loudness_lufs) {
        parts.push(format!("{gain:+.1} dB to {lufs:.1} LUFS"));
    }
    if let Some(peaks) = report.peaks_limited.filter(|&n| n > 0) {
        parts.push(format!("{peaks} peaks limited"));
    }
    if parts.is_empty() {
        "unchanged".to_string()
    } else {
        parts.join(", ")
    }
}
