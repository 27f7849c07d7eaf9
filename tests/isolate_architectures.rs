//! `timbre isolate` with MDX23C and SCNet models dropped into the models folder as a user would:
//! each `.ckpt` and YAML config (tiny random-weight ones made with MSST's own code, from
//! `crates/timbre-nn/tests/data/mdx23c-parity` and `scnet-parity`, stand in for real ones such as
//! SCNet XL). The architecture is told from the files; a config beside a checkpoint of another
//! architecture is refused naming both.

use std::path::Path;

use timbre_audio::signal::backing_track;
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_integration_tests::{Sandbox, separation_fixtures};
use timbre_test_support::{mdx23c_parity_fixtures, scnet_parity_fixtures};

const RATE: u32 = 44_100;

fn decode(path: &Path) -> AudioBuffer {
    timbre_audio::decode_file(path, &Default::default()).expect("decoding")
}

#[test]
fn an_mdx23c_model_in_the_models_folder_isolates_a_file() {
    isolates_then_refuses_another_architecture(
        "mdx",
        &mdx23c_parity_fixtures().join("instancenorm_relu_four_stems"),
        &separation_fixtures().join("bs_roformer_tiny/model.ckpt"),
        "mdx.yaml is an MDX23C config",
        "mdx.ckpt holds a BS-RoFormer",
    );
}

#[test]
fn an_scnet_model_in_the_models_folder_isolates_a_file() {
    isolates_then_refuses_another_architecture(
        "scnet",
        &scnet_parity_fixtures().join("vocals_other_stereo"),
        &mdx23c_parity_fixtures().join("groupnorm_elu_two_stems/model.ckpt"),
        "scnet.yaml is an SCNet config",
        "scnet.ckpt holds an MDX23C",
    );
}

/// A model of `fixture` (a fixture case folder with `model.ckpt` and `config.yaml`) dropped into
/// the models folder as `name` isolates a file; then with `other_checkpoint` (another
/// architecture's) beside the same config it is refused, the job saying `config_says` and
/// `checkpoint_says`.
fn isolates_then_refuses_another_architecture(
    name: &str,
    fixture: &Path,
    other_checkpoint: &Path,
    config_says: &str,
    checkpoint_says: &str,
) {
    let sb = Sandbox::new();
    let separation = sb.path("models/separation");
    std::fs::create_dir_all(&separation).unwrap();
    let checkpoint = separation.join(format!("{name}.ckpt"));
    std::fs::copy(fixture.join("model.ckpt"), &checkpoint).unwrap();
    std::fs::copy(
        fixture.join("config.yaml"),
        separation.join(format!("{name}.yaml")),
    )
    .unwrap();
    let mix_path = sb.path("mix.wav");
    timbre_audio::write_wav(&mix_path, &backing_track(RATE, 1.5), SampleFormat::Float32).unwrap();
    let out_dir = sb.path("out");
    let out = sb
        .command()
        .env("TIMBRE_MODELS_DIR", sb.path("models"))
        .env("TIMBRE_DEVICE", "cpu")
        .args([
            "--json",
            "isolate",
            "--model",
            name,
            mix_path.to_str().unwrap(),
        ])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "timbre failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &json[0]["result"];
    assert_eq!(result["method"]["model"], name, "{result}");
    assert_eq!(result["rough_preview"], false);
    let names: Vec<&str> = (0..2)
        .map(|i| result["takes"][i]["take"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mix (vocals)", "mix (instrumental)"]);

    let mix = decode(&mix_path);
    let vocals = decode(&out_dir.join("mix (vocals).wav"));
    let instrumental = decode(&out_dir.join("mix (instrumental).wav"));
    assert_eq!((vocals.sample_rate, vocals.channels.len()), (RATE, 2));
    assert_eq!(vocals.frames(), mix.frames());
    let mut energy = 0.0f64;
    for c in 0..2 {
        for ((m, v), i) in mix.channels[c]
            .iter()
            .zip(&vocals.channels[c])
            .zip(&instrumental.channels[c])
        {
            assert!((v + i - m).abs() < 1e-5, "vocals + instrumental = mix");
            energy += f64::from(*v).powi(2);
        }
    }
    let rms = (energy / (2 * mix.frames()) as f64).sqrt();
    assert!(rms > 1e-3, "the vocals are silent: rms {rms}");
    assert!(vocals.channels != mix.channels, "the vocals are the mix");

    // The config beside another architecture's checkpoint: refused, naming both files.
    std::fs::copy(other_checkpoint, &checkpoint).unwrap();
    let out = sb
        .command()
        .env("TIMBRE_MODELS_DIR", sb.path("models"))
        .env("TIMBRE_DEVICE", "cpu")
        .args(["isolate", "--model", name, mix_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    // The job's failure is on stdout, the progress on stderr.
    let said = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(
        said.contains(config_says) && said.contains(checkpoint_says),
        "{said}"
    );
}
