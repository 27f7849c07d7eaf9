use super::{models::model_line, open_jobs};
use crate::output::Output;
use anyhow::Result;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::convert::{ConvertInput, ConvertParams, OutputFormat, model_import};
use timbre_core::db::models;
use timbre_nn::pipeline::{Chunking, ConvertOptions, F0Method, IndexSearch};

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
    /// Pitch shift in semitones.
    #[arg(long, short = 't', default_value_t = 0.0, allow_hyphen_values = true)]
    transpose: f32,
    /// rmvpe (needs models/rmvpe.pt), pm or yin.
    #[arg(long, default_value = "rmvpe")]
    f0_method: String,
    /// Share of the features taken from the index, 0..1.
    #[arg(long, default_value_t = 0.75)]
    index_rate: f32,
    /// Search the index exactly instead of as faiss does (nprobe 1).
    #[arg(long)]
    exact_index: bool,
    /// Below 0.5, protects breaths and consonants from the index and model.
    #[arg(long, default_value_t = 0.33)]
    protect: f32,
    /// 1 keeps the model's loudness envelope, 0 follows the input's.
    #[arg(long, default_value_t = 0.25)]
    rms_mix: f32,
    /// Speaker of a multi-speaker model.
    #[arg(long, default_value_t = 0)]
    speaker: i64,
    /// Resample the output to this rate (Hz).
    #[arg(long)]
    resample: Option<u32>,
    /// wav16, wav24, wav-float or flac.
    #[arg(long, default_value = "wav16")]
    format: String,
    /// Random draws from this seed (default: none at all, fully reproducible).
    #[arg(long)]
    seed: Option<u64>,
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let system = open_jobs(data_dir)?;
    let library = system.library();
    let model = resolve_model(library, &args)?;
    out.note(&format!("model {}", model_line(&model)));
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
        chunking: Chunking::default(),
    };
    let format = parse_format(&args.format)?;
    let out_dir = args.out.as_deref().map(std::path::absolute).transpose()?;
    let mut jobs = Vec::new();
    for input in &args.inputs {
        let params = ConvertParams {
            input: ConvertInput::File(std::path::absolute(input)?),
            model_id: model.id,
            options: options.clone(),
            format,
            out_dir: out_dir.clone(),
        };
        jobs.push((
            input.display().to_string(),
            system.submit("convert", serde_json::to_value(&params)?)?.id,
        ));
    }
    let results = super::run_jobs(&system, jobs, out)?;
    out.print(&results, || {
        results
            .iter()
            .map(result_line)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let all_ok = results.iter().all(|r| r["ok"] == true);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
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

fn parse_format(name: &str) -> Result<OutputFormat> {
    serde_json::from_value(Value::String(name.replace('-', "_"))).map_err(|_| {
        timbre_core::error::invalid_input(format!(
            "unknown output format {name:?}: use wav16, wav24, wav-float or flac"
        ))
    })
}

fn result_line(r: &Value) -> String {
    let input = r["input"].as_str().unwrap_or_default();
    if r["ok"] == true {
        let result = &r["result"];
        let seconds = result["seconds"].as_f64().unwrap_or_default();
        let audio = result["input_seconds"].as_f64().unwrap_or_default();
        format!(
            "converted  {input} -> {} ({:.1} s of audio in {:.1} s, analysis {})",
            result["output_path"].as_str().unwrap_or_default(),
            audio,
            seconds,
            result["analysis_cache"].as_str().unwrap_or_default()
        )
    } else {
        format!(
            "failed     {input}: {}",
            r["error"].as_str().unwrap_or("unknown error")
        )
    }
}
