//! `timbre cover` through the real binary, with the tiny random-weight voices and RoFormers of
//! the parity fixtures standing in for real ones: a cover end to end, the stage cache (another
//! voice or transpose reruns only conversion and remix), the remix's exactness with the vocals
//! passed through, a song without vocals, and bad input.

use std::path::Path;
use timbre_audio::signal::{backing_track, speech_like};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, separation_fixtures};

const RATE: u32 = 44_100;

/// The speech-like voice in the centre of the looped backing track, at `rate`.
fn song(path: &Path, rate: u32, seconds: f64) {
    let voice = speech_like(rate, seconds, 9).audio.channels.remove(0);
    let backing = backing_track(rate, seconds);
    let channels = backing
        .channels
        .iter()
        .map(|side| {
            side.iter()
                .zip(&voice)
                .map(|(b, v)| 0.5 * (b + v))
                .collect()
        })
        .collect();
    let mix = AudioBuffer::new(rate, channels);
    timbre_audio::write_wav(path, &mix, SampleFormat::Float32).expect("writing the song");
}

/// A sandbox with the fixture HuBERT and two fixture voices, `alto` (v1, 40 kHz, pitch) and
/// `tenor` (v1, 32 kHz, no pitch).
fn with_voices() -> Sandbox {
    let sb = Sandbox::with_extractors(false);
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "alto");
    sb.import_fixture_voice("synth_v1_nono_32k/model.pth", "tenor");
    sb
}

/// `timbre --json cover SONG --out DIR ARGS…` on the CPU: the one job's outcome.
fn cover(sb: &Sandbox, song: &Path, args: &[&str]) -> serde_json::Value {
    let out = sb
        .cpu_command()
        .args(["--json", "cover", song.to_str().unwrap(), "--out"])
        .arg(sb.path("covers"))
        .args(args)
        .output()
        .expect("running timbre");
    assert!(
        out.status.success(),
        "timbre cover {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let outcomes: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    outcomes[0]["result"].clone()
}

/// Each stage's status, in order: `isolate ran`, `second_pass skipped`…
fn stages(result: &serde_json::Value) -> Vec<String> {
    result["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["stage"].as_str().unwrap(),
                s["status"].as_str().unwrap()
            )
        })
        .collect()
}

/// The `stage` events of the newest job, as `stage status`.
fn stage_events(sb: &Sandbox) -> Vec<String> {
    let db = sb.db().expect("library exists");
    let mut statement = db
        .prepare(
            "SELECT data FROM job_events WHERE kind = 'stage'
             AND job_id = (SELECT MAX(id) FROM jobs) ORDER BY id",
        )
        .unwrap();
    statement
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|data| {
            let event: serde_json::Value = serde_json::from_str(&data.unwrap()).unwrap();
            format!(
                "{} {}",
                event["stage"].as_str().unwrap(),
                event["status"].as_str().unwrap()
            )
        })
        .collect()
}

fn decode(path: &str) -> AudioBuffer {
    timbre_audio::decode_file(Path::new(path), &Default::default()).expect("decoding")
}

#[test]
fn a_song_is_covered_and_another_voice_or_transpose_reruns_only_conversion_and_remix() {
    let sb = with_voices();
    let path = sb.path("song.wav");
    song(&path, RATE, 3.0);
    let voice = ["--f0-method", "pm", "--separation", "rough"];
    let first = cover(&sb, &path, &[&voice[..], &["--model", "alto"]].concat());
    assert_eq!(
        stages(&first),
        [
            "isolate ran",
            "second_pass skipped",
            "convert ran",
            "effects skipped",
            "remix ran"
        ]
    );
    assert_eq!(stage_events(&sb), stages(&first));
    let output = first["output_path"].as_str().unwrap();
    assert!(
        output.starts_with(sb.path("covers").to_str().unwrap()),
        "{output}"
    );
    assert!(output.ends_with("song (cover, alto).wav"), "{output}");
    let audio = decode(output);
    assert_eq!((audio.sample_rate, audio.channels.len()), (RATE, 2));
    assert!(
        (audio.duration_secs() - 3.0).abs() < 1e-3,
        "{}",
        audio.duration_secs()
    );
    let true_peak = timbre_audio::analysis::peak(&audio);
    assert!(true_peak < 0.9 && true_peak > 0.01, "{true_peak}");
    let roles: Vec<&str> = first["stems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["vocals", "instrumental", "converted", "cover"]);
    // Every stem is a take linked to the song.
    let song_id = first["song_take_id"].as_i64().unwrap();
    let db = sb.db().unwrap();
    let linked: Vec<String> = db
        .prepare("SELECT operation FROM derived_takes WHERE source_take_id = ?1 ORDER BY take_id")
        .unwrap()
        .query_map([song_id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        linked,
        [
            "isolate_vocals",
            "isolate_instrumental",
            "cover_converted_vocals",
            "cover"
        ]
    );
    assert!(first["warnings"].as_array().unwrap().is_empty(), "{first}");

    let tenor = cover(&sb, &path, &[&voice[..], &["--model", "tenor"]].concat());
    let only_voice = [
        "isolate cached",
        "second_pass skipped",
        "convert ran",
        "effects skipped",
        "remix ran",
    ];
    assert_eq!(stages(&tenor), only_voice);
    assert_eq!(stage_events(&sb), only_voice);
    assert_eq!(tenor["song_take_id"], first["song_take_id"]);
    assert_ne!(tenor["cover"]["sha256"], first["cover"]["sha256"]);
    let transposed = cover(
        &sb,
        &path,
        &[&voice[..], &["--model", "alto", "-t", "4"]].concat(),
    );
    assert_eq!(stages(&transposed), only_voice);
    let quieter = cover(
        &sb,
        &path,
        &[&voice[..], &["--model", "alto", "--vocal-gain", "-6"]].concat(),
    );
    assert_eq!(
        stages(&quieter),
        [
            "isolate cached",
            "second_pass skipped",
            "convert cached",
            "effects skipped",
            "remix ran"
        ]
    );
    let again = cover(&sb, &path, &[&voice[..], &["--model", "alto"]].concat());
    assert_eq!(again["cover"], first["cover"]);
    assert!(
        stages(&again).iter().all(|s| !s.ends_with(" ran")),
        "{again}"
    );
    // Each distinct cover is a conversion of the song, for the Compare page.
    assert_eq!(again["conversion_id"], first["conversion_id"]);
    let covers: i64 = sb
        .db()
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM conversions WHERE input_take_id = ?1",
            [song_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(covers, 4);
    let params: String = sb
        .db()
        .unwrap()
        .query_row(
            "SELECT params FROM conversions WHERE id = ?1",
            [again["conversion_id"].as_i64().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    let params: serde_json::Value = serde_json::from_str(&params).unwrap();
    assert_eq!(
        (
            params["f0_method"].as_str(),
            params["cover"]["separation"].as_str()
        ),
        (Some("pm"), Some("rough"))
    );
}

/// Signal to error ratio of `cover` against `song`, dB.
fn snr_db(song: &AudioBuffer, cover: &AudioBuffer) -> f64 {
    assert_eq!(song.channels.len(), cover.channels.len());
    let (mut signal, mut error) = (0.0f64, 0.0f64);
    for (s, c) in song.channels.iter().zip(&cover.channels) {
        assert_eq!(s.len(), c.len());
        for (a, b) in s.iter().zip(c) {
            signal += f64::from(*a).powi(2);
            error += f64::from(a - b).powi(2);
        }
    }
    10.0 * (signal / error.max(1e-30)).log10()
}

/// Effects off, gains 0 dB and no voice: the cover is the song, within the separations' own
/// reconstruction (vocals + instrumental = mix), with the rough isolation and with a RoFormer
/// followed by a second pass.
#[test]
fn with_the_vocals_passed_through_the_cover_equals_the_song() {
    let sb = Sandbox::new();
    let separation = sb.models_dir().join("separation");
    std::fs::create_dir_all(&separation).unwrap();
    for (fixture, name) in [
        ("bs_roformer_tiny", "vocals"),
        ("mel_band_roformer_tiny", "dereverb"),
    ] {
        let tiny = separation_fixtures().join(fixture);
        std::fs::copy(
            tiny.join("model.ckpt"),
            separation.join(format!("{name}.ckpt")),
        )
        .unwrap();
        std::fs::copy(
            tiny.join("config.yaml"),
            separation.join(format!("{name}.yaml")),
        )
        .unwrap();
    }
    let path = sb.path("song.wav");
    song(&path, RATE, 2.0);
    let original = decode(path.to_str().unwrap());
    let plain = ["--model", "none", "--format", "wav-float"];
    let rough = cover(
        &sb,
        &path,
        &[&plain[..], &["--separation", "rough"]].concat(),
    );
    assert_eq!(
        stages(&rough),
        [
            "isolate ran",
            "second_pass skipped",
            "convert skipped",
            "effects skipped",
            "remix ran"
        ]
    );
    assert_eq!(rough["voice"], serde_json::Value::Null);
    assert_eq!(rough["conversion_id"], serde_json::Value::Null);
    let snr = snr_db(&original, &decode(rough["output_path"].as_str().unwrap()));
    assert!(snr > 100.0, "rough: {snr:.1} dB");

    let roformer = cover(
        &sb,
        &path,
        &[
            &plain[..],
            &["--separation", "vocals", "--second-pass", "dereverb"],
        ]
        .concat(),
    );
    assert_eq!(
        stages(&roformer),
        [
            "isolate ran",
            "second_pass ran",
            "convert skipped",
            "effects skipped",
            "remix ran"
        ]
    );
    let roles: Vec<&str> = roformer["stems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["vocals", "instrumental", "lead", "backing", "cover"]
    );
    let snr = snr_db(
        &original,
        &decode(roformer["output_path"].as_str().unwrap()),
    );
    assert!(snr > 60.0, "RoFormer + second pass: {snr:.1} dB");
}

/// The looped backing track alone (its instruments off centre): the cover is made and says no
/// vocals were found.
#[test]
fn a_song_without_vocals_is_covered_with_a_warning() {
    let sb = with_voices();
    let path = sb.path("instrumental.wav");
    timbre_audio::write_wav(&path, &backing_track(RATE, 3.0), SampleFormat::Int16).unwrap();
    let result = cover(
        &sb,
        &path,
        &[
            "--model",
            "alto",
            "--f0-method",
            "pm",
            "--separation",
            "rough",
        ],
    );
    let warnings = result["warnings"].to_string();
    assert!(
        warnings.contains("no vocals found in instrumental"),
        "{result}"
    );
    let audio = decode(result["output_path"].as_str().unwrap());
    assert!((audio.duration_secs() - 3.0).abs() < 1e-3);
}

/// A mono 8 kHz song is covered at its own rate and channels.
#[test]
fn a_mono_8_khz_song_is_covered_at_its_rate() {
    let sb = with_voices();
    let path = sb.path("phone.wav");
    song(&path, 8_000, 2.0);
    let mono = decode(path.to_str().unwrap()).to_mono();
    timbre_audio::write_wav(&path, &mono, SampleFormat::Int16).unwrap();
    let result = cover(
        &sb,
        &path,
        &[
            "--model",
            "tenor",
            "--separation",
            "rough",
            "--format",
            "flac",
        ],
    );
    let audio = decode(result["output_path"].as_str().unwrap());
    assert_eq!((audio.sample_rate, audio.channels.len()), (8_000, 1));
    assert!((audio.duration_secs() - 2.0).abs() < 1e-3);
    assert!(result["output_path"].as_str().unwrap().ends_with(".flac"));
}

#[test]
fn a_missing_voice_or_a_corrupt_song_is_a_clear_error_naming_it() {
    let sb = with_voices();
    let path = sb.path("song.wav");
    song(&path, RATE, 1.0);
    let out = sb
        .cpu_command()
        .args([
            "cover",
            path.to_str().unwrap(),
            "--model",
            "soprano",
            "--out",
        ])
        .arg(sb.path("covers"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("soprano"), "{said}");

    // A refused request imports nothing, not even the voice file it names.
    let models = |sb: &Sandbox| sb.json(&["models", "list"]).as_array().unwrap().len();
    let before = models(&sb);
    let missing = sb.path("no such song.wav");
    let out = sb
        .cpu_command()
        .args(["cover", missing.to_str().unwrap(), "--model"])
        .arg(rvc_parity_fixtures().join("synth_v1_f0_40k/model.pth"))
        .arg("--out")
        .arg(sb.path("covers"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no such song.wav"), "{said}");
    assert_eq!(models(&sb), before, "the voice file was not imported");

    let broken = sb.path("broken.wav");
    std::fs::write(&broken, b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk").unwrap();
    let out = sb
        .cpu_command()
        .args([
            "--json",
            "cover",
            broken.to_str().unwrap(),
            "--model",
            "alto",
            "--out",
        ])
        .arg(sb.path("covers"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let outcomes: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let error = outcomes[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("broken.wav"), "{outcomes}");
    assert!(
        !sb.path("covers").exists()
            || std::fs::read_dir(sb.path("covers"))
                .unwrap()
                .next()
                .is_none()
    );
}

/// A cover cut off by `kill -9` after its isolation resumes with the isolation from the cache.
#[test]
fn a_cover_killed_after_its_isolation_resumes_from_the_cache() {
    let sb = with_voices();
    let path = sb.path("song.wav");
    song(&path, RATE, 4.0);
    let mut child = sb
        .cpu_command()
        .args([
            "cover",
            path.to_str().unwrap(),
            "--model",
            "alto",
            "--f0-method",
            "pm",
        ])
        .args(["--separation", "rough", "--out"])
        .arg(sb.path("covers"))
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !stage_events(&sb).iter().any(|s| s == "isolate ran") {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the cover ended before it could be killed"
        );
        assert!(
            started.elapsed().as_secs() < 120,
            "the isolation never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!sb.path("covers").exists(), "killed too late");
    let out = sb
        .cpu_command()
        .args(["--json", "jobs", "resume", "1"])
        .output()
        .unwrap();
    let resumed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON from jobs resume: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(resumed["state"], "succeeded", "{resumed}");
    assert_eq!(
        stages(&resumed["result"]),
        [
            "isolate cached",
            "second_pass skipped",
            "convert ran",
            "effects skipped",
            "remix ran"
        ]
    );
}

#[test]
fn effects_run_over_the_converted_vocals_and_other_effects_rerun_only_effects_and_remix() {
    let sb = with_voices();
    let path = sb.path("song.wav");
    song(&path, RATE, 2.0);
    let voice = [
        "--f0-method",
        "pm",
        "--separation",
        "rough",
        "--model",
        "alto",
    ];
    let radio = cover(&sb, &path, &[&voice[..], &["--effects", "Radio"]].concat());
    assert_eq!(
        stages(&radio),
        [
            "isolate ran",
            "second_pass skipped",
            "convert ran",
            "effects ran",
            "remix ran"
        ]
    );
    let roles: Vec<&str> = radio["stems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["vocals", "instrumental", "converted", "processed", "cover"]
    );
    let hall = cover(&sb, &path, &[&voice[..], &["--effects", "Hall"]].concat());
    assert_eq!(
        stages(&hall),
        [
            "isolate cached",
            "second_pass skipped",
            "convert cached",
            "effects ran",
            "remix ran"
        ]
    );
    assert_ne!(hall["cover"]["sha256"], radio["cover"]["sha256"]);
    let out = sb
        .cpu_command()
        .args(["cover", path.to_str().unwrap(), "--out"])
        .arg(sb.path("covers"))
        .args(voice)
        .args(["--effects", "no such preset"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither an effects preset nor a file"));
}
