//! `timbre models import` refusing damaged voice models with the file and the tensor named,
//! re-imports under a new name, conversions of a model whose stored file went bad naming the
//! model, and `timbre models files` telling the two RoFormers apart.

use std::path::{Path, PathBuf};
use std::process::Output;

use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, separation_fixtures, write_sine_wav};
use timbre_test_support::reference_python;

const GOOD_MODEL: &str = "synth_v2_f0_40k/model.pth";

/// The fixture model loaded and saved again by torch after `mutation` (Python run on
/// `ckpt`, the loaded checkpoint, and `w`, its `weight` dict), as `name` in the sandbox.
fn mutated_model(sb: &Sandbox, name: &str, mutation: &str) -> PathBuf {
    mutated_fixture(sb, GOOD_MODEL, name, mutation)
}

/// [`mutated_model`] of the fixture voice `fixture`.
fn mutated_fixture(sb: &Sandbox, fixture: &str, name: &str, mutation: &str) -> PathBuf {
    let path = sb.path(name);
    let script = format!(
        "import sys, torch\n\
         ckpt = torch.load(sys.argv[1])\n\
         w = ckpt['weight']\n\
         {mutation}\n\
         torch.save(ckpt, sys.argv[2])\n"
    );
    let out = std::process::Command::new(reference_python())
        .arg("-c")
        .arg(script)
        .arg(rvc_parity_fixtures().join(fixture))
        .arg(&path)
        .output()
        .expect("running the venv's Python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

fn import(sb: &Sandbox, model: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["models", "import", model.to_str().unwrap()];
    args.extend(extra);
    sb.cpu_command()
        .args(args)
        .output()
        .expect("running timbre")
}

fn refusal(sb: &Sandbox, model: &Path) -> String {
    let out = import(sb, model, &[]);
    assert!(!out.status.success(), "{} was imported", model.display());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn damaged_models_are_refused_at_import_naming_the_file_and_the_tensor() {
    let sb = Sandbox::new();
    let cases = [
        (
            "missing_weight.pth",
            "del w['flow.flows.2.enc.in_layers.0.weight_v']",
            "flow.flows.2.enc.in_layers.0.weight",
        ),
        (
            "missing_bias.pth",
            "del w['dec.resblocks.4.convs2.1.bias']",
            "dec.resblocks.4.convs2.1.bias",
        ),
        (
            "wrong_shape.pth",
            "w['enc_p.encoder.norm_layers_1.0.gamma'] = torch.ones(15).half()",
            "enc_p.encoder.norm_layers_1.0.gamma",
        ),
        (
            "nan_weights.pth",
            "for k in w:\n    w[k] = torch.full_like(w[k], float('nan'))",
            "holds NaN or infinite weights",
        ),
        // Shapes every layer accepts but a conversion would not: 767-d content features, 255
        // pitch classes, a weight norm's magnitude that does not fit its weight.
        (
            "feature_width.pth",
            "w['enc_p.emb_phone.weight'] = w['enc_p.emb_phone.weight'][:, :-1].clone()",
            "`enc_p.emb_phone` has a weight of shape [16, 767], expected [16, 256] (v1) or \
             [16, 768] (v2)",
        ),
        (
            "pitch_classes.pth",
            "w['enc_p.emb_pitch.weight'] = w['enc_p.emb_pitch.weight'][:-1].clone()",
            "`enc_p.emb_pitch` has a weight of shape [255, 16], expected [256, 16]",
        ),
        (
            "magnitude.pth",
            "w['dec.ups.1.weight_g'] = w['dec.ups.1.weight_g'][:-1].clone()",
            "tensor `dec.ups.1.weight_g` has shape [31, 1, 1], expected [32, 1, 1]",
        ),
    ];
    for (file, mutation, expected) in cases {
        let message = refusal(&sb, &mutated_model(&sb, file, mutation));
        assert!(
            message.contains(file) && message.contains(expected),
            "{file}: {message}"
        );
    }
    let message = refusal(
        &sb,
        &mutated_model(
            &sb,
            "one_nan.pth",
            "w['dec.cond.weight'][0, 0, 0] = float('inf')",
        ),
    );
    assert!(
        message.contains("tensor `dec.cond.weight` holds NaN or infinite"),
        "{message}"
    );
    assert_eq!(sb.json(&["models", "list"]).as_array().unwrap().len(), 0);

    let resaved = mutated_model(&sb, "resaved.pth", "pass");
    let out = import(&sb, &resaved, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_random_index_is_named_as_no_faiss_index() {
    let sb = Sandbox::new();
    let random = sb.path("random.index");
    std::fs::write(&random, [0xde, 0xad, 0x00, 0x07, 1, 2, 3]).unwrap();
    let model = rvc_parity_fixtures().join(GOOD_MODEL);
    let out = import(&sb, &model, &["--index", random.to_str().unwrap()]);
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        message.contains("random.index is not a faiss index: it starts with the bytes de ad 00 07"),
        "{message}"
    );
}

#[test]
fn a_model_imported_again_with_a_name_is_renamed() {
    let sb = Sandbox::new();
    let model = rvc_parity_fixtures().join(GOOD_MODEL);
    let first = sb.json(&[
        "models",
        "import",
        model.to_str().unwrap(),
        "--name",
        "Alto",
    ]);
    let again = sb.json(&[
        "models",
        "import",
        model.to_str().unwrap(),
        "--name",
        "Soprano",
    ]);
    assert_eq!(again[0]["id"], first[0]["id"]);
    assert_eq!(again[0]["name"], "Soprano");
    let unnamed = sb.json(&["models", "import", model.to_str().unwrap()]);
    assert_eq!(unnamed[0]["name"], "Soprano", "no --name keeps the name");
    let listed = sb.json(&["models", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["name"], "Soprano");
}

#[test]
fn a_conversion_with_a_damaged_stored_model_names_the_model_not_the_store() {
    let sb = Sandbox::with_extractors(false);
    let model = rvc_parity_fixtures().join(GOOD_MODEL);
    let imported = sb.json(&[
        "models",
        "import",
        model.to_str().unwrap(),
        "--name",
        "Tenor",
    ]);
    let sha = imported[0]["weights_sha256"].as_str().unwrap();
    let stored = sb
        .data_dir()
        .join("store/objects")
        .join(&sha[..2])
        .join(format!("{sha}.pth"));
    assert!(
        stored.is_file(),
        "{} is not where the store keeps it",
        stored.display()
    );
    let mut permissions = std::fs::metadata(&stored).unwrap().permissions();
    #[expect(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&stored, permissions).unwrap();
    std::fs::write(&stored, b"PK\x03\x04 no longer a model").unwrap();

    let input = sb.path("in.wav");
    write_sine_wav(&input, 0.5, 220.0);
    let out = sb
        .cpu_command()
        .args(["--json", "convert", "--model", "Tenor", "--f0-method", "pm"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Tenor") && text.contains("(imported from"),
        "{text}"
    );
    assert!(!text.contains("objects"), "a store path in: {text}");
}

#[test]
fn models_files_tells_a_bs_roformer_from_a_mel_band_roformer() {
    let sb = Sandbox::new();
    let separation = sb.models_dir().join("separation");
    std::fs::create_dir_all(&separation).unwrap();
    let present = |sb: &Sandbox| {
        let out = sb
            .cpu_command()
            .args(["--json", "models", "files"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let of = |name: &str| {
            listing["files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap()["present"]
                .as_bool()
                .unwrap()
        };
        (of("bs-roformer-ep317"), of("mel-roformer-kj"))
    };
    let place = |fixture: &str, catalogue_name: &str| {
        for (from, ext) in [("model.ckpt", "ckpt"), ("config.yaml", "yaml")] {
            std::fs::copy(
                separation_fixtures().join(fixture).join(from),
                separation.join(format!("{catalogue_name}.{ext}")),
            )
            .unwrap();
        }
    };
    assert_eq!(present(&sb), (false, false));
    place("bs_roformer_tiny", "model_bs_roformer_ep_317_sdr_12.9755");
    assert_eq!(present(&sb), (true, false));
    place("mel_band_roformer_tiny", "vocals_mel_band_roformer_kj");
    assert_eq!(present(&sb), (true, true));
}

#[test]
fn models_blend_into_a_new_library_model_and_incompatible_ones_are_refused_by_difference() {
    let sb = Sandbox::with_extractors(false);
    sb.import_fixture_voice(GOOD_MODEL, "ada");
    let louder = mutated_model(
        &sb,
        "louder.pth",
        "for k in w: w[k] = (w[k].float() * 1.5).half()",
    );
    let imported = import(&sb, &louder, &["--name", "bo"]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "old");

    let blend = sb.json(&[
        "models",
        "blend",
        "ada",
        "bo",
        "--weights",
        "1,3",
        "--name",
        "mix",
    ]);
    assert_eq!(blend["name"], "mix");
    assert_eq!(blend["version"], "v2");
    let listed = sb.json(&["models", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "mix")
    );
    // A blend converts like any model, so it can be A/B'd against its parents (the sandbox's
    // tiny HuBERT suits the v1 fixture).
    sb.json(&["models", "blend", "old", "old", "--name", "old-mix"]);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 0.5, 220.0);
    let out_dir = sb.path("out");
    let converted = sb
        .cpu_command()
        .args([
            "convert",
            "--model",
            "old-mix",
            "--f0-method",
            "pm",
            "--out",
        ])
        .arg(&out_dir)
        .arg(&tone)
        .output()
        .unwrap();
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stdout)
    );

    let refused = sb.run(&["models", "blend", "ada", "old", "--name", "bad"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("v2") && err.contains("v1") && err.contains("same version"),
        "{err}"
    );
    assert!(
        !sb.json(&["models", "list"])
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "bad")
    );
    let refused = sb.run(&[
        "models",
        "blend",
        "ada",
        "bo",
        "--weights",
        "1",
        "--name",
        "bad",
    ]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("one weight per model"));
    // Weights each finite whose sum is not would make every tensor 0: a silent model. A
    // negative weight reaches the check rather than clap's "unexpected argument".
    for (weights, words) in [
        (
            "1e308,1e308",
            "the weights 1e308, 1e308 add up to more than a number holds",
        ),
        ("-1,2", "weight -1 is negative"),
        ("inf,1", "weight inf is not a finite number"),
    ] {
        let refused = sb.run(&[
            "models",
            "blend",
            "ada",
            "bo",
            "--weights",
            weights,
            "--name",
            "silent",
        ]);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{weights}: {err}");
        assert!(err.contains(words), "{weights}: {err}");
    }
    assert!(
        !sb.json(&["models", "list"])
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "silent")
    );
}

#[test]
fn models_export_writes_edited_info_that_the_reference_reads() {
    let sb = Sandbox::with_extractors(false);
    sb.import_fixture_voice(GOOD_MODEL, "ada");
    let out = sb.path("ada-edited.pth");
    sb.json(&[
        "models",
        "export",
        "ada",
        out.to_str().unwrap(),
        "--model-name",
        "Ada Lovelace",
        "--author",
        "Timbre",
        "--description",
        "Edited in a test.",
        "--info",
        "200epoch",
    ]);
    let read = std::process::Command::new(reference_python())
        .arg("-c")
        .arg(
            "import sys, json, torch\n\
             from rvc_next.engine.models.loader import load_voice\n\
             load_voice(sys.argv[1], torch.device('cpu'), False)\n\
             c = torch.load(sys.argv[1], weights_only=True)\n\
             print(json.dumps([c['model_name'], c['author'], c['description'], c['info']]))\n",
        )
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let entries: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(
        entries,
        serde_json::json!(["Ada Lovelace", "Timbre", "Edited in a test.", "200epoch"])
    );
    // The edited file imports again under the name written into it.
    let imported = import(&sb, &out, &[]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let listed = sb.json(&["models", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "Ada Lovelace"),
        "{listed}"
    );
}

#[test]
fn models_info_shows_the_vocoder_and_embedder_and_an_unknown_embedder_is_refused_by_name() {
    let sb = Sandbox::with_extractors(false);
    sb.import_fixture_voice(GOOD_MODEL, "plain");
    let plain = sb.json(&["models", "info", "plain"]);
    assert_eq!(plain["vocoder"], "HiFi-GAN", "{plain}");
    assert_eq!(plain["embedder"], "contentvec", "{plain}");

    let applio = mutated_model(
        &sb,
        "applio.pth",
        "ckpt.update(vocoder='HiFi-GAN', embedder_model='contentvec', author='Ana', epoch=300)",
    );
    assert!(import(&sb, &applio, &["--name", "applio"]).status.success());
    let info = sb.json(&["models", "info", "applio"]);
    assert_eq!(info["embedder"], "contentvec", "{info}");
    assert_eq!(info["metadata"]["file"]["author"], "Ana", "{info}");
    let text = sb
        .cpu_command()
        .args(["models", "info", "applio"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for line in [
        "vocoder   HiFi-GAN",
        "embedder  contentvec",
        "author    Ana",
        "epoch     300",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }

    let whisper = mutated_model(&sb, "whisper.pth", "ckpt['embedder_model'] = 'whisper'");
    let message = refusal(&sb, &whisper);
    assert!(
        message.contains("whisper.pth") && message.contains("the whisper embedder"),
        "{message}"
    );
}

#[test]
fn a_voice_of_a_custom_embedder_converts_once_its_folder_is_chosen() {
    let sb = Sandbox::with_extractors(true);
    let v1 = "synth_v1_f0_40k/model.pth";
    let voice = mutated_fixture(&sb, v1, "custom.pth", "ckpt['embedder_model'] = 'custom'");
    let imported = import(&sb, &voice, &["--name", "own"]);
    assert!(imported.status.success());
    let said = String::from_utf8_lossy(&imported.stderr);
    assert!(
        said.contains("`timbre models embedder own --folder DIR`"),
        "{said}"
    );

    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let refused = sb.cpu_run(&[
        "--json",
        "convert",
        "--model",
        "own",
        tone.to_str().unwrap(),
    ]);
    let message = String::from_utf8_lossy(&refused.stdout).into_owned()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("own") && message.contains("trained on a custom embedder"),
        "{message}"
    );

    let choose = |model: &str, folder: &Path| {
        sb.cpu_run(&[
            "models",
            "embedder",
            model,
            "--folder",
            folder.to_str().unwrap(),
        ])
    };
    let stderr = |out: Output| String::from_utf8_lossy(&out.stderr).into_owned();
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let message = stderr(choose("own", &empty));
    assert!(
        message.contains("not a transformers HuBERT folder"),
        "{message}"
    );
    let folder = rvc_parity_fixtures().join("hubert_tiny/hf");
    sb.import_fixture_voice(v1, "plain");
    let message = stderr(choose("plain", &folder));
    assert!(
        message.contains("plays with the contentvec embedder's features"),
        "{message}"
    );
    // A v2 voice takes 768-d features, which the tiny HuBERT's 64-d last layer is not.
    let wide = mutated_model(&sb, "wide.pth", "ckpt['embedder_model'] = 'custom'");
    assert!(import(&sb, &wide, &["--name", "wide"]).status.success());
    let message = stderr(choose("wide", &folder));
    assert!(
        message.contains("gives 64-d content features; wide takes 768-d ones"),
        "{message}"
    );

    assert!(choose("own", &folder).status.success());
    let converted = sb.cpu_json(&["convert", "--model", "own", tone.to_str().unwrap()]);
    assert_eq!(converted[0]["ok"], true, "{}", converted[0]);
}

#[test]
fn a_voice_of_another_embedder_names_it_until_it_is_there_and_converts_with_its_features() {
    let sb = Sandbox::with_extractors(true);
    // A v1 voice, whose 256-d features the tiny HuBERT gives (Applio's v1: from its last layer).
    let v1 = "synth_v1_f0_40k/model.pth";
    let voice = mutated_fixture(&sb, v1, "spin.pth", "ckpt['embedder_model'] = 'spin'");
    let download = "timbre assets download embedder-spin embedder-spin-config";
    let imported = import(&sb, &voice, &["--name", "spun"]);
    assert!(imported.status.success());
    let said = String::from_utf8_lossy(&imported.stderr);
    assert!(said.contains(download), "{said}");
    let info = sb.json(&["models", "info", "spun"]);
    assert_eq!(info["embedder"], "spin", "{info}");

    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let convert = || {
        sb.cpu_run(&[
            "--json",
            "convert",
            "--model",
            "spun",
            tone.to_str().unwrap(),
        ])
    };
    let refused = convert();
    let message = String::from_utf8_lossy(&refused.stdout).into_owned()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("spun")
            && message.contains("trained on the spin embedder's features")
            && message.contains(download),
        "{message}"
    );

    // Applio's layout: the embedder's transformers folder under embedders/.
    let folder = sb.models_dir().join("embedders/spin");
    std::fs::create_dir_all(&folder).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(
            rvc_parity_fixtures().join("hubert_tiny/hf").join(file),
            folder.join(file),
        )
        .unwrap();
    }
    let converted = sb.cpu_json(&["convert", "--model", "spun", tone.to_str().unwrap()]);
    assert_eq!(converted[0]["ok"], true, "{}", converted[0]);
    assert_eq!(converted[0]["result"]["analysis_cache"], "computed");
    // A contentvec voice on the same input has analyses of its own.
    sb.import_fixture_voice(v1, "plain");
    let plain = sb.cpu_json(&["convert", "--model", "plain", tone.to_str().unwrap()]);
    assert_eq!(
        plain[0]["result"]["analysis_cache"], "computed",
        "{}",
        plain[0]
    );
}
