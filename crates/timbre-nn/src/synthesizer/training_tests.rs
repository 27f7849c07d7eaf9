//! The trainable synthesizer on tiny configs: a fresh model's initialisation, checkpoints written
//! and read back, the errors of a checkpoint for another model, the training forward's inputs and
//! randomness, and the inference model on its weights. Parity with the reference is
//! `tests/parity/synthesizer_training.rs`.

use std::path::Path;

use tch::{Device, Kind, Tensor};

use super::*;
use crate::checkpoint::write_torch_file;
use crate::export::config_list;

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

fn tiny_config() -> SynthesizerConfig {
    SynthesizerConfig {
        spec_channels: 9,
        segment_size: 4,
        inter_channels: 4,
        hidden_channels: 4,
        filter_channels: 6,
        n_heads: 2,
        n_layers: 1,
        kernel_size: 3,
        p_dropout: 0.0,
        resblock: "1".to_string(),
        resblock_kernel_sizes: vec![3],
        resblock_dilation_sizes: vec![vec![1, 3, 5]],
        upsample_rates: vec![2, 2],
        upsample_initial_channel: 8,
        upsample_kernel_sizes: vec![4, 4],
        spk_embed_dim: 3,
        gin_channels: 4,
        sr: 40000,
    }
}

/// RVC's 40k (or, with `forty_eight`, v2 48k) upsampling and spectrogram on tiny channels.
fn standard_rate_config(forty_eight: bool) -> SynthesizerConfig {
    let (rates, kernels, sr) = if forty_eight {
        (vec![12, 10, 2, 2], vec![24, 20, 4, 4], 48000)
    } else {
        (vec![10, 10, 2, 2], vec![16, 16, 4, 4], 40000)
    };
    SynthesizerConfig {
        spec_channels: 1025,
        upsample_rates: rates,
        upsample_kernel_sizes: kernels,
        upsample_initial_channel: 16,
        sr,
        ..tiny_config()
    }
}

fn model(config: &SynthesizerConfig, version: &str, f0: bool) -> TrainableSynthesizer {
    TrainableSynthesizer::new(config, version, f0, Device::Cpu).unwrap()
}

fn parameter(model: &TrainableSynthesizer, name: &str) -> Tensor {
    let found = model.parameters().iter().find(|(n, _)| n == name);
    found.unwrap_or_else(|| panic!("no {name}")).1.detach()
}

fn largest(t: &Tensor) -> f64 {
    t.abs().max().double_value(&[])
}

/// `{"model": state_dict, …}` as RVC's `save_checkpoint` writes it.
fn generator_checkpoint(state_dict: Vec<(String, Tensor)>) -> Value {
    let entries = state_dict
        .into_iter()
        .map(|(name, tensor)| (text(&name), Value::Tensor(tensor)))
        .collect();
    Value::Dict(vec![
        (text("model"), Value::ordered_dict(entries)),
        (text("iteration"), Value::Int(7)),
        (text("optimizer"), Value::Dict(Vec::new())),
        (text("learning_rate"), Value::Float(1e-4)),
    ])
}

fn load_error(into: &mut TrainableSynthesizer, root: &Value) -> String {
    let error = into
        .load_checkpoint_value(root, Path::new("G_7.pth"))
        .unwrap_err();
    format!("{error:#}")
}

/// A batch of two items, the second padded, of 10 frames.
struct Batch {
    phone: Tensor,
    phone_lengths: Tensor,
    pitch: Tensor,
    pitchf: Tensor,
    spec: Tensor,
    spec_lengths: Tensor,
    sid: Tensor,
}

impl Batch {
    fn new(config: &SynthesizerConfig, feature_dim: i64) -> Self {
        let frames = 10;
        let lengths = Tensor::from_slice(&[10i64, 7]);
        Self {
            phone: Tensor::randn([2, frames, feature_dim], (Kind::Float, Device::Cpu)),
            phone_lengths: lengths.shallow_clone(),
            pitch: Tensor::randint(256, [2, frames], (Kind::Int64, Device::Cpu)),
            pitchf: Tensor::rand([2, frames], (Kind::Float, Device::Cpu)) * 300.0 + 80.0,
            spec: Tensor::rand(
                [2, config.spec_channels, frames],
                (Kind::Float, Device::Cpu),
            ),
            spec_lengths: lengths,
            sid: Tensor::from_slice(&[0i64, 2]),
        }
    }

    fn inputs(&self) -> TrainingBatch<'_> {
        TrainingBatch {
            phone: &self.phone,
            phone_lengths: &self.phone_lengths,
            pitch: Some(&self.pitch),
            pitchf: Some(&self.pitchf),
            spec: &self.spec,
            spec_lengths: &self.spec_lengths,
            sid: &self.sid,
        }
    }
}

#[test]
fn a_fresh_model_is_initialised_as_the_reference_initialises_one() {
    tch::manual_seed(3);
    let model = model(&tiny_config(), "v2", true);
    let names: Vec<&str> = model.parameters().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"dec.m_source.l_linear.weight"));
    assert_eq!(names.last(), Some(&"enc_p.proj.bias"));
    assert!(names.iter().all(|n| !n.contains("parametrizations")));

    for (name, g) in model.parameters() {
        if let Some(layer) = name.strip_suffix(".weight_g") {
            let v = parameter(&model, &format!("{layer}.weight_v"));
            let norm = v.norm_scalaropt_dim(2, [1, 2], true);
            assert!(largest(&(g.detach() - norm)) < 1e-6, "{name} is not ‖v‖");
        }
    }
    // Torch's default bound 1/√fan_in: ups.0 is a ConvTranspose1d [8, 4, 4] (fan_in 4 × 4).
    let v = parameter(&model, "dec.ups.0.weight_v");
    assert!(largest(&v) <= 0.25 && largest(&v) > 0.2, "{}", largest(&v));
    let post = parameter(&model, "flow.flows.6.post.weight");
    assert_eq!(largest(&post), 0.0);
    let gamma = parameter(&model, "enc_p.encoder.norm_layers_2.0.gamma");
    assert!(gamma.equal(&Tensor::ones([4], (Kind::Float, Device::Cpu))));
    assert_eq!(model.var_store().trainable_variables().len(), names.len());
}

#[test]
fn the_state_dict_written_as_g_reads_back_by_name() {
    let config = tiny_config();
    tch::manual_seed(4);
    let trained = model(&config, "v1", false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("G_7.pth");
    write_torch_file(&path, &generator_checkpoint(trained.state_dict())).unwrap();

    tch::manual_seed(5);
    let mut resumed = model(&config, "v1", false);
    assert!(!parameter(&resumed, "emb_g.weight").equal(&parameter(&trained, "emb_g.weight")));
    resumed.load_checkpoint(&path).unwrap();
    for ((name, ours), (_, theirs)) in resumed.parameters().iter().zip(trained.parameters()) {
        assert!(ours.equal(theirs), "{name}");
    }
}

#[test]
fn a_checkpoint_of_another_model_is_refused_naming_both() {
    let mut v1_40k = model(&standard_rate_config(false), "v1", true);
    let v2_40k = model(&standard_rate_config(false), "v2", true);
    let message = load_error(&mut v1_40k, &generator_checkpoint(v2_40k.state_dict()));
    assert_eq!(
        message,
        "G_7.pth: this is a v2 40k generator with pitch; the model being trained is a v1 40k generator with pitch"
    );

    let mut v2_40k = v2_40k;
    let v2_48k = model(&standard_rate_config(true), "v2", true);
    let message = load_error(&mut v2_40k, &generator_checkpoint(v2_48k.state_dict()));
    assert!(
        message.contains("this is a v2 48k generator with pitch; the model being trained is a v2 40k generator with pitch"),
        "{message}"
    );
    // The same check on a file, without a model to load it into.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("G_7.pth");
    write_torch_file(&path, &generator_checkpoint(v2_48k.state_dict())).unwrap();
    let checked = check_generator_checkpoint(&path, "v2", 40_000, true).unwrap_err();
    assert!(
        format!("{checked:#}").ends_with(message.trim_start_matches("G_7.pth")),
        "{checked:#}"
    );
    check_generator_checkpoint(&path, "v2", 48_000, true).unwrap();
    let nono = model(&standard_rate_config(false), "v2", false);
    let message = load_error(&mut v2_40k, &generator_checkpoint(nono.state_dict()));
    assert!(
        message.contains("v2 40k generator without pitch"),
        "{message}"
    );

    // Same kind, other sizes: the tensors that differ are named.
    let mut wider = model(
        &SynthesizerConfig {
            filter_channels: 8,
            ..standard_rate_config(false)
        },
        "v2",
        false,
    );
    let message = load_error(&mut wider, &generator_checkpoint(nono.state_dict()));
    assert!(
        message.contains("tensors have other shapes")
            && message.contains("`enc_p.encoder.ffn_layers.0.conv_1.weight` is [6, 4, 3] in the file, [8, 4, 3] here"),
        "{message}"
    );

    let inference = Value::Dict(vec![
        (text("weight"), Value::Dict(Vec::new())),
        (text("config"), Value::List(Vec::new())),
    ]);
    assert!(load_error(&mut wider, &inference).contains("inference model"));
    let discriminator = generator_checkpoint(vec![(
        "discriminators.0.convs.0.weight_g".to_string(),
        Tensor::zeros([1], (Kind::Float, Device::Cpu)),
    )]);
    assert!(load_error(&mut wider, &discriminator).contains("discriminator checkpoint"));
}

#[test]
fn newer_weight_norm_names_load_and_the_speaker_table_may_differ_in_size() {
    let config = tiny_config();
    let base = model(
        &SynthesizerConfig {
            spk_embed_dim: 5,
            ..config.clone()
        },
        "v2",
        true,
    );
    let renamed = base
        .state_dict()
        .into_iter()
        .map(|(name, tensor)| {
            let name = name
                .replace(".weight_g", ".parametrizations.weight.original0")
                .replace(".weight_v", ".parametrizations.weight.original1");
            (name, tensor)
        })
        .collect();
    let mut fewer_speakers = model(&config, "v2", true);
    fewer_speakers
        .load_checkpoint_value(&generator_checkpoint(renamed), Path::new("f0G40k.pth"))
        .unwrap();
    let (ours, theirs) = (
        parameter(&fewer_speakers, "emb_g.weight"),
        parameter(&base, "emb_g.weight"),
    );
    assert!(ours.equal(&theirs.narrow(0, 0, 3)));
    let g = "dec.ups.1.weight_g";
    assert!(parameter(&fewer_speakers, g).equal(&parameter(&base, g)));
}

#[test]
fn the_training_forward_draws_from_torch_and_checks_its_inputs() {
    let config = tiny_config();
    let model = model(&config, "v2", true);
    let batch = Batch::new(&config, 768);
    let a = model
        .forward(&batch.inputs(), TrainingNoise::Torch)
        .unwrap();
    assert_eq!(a.audio.size(), [2, 1, 4 * 4]);
    assert_eq!(a.z_p.size(), [2, 4, 10]);
    assert!(bool::try_from(a.audio.isfinite().all()).unwrap());
    let starts: Vec<i64> = Vec::try_from(&a.ids_slice).unwrap();
    assert!(starts[0] <= 10 - 4 && starts[1] <= 7 - 4, "{starts:?}");
    let y_mask: Vec<f32> = Vec::try_from(a.y_mask.flatten(0, -1)).unwrap();
    assert_eq!(y_mask.iter().sum::<f32>(), 17.0);

    let short = Tensor::from_slice(&[10i64, 3]);
    let inputs = TrainingBatch {
        spec_lengths: &short,
        ..batch.inputs()
    };
    let error = model.forward(&inputs, TrainingNoise::Torch).unwrap_err();
    assert!(error.to_string().contains("segment_size = 4"), "{error}");
    let stranger = Tensor::from_slice(&[0i64, 3]);
    let inputs = TrainingBatch {
        sid: &stranger,
        ..batch.inputs()
    };
    let error = model.forward(&inputs, TrainingNoise::Torch).unwrap_err();
    assert!(error.to_string().contains("0..3"), "{error}");
    let draws = vec![Tensor::zeros([2, 4, 10], (Kind::Float, Device::Cpu))];
    let error = model
        .forward(&batch.inputs(), TrainingNoise::Given(draws))
        .unwrap_err();
    assert!(error.to_string().contains("this forward draws"), "{error}");
}

#[test]
fn the_inference_model_of_the_weights_is_the_one_their_file_gives() {
    let config = tiny_config();
    let training = model(&config, "v1", true);
    let weight = training
        .state_dict()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("enc_q."))
        .map(|(name, tensor)| (text(&name), Value::Tensor(tensor)))
        .collect();
    let file = Value::Dict(vec![
        (text("weight"), Value::Dict(weight)),
        (text("config"), Value::List(config_list(&config))),
        (text("f0"), Value::Int(1)),
        (text("version"), text("v1")),
    ]);
    let loaded = Synthesizer::from_checkpoint(&file, Path::new("voice.pth"), Device::Cpu).unwrap();
    let preview = training.synthesizer().unwrap();
    let batch = Batch::new(&config, 256);
    let render = |model: &Synthesizer| {
        model
            .infer(
                &batch.phone,
                &batch.phone_lengths,
                Some(&batch.pitch),
                Some(&batch.pitchf),
                1,
                Noise::Seeded(2),
            )
            .unwrap()
    };
    assert!(render(&preview).equal(&render(&loaded)));
}
