//! What the classes and functions named in torch checkpoints build, as torch's own unpickler
//! (pytorch/pytorch `torch/serialization.py` `_load` / `_legacy_load`, `torch/_utils.py`
//! `_rebuild_tensor*`) and the Python modules they name would.

use anyhow::{Result, anyhow, bail};
use tch::Kind;

use super::graph::{DictNode, Graph, Id, Node, StorageRef, TensorView};

/// The result of calling `name` (REDUCE, NEWOBJ, INST, OBJ) with `args`.
pub(crate) fn call(graph: &mut Graph, name: &str, args: Vec<Id>) -> Result<Id> {
    let node = match name {
        "collections.OrderedDict" | "builtins.dict" | "collections.defaultdict" => {
            let dict = graph.add(Node::Dict(DictNode::default()));
            if name != "collections.defaultdict" {
                fill_dict(graph, dict, args.first().copied())?;
            }
            return Ok(dict);
        }
        "builtins.list" | "builtins.tuple" | "builtins.set" | "builtins.frozenset" => {
            let items = match args.first() {
                Some(&iterable) => graph
                    .items(iterable)
                    .ok_or_else(|| anyhow!("argument is not a sequence"))?
                    .to_vec(),
                None => Vec::new(),
            };
            match name {
                "builtins.list" => Node::List(items),
                "builtins.tuple" => Node::Tuple(items),
                _ => Node::Set(items),
            }
        }
        "torch.Size" => {
            let dims = args
                .first()
                .and_then(|&a| graph.items(a))
                .unwrap_or_default()
                .to_vec();
            Node::Tuple(dims)
        }
        "_codecs.encode" | "builtins.bytes" | "builtins.bytearray" => {
            Node::Bytes(bytes_argument(graph, &args)?)
        }
        "copyreg._reconstructor" => {
            let class = args.first().map(|&c| match graph.node(c) {
                Node::Global(class) => Ok(class.clone()),
                _ => Err(anyhow!("_reconstructor of {}", graph.kind_name(c))),
            });
            Node::Object {
                class: class.transpose()?.unwrap_or_default(),
                args: Vec::new(),
                state: None,
            }
        }
        "torch._utils._rebuild_tensor"
        | "torch._utils._rebuild_tensor_v2"
        | "torch._utils._rebuild_tensor_v3" => Node::Tensor(tensor_view(graph, name, &args)?),
        "torch._utils._rebuild_parameter" | "torch._utils._rebuild_parameter_with_state" => {
            let &data = args.first().ok_or_else(|| anyhow!("no data argument"))?;
            return Ok(data);
        }
        "torch._tensor._rebuild_from_type_v2" | "torch._tensor._rebuild_from_type" => {
            let (Some(&function), Some(&function_args)) = (args.first(), args.get(2)) else {
                bail!("expects (function, type, args, state)")
            };
            let Node::Global(function) = graph.node(function) else {
                bail!("its function is {}", graph.kind_name(function))
            };
            if function.starts_with("torch._tensor._rebuild_from_type") {
                bail!("rebuilds through itself");
            }
            let function = function.clone();
            let function_args = graph
                .items(function_args)
                .ok_or_else(|| anyhow!("its arguments are not a tuple"))?
                .to_vec();
            return call(graph, &function, function_args);
        }
        _ => Node::Object {
            class: name.to_string(),
            args,
            state: None,
        },
    };
    Ok(graph.add(node))
}

/// `dict(pairs)` / `OrderedDict(pairs)`: the items of a list of (key, value) pairs or of a dict.
fn fill_dict(graph: &mut Graph, dict: Id, source: Option<Id>) -> Result<()> {
    let Some(source) = source else { return Ok(()) };
    let pairs: Vec<(Id, Id)> = match graph.node(source) {
        Node::Dict(other) => other.entries.clone(),
        _ => {
            let items = graph
                .items(source)
                .ok_or_else(|| anyhow!("dict argument is {}", graph.kind_name(source)))?;
            items
                .iter()
                .map(|&pair| match graph.items(pair) {
                    Some(&[key, value]) => Ok((key, value)),
                    _ => Err(anyhow!("dict item is not a (key, value) pair")),
                })
                .collect::<Result<_>>()?
        }
    };
    for (key, value) in pairs {
        graph.set_item(dict, key, value)?;
    }
    Ok(())
}

/// The bytes of `_codecs.encode(text, "latin1")`, which is how protocol 2 writes `bytes`, or of
/// `bytes()` / `bytes(list of ints)`.
fn bytes_argument(graph: &Graph, args: &[Id]) -> Result<Vec<u8>> {
    let Some(&first) = args.first() else {
        return Ok(Vec::new());
    };
    if let Some(text) = graph.as_str(first) {
        let encoding = args
            .get(1)
            .and_then(|&e| graph.as_str(e))
            .unwrap_or("utf-8")
            .to_ascii_lowercase()
            .replace('_', "-");
        return match encoding.as_str() {
            "latin1" | "latin-1" | "iso-8859-1" => text
                .chars()
                .map(|c| u8::try_from(c).map_err(|_| anyhow!("`{c}` is not Latin-1")))
                .collect(),
            "utf-8" | "utf8" => Ok(text.as_bytes().to_vec()),
            other => bail!("encoding `{other}` is not supported"),
        };
    }
    if let Node::Bytes(bytes) = graph.node(first) {
        return Ok(bytes.clone());
    }
    let items = graph
        .items(first)
        .ok_or_else(|| anyhow!("bytes of {}", graph.kind_name(first)))?;
    items
        .iter()
        .map(|&i| {
            graph
                .as_int(i)
                .and_then(|v| u8::try_from(v).ok())
                .ok_or_else(|| anyhow!("bytes item is not in 0..256"))
        })
        .collect()
}

/// `_rebuild_tensor(storage, offset, size, stride)`, `_v2` (+ requires_grad, hooks, metadata),
/// `_v3` (+ requires_grad, hooks, dtype, metadata).
fn tensor_view(graph: &Graph, name: &str, args: &[Id]) -> Result<TensorView> {
    let [storage, offset, size, stride, ..] = *args else {
        bail!("expects at least 4 arguments, got {}", args.len())
    };
    if !matches!(graph.node(storage), Node::Storage(_)) {
        bail!("its storage argument is {}", graph.kind_name(storage));
    }
    let ints = |id: Id, what: &str| -> Result<Vec<i64>> {
        let items = graph
            .items(id)
            .ok_or_else(|| anyhow!("its {what} is {}, not a tuple", graph.kind_name(id)))?;
        items
            .iter()
            .map(|&i| {
                graph
                    .as_int(i)
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| anyhow!("its {what} holds a non-integer"))
            })
            .collect()
    };
    let kind = match (name, args.get(6)) {
        ("torch._utils._rebuild_tensor_v3", Some(&dtype)) => {
            let Node::Global(dtype) = graph.node(dtype) else {
                bail!("its dtype is {}", graph.kind_name(dtype))
            };
            Some(dtype_kind(dtype).ok_or_else(|| anyhow!("dtype {dtype} is not supported"))?)
        }
        _ => None,
    };
    let offset = graph
        .as_int(offset)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| anyhow!("its storage offset is not an integer"))?;
    Ok(TensorView {
        storage,
        kind,
        offset,
        size: ints(size, "size")?,
        stride: ints(stride, "stride")?,
    })
}

/// A persistent id: `('storage', storage_type, key, location, numel)` in zip checkpoints, with a
/// sixth `view_metadata` in legacy ones, or a legacy `('module', class, source_file, source)`.
pub(crate) fn persistent_load(graph: &mut Graph, pid: Id) -> Result<Id> {
    let items = graph
        .items(pid)
        .ok_or_else(|| anyhow!("persistent id is {}, not a tuple", graph.kind_name(pid)))?
        .to_vec();
    let typename = items.first().and_then(|&t| text(graph, t));
    match (typename.as_deref(), items.as_slice()) {
        (Some("module"), [_, class, ..]) => Ok(*class),
        (Some("storage"), [_, storage_type, key, _location, numel, rest @ ..]) => {
            let Node::Global(storage_type) = graph.node(*storage_type) else {
                bail!("storage type is {}", graph.kind_name(*storage_type))
            };
            let kind = storage_kind(storage_type)
                .ok_or_else(|| anyhow!("storage type {storage_type} is not supported"))?;
            let key = storage_key(graph, *key)?;
            let numel = graph
                .as_int(*numel)
                .and_then(|n| i64::try_from(n).ok())
                .filter(|&n| n >= 0)
                .ok_or_else(|| anyhow!("storage {key}: bad element count"))?;
            let view = match rest.first() {
                Some(&view) if !matches!(graph.node(view), Node::None) => {
                    let [view_key, offset, size] = graph.items(view).unwrap_or_default() else {
                        bail!("storage {key}: bad view metadata")
                    };
                    let int = |id: Id| {
                        graph
                            .as_int(id)
                            .and_then(|v| i64::try_from(v).ok())
                            .filter(|&v| v >= 0)
                    };
                    let (Some(offset), Some(size)) = (int(*offset), int(*size)) else {
                        bail!("storage {key}: bad view offset or size")
                    };
                    Some((storage_key(graph, *view_key)?, offset, size))
                }
                _ => None,
            };
            Ok(graph.add(Node::Storage(StorageRef {
                key,
                kind,
                numel,
                view,
            })))
        }
        _ => bail!("persistent id is not a torch storage reference"),
    }
}

fn text(graph: &Graph, id: Id) -> Option<String> {
    match graph.node(id) {
        Node::Str(s) => Some(s.to_string()),
        Node::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

fn storage_key(graph: &Graph, id: Id) -> Result<String> {
    match (text(graph, id), graph.as_int(id)) {
        (Some(key), _) => Ok(key),
        (None, Some(key)) => Ok(key.to_string()),
        _ => bail!("storage key is {}", graph.kind_name(id)),
    }
}

/// The element kind of `torch.<X>Storage` (or `torch.cuda.<X>Storage`, which legacy files saved
/// from a GPU name); untyped storages are bytes.
fn storage_kind(storage_type: &str) -> Option<Kind> {
    let name = storage_type
        .strip_prefix("torch.cuda.")
        .or_else(|| storage_type.strip_prefix("torch."))?;
    Some(match name {
        "UntypedStorage" | "storage.UntypedStorage" | "ByteStorage" => Kind::Uint8,
        "HalfStorage" => Kind::Half,
        "FloatStorage" => Kind::Float,
        "DoubleStorage" => Kind::Double,
        "BFloat16Storage" => Kind::BFloat16,
        "LongStorage" => Kind::Int64,
        "IntStorage" => Kind::Int,
        "ShortStorage" => Kind::Int16,
        "CharStorage" => Kind::Int8,
        "BoolStorage" => Kind::Bool,
        "ComplexFloatStorage" => Kind::ComplexFloat,
        "ComplexDoubleStorage" => Kind::ComplexDouble,
        _ => return None,
    })
}

/// The kind of a `torch.<dtype>` global.
fn dtype_kind(dtype: &str) -> Option<Kind> {
    Some(match dtype.strip_prefix("torch.")? {
        "uint8" => Kind::Uint8,
        "int8" => Kind::Int8,
        "int16" | "short" => Kind::Int16,
        "int32" | "int" => Kind::Int,
        "int64" | "long" => Kind::Int64,
        "float16" | "half" => Kind::Half,
        "float32" | "float" => Kind::Float,
        "float64" | "double" => Kind::Double,
        "bfloat16" => Kind::BFloat16,
        "bool" => Kind::Bool,
        "complex64" | "cfloat" => Kind::ComplexFloat,
        "complex128" | "cdouble" => Kind::ComplexDouble,
        _ => return None,
    })
}
