//! Readers for the checkpoint files the community uses: `torch.save` files (zip and legacy
//! formats) through a pickle machine of our own, and the tree of values they hold; and the
//! writer of that tree as torch 2.x's zip format (`write_torch_file`).

mod convert;
mod graph;
mod legacy;
mod literals;
pub mod onnx;
mod pickle;
mod pickle_writer;
mod save;
mod torch_objects;
mod torch_zip;
mod zip_writer;

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use tch::Tensor;

use crate::weights::Weights;

pub use save::write_torch_file;

/// A value unpickled from a checkpoint. Classes the reader does not know become `Object`s
/// rather than errors, so metadata of any tool (fairseq's Namespace, omegaconf, Applio's
/// extras) can be read around.
#[derive(Debug)]
pub enum Value {
    /// Python's `None`.
    None,
    /// A Python bool.
    Bool(bool),
    /// A Python int (ints beyond the range of i64 are read as `Float`).
    Int(i64),
    /// A Python float.
    Float(f64),
    /// A Python str (Python 2 strings decoded to text).
    Str(String),
    /// A Python bytes or bytearray.
    Bytes(Vec<u8>),
    /// A Python list.
    List(Vec<Value>),
    /// A Python tuple.
    Tuple(Vec<Value>),
    /// Entries in insertion order (Python dicts and OrderedDicts keep it).
    Dict(Vec<(Value, Value)>),
    /// A tensor, on the CPU in its stored dtype, shape and strides.
    Tensor(Tensor),
    /// An instance of `class` ("module.Name") with its constructor arguments and `__setstate__`
    /// state (for argparse.Namespace the state is a Dict of its attributes).
    Object {
        /// The class's qualified name, "module.Name".
        class: String,
        /// The arguments the class was called with (pickle's REDUCE or NEWOBJ).
        args: Vec<Value>,
        /// The state BUILD passed to `__setstate__`; None when it had none.
        state: Option<Box<Value>>,
    },
    /// A reference to a class or function ("module.Name") that was not called.
    Global(String),
}

impl Value {
    /// The entry `key` of a Dict (string keys), or the attribute `key` of an Object's state.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            Value::Object {
                state: Some(state), ..
            } => state.get(key),
            _ => None,
        }
    }

    /// The text of a Str.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Ints, and bools as 0/1 (RVC writes `f0` as either).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    /// Floats, and ints converted to f64.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// The items of a List or a Tuple.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) | Value::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// The entries of a Dict, or of an Object's state when that is a Dict (OrderedDict, Namespace).
    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(entries) => Some(entries),
            Value::Object {
                state: Some(state), ..
            } => state.as_dict(),
            _ => None,
        }
    }

    /// The tensor of a Tensor.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// Reads a `torch.save` file (zip format, or the legacy format) into its value tree, tensors
/// materialised on the CPU in their stored dtype, with the shapes and strides they were saved
/// with (tensors that shared a storage share it here too). Errors name the file and the problem.
pub fn read_torch_file(path: &Path) -> Result<Value> {
    read_checkpoint(path).map_err(|e| anyhow!("{}: {e:#}", path.display()))
}

fn read_checkpoint(path: &Path) -> Result<Value> {
    let mut file = File::open(path).context("cannot be opened")?;
    let mut magic = Vec::with_capacity(4);
    file.by_ref()
        .take(4)
        .read_to_end(&mut magic)
        .context("cannot be read")?;
    if magic.starts_with(b"PK") {
        torch_zip::read(path)
    } else {
        drop(file);
        let bytes = std::fs::read(path).context("cannot be read")?;
        legacy::read(&bytes)
    }
}

/// The tensors of a checkpoint's state dict: those of the root dict, or, when it holds none,
/// of its `model` entry (fairseq and training checkpoints), `state_dict` (Lightning) or
/// `weight` (RVC inference files).
pub fn load_state_dict(path: &Path) -> Result<Weights> {
    let root = read_torch_file(path)?;
    let holds_tensors = |value: &Value| {
        value
            .as_dict()
            .is_some_and(|entries| entries.iter().any(|(_, v)| v.as_tensor().is_some()))
    };
    let dict = std::iter::once(&root)
        .chain(
            ["model", "state_dict", "weight"]
                .into_iter()
                .filter_map(|key| root.get(key)),
        )
        .find(|value| holds_tensors(value))
        .ok_or_else(|| {
            anyhow!(
                "{}: no tensors at the top level nor under `model`, `state_dict` or `weight`",
                path.display()
            )
        })?;
    weights_from_dict(dict, path)
}

/// The tensors of a dict of tensors (non-tensor entries are skipped), named by their keys.
pub fn weights_from_dict(dict: &Value, source: &Path) -> Result<Weights> {
    let Some(entries) = dict.as_dict() else {
        bail!("{}: expected a dict of tensors", source.display())
    };
    let tensors = entries
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_tensor()?.shallow_clone())))
        .collect();
    Ok(Weights::new(tensors, source))
}
