//! The conversion of an unpickled graph into the `Value` tree, tensors attached to the storages
//! the checkpoint format loaded.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow, bail};
use tch::Tensor;

use super::Value;
use super::graph::{Graph, Id, Node, TensorView};

/// Deeper nesting than any checkpoint has; it bounds the recursion of the conversion (and of
/// the `Value` tree's drop).
const MAX_DEPTH: usize = 256;

/// Values shared through the memo are copied into the tree once per reference; this bounds
/// what a small pickle that references the same list over and over can expand to.
const EXPANSION_ALLOWANCE: usize = 64 << 20;

/// Converts the graph below `root` into a `Value` tree. `storages` holds each storage node's
/// data as a 1-D tensor of its kind; tensors become views of them, so tensors that shared a
/// storage in the file share it here. A reference back to an object still being converted (a
/// cycle such as omegaconf's `_parent`) becomes `None`.
pub(crate) fn to_value(graph: &Graph, root: Id, storages: &HashMap<Id, Tensor>) -> Result<Value> {
    let mut converter = Converter {
        graph,
        storages,
        tensors: HashMap::new(),
        open: vec![false; graph.len()],
        budget: EXPANSION_ALLOWANCE,
    };
    converter.value(root, 0)
}

struct Converter<'a> {
    graph: &'a Graph,
    storages: &'a HashMap<Id, Tensor>,
    tensors: HashMap<Id, Tensor>,
    open: Vec<bool>,
    budget: usize,
}

impl Converter<'_> {
    fn value(&mut self, id: Id, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            bail!("values nested deeper than {MAX_DEPTH} levels");
        }
        if self.open[id] {
            return Ok(Value::None);
        }
        let payload = match self.graph.node(id) {
            Node::Str(s) => s.len(),
            Node::Bytes(b) => b.len(),
            _ => 0,
        };
        self.budget = self
            .budget
            .checked_sub(size_of::<Value>() + payload)
            .ok_or_else(|| {
                anyhow!(
                    "shared values expand beyond {} MiB",
                    EXPANSION_ALLOWANCE >> 20
                )
            })?;
        self.open[id] = true;
        let value = self.convert(id, depth);
        self.open[id] = false;
        value
    }

    fn convert(&mut self, id: Id, depth: usize) -> Result<Value> {
        let graph = self.graph;
        Ok(match graph.node(id) {
            Node::None => Value::None,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => i64::try_from(*i).map_or(Value::Float(*i as f64), Value::Int),
            Node::Float(f) => Value::Float(*f),
            Node::Str(s) => Value::Str(s.to_string()),
            Node::Bytes(b) => Value::Bytes(b.clone()),
            Node::List(items) | Node::Set(items) => Value::List(self.values(items, depth)?),
            Node::Tuple(items) => Value::Tuple(self.values(items, depth)?),
            Node::Dict(dict) => {
                let mut entries = Vec::with_capacity(dict.entries.len());
                for &(key, value) in &dict.entries {
                    entries.push((self.value(key, depth + 1)?, self.value(value, depth + 1)?));
                }
                Value::Dict(entries)
            }
            Node::Global(name) => Value::Global(name.clone()),
            Node::Object { class, args, state } => {
                if let Some(content) = omegaconf_content(graph, class, *state) {
                    return self.value(content, depth + 1);
                }
                let args = self.values(args, depth)?;
                let state = match state {
                    Some(state) => Some(Box::new(self.value(*state, depth + 1)?)),
                    None => None,
                };
                Value::Object {
                    class: class.clone(),
                    args,
                    state,
                }
            }
            Node::Storage(storage) => Value::Tensor(
                self.storage(id)
                    .with_context(|| format!("storage {}", storage.key))?
                    .shallow_clone(),
            ),
            Node::Tensor(view) => Value::Tensor(self.tensor(id, view)?),
        })
    }

    fn values(&mut self, items: &[Id], depth: usize) -> Result<Vec<Value>> {
        items
            .iter()
            .map(|&item| self.value(item, depth + 1))
            .collect()
    }

    fn storage(&self, id: Id) -> Result<&Tensor> {
        self.storages
            .get(&id)
            .ok_or_else(|| anyhow!("its data was not loaded"))
    }

    fn tensor(&mut self, id: Id, view: &TensorView) -> Result<Tensor> {
        if let Some(tensor) = self.tensors.get(&id) {
            return Ok(tensor.shallow_clone());
        }
        let key = match self.graph.node(view.storage) {
            Node::Storage(storage) => storage.key.as_str(),
            _ => "?",
        };
        let tensor = strided_view(self.storage(view.storage)?, view)
            .with_context(|| format!("tensor of storage {key}"))?;
        self.tensors.insert(id, tensor.shallow_clone());
        Ok(tensor)
    }
}

/// The `(storage, offset, size, stride)` view, checked to lie inside the storage.
fn strided_view(storage: &Tensor, view: &TensorView) -> Result<Tensor> {
    let storage = match view.kind {
        Some(kind) if kind != storage.kind() => storage
            .f_view_dtype(kind)
            .with_context(|| format!("{} bytes do not hold {kind:?} elements", storage.numel()))?,
        _ => storage.shallow_clone(),
    };
    let available = i128::try_from(storage.numel()).unwrap_or(i128::MAX);
    if view.size.len() != view.stride.len() {
        bail!(
            "size {:?} and stride {:?} differ in length",
            view.size,
            view.stride
        );
    }
    if view.offset < 0 || view.size.iter().chain(&view.stride).any(|&v| v < 0) {
        bail!(
            "negative offset, size or stride (offset {}, size {:?}, stride {:?})",
            view.offset,
            view.size,
            view.stride
        );
    }
    if view.size.len() > 64 {
        bail!("{} dimensions", view.size.len());
    }
    if !view.size.contains(&0) {
        let last = view
            .size
            .iter()
            .zip(&view.stride)
            .fold(i128::from(view.offset), |last, (&n, &s)| {
                last.saturating_add(i128::from(n - 1) * i128::from(s))
            });
        if last >= available {
            bail!(
                "view (offset {}, size {:?}, stride {:?}) reaches element {last} of a storage of {available}",
                view.offset,
                view.size,
                view.stride
            );
        }
    }
    // as_strided without an offset keeps the base's own (a legacy view's place in its root).
    let start = view.offset.min(storage.numel() as i64);
    let base = storage.f_narrow(0, start, storage.numel() as i64 - start)?;
    Ok(base.f_as_strided(view.size.as_slice(), view.stride.as_slice(), None::<i64>)?)
}

/// omegaconf containers and value nodes keep their contents in their `__setstate__` state:
/// `_content` (a dict or list of nodes) for DictConfig / ListConfig, `_val` for value nodes.
fn omegaconf_content(graph: &Graph, class: &str, state: Option<Id>) -> Option<Id> {
    let state = state?;
    match class {
        "omegaconf.dictconfig.DictConfig" | "omegaconf.listconfig.ListConfig" => {
            graph.dict_get(state, "_content")
        }
        _ if class.starts_with("omegaconf.nodes.") => graph.dict_get(state, "_val"),
        _ => None,
    }
}
