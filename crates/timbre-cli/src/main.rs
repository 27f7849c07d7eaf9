//! The `timbre` binary: Timbre Studio's jobs from the command line, one subcommand per module of
//! `commands`, with the global `--data-dir` and `--json` flags. An error is printed (a full disk
//! named as such) and the exit status is failure.

mod commands;
mod output;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The version `--version` prints: the package's and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TIMBRE_GIT_COMMIT"),
    ")"
);

/// Timbre Studio from the command line: every job the app runs, headless.
#[derive(Parser)]
#[command(name = "timbre", version = VERSION)]
struct Cli {
    /// Library folder (default: $TIMBRE_DATA_DIR, else the XDG data dir).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import audio files (wav, flac, mp3, ogg, m4a) into the library.
    Import(commands::import::Args),
    /// Record a take from an input device.
    Record(commands::record::Args),
    /// List audio input devices.
    Devices,
    /// Browse and edit the library.
    #[command(subcommand)]
    Library(commands::library::Command),
    /// Convert audio files with a voice model.
    Convert(commands::convert::Args),
    /// Cover songs with a voice: isolate the vocals, convert them, remix (one job per song).
    Cover(commands::cover::Args),
    /// Clean speech: denoise, trim silence, high-pass, de-click, normalise loudness.
    Enhance(commands::clean::EnhanceArgs),
    /// Split a mix into vocals and instrumental (a separation model, else a rough preview).
    Isolate(commands::clean::IsolateArgs),
    /// Training datasets: prepare, list, show, delete.
    #[command(subcommand)]
    Dataset(commands::dataset::Command),
    /// Train voice models on prepared datasets: start, list, show, stop, resume.
    #[command(subcommand)]
    Train(commands::train::Command),
    /// Export a training's checkpoint as an RVC inference model (.pth).
    Export(commands::train::ExportArgs),
    /// Voice models and the shared weight files.
    #[command(subcommand)]
    Models(commands::models::Command),
    /// Inspect and control jobs.
    #[command(subcommand)]
    Jobs(commands::jobs::Command),
    /// Show or change settings.
    #[command(subcommand)]
    Settings(commands::settings::Command),
    /// Effects presets for converted audio: list, show, save, delete.
    #[command(subcommand)]
    Effects(commands::effects::Command),
    /// The weight files the app uses: list, download (verified), verify, remove.
    #[command(subcommand)]
    Assets(commands::assets::Command),
    /// What this machine can do: libtorch and GPUs, audio inputs, assets, disk, each job kind.
    Doctor,
    /// The CUDA runtime (GPU support) a package leaves out: status, install, remove.
    #[command(subcommand)]
    Runtime(commands::runtime::Command),
    /// Look inside audio as the converter does.
    #[command(subcommand)]
    Analyze(commands::analyze::Command),
    /// Live conversion: devices, a stream from the microphone, the latency measured, a file
    /// streamed as the devices would stream it.
    #[command(subcommand)]
    Live(commands::live::Command),
    /// Updates from the signed update feed: check (what is new), install (the tar.gz form).
    #[command(subcommand)]
    Update(commands::update::Command),
}

/// An argument that is not UTF-8 (a file named in a legacy encoding), refused naming it before
/// anything runs: every name the CLI takes is kept as text (a take's or model's name, a job's
/// parameters, JSON output), which such a name cannot be. Clap's own refusal of it names nothing.
fn non_utf8_argument() -> Option<anyhow::Error> {
    let arg = std::env::args_os()
        .skip(1)
        .find(|arg| arg.to_str().is_none())?;
    Some(timbre_core::error::invalid_input(format!(
        "{}: not a UTF-8 name (a legacy encoding?): file and folder names are kept as UTF-8 \
         text; rename it",
        std::path::Path::new(&arg).display()
    )))
}

fn main() -> ExitCode {
    // SAFETY: first thing in `main`, while the process has one thread.
    unsafe { timbre_nn::device::set_cpu_kernel_options() };
    if let Some(err) = non_utf8_argument() {
        let json = std::env::args_os().any(|arg| arg == "--json");
        output::Output { json }.error(&err);
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    let out = output::Output { json: cli.json };
    let data_dir = cli.data_dir.clone();
    let result = match cli.command {
        Command::Import(args) => commands::import::run(cli.data_dir.as_deref(), &out, args),
        Command::Record(args) => commands::record::run(cli.data_dir.as_deref(), &out, args),
        Command::Devices => commands::record::devices(&out),
        Command::Library(cmd) => commands::library::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Convert(args) => commands::convert::run(cli.data_dir.as_deref(), &out, args),
        Command::Cover(args) => commands::cover::run(cli.data_dir.as_deref(), &out, args),
        Command::Enhance(args) => commands::clean::enhance(cli.data_dir.as_deref(), &out, args),
        Command::Isolate(args) => commands::clean::isolate(cli.data_dir.as_deref(), &out, args),
        Command::Dataset(cmd) => commands::dataset::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Train(cmd) => commands::train::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Export(args) => commands::train::export(cli.data_dir.as_deref(), &out, args),
        Command::Models(cmd) => commands::models::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Jobs(cmd) => commands::jobs::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Settings(cmd) => commands::settings::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Effects(cmd) => commands::effects::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Assets(cmd) => commands::assets::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Doctor => commands::doctor::run(cli.data_dir.as_deref(), &out),
        Command::Runtime(cmd) => commands::runtime::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Analyze(cmd) => commands::analyze::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Live(cmd) => commands::live::run(cli.data_dir.as_deref(), &out, cmd),
        Command::Update(cmd) => commands::update::run(cli.data_dir.as_deref(), &out, cmd),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let err = match timbre_core::library::resolve_data_dir(data_dir.as_deref()) {
                Ok(dir) => timbre_core::error::explain_disk_full(err, &dir),
                Err(_) => err,
            };
            out.error(&err);
            ExitCode::FAILURE
        }
    }
}
