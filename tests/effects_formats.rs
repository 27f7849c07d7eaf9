//! `timbre effects` and `timbre convert --effects … --format …` through the real binary: presets
//! saved and refused by name, a chain applied to the converted audio before it is encoded, and
//! the lossy formats tagged and decoding back.

use std::path::Path;
use timbre_audio::export::read_tags;
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, write_sine_wav};

fn failure(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cpu_run(args);
    assert!(!out.status.success(), "timbre {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn presets_are_saved_shown_refused_and_deleted_by_name() {
    let sb = Sandbox::new();
    let names = |sb: &Sandbox| -> Vec<String> {
        sb.cpu_json(&["effects", "list"])
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&sb), ["Clean vocal", "Radio", "Hall"]);
    let file = sb.path("warm.json");
    std::fs::write(
        &file,
        r#"{"effects": [{"effect": "peaking_eq", "frequency_hz": 250, "gain_db": 2}]}"#,
    )
    .unwrap();
    sb.cpu_json(&["effects", "save", "Warm", file.to_str().unwrap()]);
    let shown = sb.cpu_json(&["effects", "show", "Warm"]);
    assert_eq!(shown["chain"]["effects"][0]["frequency_hz"], 250.0);
    assert_eq!(shown["chain"]["effects"][0]["q"], 1.0, "defaults filled in");
    assert_eq!(names(&sb), ["Clean vocal", "Radio", "Hall", "Warm"]);
    std::fs::write(&file, r#"{"effects": [{"effect": "flanger"}]}"#).unwrap();
    let err = failure(&sb, &["effects", "save", "Bad", file.to_str().unwrap()]);
    assert!(
        err.contains(&format!(
            "{}: effect 1 (flanger): unknown effect",
            file.display()
        )),
        "{err}"
    );
    let err = failure(&sb, &["effects", "delete", "Hall"]);
    assert!(err.contains("built-in"), "{err}");
    sb.cpu_json(&["effects", "delete", "Warm"]);
    let err = failure(&sb, &["effects", "show", "Warm"]);
    assert!(err.contains("no effects preset named \"Warm\""), "{err}");
}

fn import_plain_model(sb: &Sandbox) {
    let model = rvc_parity_fixtures().join("synth_v1_nono_32k/model.pth");
    sb.cpu_json(&[
        "models",
        "import",
        model.to_str().unwrap(),
        "--name",
        "plain",
    ]);
}

fn convert(sb: &Sandbox, input: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let results = sb.cpu_json(
        &[
            &["convert", "--model", "plain", input.to_str().unwrap()],
            extra,
        ]
        .concat(),
    );
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    let path = results[0]["result"]["output_path"]
        .as_str()
        .unwrap()
        .to_string();
    (results[0]["result"].clone(), path)
}

#[test]
fn a_chain_runs_on_the_converted_audio_and_every_format_comes_back_tagged() {
    let sb = Sandbox::with_extractors(false);
    import_plain_model(&sb);
    let input = sb.path("voice.wav");
    write_sine_wav(&input, 1.0, 220.0);
    let (_, plain) = convert(&sb, &input, &["--format", "wav-float"]);
    let halve = sb.path("halve.json");
    std::fs::write(
        &halve,
        r#"{"effects": [{"effect": "gain", "db": -6.020599913279624}]}"#,
    )
    .unwrap();
    let (result, halved) = convert(
        &sb,
        &input,
        &[
            "--format",
            "wav-float",
            "--effects",
            halve.to_str().unwrap(),
        ],
    );
    assert_eq!(
        result["conversion"]["params"]["effects"]["effects"][0]["effect"],
        "gain"
    );
    let decode =
        |path: &str| timbre_audio::decode_file(Path::new(path), &Default::default()).unwrap();
    let (plain, halved) = (decode(&plain), decode(&halved));
    assert_eq!(plain.frames(), halved.frames());
    let worst = plain.channels[0]
        .iter()
        .zip(&halved.channels[0])
        .map(|(p, h)| (p * 0.5 - h).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-6, "{worst}");

    let out = sb.path("out");
    for (format, extension, rate) in [
        ("mp3", "mp3", 32_000),
        ("vorbis", "ogg", 32_000),
        ("opus", "opus", 48_000),
    ] {
        let (_, path) = convert(
            &sb,
            &input,
            &[
                "--format",
                format,
                "--effects",
                "Radio",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(
            path.ends_with(&format!("voice (plain).{extension}")),
            "{path}"
        );
        let audio = decode(&path);
        assert_eq!(audio.sample_rate, rate, "{format}");
        assert!(
            (audio.duration_secs() - 1.0).abs() < 0.05,
            "{format}: {} s",
            audio.duration_secs()
        );
        let tags = read_tags(Path::new(&path)).unwrap();
        assert_eq!(tags.title, "voice (plain)", "{format}");
        assert_eq!(tags.artist, "plain", "{format}");
        assert!(
            tags.comment.contains("\"transpose\"") && tags.comment.contains("compressor"),
            "{format}: {}",
            tags.comment
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let err = failure(
        &sb,
        &[
            "convert",
            "--model",
            "plain",
            "--effects",
            "Nope",
            input.to_str().unwrap(),
        ],
    );
    assert!(
        err.contains("\"Nope\" is neither an effects preset nor a file"),
        "{err}"
    );
}

/// `timbre convert --out DIR` with DIR a 32 KiB tmpfs (mounted in an unprivileged user
/// namespace, as `library_full_disk.rs` does): the copy fails naming the file, leaves nothing
/// there, and the failed job records no conversion.
#[test]
fn a_full_output_disk_names_the_file_and_leaves_no_partial_copy() {
    let namespaces = std::process::Command::new("unshare")
        .args(["-rm", "true"])
        .output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: {namespaces:?})"
    );
    let sb = Sandbox::with_extractors(false);
    import_plain_model(&sb);
    let input = sb.path("voice.wav");
    write_sine_wav(&input, 2.0, 220.0);
    let out = sb.path("full");
    std::fs::create_dir(&out).unwrap();
    let timbre = sb.cpu_command();
    let listing = sb.path("listing");
    let script = r#"d=$1 listing=$2
        shift 2
        mount -t tmpfs -o size=32k tmpfs "$d" || exit 97
        "$@"
        rc=$?
        ls -A "$d" > "$listing"
        exit $rc"#;
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["-rm", "sh", "-c", script, "sh"])
        .arg(&out)
        .arg(&listing)
        .arg(timbre.get_program())
        .args(timbre.get_args())
        .args([
            "--json", "convert", "--model", "plain", "--format", "flac", "--out",
        ])
        .arg(&out)
        .arg(&input);
    for (key, value) in timbre.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let ran = cmd.output().unwrap();
    let results: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON from timbre: {}",
            String::from_utf8_lossy(&ran.stderr)
        )
    });
    assert_eq!(
        results[0]["ok"],
        false,
        "{results}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let error = results[0]["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "{}: cannot write",
            out.join("voice (plain).flac").display()
        )) && error.contains("No space left"),
        "{error}"
    );
    let left = std::fs::read_to_string(&listing).unwrap();
    assert_eq!(left, "", "left on the full disk");
    let library = rusqlite::Connection::open(sb.data_dir().join("library.sqlite3")).unwrap();
    let kept: i64 = library
        .query_row("SELECT count(*) FROM conversions", [], |r| r.get(0))
        .unwrap();
    // The job failed: its result is not recorded (the row is written last, after the copy).
    assert_eq!(kept, 0, "a conversion whose copy failed is recorded");
}
