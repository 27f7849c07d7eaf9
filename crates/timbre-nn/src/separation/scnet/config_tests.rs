use super::*;

/// Upstream's `configs/config_vocals_scnet_large.yaml`, shortened.
const VOCALS_LARGE: &str = "\
audio:
  chunk_size: 485100
  num_channels: 2
  sample_rate: 44100
  min_mean_abs: 0.000
model:
  sources:
    - vocals
    - other
  audio_channels: 2
  dims:
    - 4
    - 64
    - 128
    - 256
  nfft: 4096
  hop_size: 1024
  win_size: 4096
  normalized: True
  band_SR:
    - 0.225
    - 0.372
    - 0.403
  band_stride:
    - 1
    - 4
    - 16
  band_kernel:
    - 3
    - 4
    - 16
  conv_depths:
    - 3
    - 2
    - 1
  compress: 4
  conv_kernel: 3
  num_dplayer: 6
  expand: 1
training:
  instruments:
    - vocals
    - other
  target_instrument: null
inference:
  batch_size: 8
  dim_t: 256
  num_overlap: 4
  normalize: false
";

#[test]
fn reads_upstreams_large_vocals_config() {
    let config = ScnetConfig::from_yaml(VOCALS_LARGE).unwrap();
    assert_eq!(config.chunk_size(), 485100);
    assert_eq!(config.training.stems().unwrap(), ["vocals", "other"]);
    assert_eq!(config.model.hidden(64), 16);
    let levels = config.model.levels().unwrap();
    assert_eq!(levels.len(), 3);
    // 2049 bins: ceil(2049 × 0.225) = 462, ceil(2049 × 0.597) = 1224.
    let [low, mid, high] = levels[0];
    assert_eq!(
        (low.start, low.len, low.pad, low.out, low.trim),
        (0, 462, [1, 1], 462, 1)
    );
    assert_eq!(
        (mid.start, mid.len, mid.pad, mid.out),
        (462, 762, [1, 1], 191)
    );
    assert_eq!(
        (high.start, high.len, high.pad, high.out),
        (1224, 825, [3, 4], 52)
    );
    let bins: i64 = levels[1].iter().map(|b| b.len).sum();
    assert_eq!(bins, 462 + 191 + 52);
}

#[test]
fn takes_upstreams_defaults_for_keys_left_out() {
    let text = "audio: {chunk_size: 44100}\nmodel: {num_dplayer: 4}\n\
                training: {instruments: [drums, bass, other, vocals]}\n";
    let config = ScnetConfig::from_yaml(text).unwrap();
    let m = &config.model;
    assert_eq!(
        (m.num_dplayer, m.nfft, m.hop_size, m.expand),
        (4, 4096, 1024, 1)
    );
    assert_eq!(m.dims, [4, 32, 64, 128]);
    assert_eq!(m.sources.len(), 4);
    assert!(m.normalized);
    assert_eq!(config.inference.num_overlap, 4);
}

#[test]
fn refuses_what_it_cannot_build_by_name() {
    for (from, to, named) in [
        (
            "  expand: 1\n",
            "  expand: 1\n  tran_depth: 1\n",
            "scnet_tran",
        ),
        (
            "  expand: 1\n",
            "  expand: 1\n  depth: 1\n",
            "`model.depth`",
        ),
        ("num_dplayer: 6", "num_dplayer: 5", "`model.num_dplayer`"),
        ("audio_channels: 2", "audio_channels: 1", "`model.dims`"),
        (
            "    - 1\n  compress",
            "  compress",
            "`model.conv_depths` has 2",
        ),
        ("conv_kernel: 3", "conv_kernel: 4", "`model.conv_kernel`"),
        ("    - 0.225\n", "    - 0.0\n", "`model.band_SR`"),
        ("compress: 4", "compress: 100", "`model.compress`"),
        ("win_size: 4096", "win_size: 8192", "`model.win_size`"),
    ] {
        let text = VOCALS_LARGE.replace(from, to);
        assert_ne!(text, VOCALS_LARGE, "{from}");
        let error = ScnetConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(error.contains(named), "{to}: {error}");
    }
}
