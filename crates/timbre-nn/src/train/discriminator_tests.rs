//! The discriminators against the reference (`reference_train.py`): outputs, every feature map
//! and gradients after loading RVC's own `D_<step>.pth`; RVC's `load_checkpoint` reading one we
//! write; errors for the wrong version, a truncated file, a wrong shape; torch's fresh init.

use std::collections::HashMap;
use std::path::Path;

use tch::{Device, Kind, Tensor, nn};
use timbre_test_support::reference_python;

use super::checkpoint::{read_training_checkpoint, write_training_checkpoint};
use super::discriminator::{
    DiscriminatorOutput, DiscriminatorVersion, DiscriminatorWidth, MultiPeriodDiscriminator,
};
use super::losses::{discriminator_loss, feature_loss, generator_loss};
use super::optimizer::{AdamW, AdamWConfig, ExponentialLr};
use super::parity_tests::{Worst, reference};
use crate::checkpoint::load_state_dict;
use crate::weights::Weights;

/// The tensors of `weights` whose names `keep` accepts.
fn subset(weights: &Weights, keep: impl Fn(&str) -> bool) -> HashMap<String, Tensor> {
    weights
        .names()
        .filter(|name| keep(name))
        .map(|name| (name.to_string(), weights.get(name).unwrap()))
        .collect()
}

fn compare_outputs(
    worst: &mut Worst,
    output: &DiscriminatorOutput,
    expected: &Weights,
    count: usize,
) {
    assert_eq!(output.real_scores.len(), count);
    for i in 0..count {
        for (kind, ours) in [
            ("real_scores", &output.real_scores[i]),
            ("generated_scores", &output.generated_scores[i]),
        ] {
            let name = format!("{kind}.{i}");
            worst.compare(&name, ours, &expected.get(&name).unwrap());
        }
        for (kind, features) in [
            ("real_features", &output.real_features[i]),
            ("generated_features", &output.generated_features[i]),
        ] {
            let prefix = format!("{kind}.{i}.");
            let count = expected.names().filter(|n| n.starts_with(&prefix)).count();
            assert_eq!(features.len(), count, "{kind}.{i}");
            for (j, ours) in features.iter().enumerate() {
                let name = format!("{prefix}{j}");
                worst.compare(&name, ours, &expected.get(&name).unwrap());
            }
        }
    }
}

#[test]
fn discriminators_match_the_reference() {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    reference(&python, "discriminator", dir.path());
    let expected = load_state_dict(&dir.path().join("discriminator.pt")).unwrap();
    let checkpoint = read_training_checkpoint(&dir.path().join("D_v2.pth")).unwrap();
    assert_eq!(
        (checkpoint.iteration, checkpoint.learning_rate),
        (Some(7), Some(1e-4))
    );

    let store = nn::VarStore::new(Device::Cpu);
    let v2 = MultiPeriodDiscriminator::new(
        &store.root(),
        DiscriminatorVersion::V2,
        DiscriminatorWidth::RVC,
    );
    v2.load_weights(&checkpoint.model).unwrap();
    let mut optimizer = AdamW::new(v2.parameters(), AdamWConfig::default());
    let saved_optimizer = checkpoint.optimizer.as_ref().unwrap();
    optimizer
        .load_state_dict(saved_optimizer, Path::new("D_v2.pth"))
        .unwrap();
    assert_eq!(optimizer.lr(), 1e-4);

    let y = expected.get("y").unwrap();
    let y_hat = expected.get("y_hat").unwrap().set_requires_grad(true);
    let output = v2.forward(&y, &y_hat);
    let mut outputs = Worst::new("v2 scores and feature maps");
    compare_outputs(&mut outputs, &output, &expected, 9);
    outputs.check(1e-5);

    let loss = discriminator_loss(&output.real_scores, &output.generated_scores).total
        + feature_loss(&output.real_features, &output.generated_features)
        + generator_loss(&output.generated_scores).0;
    let mut gradients = Worst::new("v2 loss and gradients");
    gradients.compare("loss", &loss, &expected.get("loss").unwrap());
    // The VarStore holds the parameters under the reference's names.
    let variables = store.variables();
    let names: Vec<&str> = expected
        .names()
        .filter_map(|n| n.strip_prefix("grad."))
        .collect();
    let inputs: Vec<Tensor> = names
        .iter()
        .map(|&name| match name {
            "y_hat" => y_hat.shallow_clone(),
            _ => variables[name].shallow_clone(),
        })
        .collect();
    assert_eq!(inputs.len(), 8);
    let grads = Tensor::run_backward(&[&loss], &inputs, false, false);
    for (name, grad) in names.iter().zip(&grads) {
        gradients.compare(name, grad, &expected.get(&format!("grad.{name}")).unwrap());
    }
    gradients.check(1e-5);

    // v1 holds the first seven of v2's sub-discriminators, under the same names.
    let v1_only = |name: &str| {
        !name.starts_with("discriminators.7.") && !name.starts_with("discriminators.8.")
    };
    let v1_store = nn::VarStore::new(Device::Cpu);
    let v1 = MultiPeriodDiscriminator::new(
        &v1_store.root(),
        DiscriminatorVersion::V1,
        DiscriminatorWidth::RVC,
    );
    let v1_state = subset(&checkpoint.model, v1_only);
    v1.load_weights(&Weights::new(v1_state, "v1 of D_v2.pth"))
        .unwrap();
    let output = tch::no_grad(|| v1.forward(&y, &y_hat));
    let mut outputs = Worst::new("v1 scores and feature maps");
    compare_outputs(&mut outputs, &output, &expected, 7);
    outputs.check(1e-5);

    // Our v1 checkpoint, read by RVC's load_checkpoint into its own model and AdamW.
    let ours = dir.path().join("D_ours_v1.pth");
    let mut v1_optimizer = AdamW::new(v1.parameters(), AdamWConfig::default());
    ExponentialLr::new(&mut v1_optimizer, 0.999875);
    write_training_checkpoint(
        &ours,
        &v1.state_dict(),
        v1_optimizer.state_dict(),
        1e-4,
        7,
        Vec::new(),
    )
    .unwrap();
    let report = reference(&python, "discriminator_resume", dir.path());
    println!("RVC's load_checkpoint of ours: {report}");
    assert_eq!(report["key_order_matches"], true);
    assert_eq!(report["max_abs_difference"], 0.0);
    assert_eq!(report["learning_rate"], 1e-4);
    assert_eq!(report["iteration"], 7);
    assert_eq!(report["optimizer_lr"], 1e-4);
    assert_eq!(report["optimizer_initial_lr"], 1e-4);
    assert_eq!(report["optimizer_parameters"], 129);

    // The wrong version's checkpoint, a truncated file and a wrong shape are errors naming the
    // file and the problem.
    let error = v1.load_weights(&checkpoint.model).unwrap_err().to_string();
    println!("{error}");
    for part in [
        "D_v2.pth",
        "not a v1 discriminator",
        "file has 9 sub-discriminators",
        "unexpected 36 tensors",
    ] {
        assert!(error.contains(part), "{part}");
    }
    let ours_checkpoint = read_training_checkpoint(&ours).unwrap();
    let error = v2
        .load_weights(&ours_checkpoint.model)
        .unwrap_err()
        .to_string();
    println!("{error}");
    for part in [
        "D_ours_v1.pth",
        "not a v2 discriminator",
        "file has 7 sub-discriminators",
        "missing 36 tensors",
    ] {
        assert!(error.contains(part), "{part}");
    }

    let name = "discriminators.2.convs.3.weight_v";
    let mut reshaped = subset(&ours_checkpoint.model, |_| true);
    reshaped.insert(
        name.to_string(),
        Tensor::zeros([1024, 512, 3, 1], (Kind::Float, Device::Cpu)),
    );
    let error = v1
        .load_weights(&Weights::new(reshaped, "D_reshaped.pth"))
        .unwrap_err()
        .to_string();
    println!("{error}");
    for part in [
        "D_reshaped.pth",
        name,
        "shape [1024, 512, 3, 1], expected [1024, 512, 5, 1]",
    ] {
        assert!(error.contains(part), "{part}");
    }

    // Cut in place, last: a copy would cost more than the rest of the check.
    let file = std::fs::OpenOptions::new().write(true).open(&ours).unwrap();
    file.set_len(file.metadata().unwrap().len() / 2).unwrap();
    let error = read_training_checkpoint(&ours).err().unwrap().to_string();
    println!("{error}");
    assert!(error.contains("D_ours_v1.pth") && error.contains("not a readable zip archive"));
}

#[test]
fn fresh_discriminators_are_initialised_as_torch_does() {
    let store = nn::VarStore::new(Device::Cpu);
    let v1 = MultiPeriodDiscriminator::new(
        &store.root(),
        DiscriminatorVersion::V1,
        DiscriminatorWidth::RVC,
    );
    let state = v1.state_dict();
    // The reference's `sum(p.numel() for p in MultiPeriodDiscriminator().parameters())`.
    let count: i64 = state.iter().map(|(_, t)| t.numel() as i64).sum();
    assert_eq!((state.len(), count), (129, 54_968_286));
    assert_eq!(store.variables().len(), 129);
    let tensors: HashMap<&str, &Tensor> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
    for layer in state
        .iter()
        .filter_map(|(n, _)| n.strip_suffix(".weight_v"))
    {
        let (v, g, bias) = (
            tensors[format!("{layer}.weight_v").as_str()],
            tensors[format!("{layer}.weight_g").as_str()],
            tensors[format!("{layer}.bias").as_str()],
        );
        let fan_in = (v.numel() / v.size()[0] as usize) as f64;
        let bound = 1.0 / fan_in.sqrt();
        // The bound itself rounded to fp32 may lie just beyond it.
        let largest =
            |t: &Tensor| t.abs().max().double_value(&[]) / (1.0 + f64::from(f32::EPSILON));
        assert!(largest(v) <= bound && largest(bias) <= bound, "{layer}");
        // A uniform's standard deviation, within sampling error for the large layers.
        if v.numel() > 100_000 {
            let std = v.std(true).double_value(&[]);
            assert!(
                (std / (bound / 3f64.sqrt()) - 1.0).abs() < 0.01,
                "{layer}: {std}"
            );
        }
        let dims: Vec<i64> = (1..v.dim() as i64).collect();
        let norm = v.norm_scalaropt_dim(2, dims.as_slice(), true);
        assert!(g.allclose(&norm, 1e-6, 0.0, false), "{layer}: g is not ‖v‖");
    }
    let y = Tensor::randn([1, 1, 1000], (Kind::Float, Device::Cpu));
    let output = tch::no_grad(|| v1.forward(&y, &y));
    assert!(
        output
            .real_scores
            .iter()
            .all(|s| s.size()[0] == 1 && s.isfinite().all().int64_value(&[]) == 1)
    );
}

#[test]
fn a_narrower_discriminator_has_rvcs_layers_each_narrower() {
    let rvc_store = nn::VarStore::new(Device::Cpu);
    let rvc = MultiPeriodDiscriminator::new(
        &rvc_store.root(),
        DiscriminatorVersion::V1,
        DiscriminatorWidth::RVC,
    );
    let narrow_store = nn::VarStore::new(Device::Cpu);
    let narrow = MultiPeriodDiscriminator::new(
        &narrow_store.root(),
        DiscriminatorVersion::V1,
        DiscriminatorWidth::divided_by(16).unwrap(),
    );
    let shapes = |d: &MultiPeriodDiscriminator| -> Vec<(String, Vec<i64>)> {
        d.state_dict()
            .into_iter()
            .map(|(n, t)| (n, t.size()))
            .collect()
    };
    let (full, small) = (shapes(&rvc), shapes(&narrow));
    let names = |s: &[(String, Vec<i64>)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&full), names(&small));
    let count = |s: &[(String, Vec<i64>)]| -> i64 {
        s.iter().map(|(_, z)| z.iter().product::<i64>()).sum()
    };
    assert!(
        count(&small) * 100 < count(&full),
        "{} of {}",
        count(&small),
        count(&full)
    );
    // A period layer of 512 → 1024 channels becomes 32 → 64; the scale's grouped 1024 → 1024
    // (256 groups) 64 → 64 in 16.
    let shape =
        |s: &[(String, Vec<i64>)], name: &str| s.iter().find(|(n, _)| n == name).unwrap().1.clone();
    assert_eq!(
        shape(&small, "discriminators.1.convs.3.weight_v"),
        [64, 32, 5, 1]
    );
    assert_eq!(
        shape(&small, "discriminators.0.convs.4.weight_v"),
        [64, 4, 41]
    );

    let y = Tensor::randn([2, 1, 1200], (Kind::Float, Device::Cpu));
    let y_hat = Tensor::randn([2, 1, 1200], (Kind::Float, Device::Cpu));
    let (a, b) = tch::no_grad(|| (rvc.forward(&y, &y_hat), narrow.forward(&y, &y_hat)));
    assert_eq!(a.real_scores.len(), b.real_scores.len());
    for (full, small) in a.generated_scores.iter().zip(&b.generated_scores) {
        assert_eq!(full.size(), small.size());
    }
    let full_state: HashMap<String, Tensor> = rvc.state_dict().into_iter().collect();
    assert!(
        narrow
            .load_weights(&Weights::new(full_state, "D_rvc.pth"))
            .is_err()
    );
}
