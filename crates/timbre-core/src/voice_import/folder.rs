//! The `.pth` and `.index` files of a folder tree: an RVC WebUI install (`assets/weights/*.pth`,
//! `logs/<name>/added_*.index`), an Applio one (`logs/<name>/<name>.pth` beside its index), or
//! any folder of downloads. Folder links are not followed (no loops, no leaving the tree).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::archive::MemberKind;

/// Deeper than any install's layout.
const MAX_DEPTH: usize = 12;
/// Folders and files looked at before the scan gives up (a whole disk chosen by mistake).
const MAX_VISITED: usize = 200_000;
/// Folders that hold the tool's own code and packages, never voices.
const SKIPPED_FOLDERS: [&str; 6] = [
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    "site-packages",
];

/// A file found, with its path relative to the folder (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundFile {
    pub path: PathBuf,
    pub relative: String,
    pub kind: MemberKind,
}

pub fn scan(root: &Path) -> Result<Vec<FoundFile>> {
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .with_context(|| format!("{}: cannot list the folder", dir.display()))?;
        for entry in entries {
            let entry =
                entry.with_context(|| format!("{}: cannot list the folder", dir.display()))?;
            visited += 1;
            if visited > MAX_VISITED {
                return Err(crate::error::invalid_input(format!(
                    "{}: more than {MAX_VISITED} files and folders: choose the voice's folder, not a whole disk",
                    root.display()
                )));
            }
            let file_type = entry.file_type()?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if file_type.is_dir() {
                if depth < MAX_DEPTH && !SKIPPED_FOLDERS.contains(&name.as_str()) {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            // A link to a file is read as the file; a link to a folder is not entered.
            if file_type.is_symlink() && !path.is_file() {
                continue;
            }
            let lower = name.to_ascii_lowercase();
            let kind = if lower.ends_with(".pth") {
                MemberKind::Weights
            } else if lower.ends_with(".index") {
                MemberKind::Index
            } else {
                continue;
            };
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            found.push(FoundFile {
                path,
                relative,
                kind,
            });
        }
    }
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_tree_gives_its_weights_and_indexes_but_not_linked_folders() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for file in [
            "assets/weights/alice.pth",
            "assets/pretrained_v2/f0G40k.pth",
            "logs/alice/added_IVF1_Flat_nprobe_1_alice_v2.index",
            "logs/alice/total_fea.npy",
            "venv/lib/x.pth",
            "README.md",
        ] {
            std::fs::create_dir_all(r.join(file).parent().unwrap()).unwrap();
            std::fs::write(r.join(file), b"x").unwrap();
        }
        std::os::unix::fs::symlink(r, r.join("logs/loop")).unwrap();
        let found: Vec<(String, MemberKind)> = scan(r)
            .unwrap()
            .into_iter()
            .map(|f| (f.relative, f.kind))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "assets/pretrained_v2/f0G40k.pth".to_string(),
                    MemberKind::Weights
                ),
                ("assets/weights/alice.pth".to_string(), MemberKind::Weights),
                (
                    "logs/alice/added_IVF1_Flat_nprobe_1_alice_v2.index".to_string(),
                    MemberKind::Index
                ),
            ]
        );
    }
}
