//! What a found `.pth` or `.index` is, by content. An RVC inference model is a `torch.save` dict
//! with `weight` and `config` entries; training checkpoints (`G_*.pth`, the pretrained G/D),
//! separation weights and other state dicts have neither, and are told apart from the pickle
//! alone, so an install folder's gigabytes of checkpoints are never loaded.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::Result;
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::synthesizer::{ModelInfo, check_model};
use zip::ZipArchive;

/// More than any checkpoint's object tree (a `G_*.pth` with its optimizer state: a few MB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;

/// What a `.pth` is to an import.
pub enum Weights {
    /// A voice model that passed every check of import.
    Voice(Box<ModelInfo>),
    /// Not a voice model: why, for the note.
    Other(String),
}

/// Reads `path` as an RVC voice model; a file that cannot be one is `Other`, a voice model
/// that fails its checks is an error naming the file.
pub fn weights(path: &Path) -> Result<Weights> {
    match pickle_keys(path) {
        Some(keys) if !(keys.weight && keys.config) => {
            let why = if keys.model {
                "a training checkpoint or pretrained weights (a `model` state dict, no voice `config`)"
            } else {
                "not an RVC voice model (no `weight` and `config` entries)"
            };
            Ok(Weights::Other(why.into()))
        }
        _ => check_model(path)
            .map(|info| Weights::Voice(Box::new(info)))
            .map_err(|e| crate::error::invalid_input(format!("{e:#}"))),
    }
}

/// An index's feature width, checked to be a faiss IVF-Flat index that holds vectors.
pub fn index_dim(path: &Path) -> Result<i64> {
    let index =
        IvfFlatIndex::read(path).map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
    if index.is_empty() {
        return Err(crate::error::invalid_input(format!(
            "{}: the index holds no vectors (RVC's `trained_` index; the `added_` one is used)",
            path.display()
        )));
    }
    Ok(index.dim() as i64)
}

/// Top-level keys a checkpoint's pickle names.
#[derive(Debug, Default, PartialEq)]
struct PickleKeys {
    weight: bool,
    config: bool,
    model: bool,
}

/// The keys named in the pickle of a zip-format `torch.save` file; None when the file is not
/// one (the legacy format, or not a checkpoint at all: the full read says what it is).
fn pickle_keys(path: &Path) -> Option<PickleKeys> {
    let file = File::open(path).ok()?;
    let mut archive = ZipArchive::new(BufReader::new(file)).ok()?;
    let name = archive
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| n == "data.pkl" || n.ends_with("/data.pkl"))
        .min_by_key(|n| n.matches('/').count())?;
    let mut pickle = Vec::new();
    archive
        .by_name(&name)
        .ok()?
        .take(MAX_PICKLE_BYTES)
        .read_to_end(&mut pickle)
        .ok()?;
    Some(PickleKeys {
        weight: names_string(&pickle, "weight"),
        config: names_string(&pickle, "config"),
        model: names_string(&pickle, "model"),
    })
}

/// Whether a pickle holds the string `word` exactly (as BINUNICODE or SHORT_BINUNICODE, as
/// torch writes dict keys), not merely as part of a longer one.
fn names_string(pickle: &[u8], word: &str) -> bool {
    let len = word.len();
    let mut long = vec![b'X'];
    long.extend_from_slice(&(len as u32).to_le_bytes());
    long.extend_from_slice(word.as_bytes());
    let mut short = vec![0x8c, len as u8];
    short.extend_from_slice(word.as_bytes());
    [long, short]
        .iter()
        .any(|needle| pickle.windows(needle.len()).any(|w| w == needle.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use timbre_test_support::rvc_parity_fixtures;

    #[test]
    fn keys_are_found_whole_in_either_string_opcode() {
        let pickle =
            b"}q\x00(X\x06\x00\x00\x00weightq\x01\x8c\x06configX\x0c\x00\x00\x00weight_decay";
        assert!(names_string(pickle, "weight"));
        assert!(names_string(pickle, "config"));
        assert!(!names_string(pickle, "model"));
        assert!(!names_string(b"X\x0c\x00\x00\x00weight_decay", "weight"));
    }

    #[test]
    fn a_voice_model_passes_and_a_state_dict_is_another_kind_of_file() {
        let fixtures = rvc_parity_fixtures();
        let model = fixtures.join("synth_v2_f0_40k/model.pth");
        assert_eq!(
            pickle_keys(&model),
            Some(PickleKeys {
                weight: true,
                config: true,
                model: false
            })
        );
        match weights(&model).unwrap() {
            Weights::Voice(info) => assert_eq!(info.feature_dim, 768),
            Weights::Other(why) => panic!("{why}"),
        }
        let rmvpe = fixtures.join("rmvpe_tiny/rmvpe.pt");
        match weights(&rmvpe).unwrap() {
            Weights::Other(why) => assert!(why.contains("not an RVC voice model"), "{why}"),
            Weights::Voice(_) => panic!("rmvpe taken for a voice"),
        }
    }

    #[test]
    fn indexes_give_their_width() {
        let fixtures = rvc_parity_fixtures();
        let v1 = fixtures.join("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index");
        assert_eq!(index_dim(&v1).unwrap(), 256);
        let junk = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(junk.path(), b"no index").unwrap();
        assert!(index_dim(junk.path()).is_err());
    }
}
