//! The checkpoint's tensors, each checked against the shape the YAML config implies, so that a
//! config that does not fit the checkpoint fails naming both files and the first tensor that
//! differs (rather than at the first matrix product).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use crate::layers::Linear;
use crate::weights::Weights;

pub(super) struct Params<'a> {
    weights: &'a Weights,
    config: &'a Path,
    used: &'a RefCell<BTreeSet<String>>,
    /// When set, every tensor asked for is made up (random) and kept here instead of being
    /// read from `weights`: a full-size model for benchmarks without a real checkpoint.
    random: Option<&'a RefCell<HashMap<String, Tensor>>>,
    prefix: String,
}

impl<'a> Params<'a> {
    pub(super) fn new(
        weights: &'a Weights,
        config: &'a Path,
        used: &'a RefCell<BTreeSet<String>>,
    ) -> Self {
        Self {
            weights,
            config,
            used,
            random: None,
            prefix: String::new(),
        }
    }

    /// Params that make up every tensor asked for (see `random`); `weights` only names the
    /// source in messages.
    pub(super) fn random(
        weights: &'a Weights,
        config: &'a Path,
        used: &'a RefCell<BTreeSet<String>>,
        made: &'a RefCell<HashMap<String, Tensor>>,
    ) -> Self {
        Self {
            random: Some(made),
            ..Self::new(weights, config, used)
        }
    }

    /// The tensors under `self.prefix` + `name` + ".".
    pub(super) fn at(&self, name: impl std::fmt::Display) -> Params<'a> {
        Params {
            weights: self.weights,
            config: self.config,
            used: self.used,
            random: self.random,
            prefix: self.full(&name.to_string()) + ".",
        }
    }

    fn full(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub(super) fn tensor(&self, name: &str, shape: &[i64]) -> Result<Tensor> {
        self.check(name, shape)?;
        match self.random {
            Some(made) => Ok(made.borrow()[&self.full(name)].shallow_clone()),
            None => self.weights.get(&self.full(name)),
        }
    }

    /// Marks `name` as used, if it is there with `shape`.
    fn check(&self, name: &str, shape: &[i64]) -> Result<()> {
        let full = self.full(name);
        if let Some(made) = self.random {
            made.borrow_mut()
                .entry(full.clone())
                .or_insert_with(|| random_tensor(shape));
            self.used.borrow_mut().insert(full);
            return Ok(());
        }
        let Ok(actual) = self.weights.shape(&full) else {
            bail!(
                "{} does not match {}: the config implies a tensor `{full}` {shape:?}, which the checkpoint lacks",
                self.config.display(),
                self.weights.source().display()
            );
        };
        if actual != shape {
            bail!(
                "{} does not match {}: tensor `{full}` has shape {actual:?} where the config implies {shape:?}",
                self.config.display(),
                self.weights.source().display()
            );
        }
        self.used.borrow_mut().insert(full);
        Ok(())
    }

    /// Marks `name` as used if the checkpoint has it: a tensor inference does not read that
    /// some checkpoints hold and others lack (BatchNorm's `num_batches_tracked`).
    pub(super) fn skip_if_present(&self, name: &str) {
        let full = self.full(name);
        if self.weights.contains(&full) {
            self.used.borrow_mut().insert(full);
        }
    }

    /// `nn.Linear(input, output, bias)` at `name`.
    pub(super) fn linear(&self, name: &str, input: i64, output: i64, bias: bool) -> Result<Linear> {
        let shapes = [("weight", vec![output, input]), ("bias", vec![output])];
        for (tensor, shape) in shapes.iter().take(if bias { 2 } else { 1 }) {
            self.check(&format!("{name}.{tensor}"), shape)?;
        }
        let Some(made) = self.random else {
            return Linear::load(self.weights, &self.full(name));
        };
        let made = made.borrow();
        let tensors = ["weight", "bias"]
            .iter()
            .map(|t| format!("{}.{t}", self.full(name)))
            .filter_map(|full| Some((full.clone(), made.get(&full)?.shallow_clone())))
            .collect();
        Linear::load(
            &Weights::new(tensors, self.weights.source()),
            &self.full(name),
        )
    }

    /// Fails on the first checkpoint tensor that no loaded layer took.
    pub(super) fn ensure_all_used(&self) -> Result<()> {
        if self.random.is_some() {
            return Ok(());
        }
        let used = self.used.borrow();
        let mut unused: Vec<&str> = self
            .weights
            .names()
            .filter(|name| !used.contains(*name))
            .collect();
        unused.sort_unstable();
        if let Some(name) = unused.first() {
            bail!(
                "{} does not match {}: tensor `{name}` {:?} has no place in the model the config describes ({} such tensors)",
                self.config.display(),
                self.weights.source().display(),
                self.weights.shape(name)?,
                unused.len()
            );
        }
        Ok(())
    }
}

/// Matrices as torch's default `nn.Linear` init draws them (uniform within ±1/√fan-in), vectors
/// (norm gains, biases, rotary frequencies) as ones: values of a trained model's magnitude, so
/// the arithmetic costs what it would with real weights.
fn random_tensor(shape: &[i64]) -> Tensor {
    match shape.last() {
        Some(&fan_in) if shape.len() >= 2 => {
            let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
            Tensor::empty(shape, (Kind::Float, tch::Device::Cpu)).uniform_(-bound, bound)
        }
        _ => Tensor::ones(shape, (Kind::Float, tch::Device::Cpu)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn names_both_files_and_the_tensor() {
        let tensors = HashMap::from([
            (
                "a.weight".to_string(),
                Tensor::zeros([3, 2], tch::kind::FLOAT_CPU),
            ),
            ("b".to_string(), Tensor::zeros([1], tch::kind::FLOAT_CPU)),
        ]);
        let weights = Weights::new(tensors, "model.ckpt");
        let used = RefCell::new(BTreeSet::new());
        let params = Params::new(&weights, Path::new("config.yaml"), &used);
        let error = params.linear("a", 2, 4, false).err().unwrap().to_string();
        assert!(
            error.contains("config.yaml")
                && error.contains("model.ckpt")
                && error.contains("`a.weight`"),
            "{error}"
        );
        assert!(params.at("a").tensor("weight", &[3, 2]).is_ok());
        let error = params.ensure_all_used().unwrap_err().to_string();
        assert!(error.contains("`b`"), "{error}");
    }
}
