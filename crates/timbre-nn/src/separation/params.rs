//! The checkpoint's tensors, each checked against the shape the YAML config implies, so that a
//! config that does not fit the checkpoint fails naming both files and the first tensor that
//! differs (rather than at the first matrix product).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};
use tch::Tensor;

use crate::layers::Linear;
use crate::weights::Weights;

pub(super) struct Params<'a> {
    weights: &'a Weights,
    config: &'a Path,
    used: &'a RefCell<BTreeSet<String>>,
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
            prefix: String::new(),
        }
    }

    /// The tensors under `self.prefix` + `name` + ".".
    pub(super) fn at(&self, name: impl std::fmt::Display) -> Params<'a> {
        Params {
            weights: self.weights,
            config: self.config,
            used: self.used,
            prefix: self.full(&name.to_string()) + ".",
        }
    }

    fn full(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub(super) fn tensor(&self, name: &str, shape: &[i64]) -> Result<Tensor> {
        self.check(name, shape)?;
        self.weights.get(&self.full(name))
    }

    /// Marks `name` as used, if it is there with `shape`.
    fn check(&self, name: &str, shape: &[i64]) -> Result<()> {
        let full = self.full(name);
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

    /// `nn.Linear(input, output, bias)` at `name`.
    pub(super) fn linear(&self, name: &str, input: i64, output: i64, bias: bool) -> Result<Linear> {
        let shapes = [("weight", vec![output, input]), ("bias", vec![output])];
        for (tensor, shape) in shapes.iter().take(if bias { 2 } else { 1 }) {
            self.check(&format!("{name}.{tensor}"), shape)?;
        }
        Linear::load(self.weights, &self.full(name))
    }

    /// Fails on the first checkpoint tensor that no loaded layer took.
    pub(super) fn ensure_all_used(&self) -> Result<()> {
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
