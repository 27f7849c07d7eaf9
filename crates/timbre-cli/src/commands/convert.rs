use super::{JobOutcome, models::model_line, open_jobs};
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::convert::{self, ConvertRequest, ConvertResult, model_import};
use timbre_core::db::models;
use timbre_core::input::AudioInput;
use timbre_nn::pipeline::{Autotune, ConvertOptions, F0Method, IndexSearch, Scale};

#[derive(clap::Args)]
pub struct Args {
    /// Audio files to convert.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    voice: VoiceArgs,
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
pub struct VoiceArgs {
    /// A model of the library (id or name), or an RVC .pth file (imported first).
    #[arg(long, short)]
    pub model: String,
    /// The model's .index (imported with a .pth given to --model).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Pitch shift in semitones, -48..48.
    #[arg(long, short = 't', default_value_t = ConvertOptions::default().transpose, allow_hyphen_values = true)]
    transpose: f32,
    /// rmvpe (needs models/rmvpe.pt), fcpe (needs models/fcpe.pt), crepe (needs
    /// models/crepe-full.pth), crepe-tiny (needs models/crepe-tiny.pth), pm or yin.
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
    /// Random draws from this seed (default: none at all, fully reproducible).
    #[arg(long)]
    seed: Option<u64>,
    /// Pull the pitch to the nearest semitone (`--autotune`, or `--autotune chromatic`) or to the
    /// nearest note of a key (`--autotune Am`, `--autotune "Bb major"`).
    #[arg(long, num_args = 0..=1, default_missing_value = "chromatic")]
    autotune: Option<String>,
    /// How far autotune pulls, 0..1 (1 snaps).
    #[arg(long, default_value_t = 1.0, requires = "autotune")]
    autotune_strength: f32,
    /// Move the formants by this many semitones, -2..2, keeping the pitch (up: a smaller-sounding
    /// voice).
    #[arg(long, default_value_t = ConvertOptions::default().formant_shift, allow_hyphen_values = true)]
    formant_shift: f32,
}

impl VoiceArgs {
    pub fn options(&self) -> Result<ConvertOptions> {
        Ok(ConvertOptions {
            speaker_id: self.speaker,
            transpose: self.transpose,
            f0_method: F0Method::parse(&self.f0_method)
                .map_err(|e| timbre_core::error::invalid_input(e.to_string()))?,
            index_rate: self.index_rate,
            index_search: if self.exact_index {
                IndexSearch::Exact
            } else {
                IndexSearch::Faiss
            },
            protect: self.protect,
            rms_mix_rate: self.rms_mix,
            resample_rate: self.resample,
            seed: self.seed,
            autotune: self
                .autotune
                .as_deref()
                .map(|scale| {
                    Ok::<_, anyhow::Error>(Autotune {
                        scale: Scale::parse(scale)
                            .map_err(|e| timbre_core::error::invalid_input(e.to_string()))?,
                        strength: self.autotune_strength,
                    })
                })
                .transpose()?,
            formant_shift: self.formant_shift,
            ..ConvertOptions::default()
        })
    }

    /// The model `--model` names: one of the library, or a `.pth` imported (with `--index`).
    pub fn resolve_model(&self, library: &timbre_core::Library) -> Result<models::Model> {
        let as_path = Path::new(&self.model);
        if as_path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("pth"))
        {
            return model_import::import_model(library, as_path, self.index.as_deref(), None, None);
        }
        let model = models::find(&library.conn(), &self.model)?;
        match &self.index {
            Some(index) => model_import::attach_index(library, model.id, index),
            None => Ok(model),
        }
    }
}

pub fn run(data_dir: Option<&Path>, out: &Output, args: Args) -> Result<ExitCode> {
    let options = args.voice.options()?;
    let format = args.format.parse()?;
    let system = open_jobs(data_dir)?;
    let effects = args
        .effects
        .as_deref()
        .map(|spec| timbre_core::effects::resolve(system.library(), spec))
        .transpose()?;
    let model = args.voice.resolve_model(system.library())?;
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
