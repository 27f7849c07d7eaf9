//! `timbre cover SONG… --model M`: one cover job per song (isolate, second pass, convert,
//! remix); the stems and the cover land in the library as takes linked to the song.

use super::convert::{ChosenModel, ConversionArgs};
use super::{JobOutcome, models::model_line, open_jobs};
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::cover::{self, CoverRequest, CoverResult, CoverSettings, StageStatus};
use timbre_core::input::AudioInput;
use timbre_core::separation::IsolationMethod;

/// The voice "none" (`--model none`) lets the vocals pass through unconverted.
const NO_VOICE: &str = "none";

#[derive(clap::Args)]
pub struct Args {
    /// Songs: audio files.
    #[arg(required_unless_present = "takes")]
    songs: Vec<PathBuf>,
    /// A take of the library as a song, by id (repeatable).
    #[arg(long = "take", value_name = "ID")]
    takes: Vec<i64>,
    /// The voice and its conversion options, as `timbre convert` takes them; `--model none`
    /// keeps the original vocals (the remix alone).
    #[command(flatten)]
    conversion: ConversionArgs,
    /// Vocal isolation: a RoFormer of the models folder's separation/ by name, or `rough` (the
    /// weight-free preview). Default: the first model there, else rough.
    #[arg(long, value_name = "NAME|rough")]
    separation: Option<String>,
    /// A second separation model over the vocals (de-reverb, karaoke): its target stem is
    /// converted, the rest stays in the mix.
    #[arg(long, value_name = "NAME")]
    second_pass: Option<String>,
    /// Gain of the converted vocals, dB (after loudness matching).
    #[arg(
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "DB"
    )]
    vocal_gain: f64,
    /// Gain of the instrumental, dB.
    #[arg(
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "DB"
    )]
    instrumental_gain: f64,
    /// Leave the converted vocals' loudness as the voice made it.
    #[arg(long)]
    no_match_loudness: bool,
    /// wav16, wav24, wav-float, flac, mp3, vorbis or opus.
    #[arg(long, default_value = "wav16")]
    format: String,
    /// An effects preset (`timbre effects list`) or a preset's JSON file, run over the
    /// converted vocals before the remix.
    #[arg(long)]
    effects: Option<String>,
    /// Folder for the covers (stems and covers are also kept in the library).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let options = args.conversion.options()?;
    let format = args.format.parse()?;
    let system = open_jobs(data_dir)?;
    let chosen = if args.conversion.model == NO_VOICE {
        None
    } else {
        Some(args.conversion.choose_model(system.library())?)
    };
    let model_id = match &chosen {
        Some(ChosenModel::Library(model)) => Some(model.id),
        _ => None,
    };
    let separation = match args.separation.as_deref() {
        None => IsolationMethod::Auto,
        Some("rough") => IsolationMethod::Rough,
        Some(name) => IsolationMethod::Model(name.to_string()),
    };
    let songs: Vec<(String, AudioInput)> = args
        .songs
        .iter()
        .map(|f| (f.display().to_string(), AudioInput::File(f.clone())))
        .chain(
            args.takes
                .iter()
                .map(|&id| (format!("take {id}"), AudioInput::Take(id))),
        )
        .collect();
    let mut request = CoverRequest {
        songs: songs.iter().map(|(_, song)| song.clone()).collect(),
        settings: CoverSettings {
            model_id,
            options,
            separation,
            second_pass: args.second_pass.clone(),
            vocal_gain_db: args.vocal_gain,
            instrumental_gain_db: args.instrumental_gain,
            match_loudness: !args.no_match_loudness,
            format,
            effects: args
                .effects
                .as_deref()
                .map(|spec| timbre_core::effects::resolve(system.library(), spec))
                .transpose()?,
        },
        out_dir: Some(args.out.clone()),
    };
    // Checked before a voice file is imported, so that a refused request leaves no model behind.
    let pending_model = matches!(chosen, Some(ChosenModel::File(_)));
    cover::check(system.library(), &request, pending_model)?;
    match chosen {
        None => out.note("no voice: the original vocals pass through"),
        Some(chosen) => {
            let model = args.conversion.bring_in(system.library(), chosen)?;
            out.note(&format!("model {}", model_line(&model)));
            request.settings.model_id = Some(model.id);
        }
    }
    let job_ids = cover::submit(&system, request)?
        .into_iter()
        .map(|job| job.id);
    let jobs = songs
        .into_iter()
        .map(|(label, _)| label)
        .zip(job_ids)
        .collect();
    let outcomes = super::run_jobs::<CoverResult>(&system, jobs, out)?;
    out.print(&outcomes, || {
        outcomes
            .iter()
            .map(result_lines)
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(super::exit_code(&outcomes))
}

fn result_lines(outcome: &JobOutcome<CoverResult>) -> String {
    let Some(result) = &outcome.result else {
        return outcome.failure_line();
    };
    let stages = result
        .stages
        .iter()
        .filter(|s| s.status != StageStatus::Skipped)
        .map(|s| {
            let how = match s.status {
                StageStatus::Cached => "cached".to_string(),
                _ => format!("{:.1} s", s.seconds),
            };
            format!("{} {how}", s.stage.name())
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut lines = vec![format!(
        "covered    {} -> {} ({stages})",
        outcome.input,
        result.output_path.display()
    )];
    lines.extend(
        result
            .warnings
            .iter()
            .map(|w| format!("           warning: {w}")),
    );
    lines.extend(result.notes.iter().map(|n| format!("           note: {n}")));
    lines.join("\n")
}
