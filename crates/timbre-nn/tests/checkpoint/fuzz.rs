//! Mutated checkpoints (byte flips, truncation, inserted junk) of whole files and of the pickle
//! inside a zip checkpoint: a value or an error naming the file, never a panic.

use std::fs;
use std::io::Read;

use proptest::prelude::*;
use proptest::sample::Index;
use timbre_nn::checkpoint::read_torch_file;
use zip::{CompressionMethod, ZipArchive};

use super::{data, rezip, temp_file};

/// Reads `bytes` as a checkpoint file: a value, or an error that names the file.
fn read_mutated(bytes: &[u8]) -> Result<(), TestCaseError> {
    let file = temp_file(bytes);
    if let Err(e) = read_torch_file(file.path()) {
        let message = format!("{e:#}");
        prop_assert!(
            message.starts_with(&file.path().display().to_string()),
            "{}",
            message
        );
    }
    Ok(())
}

/// Byte flips, a truncation and an insertion of junk, each optional.
fn mutate(
    original: &[u8],
    flips: &[(Index, u8)],
    cut: Option<Index>,
    junk: Option<(Index, Vec<u8>)>,
) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for (at, xor) in flips {
        bytes[at.index(original.len())] ^= xor;
    }
    if let Some((at, junk)) = junk {
        let at = at.index(bytes.len() + 1);
        bytes.splice(at..at, junk);
    }
    if let Some(cut) = cut {
        bytes.truncate(cut.index(bytes.len() + 1));
    }
    bytes
}

/// Byte flips (position, xor mask), a truncation point and an insertion of junk.
type Mutation = (Vec<(Index, u8)>, Option<Index>, Option<(Index, Vec<u8>)>);

fn mutations() -> impl Strategy<Value = Mutation> {
    (
        prop::collection::vec((any::<Index>(), 1u8..), 0..6),
        prop::option::of(any::<Index>()),
        prop::option::of((any::<Index>(), prop::collection::vec(any::<u8>(), 1..12))),
    )
}

/// The checkpoint `name` with its `data.pkl` replaced by `pickle`, storages unchanged.
fn with_pickle(name: &str, pickle: &[u8]) -> Vec<u8> {
    rezip(name, CompressionMethod::Stored, |entry, bytes| {
        let bytes = if entry.ends_with("data.pkl") {
            pickle.to_vec()
        } else {
            bytes
        };
        Some((entry.to_string(), bytes))
    })
}

fn data_pkl(name: &str) -> Vec<u8> {
    let mut archive = ZipArchive::new(fs::File::open(data(name)).unwrap()).unwrap();
    let pickle_name = archive
        .file_names()
        .map(|n| n.unwrap().to_string())
        .find(|n| n.ends_with("data.pkl"))
        .unwrap();
    let mut bytes = Vec::new();
    archive
        .by_name(&pickle_name)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_zip_files_never_panic((flips, cut, junk) in mutations()) {
        read_mutated(&mutate(&fs::read(data("small_proto4.pt")).unwrap(), &flips, cut, junk))?;
    }

    #[test]
    fn mutated_legacy_files_never_panic((flips, cut, junk) in mutations()) {
        read_mutated(&mutate(&fs::read(data("mixed_legacy.pt")).unwrap(), &flips, cut, junk))?;
    }

    #[test]
    fn mutated_pickles_never_panic(protocol_4 in any::<bool>(), (flips, cut, junk) in mutations()) {
        let name = if protocol_4 { "small_proto4.pt" } else { "mixed.pt" };
        read_mutated(&with_pickle(name, &mutate(&data_pkl(name), &flips, cut, junk)))?;
    }
}
