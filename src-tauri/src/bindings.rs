//! The UI's contract, generated: `ui/src/lib/generated/` holds the TypeScript of the types the
//! commands return and take, the notifications and the error report, as ts-rs writes it from
//! the Rust types, and `ui/src/lib/api.ts` imports it, so the two sides cannot drift apart.
//!
//! ts-rs derives sit on the types where they are defined, in the core crates too: a derive of
//! plain data, with no Tauri in it, so the core crates and the CLI build without Tauri (typing
//! the commands themselves, as tauri-specta does, would need the types to implement a trait of
//! Tauri's ecosystem). The test below fails when the committed files differ from what the types
//! give; `make bindings` writes them anew.

use crate::commands::assets::AssetList;
use crate::commands::clean::{DerivedResult, EnhancePresets, IsolationModels};
use crate::commands::convert::ParameterRanges;
use crate::commands::datasets::DatasetRow;
use crate::commands::record::LevelUpdate;
use crate::commands::train::TrainingDefaults;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use timbre_audio::record::InputDevice;
use timbre_core::clean::PreviewInfo;
use timbre_core::db::{
    conversions::Conversion, datasets::Dataset, job_events::JobEvent, jobs::Job,
    listening_tests::ListeningTest, models::Model, takes::Take, training_metrics::TrainingMetric,
    training_previews::TrainingPreview, trainings::Training, voices::Voice,
};
use timbre_core::devices::DeviceReport;
use timbre_core::doctor;
use timbre_core::model_cache::ModelCacheReport;
use timbre_core::models_folder::SeparationModel;
use timbre_core::monitor::ResourceSnapshot;
use timbre_core::train::session::EpochProfile;
use timbre_core::voice_import::{VoiceImportReport, VoiceImportRequest};
use timbre_core::{ErrorReport, Notification};
use ts_rs::{Config, TS};

const GENERATED_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/src/lib/generated");

/// Writes every type the UI exchanges with the backend, with the types they use, into `dir`.
fn export_contract(dir: &Path) -> Result<(), ts_rs::ExportError> {
    let cfg = Config::new()
        // Ids, byte and frame counts stay far below 2^53.
        .with_large_int("number")
        .with_out_dir(dir);
    macro_rules! export {
        ($($ty:ty),* $(,)?) => {
            $(<$ty as TS>::export_all(&cfg)?;)*
        };
    }
    export!(
        ErrorReport,
        Notification,
        Take,
        Voice,
        Job,
        JobEvent,
        Model,
        Conversion,
        ListeningTest,
        DerivedResult,
        DatasetRow,
        Dataset,
        Training,
        TrainingMetric,
        TrainingPreview,
        EpochProfile,
        ModelCacheReport,
        timbre_core::input::AudioInput,
        timbre_core::output_format::OutputFormat,
        timbre_core::library_export::LibraryItem,
        timbre_core::separation::IsolationMethod,
        timbre_core::clean::PreviewRequest,
        timbre_core::derived::SavedTake,
        timbre_core::convert::ConvertParams,
        timbre_core::convert::ConvertResult,
        timbre_core::clean::EnhanceResult,
        timbre_core::clean::IsolateResult,
        timbre_core::assets::DownloadRequest,
        timbre_core::cover::CoverSettings,
        timbre_core::cover::CoverResult,
        timbre_core::live::tune::TuneRequest,
        timbre_core::live::tune::TuneReport,
        timbre_core::dataset::PrepareRequest,
        timbre_core::train::TrainRequest,
        timbre_core::train::judge::JudgeReport,
        ResourceSnapshot,
        DeviceReport,
        InputDevice,
        LevelUpdate,
        AssetList,
        doctor::Report,
        timbre_nn::voice::VoiceParams,
        ParameterRanges,
        TrainingDefaults,
        IsolationModels,
        SeparationModel,
        EnhancePresets,
        PreviewInfo,
        VoiceImportRequest,
        VoiceImportReport,
        timbre_core::pitch_analysis::PitchCurve,
        timbre_nn::model_info::InfoEdits,
        timbre_core::live::DeviceList,
        timbre_core::live::LiveRequest,
        timbre_core::live::LiveStatus,
        timbre_core::live::LatencyMeasurement,
        timbre_core::live::RecordedSession,
        timbre_core::db::effect_presets::EffectPreset,
        crate::commands::settings::SettingsView,
        timbre_core::updates::UpdateCheck,
        timbre_core::updates::Installed,
        timbre_core::updates::UpdateRequest,
        crate::commands::about::About,
    );
    Ok(())
}

/// The generated files by path below the folder, with `index.ts` re-exporting each type.
fn generated_files() -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    export_contract(dir.path()).expect("exporting the TypeScript types");
    let mut files = read_tree(dir.path());
    let index: String = files
        .keys()
        .map(|path| {
            let module = path.trim_end_matches(".ts");
            let ty = module.rsplit('/').next().unwrap_or(module);
            format!("export type {{ {ty} }} from './{module}';\n")
        })
        .collect();
    files.insert("index.ts".into(), index);
    files
}

/// Every file below `root` by its path relative to it (`/`-separated); none when it is missing.
fn read_tree(root: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy();
                let text = fs::read_to_string(&path).unwrap_or_default();
                files.insert(relative.into_owned(), text);
            }
        }
    }
    files
}

#[test]
fn committed_typescript_is_what_the_rust_types_generate() {
    let generated = generated_files();
    if std::env::var_os("TIMBRE_WRITE_BINDINGS").is_some() {
        let _ = fs::remove_dir_all(GENERATED_DIR);
        fs::create_dir_all(GENERATED_DIR).expect("creating the generated folder");
        for (path, text) in &generated {
            let path = Path::new(GENERATED_DIR).join(path);
            fs::create_dir_all(path.parent().unwrap()).expect("creating a folder");
            fs::write(path, text).expect("writing a type");
        }
        return;
    }
    let committed = read_tree(Path::new(GENERATED_DIR));
    let differing: Vec<&String> = generated
        .keys()
        .chain(committed.keys())
        .filter(|name| generated.get(*name) != committed.get(*name))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        differing.is_empty(),
        "ui/src/lib/generated differs from what the Rust types generate in {differing:?}: \
         run `make bindings` and commit the result"
    );
}

const DEFAULTS_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../ui/tests/fixtures/command-defaults.json"
);

/// What the defaults commands answer, by command name: the UI tests' IPC mock answers with this
/// file, so the UI's defaults in tests are the backend's, written once in Rust.
/// Serialized as the commands' answers are (an f32 through `serde_json::Value` would gain
/// digits: 0.33 as 0.33000001311302185).
fn command_defaults() -> String {
    #[derive(serde::Serialize)]
    struct Answers {
        get_conversion_defaults: timbre_nn::voice::VoiceParams,
        get_parameter_ranges: ParameterRanges,
        get_training_defaults: TrainingDefaults,
        get_live_defaults: timbre_nn::stream::StreamParams,
    }
    let answers = Answers {
        get_conversion_defaults: crate::commands::convert::get_conversion_defaults(),
        get_parameter_ranges: crate::commands::convert::get_parameter_ranges(),
        get_training_defaults: crate::commands::train::get_training_defaults(),
        get_live_defaults: crate::commands::live::get_live_defaults(),
    };
    serde_json::to_string_pretty(&answers).expect("defaults as JSON") + "\n"
}

#[test]
fn committed_defaults_fixture_is_what_the_commands_answer() {
    let answers = command_defaults();
    if std::env::var_os("TIMBRE_WRITE_BINDINGS").is_some() {
        fs::create_dir_all(Path::new(DEFAULTS_FIXTURE).parent().unwrap())
            .expect("creating the fixtures folder");
        fs::write(DEFAULTS_FIXTURE, answers).expect("writing the defaults fixture");
        return;
    }
    let committed = fs::read_to_string(DEFAULTS_FIXTURE).unwrap_or_default();
    assert_eq!(
        committed, answers,
        "ui/tests/fixtures/command-defaults.json differs from what the defaults commands \
         answer: run `make bindings` and commit the result"
    );
}
