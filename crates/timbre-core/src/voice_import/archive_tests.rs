use std::io::{Cursor, Write};

use zip::CompressionMethod;
use zip::write::{SimpleFileOptions, ZipWriter};

use super::*;

/// What a test puts in an archive.
pub enum Item<'a> {
    File(&'a str, &'a [u8]),
    Link(&'a str, &'a str),
    Folder(&'a str),
}

/// A real zip of `items`, deflated, as the zip crate's writer makes it.
pub fn zip_of(items: &[Item]) -> Vec<u8> {
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for item in items {
        match item {
            Item::File(name, bytes) => {
                writer.start_file(*name, options).unwrap();
                writer.write_all(bytes).unwrap();
            }
            Item::Link(name, target) => writer.add_symlink(*name, *target, options).unwrap(),
            Item::Folder(name) => writer.add_directory(*name, options).unwrap(),
        }
    }
    writer.finish().unwrap().into_inner()
}

fn open(bytes: Vec<u8>) -> Result<VoiceZip<Cursor<Vec<u8>>>> {
    VoiceZip::open(Cursor::new(bytes), "voices.zip")
}

fn names(zip: &VoiceZip<Cursor<Vec<u8>>>) -> Vec<(&str, MemberKind)> {
    zip.members()
        .iter()
        .map(|m| (m.name.as_str(), m.kind))
        .collect()
}

#[test]
fn voice_files_are_found_among_nested_folders_and_junk() {
    let bytes = zip_of(&[
        Item::Folder("Alice/"),
        Item::Folder("Alice/samples/"),
        Item::File("Alice/README.txt", b"trained 300 epochs"),
        Item::File("Alice/samples/demo.wav", &[1, 2, 3]),
        Item::File("Alice/model/Alice.PTH", b"weights"),
        Item::File("Alice/added_IVF1_Flat_nprobe_1_Alice_v2.index", b"index"),
        Item::File("__MACOSX/Alice/model/._Alice.PTH", b"resource fork"),
    ]);
    let mut zip = open(bytes).unwrap();
    assert_eq!(
        names(&zip),
        [
            ("Alice/model/Alice.PTH", MemberKind::Weights),
            (
                "Alice/added_IVF1_Flat_nprobe_1_Alice_v2.index",
                MemberKind::Index
            ),
        ]
    );
    assert!(zip.ignored().is_empty());
    let member = zip.members()[0].clone();
    let mut out = Vec::new();
    assert_eq!(zip.copy_member(&member, &mut out).unwrap(), 7);
    assert_eq!(out, b"weights");
}

#[test]
fn a_zip_bomb_is_refused_naming_the_archive() {
    let zeros = vec![0u8; 16 << 20];
    let err = open(zip_of(&[Item::File("voice.pth", &zeros)]))
        .err()
        .expect("a bomb opened")
        .to_string();
    assert!(
        err.starts_with("voices.zip: refused: voice.pth inflates") && err.contains("zip bomb"),
        "{err}"
    );
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("f{i}")).collect();
    let items: Vec<Item> = names.iter().map(|n| Item::File(n, b"")).collect();
    let err = open(zip_of(&items)).err().expect("opened").to_string();
    assert!(
        err.contains(&format!("holds {} entries", MAX_ENTRIES + 1)),
        "{err}"
    );
}

#[test]
fn links_and_paths_leaving_the_archive_are_ignored_with_a_reason() {
    let bytes = zip_of(&[
        Item::File("../../outside.pth", b"evil"),
        Item::File("a/../../up.index", b"evil"),
        Item::Link("linked.pth", "/etc/passwd"),
        Item::File("fine/../kept.pth", b"ok"),
    ]);
    let zip = open(bytes).unwrap();
    assert_eq!(names(&zip), [("kept.pth", MemberKind::Weights)]);
    let ignored: Vec<(&str, &str)> = zip
        .ignored()
        .iter()
        .map(|i| (i.name.as_str(), i.reason.as_str()))
        .collect();
    assert_eq!(ignored.len(), 3, "{ignored:?}");
    assert!(ignored.contains(&("../../outside.pth", "its path leads outside the archive")));
    assert!(
        ignored
            .iter()
            .any(|(n, r)| *n == "linked.pth" && r.starts_with("a symbolic link"))
    );
}

#[test]
fn an_encrypted_voice_file_is_refused_clearly() {
    let mut bytes = zip_of(&[Item::File("voice.pth", b"secret weights")]);
    // Set the "encrypted" flag in the local and the central header, as a password tool would.
    for (signature, flags_at) in [(b"PK\x03\x04", 6), (b"PK\x01\x02", 8)] {
        let at = bytes.windows(4).position(|w| w == signature).unwrap();
        bytes[at + flags_at] |= 1;
    }
    let err = open(bytes).err().expect("opened").to_string();
    assert_eq!(
        err,
        "voices.zip: voice.pth is encrypted (password-protected): unpack the archive with its \
         password and import the files"
    );
}

#[test]
fn a_file_that_is_no_zip_is_named() {
    let err = open(b"not a zip at all".to_vec())
        .err()
        .expect("opened")
        .to_string();
    assert!(
        err.starts_with("voices.zip: not a readable zip archive"),
        "{err}"
    );
}
