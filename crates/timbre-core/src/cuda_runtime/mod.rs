//! The CUDA runtime a package does not ship: libtorch_cuda and NVIDIA's libraries, about
//! 2.5 GB, from the PyPI wheels of the exact torch this build links (`models/cuda-runtime.json`,
//! written by scripts/cuda_runtime_catalogue.py with PyPI's hashes). Installing downloads each
//! wheel through the asset downloader (resumable, SHA-256-verified), unpacks only the libraries
//! into a staging folder beside the runtime folder and renames it into place, so the runtime is
//! there whole or not at all; `timbre_torch_ext::cuda` loads it at the next start. Removing it
//! returns the app to the CPU.

mod job;

pub use job::{RuntimeInstallHandler, start_install};

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::assets::catalog::Catalog;
use crate::assets::download::{Progress, download};
use crate::settings::Settings;
use timbre_torch_ext::cuda;

/// Replaces the shipped runtime catalogue with the file it names (tests).
pub const CATALOG_ENV: &str = "TIMBRE_CUDA_RUNTIME_CATALOG";

const SHIPPED: &str = include_str!("../../../../models/cuda-runtime.json");

/// The libraries of the torch wheel that make its CUDA backend; the rest of it (libtorch_cpu,
/// libc10, …) is the CPU runtime the package already has.
const TORCH_CUDA_LIBRARIES: [&str; 5] = [
    "libtorch_cuda.so",
    "libc10_cuda.so",
    "libtorch_cuda_linalg.so",
    "libtorch_nvshmem.so",
    "libcaffe2_nvrtc.so",
];

/// Where the CUDA runtime stands, for `timbre runtime status` and Settings.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct RuntimeStatus {
    /// The libtorch version this build links; the runtime must be this version's.
    pub torch_version: String,
    /// The folder the runtime is installed in.
    pub folder: String,
    /// Whether it is installed there.
    pub installed: bool,
    /// The libtorch_cuda.so this process loaded at start, wherever it came from.
    pub loaded: Option<String>,
    /// Why none was loaded, or what of it failed.
    pub problem: Option<String>,
    /// Whether an NVIDIA driver answers, so that installing it would give a GPU.
    pub nvidia_driver: bool,
    /// Bytes the installed runtime takes.
    #[ts(type = "number")]
    pub bytes_on_disk: u64,
    /// Bytes an install downloads.
    #[ts(type = "number")]
    pub download_bytes: u64,
}

/// What an install did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Installed {
    /// The runtime folder, now holding it.
    pub folder: PathBuf,
    /// Wheels downloaded (or found verified from an earlier, interrupted install).
    pub wheels: usize,
    /// Libraries unpacked.
    pub libraries: usize,
    /// Bytes the libraries take.
    pub bytes: u64,
}

#[derive(Deserialize)]
struct Header {
    torch_version: String,
}

/// The runtime catalogue: `TIMBRE_CUDA_RUNTIME_CATALOG`, else the shipped one, checked to be
/// for this build's libtorch.
pub fn catalog() -> Result<Catalog> {
    let (text, origin) = match std::env::var_os(CATALOG_ENV) {
        Some(path) => (
            std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "reading the CUDA runtime catalogue {} ({CATALOG_ENV})",
                    Path::new(&path).display()
                )
            })?,
            Path::new(&path).display().to_string(),
        ),
        None => (
            SHIPPED.to_owned(),
            "the shipped models/cuda-runtime.json".to_owned(),
        ),
    };
    let header: Header = serde_json::from_str(&text)
        .with_context(|| format!("the CUDA runtime catalogue {origin} names no torch_version"))?;
    if header.torch_version != cuda::TORCH_VERSION {
        bail!(
            "the CUDA runtime catalogue {origin} is for torch {}, but this build links torch {}",
            header.torch_version,
            cuda::TORCH_VERSION
        );
    }
    Catalog::parse(&text, &origin)
}

fn runtime_folder() -> Result<PathBuf> {
    cuda::runtime_folder().context("no data directory for the CUDA runtime: set TIMBRE_RUNTIME_DIR")
}

/// Where the runtime stands now.
pub fn status() -> Result<RuntimeStatus> {
    let folder = runtime_folder()?;
    let backend = cuda::backend();
    Ok(RuntimeStatus {
        torch_version: cuda::TORCH_VERSION.to_owned(),
        installed: folder.join("torch/lib/libtorch_cuda.so").is_file(),
        bytes_on_disk: folder_bytes(&folder),
        folder: folder.display().to_string(),
        loaded: backend.library.as_ref().map(|p| p.display().to_string()),
        problem: backend.problem.clone(),
        nvidia_driver: nvml_wrapper::Nvml::init().is_ok(),
        download_bytes: catalog()?.assets.iter().filter_map(|a| a.size_bytes).sum(),
    })
}

/// Downloads and unpacks the runtime; `on_progress` gets a line per chunk and may stop the
/// install by returning an error (the partial download stays for the next try).
pub fn install(
    settings: &Settings,
    on_progress: &mut dyn FnMut(&str, &Progress) -> Result<()>,
) -> Result<Installed> {
    let catalog = catalog()?.configured(settings);
    let folder = runtime_folder()?;
    let root = folder.parent().context("the runtime folder has a parent")?;
    let downloads = root.join("downloads");
    let mut wheels = Vec::new();
    for asset in &catalog.assets {
        let got = download(&downloads, &catalog, asset, &mut |progress| {
            on_progress(&asset.name, progress)
        })?;
        wheels.push(got.path);
    }
    let staging = staging_folder(&folder);
    remove_if_there(&staging)?;
    let mut libraries = 0;
    let mut bytes = 0;
    for wheel in &wheels {
        let (count, size) = unpack(wheel, &staging)?;
        libraries += count;
        bytes += size;
    }
    if !staging.join("torch/lib/libtorch_cuda.so").is_file() {
        bail!(
            "the CUDA runtime's wheels hold no torch/lib/libtorch_cuda.so ({})",
            catalog.origin
        );
    }
    remove_if_there(&folder)?;
    std::fs::rename(&staging, &folder)
        .with_context(|| format!("moving {} to {}", staging.display(), folder.display()))?;
    remove_if_there(&downloads)?;
    Ok(Installed {
        folder,
        wheels: wheels.len(),
        libraries,
        bytes,
    })
}

/// Deletes the runtime and any partial install; whether there was anything.
pub fn remove() -> Result<bool> {
    let folder = runtime_folder()?;
    let root = folder.parent().context("the runtime folder has a parent")?;
    let mut removed = false;
    for path in [folder.clone(), root.join("downloads")] {
        removed |= remove_if_there(&path)?;
    }
    removed |= remove_if_there(&staging_folder(&folder))?;
    Ok(removed)
}

/// Where an install unpacks before renaming into `folder`: beside it, on the same file system.
fn staging_folder(folder: &Path) -> PathBuf {
    let name = folder.file_name().unwrap_or_default().to_string_lossy();
    folder.with_file_name(format!("{name}.unpacking"))
}

/// Whether a wheel's member is a library of the CUDA runtime: NVIDIA's `nvidia/*/lib/*.so*` and
/// the torch wheel's CUDA backend.
fn wanted(member: &str) -> bool {
    let Some((dir, file)) = member.rsplit_once('/') else {
        return false;
    };
    (member.starts_with("nvidia/") && dir.ends_with("/lib") && file.contains(".so"))
        || (dir == "torch/lib" && TORCH_CUDA_LIBRARIES.contains(&file))
}

/// Unpacks the runtime's libraries of `wheel` under `into`: (count, bytes).
fn unpack(wheel: &Path, into: &Path) -> Result<(usize, u64)> {
    let file =
        std::fs::File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file)
        .with_context(|| format!("{}: not a wheel (zip) file", wheel.display()))?;
    let (mut count, mut bytes) = (0, 0);
    for i in 0..archive.len() {
        let mut member = archive
            .by_index(i)
            .with_context(|| format!("{}: reading member {i}", wheel.display()))?;
        let Some(name) = member.enclosed_name() else {
            bail!(
                "{}: member {:?} points outside the wheel",
                wheel.display(),
                member.name()
            );
        };
        let name = name.to_string_lossy().into_owned();
        if !member.is_file() || !wanted(&name) {
            continue;
        }
        let target = into.join(&name);
        std::fs::create_dir_all(target.parent().unwrap_or(into))
            .with_context(|| format!("creating the folder of {}", target.display()))?;
        let mut out = std::fs::File::create(&target)
            .with_context(|| format!("creating {}", target.display()))?;
        let mut buffer = vec![0; 1 << 20];
        loop {
            let n = member
                .read(&mut buffer)
                .with_context(|| format!("{}: unpacking {name}", wheel.display()))?;
            if n == 0 {
                break;
            }
            out.write_all(&buffer[..n])
                .with_context(|| format!("writing {}", target.display()))?;
            bytes += n as u64;
        }
        out.sync_all()
            .with_context(|| format!("writing {}", target.display()))?;
        count += 1;
    }
    Ok((count, bytes))
}

fn remove_if_there(path: &Path) -> Result<bool> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("deleting {}", path.display())),
    }
}

fn folder_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => folder_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_cuda_libraries_of_the_wheels_are_unpacked() {
        assert!(wanted("nvidia/cu13/lib/libcublas.so.13"));
        assert!(wanted("nvidia/cudnn/lib/libcudnn.so.9"));
        assert!(wanted("torch/lib/libtorch_cuda.so"));
        assert!(!wanted("torch/lib/libtorch_cpu.so"));
        assert!(!wanted("nvidia/cu13/include/cuda.h"));
        assert!(!wanted("nvidia/cu13/lib/libcudart_static.a"));
        assert!(!wanted("torch/__init__.py"));
    }

    #[test]
    fn the_shipped_catalogue_is_for_the_linked_torch_with_pypis_hashes() {
        let catalog = catalog().expect("the shipped catalogue matches this build");
        assert!(catalog.assets.iter().any(|a| a.name == "torch"));
        assert!(
            catalog
                .assets
                .iter()
                .all(|a| a.sha256.is_some() && a.size_bytes.is_some())
        );
    }
}
