//! `timbre convert FILE… --model M`: one `convert` job per input, the whole request checked
//! before a model file is imported or an index attached; and [`ConversionArgs`], the model and
//! conversion flags that `timbre cover` takes too.

use super::{JobOutcome, models::model_line, open_jobs};
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::convert::{self, ConvertRequest, ConvertResult};
use timbre_core::db::models;
use timbre_core::input::AudioInput;
use timbre_core::model_import;
use timbre_nn::pipeline::{ConvertOptions, IndexSearch};

use super::voice_args::VoiceArgs;

#[derive(clap::Args)]
pub struct Args {
    /// Audio files to convert.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    conversion: ConversionArgs,
    /// Folder for the converted files (they are also kept in the library).
    #[arg(long)]
    out: Option<PathBuf>,
    /// wav16, wav24, wav-float, flac, mp3, vorbis or opus (tagged: title, voice, parameters).
    #[arg(long, default_value = "wav16")]
    format: String,
    /// An effects preset (`timbre effects list`) or a preset's JSON file, run over the
    /// converted audio before it is encoded.
    #[arg(long)]
    effects: Option<String>,
}

/// The voice and every conversion option: what `timbre convert` and `timbre cover` take.
#[derive(clap::Args)]
pub struct ConversionArgs {
    /// A model of the library (id or name), or an RVC .pth file (imported first).
    #[arg(long, short)]
    pub model: String,
    /// The model's .index (imported with a .pth given to --model).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Search the index exactly instead of as faiss does (nprobe 1).
    #[arg(long)]
    exact_index: bool,
    /// Resample the output to this rate (Hz), 16000..192000.
    #[arg(long)]
    resample: Option<u32>,
    #[command(flatten)]
    voice: VoiceArgs,
}

impl ConversionArgs {
    pub fn options(&self) -> Result<ConvertOptions> {
        Ok(ConvertOptions {
            voice: self.voice.params()?,
            index_search: if self.exact_index {
                IndexSearch::Exact
            } else {
                IndexSearch::Faiss
            },
            resample_rate: self.resample,
            ..ConvertOptions::default()
        })
    }

    /// The model `--model` names, checked but not yet brought in: one of the library, or a
    /// `.pth` checked with `--index` as import checks them.
    pub fn choose_model(&self, library: &timbre_core::Library) -> Result<ChosenModel> {
        let as_path = Path::new(&self.model);
        if as_path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("pth"))
        {
            let file = model_import::ModelFile::check(as_path, self.index.as_deref())?;
            return Ok(ChosenModel::File(Box::new(file)));
        }
        Ok(ChosenModel::Library(Box::new(models::find(
            &library.conn(),
            &self.model,
        )?)))
    }

    /// The chosen model in the library: a `.pth` imported, a library model with `--index`
    /// attached.
    pub fn bring_in(
        &self,
        library: &timbre_core::Library,
        chosen: ChosenModel,
    ) -> Result<models::Model> {
        match (chosen, &self.index) {
            (ChosenModel::File(file), _) => file.import(library, None, None),
            (ChosenModel::Library(model), Some(index)) => {
                model_import::attach_index(library, model.id, index)
            }
            (ChosenModel::Library(model), None) => Ok(*model),
        }
    }
}

/// What `--model` named: a model of the library, or a model file to import.
pub enum ChosenModel {
    Library(Box<models::Model>),
    File(Box<model_import::ModelFile>),
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let options = args.conversion.options()?;
    let format = args.format.parse()?;
    let system = open_jobs(data_dir)?;
    let library = system.library();
    let effects = args
        .effects
        .as_deref()
        .map(|spec| timbre_core::effects::resolve(library, spec))
        .transpose()?;
    let chosen = args.conversion.choose_model(library)?;
    let (model_ids, pending_name) = match &chosen {
        ChosenModel::Library(model) => (vec![model.id], None),
        ChosenModel::File(file) => (vec![], Some(file.default_name())),
    };
    let mut request = ConvertRequest {
        inputs: args.inputs.iter().cloned().map(AudioInput::File).collect(),
        model_ids,
        options,
        format,
        out_dir: args.out.clone(),
        effects,
    };
    // The whole request passes before a model file is imported or an index attached.
    convert::check(library, &request, pending_name.as_deref())?;
    let model = args.conversion.bring_in(library, chosen)?;
    out.note(&format!("model {}", model_line(&model)));
    request.model_ids = vec![model.id];
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
        None => outcome.failure_line(),
    }
}
