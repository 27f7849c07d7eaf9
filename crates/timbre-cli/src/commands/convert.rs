use super::{JobOutcome, models::model_line, open_jobs};
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::convert::{self, ConvertRequest, ConvertResult, model_import};
use timbre_core::db::models;
use timbre_core::input::AudioInput;
use timbre_nn::pipeline::{ConvertOptions, F0Method, IndexSearch};

#[derive(clap::Args)]
pub struct Args {
    /// Audio files to convert.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// A model of the library (id or name), or an RVC .pth file (imported first).
    #[arg(long, short)]
    model: String,
    /// The model's .index (imported with a .pth given to --model).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Folder for the converted files (they are also kept in the library).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Pitch shift in semitones, -48..48.
    #[arg(long, short = 't', default_value_t = ConvertOptions::default().transpose, allow_hyphen_values = true)]
    transpose: f32,
    /// rmvpe (needs models/rmvpe.pt), fcpe (needs models/fcpe.pt), pm or yin.
    #[arg(long, default_value = ConvertOptions::default().f0_method.name())]
    f0_method: String,
    /// Share of the features taken from the index, 0..1.
    #[arg(long, default_value_t = ConvertOptions::default().index_rate, allow_hyphen_values = true)]
    index_rate: f32,
    /// Search the index exactly instead of as faiss does (nprobe 1).
    #[arg(long)]
    exact_index: bool,
    /// 0..0.5: below 0.5, protects breaths and consonants from the index and model.
    #[arg(long, default_value_t = ConvertOptions::default().protect, allow_hyphen_values = true)]
    protect: f32,
    /// 0..1: 1 keeps the model's loudness envelope, 0 follows the input's.
    #[arg(long, default_value_t = ConvertOptions::default().rms_mix_rate, allow_hyphen_values = true)]
    rms_mix: f32,
    /// Speaker of a multi-speaker model.
    #[arg(long, default_value_t = ConvertOptions::default().speaker_id, allow_hyphen_values = true)]
    speaker: i64,
    /// Resample the output to this rate (Hz), 16000..192000.
    #[arg(long)]
    resample: Option<u32>,
    /// wav16, wav24, wav-float, flac, mp3, vorbis or opus (tagged: title, voice, parameters).
    #[arg(long, default_value = "wav16")]
    format: String,
    /// An effects preset (`timbre effects list`) or a preset's JSON file, run over the
    /// converted audio before it is encoded.
    #[arg(long)]
    effects: Option<String>,
    /// Random draws from this seed (default: none at all, fully reproducible).
    #[arg(long)]
    seed: Option<u64>,
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let options = ConvertOptions {
        speaker_id: args.speaker,
        transpose: args.transpose,
        f0_method: F0Method::parse(&args.f0_method)
            .map_err(|e| timbre_core::error::invalid_input(e.to_string()))?,
        index_rate: args.index_rate,
        index_search: if args.exact_index {
            IndexSearch::Exact
        } else {
            IndexSearch::Faiss
        },
        protect: args.protect,
        rms_mix_rate: args.rms_mix,
        resample_rate: args.resample,
        seed: args.seed,
        ..ConvertOptions::default()
    };
    let format = args.format.parse()?;
    let system = open_jobs(data_dir)?;
    let effects = args
        .effects
        .as_deref()
        .map(|spec| timbre_core::effects::resolve(system.library(), spec))
        .transpose()?;
    let model = resolve_model(system.library(), &args)?;
    out.note(&format!("model {}", model_line(&model)));
    let request = ConvertRequest {
        inputs: args.inputs.iter().cloned().map(AudioInput::File).collect(),
        model_ids: vec![model.id],
        options,
        format,
        out_dir: args.out.clone(),
        effects,
    };
    let labels = args.inputs.iter().map(|p| p.display().to_string());
    let job_ids = convert::submit(&system, request)?
        .into_iter()
        .map(|job| job.id);
    let jobs = labels.zip(job_ids).collect();
    let outcomes = super::run_jobs::<ConvertResult>(&system, jobs, out)?;
    out.print(&outcomes, || {
        outcomes
            .iter()
            .map(result_line)
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(super::exit_code(&outcomes))
}

fn resolve_model(library: &timbre_core::Library, args: &Args) -> Result<models::Model> {
    let as_path = Path::new(&args.model);
    if as_path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pth"))
    {
        return model_import::import_model(library, as_path, args.index.as_deref(), None, None);
    }
    let model = models::find(&library.conn(), &args.model)?;
    match &args.index {
        Some(index) => model_import::attach_index(library, model.id, index),
        None => Ok(model),
    }
}

fn result_line(outcome: &JobOutcome<ConvertResult>) -> String {
    let input = &outcome.input;
    match &outcome.result {
        Some(result) => format!(
            "converted  {input} -> {} ({:.1} s of audio in {:.1} s, analysis {})",
            result.output_path.display(),
            result.input_seconds,
            result.seconds,
            result.analysis_cache.name()
        ),
        None => format!(
            "failed     {input}: {}",
            outcome.error.as_deref().unwrap_or("unknown error")
        ),
    }
}
