//! Which index goes with which voice. An index fits a voice when its width is the voice's
//! feature size (256: v1, 768: v2). Among the fitting ones, an index in the voice's own folder
//! wins, then one whose file or folder carries the voice's name (RVC writes
//! `logs/<name>/added_IVF…_<name>_v2.index` for `weights/<name>.pth`). When that still leaves
//! several, the import stops and names them, and the caller chooses.

/// A voice or an index, by its `/`-separated path in the source and its width.
#[derive(Debug, Clone)]
pub struct Part {
    pub path: String,
    pub dim: i64,
}

/// For each voice, the position of its index in `indexes` (None: no index fits). `chosen` names
/// the index to take when several fit (by its path in the source or its file name).
pub fn pair(
    voices: &[Part],
    indexes: &[Part],
    chosen: Option<&str>,
) -> anyhow::Result<Vec<Option<usize>>> {
    if let Some(chosen) = chosen
        && !indexes.iter().any(|index| names(index, chosen))
    {
        return Err(crate::error::invalid_input(format!(
            "no index `{chosen}` among those found ({})",
            list(indexes, &(0..indexes.len()).collect::<Vec<_>>())
        )));
    }
    voices
        .iter()
        .map(|voice| {
            let fitting: Vec<usize> = (0..indexes.len())
                .filter(|&i| indexes[i].dim == voice.dim)
                .collect();
            let narrowed = narrow(fitting, |i| folder(&indexes[i].path) == folder(&voice.path));
            let narrowed = narrow(narrowed, |i| carries_name(&indexes[i].path, &voice.path));
            match narrowed.as_slice() {
                [] => Ok(None),
                [one] => Ok(Some(*one)),
                several => {
                    match chosen.and_then(|c| several.iter().find(|&&i| names(&indexes[i], c))) {
                        Some(&i) => Ok(Some(i)),
                        None => Err(crate::error::invalid_input(format!(
                            "{} indexes fit the voice {}: {}; choose the one to import with it",
                            several.len(),
                            voice.path,
                            list(indexes, several)
                        ))),
                    }
                }
            }
        })
        .collect()
}

/// The candidates that pass `prefer`, when any do; else all of them.
fn narrow(candidates: Vec<usize>, prefer: impl Fn(usize) -> bool) -> Vec<usize> {
    let preferred: Vec<usize> = candidates.iter().copied().filter(|&i| prefer(i)).collect();
    if preferred.is_empty() {
        candidates
    } else {
        preferred
    }
}

fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn stem(path: &str) -> String {
    let name = file_name(path);
    name.rsplit_once('.')
        .map_or(name, |(stem, _)| stem)
        .to_lowercase()
}

/// Whether the index's file name contains the voice's name, or one of its folders is named so.
fn carries_name(index: &str, voice: &str) -> bool {
    let name = stem(voice);
    if name.is_empty() {
        return false;
    }
    let index = index.to_lowercase();
    file_name(&index).contains(&name) || folder(&index).split('/').any(|dir| dir == name)
}

fn names(index: &Part, chosen: &str) -> bool {
    let chosen = chosen.trim().trim_start_matches("./");
    index.path == chosen
        || file_name(&index.path) == chosen
        || index.path.ends_with(&format!("/{chosen}"))
}

fn list(indexes: &[Part], which: &[usize]) -> String {
    which
        .iter()
        .map(|&i| format!("{} ({}-d)", indexes[i].path, indexes[i].dim))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(path: &str, dim: i64) -> Part {
        Part {
            path: path.into(),
            dim,
        }
    }

    #[test]
    fn the_width_decides_first() {
        let voices = [part("a/alto.pth", 256), part("b/bass.pth", 768)];
        let indexes = [part("x/added_v2.index", 768), part("y/added_v1.index", 256)];
        assert_eq!(pair(&voices, &indexes, None).unwrap(), [Some(1), Some(0)]);
        assert_eq!(pair(&voices[..1], &indexes[..1], None).unwrap(), [None]);
    }

    #[test]
    fn an_rvc_install_pairs_weights_with_their_logs_folder() {
        let voices = [
            part("assets/weights/alice.pth", 768),
            part("assets/weights/bob.pth", 768),
        ];
        let indexes = [
            part("logs/bob/added_IVF38_Flat_nprobe_1_bob_v2.index", 768),
            part("logs/alice/added_IVF51_Flat_nprobe_1_alice_v2.index", 768),
        ];
        assert_eq!(pair(&voices, &indexes, None).unwrap(), [Some(1), Some(0)]);
    }

    #[test]
    fn the_same_folder_wins_over_a_name_elsewhere() {
        let voices = [part("logs/alice/alice_200e_4000s.pth", 768)];
        let indexes = [
            part("logs/alice/added_IVF38_Flat_nprobe_1_v2.index", 768),
            part("old/alice/added_IVF12_Flat_nprobe_1_alice_v2.index", 768),
        ];
        assert_eq!(pair(&voices, &indexes, None).unwrap(), [Some(0)]);
    }

    #[test]
    fn several_fitting_indexes_are_named_and_a_choice_settles_them() {
        let voices = [part("voice.pth", 768)];
        let indexes = [
            part("one/added_a.index", 768),
            part("two/added_b.index", 768),
        ];
        let err = pair(&voices, &indexes, None).unwrap_err().to_string();
        assert!(
            err.contains("2 indexes fit the voice voice.pth")
                && err.contains("one/added_a.index (768-d)")
                && err.contains("two/added_b.index"),
            "{err}"
        );
        assert_eq!(
            pair(&voices, &indexes, Some("added_b.index")).unwrap(),
            [Some(1)]
        );
        assert_eq!(
            pair(&voices, &indexes, Some("two/added_b.index")).unwrap(),
            [Some(1)]
        );
        let err = pair(&voices, &indexes, Some("three.index"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("no index `three.index` among those found"),
            "{err}"
        );
    }
}
