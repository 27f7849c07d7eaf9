use std::collections::HashMap;

use super::*;

const TINY_MDX23C: &str = "
audio: {chunk_size: 1984, dim_f: 128, hop_length: 64, n_fft: 256, num_channels: 2}
model:
  act: gelu
  bottleneck_factor: 2
  growth: 4
  norm: InstanceNorm
  num_blocks_per_scale: 1
  num_channels: 4
  num_scales: 2
  num_subbands: 2
  scale: [2, 2]
training: {instruments: [vocals, other], target_instrument: vocals}
inference: {batch_size: 2, num_overlap: 4}
";

#[test]
fn tells_the_architecture_from_the_config_keys() {
    let config = SeparationConfig::from_yaml(TINY_MDX23C).unwrap();
    assert!(matches!(config, SeparationConfig::Mdx23c(_)));
    assert_eq!(config.stems().unwrap(), ["vocals"]);
    let options = config.demix_options();
    assert_eq!((options.chunk_size, options.batch_size), (1984, 2));
    let roformer = "model:\n  dim: 4\n  depth: 1\naudio: {chunk_size: 4096}\n\
                    training: {instruments: [vocals]}\n";
    let config = SeparationConfig::from_yaml(roformer).unwrap();
    assert!(matches!(config, SeparationConfig::Roformer(_)));
    // A RoFormer key in an MDX23C config is refused by name, as any unknown key.
    let text = TINY_MDX23C.replace("  growth: 4\n", "  growth: 4\n  depth: 2\n");
    let error = SeparationConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(error.contains("`model.depth`"), "{error}");
}

#[test]
fn tells_the_architecture_from_the_checkpoint_and_refuses_a_mismatch() {
    let weights = |names: &[&str]| {
        let tensors = names
            .iter()
            .map(|n| (n.to_string(), Tensor::ones([1], tch::kind::FLOAT_CPU)))
            .collect::<HashMap<_, _>>();
        Weights::new(tensors, "model.ckpt")
    };
    let mdx = weights(&["first_conv.weight", "final_conv.0.weight"]);
    assert_eq!(ModelType::detect(&mdx).unwrap(), ModelType::Mdx23c);
    let bs = weights(&["final_norm.gamma"]);
    let kind = ModelType::detect(&bs).unwrap();
    assert_eq!(kind, ModelType::Roformer(RoformerKind::BsRoformer));
    let error = ModelType::detect(&weights(&["conv.weight"])).unwrap_err();
    assert!(error.to_string().contains("MDX23C"), "{error}");

    let config = SeparationConfig::from_yaml(TINY_MDX23C).unwrap();
    let error = Network::load(kind, &config, &bs, Path::new("tiny.yaml"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("tiny.yaml is an MDX23C config")
            && error.contains("model.ckpt holds a BS-RoFormer"),
        "{error}"
    );
    assert_eq!("mdx23c".parse::<ModelType>().unwrap(), ModelType::Mdx23c);
    assert!("htdemucs".parse::<ModelType>().is_err());
}

#[test]
fn tells_scnet_and_refuses_msst_s_other_scnets_by_name() {
    let weights = |names: &[&str]| {
        let tensors = names
            .iter()
            .map(|n| (n.to_string(), Tensor::ones([1], tch::kind::FLOAT_CPU)))
            .collect::<HashMap<_, _>>();
        Weights::new(tensors, "model.ckpt")
    };
    let scnet = [
        "encoder.0.SDlayer.convs.0.weight",
        "separation_net.dp_modules.0.lstm_layers.0.weight_ih_l0",
    ];
    assert_eq!(
        ModelType::detect(&weights(&scnet)).unwrap(),
        ModelType::Scnet
    );
    for (extra, named) in [
        ("sd_blocks.0.weight", "scnet_unofficial"),
        ("mask_layer.0.weight", "scnet_masked"),
        ("pos_embed_f", "scnet_masked"),
        ("first_conv.weight", "scnet_tran"),
    ] {
        let names = [scnet[0], scnet[1], extra];
        let error = ModelType::detect(&weights(&names)).unwrap_err().to_string();
        assert!(error.contains(named), "{extra}: {error}");
    }
    let unofficial = weights(&["sd_blocks.0.weight", "dualpath_blocks.0.weight"]);
    let error = ModelType::detect(&unofficial).unwrap_err().to_string();
    assert!(error.contains("scnet_unofficial"), "{error}");
    assert_eq!("scnet".parse::<ModelType>().unwrap(), ModelType::Scnet);
    let error = "scnet_unofficial".parse::<ModelType>().unwrap_err();
    assert!(error.to_string().contains("different network"), "{error}");

    let scnet_yaml = "audio: {chunk_size: 44100}\nmodel: {num_dplayer: 4}\n\
                      training: {instruments: [vocals, other]}\n";
    let config = SeparationConfig::from_yaml(scnet_yaml).unwrap();
    assert!(matches!(config, SeparationConfig::Scnet(_)));
    // MSST's configs/config_vocals_scnet_unofficial.yaml, shortened.
    let unofficial = "audio: {chunk_size: 264600}\nmodel:\n  dims: [4, 32, 64, 128]\n  \
                      bandsplit_ratios: [.175, .392, .433]\n  n_rnn_layers: 6\n";
    let error = SeparationConfig::from_yaml(unofficial)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`model.bandsplit_ratios`") && error.contains("scnet_unofficial"),
        "{error}"
    );
    let error = Network::load(
        ModelType::Mdx23c,
        &config,
        &weights(&scnet),
        Path::new("s.yaml"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(error.contains("s.yaml is an SCNet config"), "{error}");
}
