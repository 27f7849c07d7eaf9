//! Reading a community voice archive (`.zip`) safely: only its `.pth` and `.index` entries are
//! taken, each streamed into a file the caller owns (never written to a path built from an
//! entry's name), under caps on the entry count, the total size and the compression ratio, so a
//! zip bomb is refused before anything is inflated and cut off if its sizes lie.

use std::io::{Read, Seek, Write};

use anyhow::Result;
use zip::ZipArchive;

/// More entries than any voice archive holds (a model, an index, some readme and audio).
pub const MAX_ENTRIES: usize = 10_000;
/// What all entries may inflate to, together.
pub const MAX_TOTAL_BYTES: u64 = 8 << 30;
/// Weights and feature vectors deflate by a few percent at most and text by 10× or so; deflate
/// tops out near 1032:1, which only runs of identical bytes (bombs) reach.
pub const MAX_RATIO: u64 = 200;
/// Entries below this size are not held to the ratio (a tiny file of zeros is harmless).
const RATIO_FLOOR_BYTES: u64 = 1 << 20;

/// What an entry is to an import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// A `.pth`: voice weights, or another checkpoint the import skips.
    Weights,
    /// A `.index`: a feature index.
    Index,
}

/// A `.pth` or `.index` entry of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its position in the archive.
    position: usize,
    /// Its path inside the archive, `/`-separated and composed (NFC), checked to stay inside it.
    pub name: String,
    /// Weights or index, by the entry's extension.
    pub kind: MemberKind,
    /// The size its header declares; reading stops there.
    pub size: u64,
    /// Whether its stored name is not UTF-8 (none of UTF-8 flag, UTF-8 bytes or an Info-ZIP
    /// Unicode Path field): a legacy code page the archive does not name (GBK, Shift JIS,
    /// CP866… from an archiver on Windows), read as CP437 as the zip format says, so `name` may
    /// be garbled.
    pub legacy_name: bool,
}

/// An entry left out, and why (a symlink, a path that leaves the archive…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Its name as the archive stores it (read as CP437 where it is not UTF-8).
    pub name: String,
    /// Why it was left out, in plain words.
    pub reason: String,
}

/// A zip archive opened for an import: its `.pth` and `.index` entries listed, and checked
/// against the caps.
pub struct VoiceZip<R: Read + Seek> {
    archive: ZipArchive<R>,
    label: String,
    members: Vec<Member>,
    ignored: Vec<Ignored>,
    extracted: u64,
}

impl<R: Read + Seek> VoiceZip<R> {
    /// Lists the archive (`label` names it in messages), refusing bombs and encrypted voice
    /// files before any entry is inflated.
    pub fn open(reader: R, label: &str) -> Result<Self> {
        let archive = ZipArchive::new(reader).map_err(|e| {
            crate::error::invalid_input(format!("{label}: not a readable zip archive ({e})"))
        })?;
        if archive.len() > MAX_ENTRIES {
            return Err(bomb(
                label,
                format!(
                    "it holds {} entries, more than {MAX_ENTRIES}",
                    archive.len()
                ),
            ));
        }
        let mut members = Vec::new();
        let mut ignored = Vec::new();
        let mut total = 0u64;
        for position in 0..archive.len() {
            let entry = archive.by_index_data(position).map_err(|e| {
                crate::error::invalid_input(format!(
                    "{label}: entry {position} is unreadable ({e})"
                ))
            })?;
            // As the zip crate reads names: UTF-8 (flagged or not: macOS and Info-ZIP write it
            // unflagged; an Info-ZIP Unicode Path field already applied), else CP437.
            let legacy_name = std::str::from_utf8(entry.name_raw()).is_err();
            let raw_name = entry.name().map_or_else(
                |_| String::from_utf8_lossy(entry.name_raw()).into_owned(),
                |name| name.into_owned(),
            );
            let (size, packed) = (entry.size(), entry.compressed_size());
            total = total.saturating_add(size);
            if total > MAX_TOTAL_BYTES {
                return Err(bomb(
                    label,
                    format!(
                        "its entries inflate to more than {} GB",
                        MAX_TOTAL_BYTES >> 30
                    ),
                ));
            }
            if size > RATIO_FLOOR_BYTES && size / packed.max(1) > MAX_RATIO {
                return Err(bomb(
                    label,
                    format!(
                        "{raw_name} inflates {} times ({packed} bytes to {size})",
                        size / packed.max(1)
                    ),
                ));
            }
            if entry.is_dir() {
                continue;
            }
            let Some(kind) = member_kind(&raw_name) else {
                continue;
            };
            if entry.is_symlink() {
                ignored.push(Ignored {
                    name: raw_name,
                    reason: "a symbolic link (links in archives are never followed)".into(),
                });
                continue;
            }
            let Some(name) = entry.enclosed_name().and_then(|p| slash_path(&p)) else {
                ignored.push(Ignored {
                    name: raw_name,
                    reason: "its path leads outside the archive".into(),
                });
                continue;
            };
            if entry.encrypted() {
                return Err(crate::error::invalid_input(format!(
                    "{label}: {name} is encrypted (password-protected): unpack the archive with \
                     its password and import the files"
                )));
            }
            members.push(Member {
                position,
                name,
                kind,
                size,
                legacy_name,
            });
        }
        Ok(VoiceZip {
            archive,
            label: label.to_string(),
            members,
            ignored,
            extracted: 0,
        })
    }

    /// The `.pth` and `.index` entries to take, in archive order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The `.pth` and `.index` entries left out, with why.
    pub fn ignored(&self) -> &[Ignored] {
        &self.ignored
    }

    /// Streams `member` into `out`, stopping at its declared size and at the archive's total
    /// cap; the bytes written.
    pub fn copy_member(&mut self, member: &Member, out: &mut dyn Write) -> Result<u64> {
        let label = &self.label;
        let entry = self.archive.by_index(member.position).map_err(|e| {
            crate::error::invalid_input(format!("{label}: {} is unreadable ({e})", member.name))
        })?;
        let limit = member.size.min(MAX_TOTAL_BYTES - self.extracted);
        let mut reader = entry.take(limit + 1);
        let mut buf = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    return Err(crate::error::invalid_input(format!(
                        "{label}: {} is damaged ({e})",
                        member.name
                    )));
                }
            };
            written += n as u64;
            if written > limit {
                return Err(bomb(
                    label,
                    format!(
                        "{} inflates past the {} bytes it declares",
                        member.name, member.size
                    ),
                ));
            }
            out.write_all(&buf[..n])?;
        }
        if written < member.size {
            return Err(crate::error::invalid_input(format!(
                "{label}: {} holds {written} bytes, its header says {}",
                member.name, member.size
            )));
        }
        self.extracted += written;
        Ok(written)
    }
}

fn bomb(label: &str, detail: String) -> anyhow::Error {
    crate::error::invalid_input(format!(
        "{label}: refused: {detail}: not a voice archive (a zip bomb?)"
    ))
}

/// `.pth` and `.index` entries, less macOS's resource-fork copies (`__MACOSX/`, `._name`).
fn member_kind(name: &str) -> Option<MemberKind> {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    if file.starts_with("._") || name.split(['/', '\\']).any(|part| part == "__MACOSX") {
        return None;
    }
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".pth") {
        Some(MemberKind::Weights)
    } else if lower.ends_with(".index") {
        Some(MemberKind::Index)
    } else {
        None
    }
}

/// An enclosed path as `a/b/c` in composed form (NFC), without `.` or `..` parts; None when
/// nothing is left.
fn slash_path(path: &std::path::Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            std::path::Component::Normal(part) => {
                parts.push(crate::model_import::composed(&part.to_string_lossy()));
            }
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
#[path = "archive_tests.rs"]
pub(super) mod tests;
