use super::*;
use crate::db::conversions::NewConversion;
use crate::db::models::{self, NewModel};
use crate::db::takes::Origin;
use crate::take_files::describe;
use serde_json::json;
use timbre_audio::SampleFormat;
use timbre_audio::signal::sine;

struct Fixture {
    _dir: tempfile::TempDir,
    out: PathBuf,
    library: Library,
    take: i64,
    model: i64,
    sha256: String,
}

/// A library with one take, "Song", a second of a 16-bit WAV sine.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(&dir.path().join("data")).unwrap();
    let audio = sine(16000, 440.0, 1.0, 0.5);
    let bytes = timbre_audio::encode_wav(&audio, SampleFormat::Int16).unwrap();
    let stored = library.store().ingest_bytes(&bytes, "wav").unwrap();
    let new = describe(
        &audio,
        &stored.sha256,
        "wav",
        "Song".into(),
        None,
        Origin::Imported,
        None,
    );
    let take = takes::insert(&library.conn(), &new).unwrap();
    let model = NewModel {
        voice_id: None,
        name: "Ada".into(),
        kind: "rvc".into(),
        weights_sha256: "weights".into(),
        index_sha256: None,
        version: Some("v2".into()),
        sample_rate: Some(40_000),
        f0: Some(true),
        metadata: json!({}),
    };
    let model = models::insert(&library.conn(), &model).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    Fixture {
        sha256: stored.sha256,
        _dir: dir,
        out,
        library,
        take,
        model,
    }
}

impl Fixture {
    /// A conversion whose output is the take's audio.
    fn conversion(&self, take: Option<i64>, path: Option<&str>, params: serde_json::Value) -> i64 {
        let new = NewConversion {
            job_id: None,
            model_id: self.model,
            model_name: "Ada".into(),
            input_take_id: take,
            input_path: path.map(str::to_string),
            input_sha256: "input".into(),
            params,
            sha256: self.sha256.clone(),
            format: "wav".into(),
            sample_rate: 16000,
            duration_secs: 1.0,
            peak_dbfs: -6.0,
            seconds_taken: 0.5,
        };
        conversions::insert(&self.library.conn(), &new).unwrap()
    }

    fn name(&self, item: LibraryItem) -> String {
        default_file_name(&self.library, item).unwrap()
    }
}

#[test]
fn default_names_say_the_input_the_voice_and_the_transpose() {
    let f = fixture();
    assert_eq!(f.name(LibraryItem::Take(f.take)), "Song.wav");
    let of_take = f.conversion(Some(f.take), None, json!({ "transpose": 3.0 }));
    assert_eq!(
        f.name(LibraryItem::Conversion(of_take)),
        "Song (Ada, +3 st).wav"
    );
    let untransposed = f.conversion(Some(f.take), None, json!({ "transpose": 0.0 }));
    assert_eq!(
        f.name(LibraryItem::Conversion(untransposed)),
        "Song (Ada).wav"
    );
    // An f32 transpose as stored, and a file outside the library with characters Windows refuses.
    let of_file = f.conversion(
        None,
        Some("/music/Live: take?.flac"),
        json!({ "transpose": -2.5_f32, "f0_method": "rmvpe" }),
    );
    assert_eq!(
        f.name(LibraryItem::Conversion(of_file)),
        "Live_ take_ (Ada, -2.5 st).wav"
    );
    let tenth = f.conversion(None, Some("/a/b.wav"), json!({ "transpose": 0.1_f32 }));
    assert_eq!(
        f.name(LibraryItem::Conversion(tenth)),
        "b (Ada, +0.1 st).wav"
    );
    let take_path = f.library.store().object_path(&f.sha256, "wav");
    let of_deleted_take = f.conversion(None, Some(&take_path.display().to_string()), json!({}));
    assert_eq!(
        f.name(LibraryItem::Conversion(of_deleted_take)),
        format!("conversion {of_deleted_take} (Ada).wav")
    );
    let orphan = f.conversion(None, None, json!({}));
    assert_eq!(
        f.name(LibraryItem::Conversion(orphan)),
        format!("conversion {orphan} (Ada).wav")
    );
    let err = default_file_name(&f.library, LibraryItem::Take(999)).unwrap_err();
    assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
}

#[test]
fn the_stored_format_is_copied_and_another_extension_is_encoded() {
    let f = fixture();
    let stored = f.library.store().object_path(&f.sha256, "wav");
    let item = LibraryItem::Conversion(f.conversion(Some(f.take), None, json!({})));

    let copy = export(&f.library, item, &f.out.join("copy.WAV")).unwrap();
    assert_eq!(copy, f.out.join("copy.WAV"));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&stored).unwrap()
    );

    let no_extension = export(&f.library, LibraryItem::Take(f.take), &f.out.join("bare")).unwrap();
    assert_eq!(no_extension, f.out.join("bare.wav"));

    let flac = export(&f.library, item, &f.out.join("song.flac")).unwrap();
    assert_eq!(&std::fs::read(&flac).unwrap()[..4], b"fLaC");
    let decoded = timbre_audio::decode_file(&flac, &DecodeOptions::default()).unwrap();
    let original = timbre_audio::decode_file(&stored, &DecodeOptions::default()).unwrap();
    assert_eq!((decoded.sample_rate, decoded.frames()), (16000, 16000));
    let worst = decoded.channels[0]
        .iter()
        .zip(&original.channels[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0_f32, f32::max);
    assert!(worst < 1e-4, "FLAC is lossless: {worst}");

    let mp3 = export(&f.library, item, &f.out.join("song.mp3")).unwrap();
    let decoded = timbre_audio::decode_file(&mp3, &DecodeOptions::default()).unwrap();
    assert!(decoded.duration_secs() > 0.9, "{}", decoded.duration_secs());

    // Exporting again replaces the file the user chose.
    export(
        &f.library,
        LibraryItem::Take(f.take),
        &f.out.join("song.flac"),
    )
    .unwrap();
    let mut names: Vec<_> = std::fs::read_dir(&f.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["bare.wav", "copy.WAV", "song.flac", "song.mp3"],
        "no temporary file left"
    );
}

#[test]
fn failures_name_the_file_and_the_problem() {
    let f = fixture();
    let item = LibraryItem::Take(f.take);

    let missing_folder = f.out.join("gone").join("song.wav");
    let err = export(&f.library, item, &missing_folder).unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.starts_with(&format!("{}: cannot write: ", missing_folder.display()))
            && message.contains("No such file or directory"),
        "{message}"
    );

    let unknown = f.out.join("song.aac");
    let err = export(&f.library, item, &unknown).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        format!(
            "{}: cannot export as .aac: use .wav, .flac, .mp3, .ogg or .opus",
            unknown.display()
        )
    );
    assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::InvalidInput);

    let a_file = f.out.join("a file");
    std::fs::write(&a_file, b"").unwrap();
    let err = export(&f.library, item, &a_file.join("song.flac")).unwrap_err();
    assert!(
        format!("{err:#}").starts_with(&format!(
            "{}: cannot write",
            a_file.join("song.flac").display()
        )),
        "{err:#}"
    );
    assert_eq!(
        std::fs::read_dir(&f.out).unwrap().count(),
        1,
        "nothing else written"
    );
}

#[test]
fn items_exported_into_a_folder_take_their_default_names_and_never_overwrite() {
    let f = fixture();
    let conversion =
        LibraryItem::Conversion(f.conversion(Some(f.take), None, json!({ "transpose": 3.0 })));
    let take = LibraryItem::Take(f.take);
    let written = export_into(&f.library, &[take, conversion, take], &f.out).unwrap();
    assert_eq!(
        written,
        [
            f.out.join("Song.wav"),
            f.out.join("Song (Ada, +3 st).wav"),
            f.out.join("Song 2.wav"),
        ]
    );
    let stored = std::fs::read(f.library.store().object_path(&f.sha256, "wav")).unwrap();
    assert!(written.iter().all(|p| std::fs::read(p).unwrap() == stored));
}

#[test]
fn a_drag_offers_named_copies_in_a_folder_of_its_own_and_old_drags_are_removed() {
    let f = fixture();
    let conversion =
        LibraryItem::Conversion(f.conversion(Some(f.take), None, json!({ "transpose": -2.0 })));
    let first = drag_copies(&f.library, &[LibraryItem::Take(f.take), conversion]).unwrap();
    let names: Vec<_> = first
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["Song.wav", "Song (Ada, -2 st).wav"]);
    let drags = f.library.data_dir().join(DRAG_DIR);
    assert!(
        first
            .iter()
            .all(|p| p.parent() == first[0].parent() && p.starts_with(&drags))
    );
    let stored = std::fs::read(f.library.store().object_path(&f.sha256, "wav")).unwrap();
    assert!(first.iter().all(|p| std::fs::read(p).unwrap() == stored));

    let second = drag_copies(&f.library, &[LibraryItem::Take(f.take)]).unwrap();
    assert_ne!(
        second[0].parent(),
        first[0].parent(),
        "each drag has a folder of its own"
    );
    assert!(
        first[0].exists(),
        "a recent drag's copies stay: a drop may still be reading them"
    );

    let old = SystemTime::now() - DRAG_COPIES_KEPT - Duration::from_secs(60);
    std::fs::File::open(first[0].parent().unwrap())
        .unwrap()
        .set_modified(old)
        .unwrap();
    drag_copies(&f.library, &[LibraryItem::Take(f.take)]).unwrap();
    assert!(
        !first[0].parent().unwrap().exists(),
        "a drag over an hour old is removed"
    );
    assert!(second[0].exists());
}
