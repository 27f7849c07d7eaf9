//! Each kind of model the jobs load, through the cache: the key that identifies it and what it
//! costs in memory (its weights' bytes on disk, doubled for voices, whose half-precision files
//! load as float32).

use std::path::Path;

use anyhow::{Context, Result};
use tch::Device;
use timbre_nn::crepe::Crepe;
use timbre_nn::device::Precision;
use timbre_nn::fcpe::Fcpe;
use timbre_nn::hubert::Hubert;
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::pesto::Pesto;
use timbre_nn::rmvpe::Rmvpe;
use timbre_nn::separation::Separator;
use timbre_nn::swift_f0::SwiftF0;
use timbre_nn::synthesizer::Synthesizer;

use super::{CacheUse, ModelCache, ModelKey, ModelKind, Shared};
use crate::hashing;
use crate::models_folder::SeparationModel;

/// A file of the library's store, named by its content.
pub struct StoredFile<'a> {
    /// SHA-256 of the file's content (hex): its key in the store and in the cache.
    pub sha256: &'a str,
    /// Where the file lies in the store.
    pub path: &'a Path,
    /// What the user calls it, for the Jobs page.
    pub name: &'a str,
}

fn key(kind: ModelKind, identity: String, device: Device, precision: &str) -> ModelKey {
    ModelKey {
        kind,
        identity,
        device: format!("{device:?}"),
        precision: precision.to_string(),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

impl ModelCache {
    /// HuBERT from a fairseq file or a transformers folder, kept while the file stays the same.
    pub fn hubert(&self, path: &Path, device: Device) -> Result<(Shared<Hubert>, CacheUse)> {
        let key = key(ModelKind::Hubert, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((Hubert::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// RMVPE from its weights file, kept while the file stays the same.
    pub fn rmvpe(&self, path: &Path, device: Device) -> Result<(Shared<Rmvpe>, CacheUse)> {
        let key = key(ModelKind::Rmvpe, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((Rmvpe::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// FCPE from its weights file, kept while the file stays the same.
    pub fn fcpe(&self, path: &Path, device: Device) -> Result<(Shared<Fcpe>, CacheUse)> {
        let key = key(ModelKind::Fcpe, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((Fcpe::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// SwiftF0 from its ONNX file, kept while the file stays the same.
    pub fn swift_f0(&self, path: &Path, device: Device) -> Result<(Shared<SwiftF0>, CacheUse)> {
        let key = key(ModelKind::SwiftF0, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((SwiftF0::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// PESTO from its checkpoint, kept while the file stays the same.
    pub fn pesto(&self, path: &Path, device: Device) -> Result<(Shared<Pesto>, CacheUse)> {
        let key = key(ModelKind::Pesto, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((Pesto::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// CREPE (full or tiny, as the file is) from its weights, kept while the file stays the same.
    pub fn crepe(&self, path: &Path, device: Device) -> Result<(Shared<Crepe>, CacheUse)> {
        let key = key(ModelKind::Crepe, hashing::identity(path)?, device, "fp32");
        self.get_or_load(key, &file_name(path), || {
            Ok((Crepe::load(path, device)?, hashing::disk_bytes(path)))
        })
    }

    /// A voice's synthesizer from the store, keyed by its content; counted at twice its file's
    /// size, as half-precision weights load as float32.
    pub fn voice(
        &self,
        file: &StoredFile,
        device: Device,
    ) -> Result<(Shared<Synthesizer>, CacheUse)> {
        let key = key(ModelKind::Voice, file.sha256.to_string(), device, "fp32");
        self.get_or_load(key, file.name, || {
            Ok((
                Synthesizer::load(file.path, device)?,
                hashing::disk_bytes(file.path) * 2,
            ))
        })
    }

    /// Indexes are searched on the CPU whatever the device.
    pub fn index(&self, file: &StoredFile) -> Result<(Shared<IvfFlatIndex>, CacheUse)> {
        let key = key(
            ModelKind::Index,
            file.sha256.to_string(),
            Device::Cpu,
            "fp32",
        );
        self.get_or_load(key, file.name, || {
            Ok((
                IvfFlatIndex::read(file.path)?,
                hashing::disk_bytes(file.path),
            ))
        })
    }

    /// A RoFormer in the precision the device runs separation in.
    pub fn separator(
        &self,
        model: &SeparationModel,
        device: Device,
    ) -> Result<(Shared<Separator>, CacheUse)> {
        let precision = Precision::default_for(device)?;
        let key = key(
            ModelKind::Separator,
            hashing::identity(&model.checkpoint)? + &hashing::identity(&model.config)?,
            device,
            precision.name(),
        );
        self.get_or_load(key, &model.name, || {
            let separator = Separator::load_on(
                &model.checkpoint,
                &model.config,
                None,
                device,
                precision.weight_kind(),
            )
            .with_context(|| format!("loading the separation model {}", model.name))?;
            Ok((separator, hashing::disk_bytes(&model.checkpoint)))
        })
    }
}
