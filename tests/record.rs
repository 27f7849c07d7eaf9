//! `timbre record` through cpal's ALSA backend from a fake capture device that plays a known
//! sine (see `timbre_audio::record::fake_alsa_device`): the saved take has exactly the length
//! asked for and holds the signal that was fed in.

use timbre_audio::signal::{sine, zero_crossing_frequency};
use timbre_audio::{DecodeOptions, analysis, decode_file, record};
use timbre_integration_tests::Sandbox;

#[test]
fn recording_from_a_fake_capture_device_saves_the_fed_signal() {
    let sb = Sandbox::new();
    let home = sb.path("home");
    std::fs::create_dir(&home).unwrap();
    let config =
        record::fake_alsa_device(&sb.path("capture.raw"), &sine(16000, 440.0, 10.0, 0.5)).unwrap();
    std::fs::write(home.join(".asoundrc"), config).unwrap();
    let with_fake_device = |args: &[&str]| {
        let out = sb
            .command()
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "timbre {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };

    let devices = with_fake_device(&["devices"]);
    assert!(
        devices
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["is_default"] == true),
        "{devices}"
    );

    let take = with_fake_device(&[
        "record",
        "--seconds",
        "2",
        "--voice",
        "Mic",
        "--name",
        "fed sine",
    ]);
    assert_eq!(take["origin"], "recorded");
    assert_eq!(take["name"], "fed sine");
    assert_eq!(take["duration_secs"], 2.0);

    let listed = sb.json(&["library", "show", &take["id"].to_string()]);
    let sha = listed["sha256"].as_str().unwrap();
    let stored = sb
        .data_dir()
        .join("store/objects")
        .join(&sha[..2])
        .join(format!("{sha}.wav"));
    let audio = decode_file(&stored, &DecodeOptions::default()).unwrap();
    assert_eq!(audio.frames() as f64, 2.0 * f64::from(audio.sample_rate));
    let freq = zero_crossing_frequency(&audio.channels[0], audio.sample_rate).unwrap();
    assert!((freq - 440.0).abs() < 440.0 * 0.02, "recorded {freq} Hz");
    let rms = analysis::rms(&audio);
    assert!((rms - 0.5 / 2f32.sqrt()).abs() < 0.03, "recorded RMS {rms}");
    assert_eq!(sb.json(&["library", "voices"])[0]["name"], "Mic");
}

#[test]
fn an_unknown_device_is_a_clear_error() {
    let sb = Sandbox::new();
    let out = sb.run(&["record", "--seconds", "1", "--device", "no such microphone"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no such microphone"), "{stderr}");
}
