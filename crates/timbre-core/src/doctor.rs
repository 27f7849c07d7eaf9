//! What this machine and library can do now: libtorch and its devices, audio inputs, the
//! catalogue's assets, free disk space, and for each job kind whether it can run and what it
//! lacks (`timbre doctor`).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::assets::{self, AssetState, AssetStatus, Catalog};
use crate::devices::{self, DeviceReport};
use crate::library::Library;
use crate::models_folder;

#[derive(Debug, Serialize, ts_rs::TS)]
#[ts(rename = "DoctorReport")]
pub struct Report {
    pub libtorch: Libtorch,
    pub devices: DeviceReport,
    pub audio_inputs: Vec<timbre_audio::record::InputDevice>,
    /// Why the audio inputs could not be listed.
    pub audio_problem: Option<String>,
    pub data_dir: PathBuf,
    pub data_dir_free_bytes: Option<u64>,
    pub models_dir: PathBuf,
    pub assets: Vec<AssetStatus>,
    pub jobs: Vec<JobReadiness>,
}

#[derive(Debug, Serialize, ts_rs::TS)]
pub struct Libtorch {
    pub cuda: bool,
    pub cudnn: bool,
    pub gpus: Vec<Gpu>,
}

#[derive(Debug, Serialize, ts_rs::TS)]
pub struct Gpu {
    pub device: String,
    /// From NVML, when it answers.
    pub name: Option<String>,
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, Serialize, PartialEq, ts_rs::TS)]
pub struct JobReadiness {
    pub kind: String,
    /// Whether a job of this kind can run now.
    pub ready: bool,
    /// What stops it.
    pub lacks: Vec<String>,
    /// What it would use if it were there.
    pub would_use: Vec<String>,
}

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
    let jobs = crate::job_handlers(&Default::default())
        .iter()
        .map(|handler| readiness(handler.kind(), &models_dir, &devices, &statuses))
        .collect();
    Ok(Report {
        libtorch: libtorch(),
        devices,
        audio_inputs,
        audio_problem,
        data_dir: library.data_dir().to_path_buf(),
        data_dir_free_bytes: assets::disk::available_space(library.data_dir()),
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
    Libtorch {
        cuda: tch::Cuda::is_available(),
        cudnn: tch::Cuda::cudnn_is_available(),
        gpus,
    }
}

fn readiness(
    kind: &str,
    models_dir: &std::path::Path,
    devices: &DeviceReport,
    assets: &[AssetStatus],
) -> JobReadiness {
    let mut lacks = Vec::new();
    let mut would_use = Vec::new();
    let usable = |path: &str| {
        assets.iter().any(|s| {
            s.asset.path == path && matches!(s.state, AssetState::Present | AssetState::Verified)
        })
    };
    let hubert = || {
        (models_folder::find_hubert(models_dir).is_none()).then(|| {
            format!(
                "HuBERT: hubert_base.pt in {} (timbre assets download hubert)",
                models_dir.display()
            )
        })
    };
    let rmvpe = || {
        (!usable("rmvpe.pt"))
            .then(|| "RMVPE for rmvpe pitch (timbre assets download rmvpe)".to_string())
    };
    let device = || devices.problem.clone();
    match kind {
        "convert" | "dataset" => {
            lacks.extend(hubert());
            lacks.extend(device());
            would_use.extend(rmvpe());
        }
        "train" => {
            lacks.extend(device());
            if !usable("pretrained_v2/f0G40k.pth") || !usable("pretrained_v2/f0D40k.pth") {
                would_use.push(
                    "pretrained bases, e.g. pretrained_v2/f0G40k.pth and f0D40k.pth (timbre assets \
                     download pretrained-v2-f0G40k pretrained-v2-f0D40k); without them training \
                     starts from scratch"
                        .into(),
                );
            }
        }
        "isolate" => {
            lacks.extend(device());
            if crate::clean::separation_models(models_dir).is_empty() {
                would_use.push(
                    "a RoFormer .ckpt + .yaml in separation/ (timbre assets download \
                     bs-roformer-ep317 bs-roformer-ep317-config); without one only the rough \
                     preview runs"
                        .into(),
                );
            }
        }
        _ => {}
    }
    JobReadiness {
        kind: kind.to_string(),
        ready: lacks.is_empty(),
        lacks,
        would_use,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_lacks_hubert_until_it_is_there() {
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
        let convert = readiness("convert", dir.path(), &devices, &statuses());
        assert!(!convert.ready);
        assert!(convert.lacks[0].contains("hubert_base.pt"), "{convert:?}");
        assert!(convert.would_use[0].contains("RMVPE"));
        std::fs::write(dir.path().join("hubert_base.pt"), "x").unwrap();
        assert!(readiness("convert", dir.path(), &devices, &statuses()).ready);
        assert!(readiness("import", dir.path(), &devices, &statuses()).ready);
        let train = readiness("train", dir.path(), &devices, &statuses());
        assert!(train.ready && train.would_use[0].contains("f0G40k"));
    }
}
