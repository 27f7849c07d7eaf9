use std::path::Path;

use super::*;
use crate::checkpoint::{Value, write_torch_file};
use crate::separation::config::Config;
use crate::separation::{ModelType, Roformer, RoformerKind};

const TINY_BS: &str = "
audio: {chunk_size: 2048, n_fft: 256, hop_length: 64, num_channels: 2, sample_rate: 44100}
model:
  dim: 8
  depth: 1
  stereo: STEREO
  num_stems: 1
  time_transformer_depth: 1
  freq_transformer_depth: 1
  dim_head: 4
  heads: 2
  stft_n_fft: 256
  stft_hop_length: 64
  stft_win_length: 256
  freqs_per_bands: !!python/tuple [32, 32, 32, 33]
  num_bands: 6
  sample_rate: 44100
training: {instruments: [vocals, other], target_instrument: vocals}
inference: {batch_size: 2, num_overlap: 4, normalize: NORMALIZE}
";

/// A tiny random-weight model written as a real checkpoint and loaded back.
pub(crate) fn tiny_separator(
    dir: &Path,
    kind: RoformerKind,
    stereo: bool,
    normalize: bool,
) -> Separator {
    let yaml = TINY_BS
        .replace("STEREO", &stereo.to_string())
        .replace("NORMALIZE", &normalize.to_string());
    let config_path = dir.join("tiny.yaml");
    std::fs::write(&config_path, &yaml).unwrap();
    let config = Config::from_yaml(&yaml).unwrap();
    let (_, weights) = Roformer::random(kind, &config.model).unwrap();
    let mut names: Vec<&str> = weights.names().collect();
    names.sort_unstable();
    let entries = names
        .iter()
        .map(|name| {
            let tensor = weights.get(name).unwrap();
            (Value::Str(name.to_string()), Value::Tensor(tensor))
        })
        .collect();
    let checkpoint = dir.join("tiny.ckpt");
    write_torch_file(&checkpoint, &Value::ordered_dict(entries)).unwrap();
    Separator::load(&checkpoint, &config_path, Some(ModelType::Roformer(kind))).unwrap()
}

fn noise(channels: i64, length: i64) -> Tensor {
    tch::manual_seed(7);
    Tensor::randn([channels, length], tch::kind::FLOAT_CPU) * 0.3
}

/// Streams `mix` in blocks of `block` samples; the stems and the mix as given back.
fn streamed(separator: &Separator, mix: &Tensor, block: i64) -> (Tensor, Tensor) {
    let (channels, length) = (mix.size()[0], mix.size()[1]);
    let mut stats = MixStats::default();
    for start in (0..length).step_by(block as usize) {
        stats.add(&mix.narrow(1, start, block.min(length - start)));
    }
    let scale = if separator.normalizes() {
        stats.scale()
    } else {
        None
    };
    let mut stream = separator.stream(channels, Some(length), scale).unwrap();
    let mut parts = Vec::new();
    for start in (0..length).step_by(block as usize) {
        let part = mix.narrow(1, start, block.min(length - start));
        parts.extend(stream.push(&part, |_, _| true).unwrap());
    }
    parts.extend(stream.finish(|_, _| true).unwrap());
    let stems: Vec<Tensor> = parts.iter().map(|p| p.stems.shallow_clone()).collect();
    let given: Vec<Tensor> = parts.iter().map(|p| p.mix.shallow_clone()).collect();
    (Tensor::cat(&stems, 2), Tensor::cat(&given, 1))
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

#[test]
fn streaming_over_blocks_equals_the_whole_track_demix() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (RoformerKind::BsRoformer, true, false, 2),
        (RoformerKind::MelBandRoformer, true, false, 2),
        (RoformerKind::BsRoformer, true, true, 1),
        (RoformerKind::BsRoformer, false, false, 2),
    ];
    for (kind, stereo, normalize, channels) in cases {
        let separator = tiny_separator(dir.path(), kind, stereo, normalize);
        let mix = noise(channels, 11_111);
        let whole = separator.demix(&mix, |_, _| true).unwrap();
        assert_eq!(whole.size(), [1, channels, 11_111]);
        for block in [777, 4096, 11_111] {
            let (stems, given) = streamed(&separator, &mix, block);
            let error = max_diff(&stems, &whole);
            assert!(
                error < 1e-6,
                "{kind:?} stereo {stereo} block {block}: {error}"
            );
            assert_eq!(max_diff(&given, &mix), 0.0);
        }
    }
}

/// MDX23C through the same stream: an MSST-made fixture of `tests/data/mdx23c-parity`, a stereo
/// mix and a mono one (doubled through the stereo model).
#[test]
fn an_mdx23c_streams_as_it_separates_whole() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/mdx23c-parity/groupnorm_elu_two_stems");
    let separator = Separator::load(
        &fixture.join("model.ckpt"),
        &fixture.join("config.yaml"),
        None,
    )
    .unwrap();
    assert_eq!(separator.model().model_type(), ModelType::Mdx23c);
    assert_eq!(separator.stems(), ["vocals", "other"]);
    for channels in [2, 1] {
        let mix = noise(channels, 9_000);
        let whole = separator.demix(&mix, |_, _| true).unwrap();
        assert_eq!(whole.size(), [2, channels, 9_000]);
        for block in [1000, 9_000] {
            let (stems, given) = streamed(&separator, &mix, block);
            let error = max_diff(&stems, &whole);
            assert!(
                error < 1e-6,
                "{channels} channel(s), block {block}: {error}"
            );
            assert_eq!(max_diff(&given, &mix), 0.0);
        }
    }
}

/// SCNet through the same stream: MSST-made fixtures of `tests/data/scnet-parity`, a stereo
/// model (a stereo mix, and a mono one doubled) and a mono model (a stereo mix one channel at a
/// time).
#[test]
fn an_scnet_streams_as_it_separates_whole() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scnet-parity");
    for (case, stems, channels) in [
        ("vocals_other_stereo", 2, 2),
        ("vocals_other_stereo", 2, 1),
        ("mono_target_vocals", 1, 2),
    ] {
        let fixture = fixtures.join(case);
        let separator = Separator::load(
            &fixture.join("model.ckpt"),
            &fixture.join("config.yaml"),
            None,
        )
        .unwrap();
        assert_eq!(separator.model().model_type(), ModelType::Scnet);
        let mix = noise(channels, 7_000);
        let whole = separator.demix(&mix, |_, _| true).unwrap();
        assert_eq!(whole.size(), [stems, channels, 7_000]);
        for block in [999, 7_000] {
            let (stems, given) = streamed(&separator, &mix, block);
            let error = max_diff(&stems, &whole);
            assert!(
                error < 1e-6,
                "{case}, {channels} channel(s), block {block}: {error}"
            );
            assert_eq!(max_diff(&given, &mix), 0.0);
        }
    }
}

#[test]
fn mix_stats_match_torch() {
    let mix = noise(2, 5000) + 0.1;
    let mut stats = MixStats::default();
    stats.add(&mix.narrow(1, 0, 1234));
    stats.add(&mix.narrow(1, 1234, 5000 - 1234));
    let (mean, std) = stats.scale().unwrap();
    let mono = mix.mean_dim(0, false, Kind::Float);
    assert!((mean - mono.mean(Kind::Float).double_value(&[])).abs() < 1e-6);
    assert!((std - mono.std(false).double_value(&[])).abs() < 1e-6);
    assert!(MixStats::default().scale().is_none());
}
