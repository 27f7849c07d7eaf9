//! `timbre library export` through the real binary on a real library: a take and a real
//! conversion (the parity fixtures' small voice) exported by name, copied in their stored
//! format or encoded into another, several into a folder without overwriting, and failures that
//! name the file.

use std::path::Path;
use timbre_integration_tests::{Sandbox, write_sine_wav};

fn decoded(path: &Path) -> timbre_audio::AudioBuffer {
    timbre_audio::decode_file(path, &Default::default())
        .unwrap_or_else(|e| panic!("decoding {}: {e}", path.display()))
}

#[test]
fn takes_and_conversions_are_exported_by_name_copied_or_encoded() {
    let sb = Sandbox::with_extractors(true);
    let song = sb.path("Song.wav");
    write_sine_wav(&song, 1.0, 220.0);
    sb.json(&["import", song.to_str().unwrap()]);
    let take = sb.json(&["library", "list"])[0]["id"].as_i64().unwrap();
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "Ada");
    let converted = sb.cpu_json(&[
        "convert",
        "--model",
        "Ada",
        "-t",
        "3",
        song.to_str().unwrap(),
    ]);
    assert_eq!(converted[0]["ok"], true, "{converted}");
    let conversion = converted[0]["result"]["conversion"]["id"].as_i64().unwrap();
    let stored = converted[0]["result"]["output_path"]
        .as_str()
        .unwrap()
        .to_string();

    // One item to a file: the stored format is copied byte for byte, another one is encoded.
    let copy = sb.path("mine.wav");
    let written = sb.json(&[
        "library",
        "export",
        "--conversion",
        &conversion.to_string(),
        copy.to_str().unwrap(),
    ]);
    assert_eq!(written, serde_json::json!([copy.to_str().unwrap()]));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&stored).unwrap()
    );
    let mp3 = sb.path("mine.mp3");
    sb.json(&[
        "library",
        "export",
        "--conversion",
        &conversion.to_string(),
        mp3.to_str().unwrap(),
    ]);
    let audio = decoded(&mp3);
    assert!(
        (audio.duration_secs() - 1.0).abs() < 0.1,
        "{} s",
        audio.duration_secs()
    );
    let bytes = std::fs::read(&mp3).unwrap();
    assert!(
        bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0,
        "an MPEG frame, not the stored WAV"
    );

    // Several into a folder under their default names; a second time numbered, never replaced.
    let out = sb.path("out");
    std::fs::create_dir(&out).unwrap();
    let args = [
        "library",
        "export",
        "--take",
        &take.to_string(),
        "--conversion",
        &conversion.to_string(),
        out.to_str().unwrap(),
    ];
    let first = sb.json(&args);
    let second = sb.json(&args);
    let names = |written: &serde_json::Value| -> Vec<String> {
        written
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                Path::new(p.as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    assert_eq!(names(&first), ["Song.wav", "Song (Ada, +3 st).wav"]);
    assert_eq!(names(&second), ["Song 2.wav", "Song (Ada, +3 st) 2.wav"]);
    assert_eq!(decoded(&out.join("Song.wav")).frames(), 16000);

    // Failures name the file.
    let missing = sb.path("gone").join("x.flac");
    let failed = sb.run(&[
        "library",
        "export",
        "--take",
        &take.to_string(),
        missing.to_str().unwrap(),
    ]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains(&format!("{}: cannot write", missing.display())),
        "{stderr}"
    );
    let failed = sb.run(&[
        "library",
        "export",
        "--take",
        &take.to_string(),
        "--take",
        "999",
        out.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&failed.stderr).contains("take 999 does not exist"));
}
