//! Parity with the reference, run by `.venv/bin/python` (`reference_train.py`, beside this
//! file): the losses, and AdamW with its schedule step by step and across saved states in both
//! directions; the helpers `discriminator_tests` shares.

use std::path::Path;
use std::process::Command;

use tch::{Kind, Tensor};
use timbre_test_support::reference_python;

use super::losses::{discriminator_loss, feature_loss, generator_loss, kl_loss};
use super::optimizer::{AdamW, AdamWConfig, AdamWKernel, ExponentialLr};
use crate::checkpoint::{Value, load_state_dict, read_torch_file, write_torch_file};
use crate::weights::Weights;

const SCRIPT: &str = include_str!("reference_train.py");

/// Runs a task of the reference script in `dir`; its stdout, parsed when it prints JSON.
pub(super) fn reference(python: &Path, task: &str, dir: &Path) -> serde_json::Value {
    let script = dir.join("reference_train.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let output = Command::new(python)
        .arg(&script)
        .arg(task)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "reference {task} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}

/// The largest absolute difference relative to the reference's largest magnitude.
fn relative_error(ours: &Tensor, reference: &Tensor) -> f64 {
    assert_eq!(ours.size(), reference.size(), "shapes");
    let reference = reference.to_kind(Kind::Double);
    let difference = (ours.to_kind(Kind::Double) - &reference)
        .abs()
        .max()
        .double_value(&[]);
    difference / reference.abs().max().double_value(&[]).max(1e-30)
}

/// Tracks the worst relative error of a family of comparisons and checks it at the end.
pub(super) struct Worst {
    what: &'static str,
    error: f64,
    at: String,
}

impl Worst {
    pub(super) fn new(what: &'static str) -> Self {
        Self {
            what,
            error: 0.0,
            at: String::new(),
        }
    }

    pub(super) fn compare(&mut self, name: &str, ours: &Tensor, reference: &Tensor) {
        let error = relative_error(ours, reference);
        if error >= self.error {
            (self.error, self.at) = (error, name.to_string());
        }
    }

    pub(super) fn check(&self, tolerance: f64) {
        println!(
            "{}: worst relative error {:.2e} ({}), tolerance {tolerance:.0e}",
            self.what, self.error, self.at
        );
        assert!(
            self.error <= tolerance,
            "{}: {:.2e} at {}",
            self.what,
            self.error,
            self.at
        );
    }
}

#[test]
fn losses_match_the_reference() {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    reference(&python, "losses", dir.path());
    let expected = load_state_dict(&dir.path().join("losses.pt")).unwrap();
    let get = |name: &str| expected.get(name).unwrap();
    let scores = |kind: &str| {
        (0..3)
            .map(|i| get(&format!("{kind}.{i}")))
            .collect::<Vec<_>>()
    };
    let features = |kind: &str| {
        (0..2)
            .map(|i| (0..2).map(|j| get(&format!("{kind}.{i}.{j}"))).collect())
            .collect::<Vec<Vec<_>>>()
    };
    let real_scores = scores("real_scores");
    let generated_scores: Vec<Tensor> = scores("generated_scores")
        .into_iter()
        .map(|t| t.set_requires_grad(true))
        .collect();
    let real_features = features("real_features");
    let generated_features: Vec<Vec<Tensor>> = features("generated_features")
        .into_iter()
        .map(|maps| {
            maps.into_iter()
                .map(|t| t.set_requires_grad(true))
                .collect()
        })
        .collect();
    let logs_p = get("logs_p").set_requires_grad(true);

    let discriminator = discriminator_loss(&real_scores, &generated_scores);
    let (generator, generator_terms) = generator_loss(&generated_scores);
    let features_loss = feature_loss(&real_features, &generated_features);
    let kl = kl_loss(
        &get("z_p"),
        &get("logs_q"),
        &get("m_p"),
        &logs_p,
        &get("z_mask"),
    );
    let mut worst = Worst::new("losses");
    worst.compare("feature_loss", &features_loss, &get("feature_loss"));
    worst.compare(
        "discriminator_loss",
        &discriminator.total,
        &get("discriminator_loss"),
    );
    worst.compare(
        "real_losses",
        &Tensor::stack(&discriminator.real, 0),
        &get("real_losses"),
    );
    worst.compare(
        "generated_losses",
        &Tensor::stack(&discriminator.generated, 0),
        &get("generated_losses"),
    );
    worst.compare("generator_loss", &generator, &get("generator_loss"));
    worst.compare(
        "generator_terms",
        &Tensor::stack(&generator_terms, 0),
        &get("generator_terms"),
    );
    worst.compare("kl_loss", &kl, &get("kl_loss"));
    let total = features_loss + generator + kl;
    let inputs = [&logs_p, &generated_scores[1], &generated_features[1][0]];
    let grads = Tensor::run_backward(&[&total], &inputs, false, false);
    for (name, grad) in ["logs_p", "generated_scores.1", "generated_features.1.0"]
        .iter()
        .zip(&grads)
    {
        worst.compare(name, grad, &get(&format!("grad.{name}")));
    }
    worst.check(1e-6);
}

const ADAM_SHAPES: usize = 3;

/// The reference's gradients of step `k`; parameter 1 has none at the second step.
fn adam_grads(expected: &Weights, k: usize) -> Vec<Tensor> {
    (0..ADAM_SHAPES)
        .map(|i| {
            expected
                .get_opt(&format!("grad.{k}.{i}"))
                .unwrap_or_default()
        })
        .collect()
}

fn adam_config() -> AdamWConfig {
    AdamWConfig {
        lr: 1e-3,
        ..AdamWConfig::default()
    }
}

#[test]
fn adamw_matches_torch_and_resumes_both_ways() {
    adamw_matches_torch(AdamWKernel::SingleTensor, "adamw");
}

#[test]
fn fused_adamw_matches_torchs_fused_adamw_and_resumes_both_ways() {
    adamw_matches_torch(AdamWKernel::Fused, "adamw_fused");
}

/// Our AdamW stepped by `kernel` against torch's, run by the reference `task` (its default
/// single-tensor path or `fused=True`), step by step and across saved states both ways.
fn adamw_matches_torch(kernel: AdamWKernel, task: &str) {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    reference(&python, task, dir.path());
    let expected = load_state_dict(&dir.path().join("adamw.pt")).unwrap();
    let params: Vec<Tensor> = (0..ADAM_SHAPES)
        .map(|i| {
            expected
                .get(&format!("initial.{i}"))
                .unwrap()
                .copy()
                .set_requires_grad(true)
        })
        .collect();
    let mut optimizer = AdamW::new(
        params.iter().map(Tensor::shallow_clone).collect(),
        adam_config(),
    )
    .with_kernel(kernel);
    let scheduler = ExponentialLr::new(&mut optimizer, 0.9);
    let mut steps = Worst::new("AdamW parameters after each of three steps");
    for k in 0..3 {
        optimizer.step(&adam_grads(&expected, k)).unwrap();
        if k != 1 {
            scheduler.step(&mut optimizer);
        }
        for (i, param) in params.iter().enumerate() {
            let name = format!("after.{k}.{i}");
            steps.compare(&name, param, &expected.get(&name).unwrap());
        }
    }
    steps.check(1e-6);

    // Our state against torch's after the same three steps.
    let ours_path = dir.path().join("ours_adamw_state.pt");
    write_torch_file(&ours_path, &optimizer.state_dict()).unwrap();
    let ours = read_torch_file(&ours_path).unwrap();
    let theirs = read_torch_file(&dir.path().join("adamw_state.pt")).unwrap();
    let mut state = Worst::new("AdamW state after three steps");
    compare_optimizer_states(&mut state, &ours, &theirs);
    state.check(1e-6);

    // torch's state resumes in ours…
    let resumed: Vec<Tensor> = (0..ADAM_SHAPES)
        .map(|i| {
            expected
                .get(&format!("after.2.{i}"))
                .unwrap()
                .copy()
                .set_requires_grad(true)
        })
        .collect();
    let mut from_torch = AdamW::new(
        resumed.iter().map(Tensor::shallow_clone).collect(),
        AdamWConfig::default(),
    )
    .with_kernel(kernel);
    from_torch
        .load_state_dict(&theirs, Path::new("adamw_state.pt"))
        .unwrap();
    assert_eq!(from_torch.lr(), optimizer.lr());
    from_torch.step(&adam_grads(&expected, 3)).unwrap();
    let mut resume = Worst::new("AdamW fourth step after loading torch's state");
    for (i, param) in resumed.iter().enumerate() {
        resume.compare(
            &format!("after.3.{i}"),
            param,
            &expected.get(&format!("after.3.{i}")).unwrap(),
        );
    }
    resume.check(1e-6);

    // …and ours in torch's.
    let report = reference(&python, "adamw_resume", dir.path());
    println!("torch's AdamW from our state: {report}");
    assert_eq!(report["layout_matches"], true, "{report}");
    assert!(
        report["max_abs_difference"].as_f64().unwrap() < 1e-6,
        "{report}"
    );

    let mut wrong = AdamW::new(
        resumed[..2].iter().map(Tensor::shallow_clone).collect(),
        AdamWConfig::default(),
    );
    let error = wrong
        .load_state_dict(&theirs, Path::new("adamw_state.pt"))
        .unwrap_err()
        .to_string();
    println!("{error}");
    assert!(error.contains("adamw_state.pt") && error.contains("3 parameters"));
}

fn compare_optimizer_states(worst: &mut Worst, ours: &Value, theirs: &Value) {
    let (ours_group, theirs_group) = (
        &ours.get("param_groups").unwrap().as_list().unwrap()[0],
        &theirs.get("param_groups").unwrap().as_list().unwrap()[0],
    );
    let keys = |group: &Value| -> Vec<String> {
        group
            .as_dict()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(ours_group), keys(theirs_group));
    for key in ["lr", "initial_lr", "eps", "weight_decay"] {
        assert_eq!(
            ours_group.get(key).unwrap().as_f64(),
            theirs_group.get(key).unwrap().as_f64(),
            "{key}"
        );
    }
    let (ours_state, theirs_state) = (
        ours.get("state").unwrap().as_dict().unwrap(),
        theirs.get("state").unwrap().as_dict().unwrap(),
    );
    assert_eq!(ours_state.len(), theirs_state.len());
    for ((our_id, our_entry), (their_id, their_entry)) in ours_state.iter().zip(theirs_state) {
        assert_eq!(our_id.as_i64(), their_id.as_i64());
        for name in ["step", "exp_avg", "exp_avg_sq"] {
            let (a, b) = (
                our_entry.get(name).unwrap().as_tensor().unwrap(),
                their_entry.get(name).unwrap().as_tensor().unwrap(),
            );
            assert_eq!(a.kind(), b.kind(), "{name}");
            worst.compare(&format!("state.{}.{name}", our_id.as_i64().unwrap()), a, b);
        }
    }
}
