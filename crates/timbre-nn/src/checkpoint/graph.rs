//! The object graph a pickle builds: nodes addressed by index, because pickles share objects
//! through the memo and mutate them after memoising them (BUILD, SETITEMS on an object already
//! referenced elsewhere), and may even make them refer to themselves.

use std::collections::HashMap;
use std::rc::Rc;

use anyhow::{Result, bail};
use tch::Kind;

/// The index of a node in its `Graph`.
pub(crate) type Id = usize;

pub(crate) enum Node {
    None,
    Bool(bool),
    /// Python ints up to 128 bits (the legacy format's magic number takes 80).
    Int(i128),
    Float(f64),
    /// Shared, so that dict indexes and memo references do not copy the text.
    Str(Rc<str>),
    Bytes(Vec<u8>),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    Set(Vec<Id>),
    Dict(DictNode),
    /// A class or function named "module.Name".
    Global(String),
    Object {
        class: String,
        args: Vec<Id>,
        state: Option<Id>,
    },
    Storage(StorageRef),
    Tensor(TensorView),
}

/// A dict with Python's replace-on-same-key behaviour for string and integer keys.
#[derive(Default)]
pub(crate) struct DictNode {
    pub entries: Vec<(Id, Id)>,
    index: HashMap<DictKey, usize>,
}

#[derive(PartialEq, Eq, Hash)]
enum DictKey {
    Str(Rc<str>),
    Int(i128),
}

/// A storage named by a persistent id: its bytes live outside the pickle (`data/<key>` in a
/// zip checkpoint, after the pickle in a legacy one).
pub(crate) struct StorageRef {
    pub key: String,
    pub kind: Kind,
    /// Elements of `kind`.
    pub numel: i64,
    /// Legacy views into a bigger storage: (view key, offset, elements).
    pub view: Option<(String, i64, i64)>,
}

/// A tensor as torch's `_rebuild_tensor*` describes it: a strided view of a storage node.
pub(crate) struct TensorView {
    pub storage: Id,
    /// The dtype when it differs from the storage's (`_rebuild_tensor_v3` over untyped bytes).
    pub kind: Option<Kind>,
    pub offset: i64,
    pub size: Vec<i64>,
    pub stride: Vec<i64>,
}

#[derive(Default)]
pub(crate) struct Graph {
    nodes: Vec<Node>,
}

impl Graph {
    pub fn add(&mut self, node: Node) -> Id {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    pub fn node(&self, id: Id) -> &Node {
        &self.nodes[id]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn storages(&self) -> impl Iterator<Item = (Id, &StorageRef)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(id, node)| match node {
                Node::Storage(storage) => Some((id, storage)),
                _ => None,
            })
    }

    pub fn as_str(&self, id: Id) -> Option<&str> {
        match self.node(id) {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self, id: Id) -> Option<i128> {
        match self.node(id) {
            Node::Int(i) => Some(*i),
            Node::Bool(b) => Some(*b as i128),
            _ => None,
        }
    }

    pub fn items(&self, id: Id) -> Option<&[Id]> {
        match self.node(id) {
            Node::List(items) | Node::Tuple(items) | Node::Set(items) => Some(items),
            _ => None,
        }
    }

    /// The value of the string key `key` of a Dict node.
    pub fn dict_get(&self, id: Id, key: &str) -> Option<Id> {
        match self.node(id) {
            Node::Dict(dict) => dict
                .index
                .get(&DictKey::Str(key.into()))
                .map(|&i| dict.entries[i].1),
            _ => None,
        }
    }

    fn dict_key(&self, id: Id) -> Option<DictKey> {
        match self.node(id) {
            Node::Str(s) => Some(DictKey::Str(s.clone())),
            Node::Int(i) => Some(DictKey::Int(*i)),
            Node::Bool(b) => Some(DictKey::Int(*b as i128)),
            _ => None,
        }
    }

    /// `target[key] = value` for dicts; other containers (an unknown dict subclass) collect the
    /// items in a Dict state.
    pub fn set_item(&mut self, target: Id, key: Id, value: Id) -> Result<()> {
        let hashed = self.dict_key(key);
        let dict_id = self.item_holder(target, || Node::Dict(DictNode::default()))?;
        let Node::Dict(dict) = &mut self.nodes[dict_id] else {
            bail!("SETITEM on {}", self.kind_name(target))
        };
        match hashed.as_ref().and_then(|k| dict.index.get(k)) {
            Some(&i) => dict.entries[i].1 = value,
            None => {
                if let Some(k) = hashed {
                    dict.index.insert(k, dict.entries.len());
                }
                dict.entries.push((key, value));
            }
        }
        Ok(())
    }

    /// `target.append(value)` for lists and sets (ADDITEMS); other objects collect the items in
    /// a List state.
    pub fn append(&mut self, target: Id, value: Id) -> Result<()> {
        let list_id = self.item_holder(target, || Node::List(Vec::new()))?;
        match &mut self.nodes[list_id] {
            Node::List(items) | Node::Set(items) => items.push(value),
            _ => bail!("APPEND to {}", self.kind_name(target)),
        }
        Ok(())
    }

    /// The node that receives items for `target`: itself, or the state of an Object.
    fn item_holder(&mut self, target: Id, empty: impl FnOnce() -> Node) -> Result<Id> {
        if let Node::Object { state: None, .. } = self.node(target) {
            let holder = self.add(empty());
            if let Node::Object { state, .. } = &mut self.nodes[target] {
                *state = Some(holder);
            }
        }
        Ok(match self.node(target) {
            Node::Object {
                state: Some(state), ..
            } => *state,
            _ => target,
        })
    }

    /// BUILD: objects take the state; built-in containers and tensors ignore it (an
    /// OrderedDict's `_metadata`, a Parameter's hooks).
    pub fn build(&mut self, target: Id, new_state: Id) {
        if let Node::Object { state, .. } = &mut self.nodes[target] {
            *state = Some(new_state);
        }
    }

    /// What the node is, with its article, for error messages.
    pub fn kind_name(&self, id: Id) -> &'static str {
        match self.node(id) {
            Node::None => "None",
            Node::Bool(_) => "a bool",
            Node::Int(_) => "an int",
            Node::Float(_) => "a float",
            Node::Str(_) => "a str",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "a list",
            Node::Tuple(_) => "a tuple",
            Node::Set(_) => "a set",
            Node::Dict(_) => "a dict",
            Node::Global(_) => "a class or function",
            Node::Object { .. } => "an object",
            Node::Storage(_) => "a storage",
            Node::Tensor(_) => "a tensor",
        }
    }
}
