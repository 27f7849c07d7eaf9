//! Named tensors read from a weight file, with errors that name the file and the tensor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tch::{Device, Kind, Tensor};

/// The names of a weight-normalised layer's magnitude and direction: torch.nn.utils.weight_norm's
/// and torch.nn.utils.parametrizations.weight_norm's.
pub const WEIGHT_NORM_NAMES: [(&str, &str); 2] = [
    ("weight_g", "weight_v"),
    (
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ),
];

enum LayerWeight {
    Plain(Tensor),
    Normed { g: Tensor, v: Tensor },
}

/// The tensors of one weight file (or of one part of it), by their upstream names.
pub struct Weights {
    tensors: HashMap<String, Tensor>,
    source: PathBuf,
}

impl Weights {
    /// Wraps `tensors` by name; `source` names them in errors (a path, or a description).
    pub fn new(tensors: HashMap<String, Tensor>, source: impl Into<PathBuf>) -> Self {
        Self {
            tensors,
            source: source.into(),
        }
    }

    /// Reads every tensor of the safetensors file at `path`, on the CPU in the file's dtypes.
    pub fn from_safetensors(path: &Path) -> Result<Self> {
        let tensors = Tensor::read_safetensors(path)
            .with_context(|| format!("{}: not a readable safetensors file", path.display()))?;
        Ok(Self::new(tensors.into_iter().collect(), path))
    }

    /// The file these tensors came from, for error messages.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Whether a tensor is named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The tensors' names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the set holds no tensors.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The tensor `name` (sharing storage with this set).
    pub fn get(&self, name: &str) -> Result<Tensor> {
        match self.tensors.get(name) {
            Some(t) => Ok(t.shallow_clone()),
            None => bail!(
                "{}: tensor `{name}` is missing: not the model this file was expected to be",
                self.source.display()
            ),
        }
    }

    /// The tensor `name` (sharing storage with this set), or None when it is absent.
    pub fn get_opt(&self, name: &str) -> Option<Tensor> {
        self.tensors.get(name).map(Tensor::shallow_clone)
    }

    /// The tensor `name`, which must have exactly `shape`.
    pub fn get_shaped(&self, name: &str, shape: &[i64]) -> Result<Tensor> {
        let t = self.get(name)?;
        if t.size() != shape {
            bail!(
                "{}: tensor `{name}` has shape {:?}, expected {shape:?}",
                self.source.display(),
                t.size()
            );
        }
        Ok(t)
    }

    /// The shape of tensor `name`.
    pub fn shape(&self, name: &str) -> Result<Vec<i64>> {
        Ok(self.get(name)?.size())
    }

    /// A layer's effective weight: a plain `weight`, or one under weight normalisation stored
    /// as `weight_g`/`weight_v` (torch.nn.utils.weight_norm) or as
    /// `parametrizations.weight.original0/1` (torch.nn.utils.parametrizations.weight_norm),
    /// computed as `g · v / ‖v‖` (inside autograd when `g` and `v` require gradients).
    /// The norm runs over the dimensions where `g` has size 1, so both torch's default `dim=0`
    /// and HuBERT's positional convolution (`dim=2`) come out right.
    pub fn weight(&self, prefix: &str) -> Result<Tensor> {
        Ok(match self.layer_weight(prefix)? {
            LayerWeight::Plain(w) => w,
            LayerWeight::Normed { g, v } => {
                let (g_shape, v_shape) = (g.size(), v.size());
                let dims: Vec<i64> = (0..v_shape.len())
                    .filter(|&d| g_shape.get(d) != Some(&v_shape[d]) || v_shape[d] == 1)
                    .map(|d| d as i64)
                    .collect();
                let norm = v.norm_scalaropt_dim(2, dims.as_slice(), true);
                &v * (&g / norm)
            }
        })
    }

    /// The shape of [`Weights::weight`] without computing it.
    pub fn weight_shape(&self, prefix: &str) -> Result<Vec<i64>> {
        Ok(match self.layer_weight(prefix)? {
            LayerWeight::Plain(w) => w.size(),
            LayerWeight::Normed { v, .. } => v.size(),
        })
    }

    fn layer_weight(&self, prefix: &str) -> Result<LayerWeight> {
        let plain = format!("{prefix}.weight");
        if let Some(w) = self.get_opt(&plain) {
            return Ok(LayerWeight::Plain(w));
        }
        for (g_name, v_name) in WEIGHT_NORM_NAMES {
            let (g, v) = (
                self.get_opt(&format!("{prefix}.{g_name}")),
                self.get_opt(&format!("{prefix}.{v_name}")),
            );
            if let (Some(g), Some(v)) = (g, v) {
                check_magnitude(&self.source, &format!("{prefix}.{g_name}"), &g, &v)?;
                return Ok(LayerWeight::Normed { g, v });
            }
        }
        bail!(
            "{}: tensor `{plain}` is missing (nor is it stored as weight_g/weight_v): not the model this file was expected to be",
            self.source.display()
        )
    }

    /// Every tensor whose name starts with `prefix.`, renamed without it.
    pub fn sub(&self, prefix: &str) -> Weights {
        let dotted = format!("{prefix}.");
        let tensors = self
            .tensors
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(&dotted)
                    .map(|rest| (rest.to_string(), v.shallow_clone()))
            })
            .collect();
        Weights::new(tensors, self.source.clone())
    }

    /// Floating tensors converted to `kind`, everything moved to `device`.
    pub fn to(self, device: Device, kind: Kind) -> Weights {
        let tensors = self
            .tensors
            .into_iter()
            .map(|(k, v)| {
                let v = if v.is_floating_point() {
                    v.to_device(device).to_kind(kind)
                } else {
                    v.to_device(device)
                };
                (k, v)
            })
            .collect();
        Weights::new(tensors, self.source)
    }
}

/// A weight norm's magnitude `g` fits its direction `v` when it has `v`'s rank and, in each
/// dimension, `v`'s size or 1 (torch's `dim=0`: `[out, 1, 1]`); any other `g` would make
/// computing the weight fail (a panic inside libtorch) or broadcast it into another shape.
fn check_magnitude(source: &Path, g_name: &str, g: &Tensor, v: &Tensor) -> Result<()> {
    let (g_shape, v_shape) = (g.size(), v.size());
    let fits = g_shape.len() == v_shape.len()
        && g_shape
            .iter()
            .zip(&v_shape)
            .all(|(&g, &v)| g == 1 || g == v);
    if fits {
        return Ok(());
    }
    let mut expected = vec![1; v_shape.len()];
    if let Some(first) = expected.first_mut() {
        *first = v_shape[0];
    }
    bail!(
        "{}: tensor `{g_name}` has shape {g_shape:?}, expected {expected:?} (the weight norm of a \
         weight of shape {v_shape:?})",
        source.display()
    )
}
