//! The pitch methods that run a network (RMVPE, FCPE, CREPE, SwiftF0, PESTO): the file each needs in the models folder,
//! the model loaded through the process's model cache, and the tracker over it that conversion
//! and dataset preparation use alike.

use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

use anyhow::Result;
use tch::Device;
use timbre_nn::crepe::Crepe;
use timbre_nn::fcpe::Fcpe;
use timbre_nn::pesto::Pesto;
use timbre_nn::pipeline::{F0Method, PitchTracker};
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::swift_f0::SwiftF0;

use crate::model_cache::{ModelCache, Shared};
use crate::models_folder;

/// The weights `method` runs on, or None for the weight-free methods; an error that says where
/// to put them when they are missing.
pub fn model_file(models_dir: &Path, method: F0Method) -> Result<Option<PathBuf>> {
    let (found, wanted, asset) = match method {
        F0Method::Rmvpe => (models_folder::find_rmvpe(models_dir), "rmvpe.pt", "rmvpe"),
        F0Method::Fcpe => (models_folder::find_fcpe(models_dir), "fcpe.pt", "fcpe"),
        F0Method::Crepe => (
            models_folder::find_crepe(models_dir, "full"),
            "crepe-full.pth",
            "crepe-full",
        ),
        F0Method::CrepeTiny => (
            models_folder::find_crepe(models_dir, "tiny"),
            "crepe-tiny.pth",
            "crepe-tiny",
        ),
        F0Method::SwiftF0 => (
            models_folder::find_swift_f0(models_dir),
            "swift-f0.onnx",
            "swift-f0",
        ),
        F0Method::Pesto => (models_folder::find_pesto(models_dir), "pesto.ckpt", "pesto"),
        F0Method::Pm | F0Method::Yin => return Ok(None),
    };
    found.map(Some).ok_or_else(|| {
        crate::error::not_found(format!(
            "pitch method {} needs {wanted} in {}: download it on the Models page (timbre \
             assets download {asset}), put it there, or choose pm or yin",
            method.name(),
            models_dir.display(),
        ))
    })
}

/// A pitch network from the model cache.
pub enum PitchModel {
    /// RMVPE, for the `rmvpe` method.
    Rmvpe(Shared<Rmvpe>),
    /// FCPE, for the `fcpe` method.
    Fcpe(Shared<Fcpe>),
    /// CREPE, for `crepe` and `crepe-tiny` (full or tiny, as its file is).
    Crepe(Shared<Crepe>),
    /// SwiftF0, for `swiftf0`.
    SwiftF0(Shared<SwiftF0>),
    /// PESTO, for `pesto`.
    Pesto(Shared<Pesto>),
}

/// A pitch network held for one run.
pub enum HeldPitchModel<'a> {
    /// RMVPE, locked.
    Rmvpe(MutexGuard<'a, Rmvpe>),
    /// FCPE, locked.
    Fcpe(MutexGuard<'a, Fcpe>),
    /// CREPE, locked.
    Crepe(MutexGuard<'a, Crepe>),
    /// SwiftF0, locked.
    SwiftF0(MutexGuard<'a, SwiftF0>),
    /// PESTO, locked.
    Pesto(MutexGuard<'a, Pesto>),
}

impl PitchModel {
    /// The network of `method` from `file`, through the cache; None for weight-free methods.
    pub fn load(
        models: &ModelCache,
        method: F0Method,
        file: &Path,
        device: Device,
    ) -> Result<Option<PitchModel>> {
        Ok(match method {
            F0Method::Rmvpe => Some(PitchModel::Rmvpe(models.rmvpe(file, device)?.0)),
            F0Method::Fcpe => Some(PitchModel::Fcpe(models.fcpe(file, device)?.0)),
            F0Method::Crepe | F0Method::CrepeTiny => {
                Some(PitchModel::Crepe(models.crepe(file, device)?.0))
            }
            F0Method::SwiftF0 => Some(PitchModel::SwiftF0(models.swift_f0(file, device)?.0)),
            F0Method::Pesto => Some(PitchModel::Pesto(models.pesto(file, device)?.0)),
            F0Method::Pm | F0Method::Yin => None,
        })
    }

    /// Locks the network for one run, waiting while another run holds it.
    pub fn lock(&self) -> HeldPitchModel<'_> {
        match self {
            PitchModel::Rmvpe(model) => HeldPitchModel::Rmvpe(model.lock()),
            PitchModel::Fcpe(model) => HeldPitchModel::Fcpe(model.lock()),
            PitchModel::Crepe(model) => HeldPitchModel::Crepe(model.lock()),
            PitchModel::SwiftF0(model) => HeldPitchModel::SwiftF0(model.lock()),
            PitchModel::Pesto(model) => HeldPitchModel::Pesto(model.lock()),
        }
    }
}

/// The tracker of `method`, over its held network when it has one.
pub fn tracker<'a>(
    method: F0Method,
    model: Option<&'a HeldPitchModel<'_>>,
) -> Result<PitchTracker<'a>> {
    Ok(match (method, model) {
        (F0Method::Pm, _) => PitchTracker::Pm,
        (F0Method::Yin, _) => PitchTracker::Yin,
        (F0Method::Rmvpe, Some(HeldPitchModel::Rmvpe(model))) => PitchTracker::Rmvpe(model),
        (F0Method::Fcpe, Some(HeldPitchModel::Fcpe(model))) => PitchTracker::Fcpe(model),
        (F0Method::Crepe | F0Method::CrepeTiny, Some(HeldPitchModel::Crepe(model))) => {
            PitchTracker::Crepe(model)
        }
        (F0Method::SwiftF0, Some(HeldPitchModel::SwiftF0(model))) => PitchTracker::SwiftF0(model),
        (F0Method::Pesto, Some(HeldPitchModel::Pesto(model))) => PitchTracker::Pesto(model),
        (method, _) => anyhow::bail!("the {} model is not loaded", method.name()),
    })
}
