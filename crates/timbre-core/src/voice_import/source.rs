//! From what the user gave (a path or a link) to the `.pth` and `.index` files it holds, each
//! readable on disk: a folder's files where they are, an archive's entries streamed into
//! temporary files of the store's tmp folder (deleted when dropped), a link downloaded first.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

use super::archive::{MemberKind, VoiceZip};
use super::{Progress, SkippedFile, folder, url};
use crate::fetch::UrlPolicy;

/// What an import reads from.
#[derive(Debug, Clone, PartialEq)]
pub enum VoiceSource {
    /// A model file (`.pth`), by absolute path.
    Weights(PathBuf),
    /// A zip archive of voices, by absolute path.
    Archive(PathBuf),
    /// A folder to search for voices (an RVC or Applio install, say), by absolute path.
    Folder(PathBuf),
    /// An http(s) link to download; a Hugging Face `blob` link becomes its `resolve` link.
    Url(String),
}

impl VoiceSource {
    /// A link that `policy` allows (HTTPS, or a plain-HTTP endpoint the user configured), or
    /// a path that exists: a folder, a zip archive (by its name, else its content: a zip without
    /// the `data.pkl` of a `torch.save` file), else a model file.
    pub fn parse(text: &str, policy: &UrlPolicy) -> Result<Self> {
        let text = text.trim();
        if url::is_url(text) {
            let link = url::file_url(text);
            // Refused here rather than in the job: plain HTTP only from a configured endpoint.
            policy.check(&link)?;
            return Ok(VoiceSource::Url(link));
        }
        if text.is_empty() {
            return Err(crate::error::invalid_input(
                "choose a .pth, a .zip, a folder or a link to import",
            ));
        }
        let path = std::path::absolute(text)?;
        if path.is_dir() {
            Ok(VoiceSource::Folder(path))
        } else if path.is_file() {
            Ok(if is_archive(&path) {
                VoiceSource::Archive(path)
            } else {
                VoiceSource::Weights(path)
            })
        } else {
            Err(crate::error::not_found(format!(
                "{}: no such file or folder",
                path.display()
            )))
        }
    }

    /// How messages name it.
    pub fn label(&self) -> String {
        match self {
            VoiceSource::Weights(p) | VoiceSource::Archive(p) | VoiceSource::Folder(p) => {
                p.display().to_string()
            }
            VoiceSource::Url(u) => u.clone(),
        }
    }
}

fn is_archive(path: &Path) -> bool {
    let lower = path.to_string_lossy().to_ascii_lowercase();
    if lower.ends_with(".zip") {
        return true;
    }
    if lower.ends_with(".pth") || lower.ends_with(".pt") {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    match zip::ZipArchive::new(BufReader::new(file)) {
        Ok(archive) => !archive
            .file_names()
            .filter_map(|n| n.ok())
            .any(|n| n == "data.pkl" || n.ends_with("/data.pkl")),
        Err(_) => false,
    }
}

/// A `.pth` or `.index` of the source, readable at `path`.
pub struct Staged {
    pub path: PathBuf,
    /// Its path inside the source (`/`-separated), for pairing.
    pub relative: String,
    /// How messages name it: its path, or `<archive>:<entry>`.
    pub shown: String,
    pub kind: MemberKind,
    /// An archive entry whose stored name is in an unknown legacy encoding (see
    /// [`super::archive::Member::legacy_name`]).
    pub legacy_name: bool,
    /// Keeps an extracted entry on disk while it is needed.
    _extracted: Option<NamedTempFile>,
}

/// The files of `source`, with the entries an archive had that were left out (links, paths
/// leaving the archive) as skipped files.
pub fn stage(
    source: &VoiceSource,
    tmp_dir: &Path,
    policy: &UrlPolicy,
    progress: &mut Progress,
) -> Result<(Vec<Staged>, Vec<SkippedFile>)> {
    match source {
        VoiceSource::Weights(path) => Ok((
            vec![on_disk(path.clone(), file_name(path), MemberKind::Weights)],
            Vec::new(),
        )),
        VoiceSource::Folder(root) => {
            progress(0.0, format!("looking for voices in {}", root.display()))?;
            let files = folder::scan(root)?
                .into_iter()
                .map(|f| Staged {
                    shown: f.path.display().to_string(),
                    path: f.path,
                    relative: f.relative,
                    kind: f.kind,
                    legacy_name: false,
                    _extracted: None,
                })
                .collect();
            Ok((files, Vec::new()))
        }
        VoiceSource::Archive(path) => {
            let file =
                File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
            unpack(file, &path.display().to_string(), tmp_dir, progress)
        }
        VoiceSource::Url(link) => {
            let name = url::file_name(link);
            let mut downloaded = url::download(tmp_dir, link, policy, &mut |bytes| {
                progress(
                    0.0,
                    format!("downloading {name}: {:.1} MB", bytes as f64 / 1e6),
                )
            })?;
            let kind_by_name = name.to_ascii_lowercase();
            let archive = kind_by_name.ends_with(".zip")
                || (!kind_by_name.ends_with(".pth") && is_archive(downloaded.path()));
            if archive {
                let file = downloaded.as_file_mut().try_clone()?;
                unpack(file, link, tmp_dir, progress)
            } else {
                let path = downloaded.path().to_path_buf();
                Ok((
                    vec![Staged {
                        path,
                        relative: name,
                        shown: link.clone(),
                        kind: MemberKind::Weights,
                        legacy_name: false,
                        _extracted: Some(downloaded),
                    }],
                    Vec::new(),
                ))
            }
        }
    }
}

fn on_disk(path: PathBuf, relative: String, kind: MemberKind) -> Staged {
    Staged {
        shown: path.display().to_string(),
        path,
        relative,
        kind,
        legacy_name: false,
        _extracted: None,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Streams each voice entry of an archive into a temporary file.
fn unpack(
    file: File,
    label: &str,
    tmp_dir: &Path,
    progress: &mut Progress,
) -> Result<(Vec<Staged>, Vec<SkippedFile>)> {
    let mut zip = VoiceZip::open(BufReader::new(file), label)?;
    let skipped = zip
        .ignored()
        .iter()
        .map(|i| SkippedFile {
            file: format!("{label}:{}", i.name),
            reason: i.reason.clone(),
        })
        .collect();
    let members = zip.members().to_vec();
    let mut staged = Vec::with_capacity(members.len());
    for (i, member) in members.iter().enumerate() {
        progress(
            0.0,
            format!("unpacking {} ({}/{})", member.name, i + 1, members.len()),
        )?;
        let suffix = match member.kind {
            MemberKind::Weights => ".pth",
            MemberKind::Index => ".index",
        };
        let mut extracted = tempfile::Builder::new()
            .prefix("voice-entry-")
            .suffix(suffix)
            .tempfile_in(tmp_dir)
            .with_context(|| format!("creating a file in {}", tmp_dir.display()))?;
        zip.copy_member(member, extracted.as_file_mut())?;
        staged.push(Staged {
            path: extracted.path().to_path_buf(),
            relative: member.name.clone(),
            shown: format!("{label}:{}", member.name),
            kind: member.kind,
            legacy_name: member.legacy_name,
            _extracted: Some(extracted),
        });
    }
    Ok((staged, skipped))
}
