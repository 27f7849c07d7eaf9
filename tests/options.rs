//! Every option and setting out of its range is refused before anything is queued or stored,
//! with a message that names the parameter, the value and the range.

use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, write_sine_wav};

/// Runs `timbre`, expects it to fail, and returns what it said on stderr.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb
        .cpu_command()
        .args(args)
        .output()
        .expect("running timbre");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "timbre {args:?}: {said}");
    said
}

fn job_count(sb: &Sandbox) -> usize {
    sb.json(&["jobs", "list"])
        .as_array()
        .expect("a job list")
        .len()
}

#[test]
fn conversion_options_out_of_range_are_refused_by_name() {
    let sb = Sandbox::with_extractors(false);
    let model = rvc_parity_fixtures().join("synth_v2_f0_40k/model.pth");
    sb.json(&["models", "import", model.to_str().unwrap(), "--name", "v2"]);
    let input = sb.path("tone.wav");
    write_sine_wav(&input, 1.0, 440.0);
    let input = input.to_str().unwrap();
    for (option, value, message) in [
        ("--protect", "7", "protect must be between 0 and 0.5, not 7"),
        (
            "--rms-mix",
            "-3",
            "rms_mix_rate must be between 0 and 1, not -3",
        ),
        (
            "-t",
            "1000",
            "transpose must be between -48 and 48, not 1000",
        ),
        ("-t", "nan", "transpose must be between -48 and 48, not NaN"),
        (
            "--resample",
            "10000000",
            "resample_rate must be between 16000 and 192000, not 10000000",
        ),
        (
            "--resample",
            "1",
            "resample_rate must be between 16000 and 192000, not 1",
        ),
    ] {
        let said = refused(&sb, &["convert", "--model", "v2", option, value, input]);
        assert!(said.contains(message), "{option} {value}: {said}");
    }
    assert_eq!(job_count(&sb), 0, "nothing was queued");
}

#[test]
fn cleaning_options_out_of_range_are_refused_by_name() {
    let sb = Sandbox::new();
    let input = sb.path("tone.wav");
    write_sine_wav(&input, 1.0, 440.0);
    let input = input.to_str().unwrap();
    for (args, message) in [
        (
            vec!["enhance", "--ceiling", "50", input],
            "true_peak_ceiling_db must be between -20 and 0, not 50",
        ),
        (
            vec!["enhance", "--loudness", "1000", input],
            "loudness_lufs must be between -60 and -5, not 1000",
        ),
        (
            vec!["isolate", "--rough", "--preview", "0", input],
            "preview_secs must be between 0.5 and 3600, not 0",
        ),
        // Negative numbers reach the range check instead of being taken for options.
        (
            vec!["enhance", "--high-pass", "-5", input],
            "high_pass_hz must be between 10 and 1000, not -5",
        ),
        (
            vec!["enhance", "--max-pause", "-1", input],
            "max_pause_secs must be between 0.05 and 60, not -1",
        ),
        (
            vec!["enhance", "--denoise", "-0.5", input],
            "denoise_strength must be between 0 and 1, not -0.5",
        ),
    ] {
        let said = refused(&sb, &args);
        assert!(said.contains(message), "{args:?}: {said}");
    }
    assert_eq!(job_count(&sb), 0, "nothing was queued");
}

#[test]
fn settings_out_of_range_are_refused_by_name_and_not_stored() {
    let sb = Sandbox::new();
    let before = sb.json(&["settings", "list"]);
    for (key, value, range) in [
        ("max_import_duration_secs", "-1", "between 1 and 86400"),
        ("alert_ram_percent", "500", "between 1 and 100"),
        ("light_workers", "0", "between 1 and 64"),
        ("retry_base_secs", "-1", "between 0 and 3600"),
        ("monitor_interval_ms", "0", "between 10 and 60000"),
    ] {
        let said = refused(&sb, &["settings", "set", key, value]);
        let message = format!("{key} must be {range}, not {value}");
        assert!(said.contains(&message), "{key} {value}: {said}");
    }
    for (key, value) in [
        ("download_endpoint", "file:///etc"),
        (
            "download_mirrors",
            r#"["https://hf-mirror.com", "/srv/mirror"]"#,
        ),
    ] {
        let said = refused(&sb, &["settings", "set", key, value]);
        assert!(
            said.contains(&format!("setting {key}: "))
                && said.contains("is not an http:// or https:// URL"),
            "{key} {value}: {said}"
        );
    }
    assert_eq!(sb.json(&["settings", "list"]), before);
}
