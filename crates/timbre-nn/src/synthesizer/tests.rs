//! A tiny random RVC model built in memory: loading, inference and the errors a user can meet.

use std::path::Path;

use tch::{Device, Kind, Tensor};

use super::*;
use crate::hubert::FeatureVersion;

const HIDDEN: i64 = 4;
const INTER: i64 = 4;
const GIN: i64 = 4;
const SPEAKERS: i64 = 2;

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

fn ints(values: &[i64]) -> Value {
    Value::List(values.iter().map(|&v| Value::Int(v)).collect())
}

struct Builder {
    tensors: Vec<(String, Tensor)>,
}

impl Builder {
    fn add(&mut self, name: &str, shape: &[i64]) {
        self.tensors.push((
            name.to_string(),
            (Tensor::randn(shape, (Kind::Float, Device::Cpu)) * 0.3).to_kind(Kind::Half),
        ));
    }

    /// A convolution with a bias, its weight stored as weight_g/weight_v.
    fn add_normed(&mut self, name: &str, shape: &[i64]) {
        self.add(&format!("{name}.weight_g"), &[shape[0], 1, 1]);
        self.add(&format!("{name}.weight_v"), shape);
        self.add(&format!("{name}.bias"), &[shape[0]]);
    }

    fn add_with_bias(&mut self, name: &str, shape: &[i64]) {
        self.add(&format!("{name}.weight"), shape);
        self.add(&format!("{name}.bias"), &[shape[0]]);
    }
}

/// Config list, metadata and weights of a model with hidden 4, one encoder layer, one
/// coupling layer and two ×2 upsampling stages (hop 4).
fn tiny_checkpoint(feature_dim: i64, f0: bool, extra: Vec<(&str, Value)>) -> Value {
    let mut b = Builder {
        tensors: Vec::new(),
    };
    b.add_with_bias("enc_p.emb_phone", &[HIDDEN, feature_dim]);
    if f0 {
        b.add("enc_p.emb_pitch.weight", &[256, HIDDEN]);
    }
    for conv in ["conv_q", "conv_k", "conv_v", "conv_o"] {
        b.add_with_bias(
            &format!("enc_p.encoder.attn_layers.0.{conv}"),
            &[HIDDEN, HIDDEN, 1],
        );
    }
    b.add("enc_p.encoder.attn_layers.0.emb_rel_k", &[1, 21, 2]);
    b.add("enc_p.encoder.attn_layers.0.emb_rel_v", &[1, 21, 2]);
    for norm in ["norm_layers_1", "norm_layers_2"] {
        b.add(&format!("enc_p.encoder.{norm}.0.gamma"), &[HIDDEN]);
        b.add(&format!("enc_p.encoder.{norm}.0.beta"), &[HIDDEN]);
    }
    b.add_with_bias("enc_p.encoder.ffn_layers.0.conv_1", &[8, HIDDEN, 3]);
    b.add_with_bias("enc_p.encoder.ffn_layers.0.conv_2", &[HIDDEN, 8, 3]);
    b.add_with_bias("enc_p.proj", &[2 * INTER, HIDDEN, 1]);
    b.add("emb_g.weight", &[SPEAKERS, GIN]);

    b.add_with_bias("flow.flows.0.pre", &[HIDDEN, INTER / 2, 1]);
    b.add_normed("flow.flows.0.enc.in_layers.0", &[2 * HIDDEN, HIDDEN, 5]);
    b.add_normed("flow.flows.0.enc.res_skip_layers.0", &[HIDDEN, HIDDEN, 1]);
    b.add_normed("flow.flows.0.enc.cond_layer", &[2 * HIDDEN, GIN, 1]);
    b.add_with_bias("flow.flows.0.post", &[INTER / 2, HIDDEN, 1]);

    b.add_with_bias("dec.conv_pre", &[8, INTER, 7]);
    b.add_with_bias("dec.cond", &[8, GIN, 1]);
    b.add("dec.ups.0.weight_g", &[8, 1, 1]);
    b.add("dec.ups.0.weight_v", &[8, 4, 4]);
    b.add("dec.ups.0.bias", &[4]);
    // The newer parametrizations spelling of weight norm.
    b.add("dec.ups.1.parametrizations.weight.original0", &[4, 1, 1]);
    b.add("dec.ups.1.parametrizations.weight.original1", &[4, 2, 4]);
    b.add("dec.ups.1.bias", &[2]);
    for (block, channels) in [(0, 4), (1, 2)] {
        for convs in ["convs1", "convs2"] {
            for i in 0..3 {
                b.add_normed(
                    &format!("dec.resblocks.{block}.{convs}.{i}"),
                    &[channels, channels, 3],
                );
            }
        }
    }
    b.add("dec.conv_post.weight", &[1, 2, 7]);
    if f0 {
        b.add_with_bias("dec.m_source.l_linear", &[1, 1]);
        b.add_with_bias("dec.noise_convs.0", &[4, 1, 4]);
        b.add_with_bias("dec.noise_convs.1", &[2, 1, 1]);
    }
    let weights = b
        .tensors
        .into_iter()
        .map(|(k, t)| (text(&k), Value::Tensor(t)))
        .collect();
    let config = Value::List(vec![
        Value::Int(513),
        Value::Int(32),
        Value::Int(INTER),
        Value::Int(HIDDEN),
        Value::Int(8),
        Value::Int(2),
        Value::Int(1),
        Value::Int(3),
        Value::Float(0.0),
        text("1"),
        ints(&[3]),
        Value::List(vec![ints(&[1, 3, 5])]),
        ints(&[2, 2]),
        Value::Int(8),
        ints(&[4, 4]),
        Value::Int(109),
        Value::Int(GIN),
        text("32k"),
    ]);
    let mut entries = vec![
        (text("weight"), Value::Dict(weights)),
        (text("config"), config),
        (text("info"), text("3epoch")),
        (text("f0"), Value::Int(f0 as i64)),
        (
            text("version"),
            text(if feature_dim == 768 { "v2" } else { "v1" }),
        ),
    ];
    entries.extend(extra.into_iter().map(|(k, v)| (text(k), v)));
    Value::Dict(entries)
}

fn model(feature_dim: i64, f0: bool) -> Synthesizer {
    Synthesizer::from_checkpoint(
        &tiny_checkpoint(feature_dim, f0, Vec::new()),
        Path::new("tiny.pth"),
        Device::Cpu,
    )
    .unwrap()
}

fn error_of(root: &Value) -> String {
    match Synthesizer::from_checkpoint(root, Path::new("voice.pth"), Device::Cpu) {
        Ok(_) => panic!("the checkpoint loaded"),
        Err(e) => format!("{e:#}"),
    }
}

fn features(frames: i64, dim: i64) -> Tensor {
    Tensor::randn([1, frames, dim], (Kind::Float, Device::Cpu))
}

#[test]
fn a_pitch_model_reads_its_sizes_from_the_weights_and_renders_frames_times_hop() {
    let model = model(256, true);
    let info = model.info();
    assert_eq!(
        (info.version.as_str(), info.sample_rate, info.f0),
        ("v1", 32000, true)
    );
    assert_eq!(
        (info.speakers, info.feature_dim, info.hop),
        (SPEAKERS, 256, 4)
    );
    assert_eq!(info.metadata.info.as_deref(), Some("3epoch"));
    assert!(
        info.config_mismatches
            .iter()
            .any(|m| m.starts_with("spk_embed_dim: config 109, weights 2"))
    );

    let frames = 12;
    let pitch = Tensor::full([1, frames], 60, (Kind::Int64, Device::Cpu));
    let f0 = Tensor::full([1, frames], 220.0, (Kind::Float, Device::Cpu));
    let lengths = Tensor::from_slice(&[frames]);
    let phone = features(frames, 256);
    let render = |noise| {
        model
            .infer(&phone, &lengths, Some(&pitch), Some(&f0), 1, noise)
            .unwrap()
    };
    let quiet = render(Noise::None);
    assert_eq!(quiet.size(), [1, 1, frames * 4]);
    assert!(bool::try_from(quiet.isfinite().all()).unwrap());
    assert!(quiet.equal(&render(Noise::None)));
    let (a, b) = (render(Noise::Seeded(5)), render(Noise::Seeded(5)));
    assert!(a.equal(&b));
    assert!(!a.equal(&quiet));
}

#[test]
fn a_model_without_pitch_ignores_pitch_inputs() {
    let model = model(768, false);
    assert_eq!(
        (model.info().version.as_str(), model.info().f0),
        ("v2", false)
    );
    let phone = features(5, 768);
    let lengths = Tensor::from_slice(&[5i64]);
    let audio = model
        .infer(&phone, &lengths, None, None, 0, Noise::None)
        .unwrap();
    assert_eq!(audio.size(), [1, 1, 20]);
    let pitch = Tensor::zeros([1, 5], (Kind::Int64, Device::Cpu));
    let with_pitch = model
        .infer(&phone, &lengths, Some(&pitch), Some(&pitch), 0, Noise::None)
        .unwrap();
    assert!(audio.equal(&with_pitch));
}

#[test]
fn wrong_inputs_are_explained() {
    let model = model(768, true);
    let lengths = Tensor::from_slice(&[6i64]);
    let infer_error = |phone: &Tensor, sid| {
        format!(
            "{:#}",
            model
                .infer(phone, &lengths, None, None, sid, Noise::None)
                .unwrap_err()
        )
    };
    assert_eq!(
        infer_error(&features(6, 256), 0),
        "this is a v2 model (768-d features); the features given are 256-d"
    );
    assert!(infer_error(&features(6, 768), 0).contains("driven by pitch"));
    assert!(infer_error(&features(6, 768), 2).contains("speaker id 2"));
}

#[test]
fn unknown_vocoders_and_embedders_are_refused_by_name() {
    let bigvgan = tiny_checkpoint(256, true, vec![("vocoder", text("BigVGAN"))]);
    let message = error_of(&bigvgan);
    assert!(
        message.contains("voice.pth") && message.contains("the BigVGAN vocoder"),
        "{message}"
    );
    let hifigan = tiny_checkpoint(256, true, vec![("vocoder", text("HiFi-GAN"))]);
    assert!(Synthesizer::from_checkpoint(&hifigan, Path::new("voice.pth"), Device::Cpu).is_ok());
    // The weights decide what plays; an entry naming another known vocoder is noted.
    let misnamed = tiny_checkpoint(256, true, vec![("vocoder", text("RefineGAN"))]);
    let model = Synthesizer::from_checkpoint(&misnamed, Path::new("voice.pth"), Device::Cpu);
    let info = model.unwrap().info().clone();
    assert_eq!(info.vocoder, Vocoder::HifiGan);
    assert!(
        info.config_mismatches
            .contains(&"vocoder: the file says RefineGAN, its weights are HiFi-GAN's".to_string()),
        "{:?}",
        info.config_mismatches
    );

    let whisper = tiny_checkpoint(256, true, vec![("embedder_model", text("whisper"))]);
    let message = error_of(&whisper);
    assert!(
        message.contains("voice.pth") && message.contains("the whisper embedder"),
        "{message}"
    );
    for (entry, embedder, features) in [
        ("contentvec", Embedder::Contentvec, FeatureVersion::V1),
        ("ContentVec", Embedder::Contentvec, FeatureVersion::V1),
        ("hubert_base", Embedder::Contentvec, FeatureVersion::V1),
        ("spin", Embedder::Spin, FeatureVersion::V1LastLayer),
        (
            "korean-hubert-base",
            Embedder::KoreanHubertBase,
            FeatureVersion::V1LastLayer,
        ),
    ] {
        let voice = tiny_checkpoint(256, true, vec![("embedder_model", text(entry))]);
        let model = Synthesizer::from_checkpoint(&voice, Path::new("voice.pth"), Device::Cpu);
        let info = model.unwrap().info().clone();
        assert_eq!(info.embedder().unwrap(), embedder, "{entry}");
        assert_eq!(info.feature_version().unwrap(), features, "{entry}");
    }

    // Vietnamese-RVC names its HiFi-GAN `Default`.
    let fork = tiny_checkpoint(256, true, vec![("vocoder", text("Default"))]);
    let model = Synthesizer::from_checkpoint(&fork, Path::new("voice.pth"), Device::Cpu);
    let info = model.unwrap().info().clone();
    assert_eq!(info.vocoder, Vocoder::HifiGan);
    assert!(
        info.config_mismatches
            .iter()
            .all(|m| !m.starts_with("vocoder"))
    );
}

/// `tiny_checkpoint` with Vietnamese-RVC's energy embedding (`Linear(1, hidden)`) in its weights.
fn energy_checkpoint(extra: Vec<(&str, Value)>) -> Value {
    let Value::Dict(mut entries) = tiny_checkpoint(256, true, extra) else {
        unreachable!()
    };
    if let Some((_, Value::Dict(weights))) = entries
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("weight"))
    {
        for (name, shape) in [("weight", [HIDDEN, 1].as_slice()), ("bias", &[HIDDEN])] {
            let tensor =
                (Tensor::randn(shape, (Kind::Float, Device::Cpu)) * 2.0).to_kind(Kind::Half);
            weights.push((
                text(&format!("enc_p.emb_energy.{name}")),
                Value::Tensor(tensor),
            ));
        }
    }
    Value::Dict(entries)
}

#[test]
fn energy_models_take_each_frames_rms_as_their_energy_entry_says() {
    let load =
        |root: &Value| Synthesizer::from_checkpoint(root, Path::new("voice.pth"), Device::Cpu);
    let model = load(&energy_checkpoint(vec![("energy", Value::Bool(true))])).unwrap();
    assert!(model.info().energy);
    let frames = 10;
    let phone = features(frames, 256);
    let lengths = Tensor::from_slice(&[frames]);
    let pitch = Tensor::full([1, frames], 60, (Kind::Int64, Device::Cpu));
    let f0 = Tensor::full([1, frames], 220.0, (Kind::Float, Device::Cpu));
    let render = |model: &Synthesizer, energy: Option<&Tensor>| {
        model.infer_stretched(
            &phone,
            &lengths,
            Some(&pitch),
            Some(&f0),
            energy,
            0,
            Noise::None,
            None,
            None,
        )
    };
    let energy = Tensor::linspace(0.01, 0.4, frames, (Kind::Float, Device::Cpu)).view([1, -1]);
    let loud = render(&model, Some(&energy)).unwrap();
    assert_eq!(loud.size(), [1, 1, frames * 4]);
    assert!(!loud.equal(&render(&model, Some(&energy.zeros_like())).unwrap()));
    let missing = format!("{:#}", render(&model, None).unwrap_err());
    assert!(missing.contains("conditioned on energy"), "{missing}");
    let short = format!(
        "{:#}",
        render(&model, Some(&energy.narrow(1, 0, 4))).unwrap_err()
    );
    assert!(short.contains("energy must be [1, 10]"), "{short}");
    let broken = format!("{:#}", render(&model, Some(&(&energy / 0.0))).unwrap_err());
    assert!(broken.contains("NaN or infinite"), "{broken}");

    // Weights without a true entry are left unused, as the fork's `cpt.get("energy", False)`
    // leaves them: the voice plays as the same file without them, bit for bit.
    for extra in [vec![], vec![("energy", Value::Bool(false))]] {
        let unused = load(&energy_checkpoint(extra)).unwrap();
        assert!(!unused.info().energy);
        assert!(
            unused
                .info()
                .config_mismatches
                .iter()
                .any(|m| m.starts_with("energy: the file has")),
            "{:?}",
            unused.info().config_mismatches
        );
        let with = render(&unused, Some(&energy)).unwrap();
        assert!(with.equal(&render(&unused, None).unwrap()));
    }
    // bf78e6f wrote the flag as `rms_extract`.
    assert!(
        load(&energy_checkpoint(vec![("rms_extract", Value::Bool(true))]))
            .unwrap()
            .info()
            .energy
    );
    let incomplete = tiny_checkpoint(256, true, vec![("energy", Value::Bool(true))]);
    let message = error_of(&incomplete);
    assert!(
        message.contains("voice.pth") && message.contains("no `enc_p.emb_energy` weights"),
        "{message}"
    );
}

#[test]
fn files_that_are_not_voice_models_say_what_they_are() {
    let tensor = || Value::Tensor(Tensor::zeros([1], (Kind::Float, Device::Cpu)));
    let training = Value::Dict(vec![
        (
            text("model"),
            Value::Dict(vec![(text("enc_p.proj.weight"), tensor())]),
        ),
        (text("iteration"), Value::Int(20)),
        (text("optimizer"), Value::Dict(vec![])),
        (text("learning_rate"), Value::Float(1e-4)),
    ]);
    let message = error_of(&training);
    assert!(
        message.starts_with("voice.pth: this is a training checkpoint")
            && message.contains("export"),
        "{message}"
    );

    let hubert = Value::Dict(vec![
        (text("args"), Value::None),
        (
            text("model"),
            Value::Dict(vec![(
                text("feature_extractor.conv_layers.0.0.weight"),
                tensor(),
            )]),
        ),
        (text("last_optimizer_state"), Value::None),
    ]);
    assert!(error_of(&hubert).contains("HuBERT/ContentVec"));

    let rmvpe = Value::Dict(vec![
        (text("unet.encoder.bn.weight"), tensor()),
        (text("fc.1.weight"), tensor()),
    ]);
    assert!(error_of(&rmvpe).contains("RMVPE pitch extractor"));

    let other = Value::Dict(vec![(text("state"), Value::None)]);
    assert!(error_of(&other).contains("no `weight` entry (its entries: state)"));
}

#[test]
fn a_config_that_contradicts_what_the_weights_cannot_show_is_refused() {
    let Value::Dict(mut entries) = tiny_checkpoint(256, false, Vec::new()) else {
        unreachable!()
    };
    for (key, value) in &mut entries {
        if key.as_str() == Some("config")
            && let Value::List(items) = value
        {
            items[12] = ints(&[4]);
        }
    }
    let message = error_of(&Value::Dict(entries));
    assert!(
        message.contains("1 upsampling rates in the config for 2 upsampling layers"),
        "{message}"
    );
}
