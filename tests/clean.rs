//! `timbre enhance` and `timbre isolate` through the real binary: results land in the library
//! linked to their source, the rough preview says what it is, a separation checkpoint in the
//! models folder is used when present (the tiny random-weight RoFormer of the parity fixtures
//! stands in for a real one), and bad inputs get clear answers.

use std::path::Path;
use std::process::Output;
use timbre_audio::signal::{backing_track, speech_like, white_noise};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_integration_tests::{Sandbox, separation_fixtures};

const RATE: u32 = 16000;

fn write(path: &Path, audio: &AudioBuffer) {
    timbre_audio::write_wav(path, audio, SampleFormat::Float32).expect("writing test wav");
}

fn speech(seconds: f64) -> Vec<f32> {
    let voice = speech_like(RATE, seconds, 7).audio.channels.remove(0);
    let noise = white_noise(RATE, seconds, 8).channels.remove(0);
    voice
        .iter()
        .zip(&noise)
        .map(|(v, n)| v + 0.03 * n)
        .collect()
}

/// The speech-like voice in the centre of the looped backing track.
fn stereo_mix(seconds: f64) -> AudioBuffer {
    let voice = speech_like(RATE, seconds, 9).audio.channels.remove(0);
    let backing = backing_track(RATE, seconds);
    let channels = backing
        .channels
        .iter()
        .map(|side| side.iter().zip(&voice).map(|(b, v)| b + v).collect())
        .collect();
    AudioBuffer::new(RATE, channels)
}

fn ok_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "timbre failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// (derived take, source take, operation) for every link in the library.
fn links(sb: &Sandbox) -> Vec<(i64, i64, String)> {
    let db = sb.db().expect("library exists");
    let mut stmt = db
        .prepare("SELECT take_id, source_take_id, operation FROM derived_takes ORDER BY take_id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn take_name(sb: &Sandbox, id: i64) -> String {
    let db = sb.db().unwrap();
    db.query_row("SELECT name FROM takes WHERE id = ?1", [id], |r| r.get(0))
        .unwrap()
}

fn take_id(sb: &Sandbox, name: &str) -> i64 {
    let db = sb.db().unwrap();
    db.query_row("SELECT id FROM takes WHERE name = ?1", [name], |r| r.get(0))
        .unwrap()
}

fn take_count(sb: &Sandbox) -> i64 {
    sb.db().map_or(0, |db| {
        db.query_row("SELECT COUNT(*) FROM takes", [], |r| r.get(0))
            .unwrap()
    })
}

#[test]
fn enhanced_and_isolated_results_are_linked_to_their_source() {
    let sb = Sandbox::new();
    let speech_path = sb.path("speech.wav");
    write(&speech_path, &AudioBuffer::new(RATE, vec![speech(4.0)]));
    let out_dir = sb.path("out");
    let path = speech_path.to_str().unwrap();
    let out = sb.run(&[
        "--json",
        "enhance",
        path,
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let result = &ok_json(&out)[0]["result"];
    let source = result["source_take_id"].as_i64().unwrap();
    let enhanced = result["takes"][0]["take"]["id"].as_i64().unwrap();
    assert_eq!(take_name(&sb, source), "speech");
    assert_eq!(take_name(&sb, enhanced), "speech (enhanced)");
    assert!(result["report"]["noise_removed_db"].as_f64().unwrap() > 0.0);
    assert!(out_dir.join("speech (enhanced).wav").is_file());

    // The enhanced take again, by id, with the natural preset and no denoising.
    let take = enhanced.to_string();
    let args = [
        "--json",
        "enhance",
        "--take",
        &take,
        "--preset",
        "natural",
        "--no-denoise",
    ];
    let again = &ok_json(&sb.run(&args))[0]["result"];
    assert_eq!(again["report"]["noise_removed_db"], serde_json::Value::Null);
    let twice = again["takes"][0]["take"]["id"].as_i64().unwrap();

    let mix_path = sb.path("mix.wav");
    write(&mix_path, &stereo_mix(4.0));
    let mix = mix_path.to_str().unwrap();
    let out = sb.run(&["isolate", "--rough", mix, "--preview", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("rough preview"), "{printed}");
    assert!(
        printed.contains("mix (vocals, rough preview, 2 s sample)"),
        "{printed}"
    );

    let mix_take = take_id(&sb, "mix");
    let vocals = take_id(&sb, "mix (vocals, rough preview, 2 s sample)");
    let instrumental = take_id(&sb, "mix (instrumental, rough preview, 2 s sample)");
    assert_eq!(
        links(&sb),
        vec![
            (enhanced, source, "enhance".to_string()),
            (twice, enhanced, "enhance".to_string()),
            (vocals, mix_take, "isolate_vocals".to_string()),
            (instrumental, mix_take, "isolate_instrumental".to_string()),
        ]
    );
}

/// An 8 kHz mono file through a stereo 44.1 kHz model: resampled, channels duplicated, and the
/// result says the model was used.
#[test]
fn a_separation_checkpoint_in_the_models_folder_is_used() {
    let sb = Sandbox::new();
    let separation = sb.path("models/separation");
    std::fs::create_dir_all(&separation).unwrap();
    let tiny = separation_fixtures().join("bs_roformer_tiny");
    std::fs::copy(tiny.join("model.ckpt"), separation.join("tiny.ckpt")).unwrap();
    std::fs::copy(tiny.join("config.yaml"), separation.join("tiny.yaml")).unwrap();
    let path = sb.path("phone.wav");
    let voice = speech_like(8000, 1.5, 3).audio;
    write(&path, &voice);
    let out = sb
        .command()
        .env("TIMBRE_MODELS_DIR", sb.path("models"))
        .env("TIMBRE_DEVICE", "cpu")
        .args(["--json", "isolate", path.to_str().unwrap()])
        .output()
        .unwrap();
    let result = &ok_json(&out)[0]["result"];
    assert_eq!(result["method"]["model"], "tiny");
    assert_eq!(result["rough_preview"], false);
    let vocals = &result["takes"][0]["take"];
    assert_eq!(vocals["name"], "phone (vocals)");
    assert_eq!(
        (vocals["sample_rate"].as_u64(), vocals["channels"].as_u64()),
        (Some(44100), Some(1))
    );
    let notes = result["notes"].to_string();
    assert!(
        notes.contains("8000 Hz") && notes.contains("mono input"),
        "{notes}"
    );

    let out = sb
        .command()
        .env("TIMBRE_MODELS_DIR", sb.path("models"))
        .args(["isolate", "--model", "other", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no separation model \"other\"") && said.contains("tiny"),
        "{said}"
    );
}

#[test]
fn silence_succeeds_with_a_note_and_broken_files_are_named() {
    let sb = Sandbox::new();
    let silence = sb.path("silence.wav");
    write(
        &silence,
        &AudioBuffer::new(RATE, vec![vec![0.0; 2 * RATE as usize]]),
    );
    let result = &ok_json(&sb.run(&["--json", "enhance", silence.to_str().unwrap()]))[0];
    let notes = result["result"]["notes"].to_string();
    assert!(notes.contains("no speech found"), "{notes}");
    let isolated = &ok_json(&sb.run(&["--json", "isolate", silence.to_str().unwrap()]))[0];
    assert!(isolated["result"]["notes"].to_string().contains("silent"));
    let before = take_count(&sb);

    let empty = sb.path("empty.wav");
    std::fs::write(&empty, b"").unwrap();
    let corrupt = sb.path("corrupt.flac");
    std::fs::write(&corrupt, b"fLaC this is not really audio at all").unwrap();
    for (command, file) in [("enhance", &empty), ("isolate", &corrupt)] {
        let out = sb.run(&[command, file.to_str().unwrap()]);
        assert!(!out.status.success(), "{command} {}", file.display());
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.starts_with("failed") && said.contains(file.to_str().unwrap()),
            "{said}"
        );
    }
    assert_eq!(take_count(&sb), before, "nothing is saved for a failed job");
}
