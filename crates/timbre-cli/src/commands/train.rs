//! `timbre train start|list|show|stop|resume` (the `train` job) and `timbre export` (a
//! training's checkpoint as an inference model).

use super::models::model_line;
use super::{open_jobs, open_library};
use crate::output::Output;
use anyhow::{Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::db::datasets;
use timbre_core::db::trainings::{self, Training};
use timbre_core::db::{training_metrics, training_previews};
use timbre_core::jobs::JobSystem;
use timbre_core::train::{self, Pretrained, TrainRequest, TrainResult};
use timbre_torch_ext::distributed::Rendezvous;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Train a voice model on a prepared dataset (runs here, showing progress).
    Start(Box<StartArgs>),
    /// List trainings.
    List,
    /// Show a training: where it is, its last losses, previews and folder.
    Show { id: i64 },
    /// Stop a training; it saves a checkpoint first.
    Stop { id: i64 },
    /// Continue a stopped or failed training from its last checkpoint (runs here).
    Resume {
        id: i64,
        /// Resume on these devices instead (another number of them is fine).
        #[arg(long, value_delimiter = ',', value_name = "DEVICE,...")]
        devices: Option<Vec<String>>,
    },
    /// One rank of a data-parallel training, as torchrun or SLURM starts it on every rank
    /// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK): rank 0 runs the training's job
    /// here, the others step on their shares.
    Worker {
        /// The training (queued, stopped or failed), in a data folder every rank reads.
        #[arg(long)]
        training: i64,
        /// This rank's device (default: cuda:LOCAL_RANK where there is CUDA, else the CPU).
        #[arg(long)]
        device: Option<String>,
    },
}

#[derive(clap::Args)]
pub struct StartArgs {
    /// The dataset, by id or name.
    #[arg(long, value_name = "ID|NAME")]
    dataset: String,
    /// The model's name (default: the dataset's).
    #[arg(long)]
    name: Option<String>,
    #[arg(long, default_value_t = TrainRequest::DEFAULT_EPOCHS, allow_hyphen_values = true)]
    epochs: i64,
    /// Save a checkpoint every N epochs.
    #[arg(long, default_value_t = TrainRequest::DEFAULT_SAVE_EVERY, value_name = "N")]
    save_every: i64,
    /// Checkpoints kept.
    #[arg(long, default_value_t = TrainRequest::DEFAULT_KEEP_CHECKPOINTS, value_name = "K")]
    keep: i64,
    /// Pieces per step on each device (default: from the GPU's free memory, 4 on the CPU).
    #[arg(long)]
    batch_size: Option<i64>,
    /// Train on these devices together, one worker process each (`cuda:0,cuda:1`); default:
    /// the `device` setting's.
    #[arg(long, value_delimiter = ',', value_name = "DEVICE,...")]
    devices: Vec<String>,
    /// Queue the training and return instead of running it here (the app's worker, `timbre jobs
    /// run` or `timbre train worker` on a cluster runs it).
    #[arg(long)]
    queue: bool,
    /// Render a preview every N epochs (default: --save-every).
    #[arg(long, value_name = "N")]
    preview_every: Option<i64>,
    /// A take (id) or file of another speaker that the checkpoint judge converts with every
    /// checkpoint (repeatable).
    #[arg(long, value_name = "TAKE|FILE")]
    judge_source: Vec<String>,
    /// Stop when the judge's recommended checkpoint has not changed for N saves; the
    /// recommended checkpoint becomes the model.
    #[arg(long, value_name = "N")]
    patience: Option<i64>,
    /// auto (RVC's base models from the models folder), none, or G.pth,D.pth.
    #[arg(long, default_value = "auto")]
    pretrained: String,
    /// A community base to start from instead (`titan`, `ov2super`, `klm4`, …: `timbre assets
    /// list` names them `base-<NAME>-<rate>k-g`), downloaded for the dataset's rate.
    #[arg(long, value_name = "NAME", conflicts_with = "pretrained")]
    base: Option<String>,
    /// A model configuration (JSON: a generator's, and `discriminator_divisor`) instead of
    /// RVC's: for tests, which train tiny models.
    #[arg(long, hide = true, value_name = "FILE")]
    model_config: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// The training whose checkpoint to export.
    #[arg(long)]
    training: i64,
    /// The checkpoint's step (default: the newest).
    #[arg(long, conflicts_with = "best")]
    step: Option<i64>,
    /// The checkpoint the judge recommends (see `timbre train show`).
    #[arg(long)]
    best: bool,
    /// The inference model to write (.pth).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Start(args) => {
            let system = open_jobs(data_dir)?;
            let queue = args.queue;
            let request = request(&system, *args)?;
            let training = train::start_training(&system, request)?;
            if queue {
                out.print(&training, || line(&training));
                return Ok(ExitCode::SUCCESS);
            }
            run_training(&system, &training, out)
        }
        Command::List => {
            let rows = trainings::list(&open_library(data_dir)?.conn())?;
            out.print(&rows, || {
                rows.iter().map(line).collect::<Vec<_>>().join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { id } => {
            let library = open_library(data_dir)?;
            let training = trainings::require(&library.conn(), id)?;
            let metrics = training_metrics::list(&library.conn(), id)?;
            let previews = training_previews::list(&library.conn(), id)?;
            let folder = train::files::folder(library.data_dir(), id);
            let judge = train::judge::report(&library, id)?;
            let value = json!({
                "training": training,
                "folder": folder,
                "metrics": metrics,
                "previews": previews,
                "judge": judge,
            });
            out.print(&value, || {
                let mut lines = vec![line(&training), format!("folder: {}", folder.display())];
                if let Some(m) = metrics.last() {
                    let l = &m.losses;
                    lines.push(format!(
                        "step {}: generator {:.3} (mel {:.3}, kl {:.3}, fm {:.3}, adversarial \
                         {:.3}), discriminator {:.3}, lr {:.3e}",
                        m.step, l.g_total, l.mel, l.kl, l.fm, l.adversarial, l.d_total, m.lr
                    ));
                }
                lines.extend(
                    previews
                        .iter()
                        .map(|p| format!("preview epoch {:>4}: {}", p.epoch, p.path)),
                );
                lines.extend(judge_lines(id, &judge));
                lines.join("\n")
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Stop { id } => {
            let system = open_jobs(data_dir)?;
            let training = train::stop_training(&system, id)?;
            out.print(&training, || line(&training));
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume { id, devices } => {
            let system = open_jobs(data_dir)?;
            if let Some(devices) = devices {
                train::ranks::set_training_devices(system.library(), id, devices)?;
            }
            let training = train::resume_training(&system, id)?;
            run_training(&system, &training, out)
        }
        Command::Worker { training, device } => worker(data_dir, out, training, device),
    }
}

pub fn export(data_dir: Option<&Path>, out: &Output, args: ExportArgs) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    let step = match args.best {
        true => Some(train::judge::recommended_step(&library, args.training)?),
        false => args.step,
    };
    let checkpoint = train::export::export_to_file(&library, args.training, step, &args.out)?;
    let value = json!({ "out": args.out, "checkpoint": checkpoint });
    out.print(&value, || {
        format!(
            "exported  {} from {}",
            args.out.display(),
            checkpoint.display()
        )
    });
    Ok(ExitCode::SUCCESS)
}

fn request(system: &JobSystem, args: StartArgs) -> Result<TrainRequest> {
    let conn = system.library().conn();
    let dataset = match args.dataset.parse::<i64>() {
        Ok(id) => datasets::require(&conn, id)?,
        Err(_) => datasets::find_by_name(&conn, &args.dataset)?.ok_or_else(|| {
            timbre_core::error::not_found(format!("no dataset is named {:?}", args.dataset))
        })?,
    };
    let pretrained = match (args.base, args.pretrained.as_str()) {
        (Some(name), _) => Pretrained::Community { name },
        (None, "auto") => Pretrained::Auto,
        (None, "none") => Pretrained::None,
        (None, files) => match files.split_once(',') {
            Some((generator, discriminator)) => Pretrained::Files {
                generator: std::path::absolute(generator)?,
                discriminator: std::path::absolute(discriminator)?,
            },
            None => {
                return Err(timbre_core::error::invalid_input(format!(
                    "--pretrained {files:?}: use auto, none or G.pth,D.pth"
                )));
            }
        },
    };
    let model_config = args
        .model_config
        .map(|path| -> Result<_> {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{}: not a model configuration", path.display()))
        })
        .transpose()?;
    Ok(TrainRequest {
        name: args.name,
        epochs: args.epochs,
        save_every: args.save_every,
        keep_checkpoints: args.keep,
        batch_size: args.batch_size,
        devices: args.devices,
        pretrained,
        preview_every: args.preview_every,
        patience_saves: args.patience,
        judge_sources: args
            .judge_source
            .iter()
            .map(|a| super::audio_input(a))
            .collect(),
        model_config,
        ..TrainRequest::new(dataset.id)
    })
}

/// `timbre train worker`: rank 0 runs the training's job here as the group's rank 0; the
/// other ranks train beside it.
fn worker(
    data_dir: Option<&Path>,
    out: &Output,
    id: i64,
    device: Option<String>,
) -> Result<ExitCode> {
    let rendezvous = Rendezvous::from_env()?;
    let device = train::ranks::rank_device(&rendezvous, device.as_deref())?;
    if rendezvous.rank > 0 {
        train::worker::run(&*open_library(data_dir)?, id, &rendezvous, device)?;
        return Ok(ExitCode::SUCCESS);
    }
    train::ranks::launched_as(rendezvous, device);
    let system = open_jobs(data_dir)?;
    let training = trainings::require(&system.library().conn(), id)?;
    let training = match training.status.as_str() {
        trainings::STOPPED | trainings::FAILED => train::resume_training(&system, id)?,
        _ => training,
    };
    run_training(&system, &training, out)
}

/// Runs the training's job here and prints how it ended.
fn run_training(system: &JobSystem, training: &Training, out: &Output) -> Result<ExitCode> {
    let job_id = training.job_id.context("the training has no job")?;
    let outcomes =
        super::run_jobs::<TrainResult>(system, vec![(training.name.clone(), job_id)], out)?;
    let outcome = &outcomes[0];
    let row = trainings::require(&system.library().conn(), training.id)?;
    let value = json!({ "training": row, "job": outcome });
    out.print(&value, || {
        let mut lines = vec![line(&row)];
        if let Some(result) = &outcome.result {
            lines.push(format!("model     {}", model_line(&result.model)));
        }
        lines.join("\n")
    });
    Ok(super::exit_code(&outcomes))
}

/// The judge's table: one line per scored checkpoint, the recommended one marked.
fn judge_lines(training_id: i64, judge: &train::judge::JudgeReport) -> Vec<String> {
    if judge.scores.is_empty() {
        return vec!["checkpoint scores: none yet".into()];
    }
    let number =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let best = judge.recommendation.as_ref().map(|r| r.step);
    let mut lines = vec![format!(
        "  {:>7} {:>5}  {:>10} {:>8} {:>7} {:>9} {:>9} {:>8} {:>6}",
        "step", "epoch", "similarity", "pitch ¢", "voicing", "mel", "train mel", "buzz dB", "score"
    )];
    for (s, score) in judge.scores.iter().zip(&judge.weighted) {
        let similarity = match (s.similarity, s.similarity_ceiling) {
            (Some(v), Some(c)) => format!("{v:.3}/{c:.3}"),
            _ => "-".into(),
        };
        lines.push(format!(
            "{} {:>7} {:>5}  {:>10} {:>8} {:>7} {:>9.3} {:>9.3} {:>8} {:>6.3}",
            if best == Some(s.step) { "*" } else { " " },
            s.step,
            s.epoch,
            similarity,
            number(s.pitch_rmse_cents, 1),
            number(s.voicing_agreement, 3),
            s.mel_distance,
            s.train_mel_distance,
            number(s.artefacts_db, 2),
            score,
        ));
    }
    if let Some(r) = &judge.recommendation {
        let w = &r.weights;
        lines.push(format!(
            "recommended: step {} (epoch {}), score {:.3}; weights similarity {}, pitch {}, \
             voicing {}, reconstruction {}, artefacts {} (timbre settings set judge_weights ...); \
             export it with timbre export --training {training_id} --best --out FILE",
            r.step,
            r.epoch,
            r.score,
            w.similarity,
            w.pitch,
            w.voicing,
            w.reconstruction,
            w.artefacts
        ));
    }
    lines
}

fn line(t: &Training) -> String {
    let batch = t.batch_size.map_or("auto".into(), |b| b.to_string());
    let on = match (&t.device, &t.precision) {
        (Some(device), Some(precision)) => format!(" on {device} {precision}"),
        _ => String::new(),
    };
    let error = t
        .error
        .as_deref()
        .map(|e| format!("  error: {e}"))
        .unwrap_or_default();
    format!(
        "{:>5}  {:<24} {:<8} epoch {}/{}, step {}, batch {batch}{on}{error}",
        t.id, t.name, t.status, t.epoch, t.epochs, t.global_step
    )
}
