//! What this machine and library can do now: libtorch and its devices, audio inputs, the
//! catalogue's assets, free disk space, and for each job kind whether it can run and what it
//! lacks (`timbre doctor`).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::assets::{self, AssetState, AssetStatus, Catalog};
use crate::devices::{self, DeviceReport};
use crate::jobs::{JobKind, Need, Needs};
use crate::library::Library;
use crate::models_folder;

/// What `timbre doctor` and the app's diagnostics show about this machine and library.
#[derive(Debug, Serialize, ts_rs::TS)]
#[ts(rename = "DoctorReport")]
pub struct Report {
    /// What libtorch was built with and the GPUs it sees.
    pub libtorch: Libtorch,
    /// The devices to choose from and what the settings resolve to.
    pub devices: DeviceReport,
    /// The recording devices found; empty when none or when listing failed.
    pub audio_inputs: Vec<timbre_audio::record::InputDevice>,
    /// Why the audio inputs could not be listed.
    pub audio_problem: Option<String>,
    /// The library's data folder.
    pub data_dir: PathBuf,
    /// Free space on the data folder's disk, in bytes; None when it cannot be read.
    pub data_dir_free_bytes: Option<u64>,
    /// The models folder the weight files are looked for in.
    pub models_dir: PathBuf,
    /// Each catalogue asset's state in the models folder, from sizes and the ledger (not hashed).
    pub assets: Vec<AssetStatus>,
    /// For each job kind this build runs, whether it can run and what it lacks.
    pub jobs: Vec<JobReadiness>,
}

/// What the linked libtorch supports.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct Libtorch {
    /// The libtorch version this build links, e.g. `2.11.0+cu130`.
    pub version: String,
    /// The libtorch_cuda.so loaded at start (the CUDA runtime); None: CPU only.
    pub cuda_runtime: Option<String>,
    /// Why no CUDA runtime is loaded, or what of it failed to load.
    pub cuda_runtime_problem: Option<String>,
    /// Whether an NVIDIA driver answers (NVML), so a CUDA runtime would have a GPU to use.
    pub nvidia_driver: bool,
    /// Whether CUDA is available.
    pub cuda: bool,
    /// Whether cuDNN is available.
    pub cudnn: bool,
    /// Each CUDA device libtorch sees, in index order.
    pub gpus: Vec<Gpu>,
}

/// One CUDA device.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct Gpu {
    /// How settings name it: `cuda:N`.
    pub device: String,
    /// From NVML, when it answers.
    pub name: Option<String>,
    /// Its total memory in bytes, from NVML; None when NVML does not answer.
    pub memory_bytes: Option<u64>,
}

/// Whether one job kind can run now, from the needs it declares.
#[derive(Debug, Serialize, PartialEq, ts_rs::TS)]
pub struct JobReadiness {
    /// The job kind.
    pub kind: JobKind,
    /// Whether a job of this kind can run now.
    pub ready: bool,
    /// What stops it.
    pub lacks: Vec<String>,
    /// What it would use if it were there.
    pub would_use: Vec<String>,
}

/// Gathers the report: libtorch, devices, audio inputs, disk space, assets and job readiness.
pub fn report(library: &Library) -> Result<Report> {
    let settings = library.settings()?;
    let models_dir = crate::models_folder::of(library)?;
    let catalog = Catalog::read()?;
    let statuses = assets::inspect(&models_dir, &catalog.assets, false)?;
    let devices = devices::report(&settings);
    let (audio_inputs, audio_problem) = match timbre_audio::record::list_input_devices() {
        Ok(inputs) => (inputs, None),
        Err(err) => (Vec::new(), Some(format!("{err:#}"))),
    };
    let jobs = crate::handlers::job_handlers(&Default::default())
        .iter()
        .map(|handler| {
            readiness(
                handler.kind(),
                handler.needs(),
                &models_dir,
                &devices,
                &statuses,
            )
        })
        .collect();
    Ok(Report {
        libtorch: libtorch(),
        devices,
        audio_inputs,
        audio_problem,
        data_dir: library.data_dir().to_path_buf(),
        data_dir_free_bytes: crate::disk::available_space(library.data_dir()),
        models_dir,
        assets: statuses,
        jobs,
    })
}

fn libtorch() -> Libtorch {
    let nvml = nvml_wrapper::Nvml::init().ok();
    let gpus = (0..tch::Cuda::device_count().max(0) as u32)
        .map(|i| {
            let device = nvml.as_ref().and_then(|n| n.device_by_index(i).ok());
            Gpu {
                device: format!("cuda:{i}"),
                name: device.as_ref().and_then(|d| d.name().ok()),
                memory_bytes: device
                    .as_ref()
                    .and_then(|d| d.memory_info().ok())
                    .map(|m| m.total),
            }
        })
        .collect();
    let backend = timbre_torch_ext::cuda::backend();
    Libtorch {
        version: timbre_torch_ext::cuda::TORCH_VERSION.to_owned(),
        cuda_runtime: backend.library.as_ref().map(|p| p.display().to_string()),
        cuda_runtime_problem: backend.problem.clone(),
        nvidia_driver: nvml.is_some(),
        cuda: tch::Cuda::is_available(),
        cudnn: tch::Cuda::cudnn_is_available(),
        gpus,
    }
}

/// Whether a kind can run, from what it declares it needs (`JobHandler::needs`): each
/// required need that is missing stops it; each optional one missing is what it would use.
fn readiness(
    kind: JobKind,
    needs: Needs,
    models_dir: &std::path::Path,
    devices: &DeviceReport,
    assets: &[AssetStatus],
) -> JobReadiness {
    let usable = |path: &str| {
        assets.iter().any(|s| {
            s.asset.path == path && matches!(s.state, AssetState::Present | AssetState::Verified)
        })
    };
    // What a need lacks, said as what to do; None when it is met.
    let missing = |need: Need| -> Option<String> {
        match need {
            Need::Hubert => models_folder::find_hubert(models_dir).is_none().then(|| {
                format!(
                    "HuBERT: hubert_base.pt in {} (timbre assets download hubert)",
                    models_dir.display()
                )
            }),
            Need::Device => devices.problem.clone(),
            Need::Rmvpe => (!usable("rmvpe.pt"))
                .then(|| "RMVPE for rmvpe pitch (timbre assets download rmvpe)".to_string()),
            Need::PretrainedBases => (!usable("pretrained_v2/f0G40k.pth")
                || !usable("pretrained_v2/f0D40k.pth"))
            .then(|| {
                "pretrained bases, e.g. pretrained_v2/f0G40k.pth and f0D40k.pth (timbre assets \
                 download pretrained-v2-f0G40k pretrained-v2-f0D40k); without them training \
                 starts from scratch"
                    .to_string()
            }),
            Need::SeparationModel => models_folder::separation_models(models_dir)
                .iter()
                .all(|m| m.task != Some(timbre_nn::separation::VoiceTask::Vocals))
                .then(|| {
                    "a vocals separation model, .ckpt + .yaml in separation/ (timbre assets \
                     download bs-roformer-ep317 bs-roformer-ep317-config); without one only the \
                     rough preview runs"
                        .to_string()
                }),
            Need::SpeakerEncoder => models_folder::find_speaker_encoder(models_dir)
                .is_none()
                .then(|| {
                    "the speaker encoder for the checkpoint judge's speaker similarity (timbre \
                     assets download speaker-encoder)"
                        .to_string()
                }),
        }
    };
    let lacks: Vec<String> = needs.required.iter().filter_map(|&n| missing(n)).collect();
    let would_use = needs.optional.iter().filter_map(|&n| missing(n)).collect();
    JobReadiness {
        kind,
        ready: lacks.is_empty(),
        lacks,
        would_use,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind this build runs, by name, with what it declares.
    fn kinds() -> Vec<(JobKind, Needs)> {
        crate::handlers::job_handlers(&Default::default())
            .iter()
            .map(|h| (h.kind(), h.needs()))
            .collect()
    }

    #[test]
    fn conversion_and_covers_lack_hubert_until_it_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::read().unwrap();
        let devices = DeviceReport {
            available: vec!["cpu".into()],
            device: String::new(),
            extraction_device: String::new(),
            main: Some("cpu".into()),
            extraction: Some("cpu".into()),
            problem: None,
        };
        let statuses = || assets::inspect(dir.path(), &catalog.assets, false).unwrap();
        let of = |kind: JobKind| {
            let (_, needs) = kinds().into_iter().find(|(k, _)| *k == kind).unwrap();
            readiness(kind, needs, dir.path(), &devices, &statuses())
        };
        for kind in [JobKind::Convert, JobKind::Cover, JobKind::Dataset] {
            let lacking = of(kind);
            assert!(!lacking.ready, "{lacking:?}");
            assert!(lacking.lacks[0].contains("hubert_base.pt"), "{lacking:?}");
            assert!(lacking.would_use[0].contains("RMVPE"), "{lacking:?}");
        }
        assert!(of(JobKind::Cover).would_use[1].contains("vocals separation model"));
        std::fs::write(dir.path().join("hubert_base.pt"), "x").unwrap();
        let ready = [
            JobKind::Convert,
            JobKind::Cover,
            JobKind::Dataset,
            JobKind::Import,
            JobKind::Enhance,
        ];
        for kind in ready {
            assert!(of(kind).ready, "{kind}");
        }
        let train = of(JobKind::Train);
        assert!(train.ready && train.would_use[0].contains("f0G40k"));
    }
}
