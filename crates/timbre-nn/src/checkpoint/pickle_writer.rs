//! The pickle `torch.save` writes: protocol 2, as Python's `pickle.Pickler` lays it out
//! (memoised containers and strings, items in batches of 1000), with tensors reduced through
//! `torch._utils._rebuild_tensor_v2` over persistent storage ids (pytorch/pytorch
//! `torch/serialization.py` `_save`, `torch/_tensor.py` `_reduce_ex_internal`).

use std::collections::HashMap;

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::Value;

/// The class an OrderedDict is written as; `Value::ordered_dict` builds one.
pub(crate) const ORDERED_DICT: &str = "collections.OrderedDict";

/// Python's `pickle._Pickler._BATCHSIZE`.
const BATCH: usize = 1000;

/// The pickle of `value` and the tensors whose data go to `data/<index>`, in key order.
pub(super) struct Pickled {
    pub bytes: Vec<u8>,
    pub storages: Vec<Tensor>,
}

pub(super) fn pickle(value: &Value) -> Result<Pickled> {
    let mut writer = PickleWriter {
        out: vec![0x80, 2],
        memo: 0,
        shared: HashMap::new(),
        singletons: HashMap::new(),
        storages: Vec::new(),
    };
    writer.value(value, 0)?;
    writer.out.push(b'.');
    Ok(Pickled {
        bytes: writer.out,
        storages: writer.storages,
    })
}

/// Deeper nesting than any checkpoint has: it bounds the recursion.
const MAX_DEPTH: usize = 256;

struct PickleWriter {
    out: Vec<u8>,
    memo: u32,
    /// Memo slots of the globals and constant strings every tensor repeats, which Python's
    /// pickler shares because they are the same objects each time.
    /// Keyed by (module, name) for globals, ("", text) for strings.
    shared: HashMap<(&'static str, &'static str), u32>,
    /// Memo slots of empty and one-character (Latin-1) strings: CPython's unpickler returns one
    /// cached object for each, so torch re-saving a loaded checkpoint shares them.
    singletons: HashMap<String, u32>,
    storages: Vec<Tensor>,
}

impl PickleWriter {
    fn value(&mut self, value: &Value, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            bail!("values nested deeper than {MAX_DEPTH} levels");
        }
        match value {
            Value::None => self.out.push(b'N'),
            Value::Bool(b) => self.out.push(if *b { 0x88 } else { 0x89 }),
            Value::Int(i) => self.int(*i),
            Value::Float(f) => {
                self.out.push(b'G');
                self.out.extend_from_slice(&f.to_be_bytes());
            }
            Value::Str(s) => self.str(s),
            Value::Bytes(b) => self.bytes(b),
            Value::List(items) => {
                self.out.push(b']');
                self.put();
                self.batched(items, depth, b'a', b'e', |w, item, d| w.value(item, d))?;
            }
            Value::Tuple(items) => self.tuple(items, depth)?,
            Value::Dict(entries) => {
                self.out.push(b'}');
                self.put();
                self.items(entries, depth)?;
            }
            Value::Tensor(tensor) => self.tensor(tensor)?,
            Value::Object { class, args, state } if class == ORDERED_DICT && args.is_empty() => {
                self.global("collections", "OrderedDict");
                self.out.push(b')');
                self.out.push(b'R');
                self.put();
                match state.as_deref() {
                    Some(Value::Dict(entries)) => self.items(entries, depth)?,
                    None => {}
                    Some(_) => bail!("an OrderedDict's entries must be a Dict"),
                }
            }
            Value::Object { class, .. } => bail!("cannot write an object of class {class}"),
            Value::Global(name) => bail!("cannot write a reference to {name}"),
        }
        Ok(())
    }

    fn items(&mut self, entries: &[(Value, Value)], depth: usize) -> Result<()> {
        self.batched(entries, depth, b's', b'u', |w, (k, v), d| {
            w.value(k, d)?;
            w.value(v, d)
        })
    }

    /// Python's `_batch_appends` / `_batch_setitems`: a lone item with `single`, else
    /// MARK … `many` per batch.
    fn batched<T>(
        &mut self,
        items: &[T],
        depth: usize,
        single: u8,
        many: u8,
        mut write: impl FnMut(&mut Self, &T, usize) -> Result<()>,
    ) -> Result<()> {
        for batch in items.chunks(BATCH) {
            if let [item] = batch {
                write(self, item, depth + 1)?;
                self.out.push(single);
                continue;
            }
            self.out.push(b'(');
            for item in batch {
                write(self, item, depth + 1)?;
            }
            self.out.push(many);
        }
        Ok(())
    }

    fn tuple(&mut self, items: &[Value], depth: usize) -> Result<()> {
        if items.is_empty() {
            self.out.push(b')');
            return Ok(());
        }
        if items.len() > 3 {
            self.out.push(b'(');
        }
        for item in items {
            self.value(item, depth + 1)?;
        }
        self.out.push(match items.len() {
            1 => 0x85,
            2 => 0x86,
            3 => 0x87,
            _ => b't',
        });
        self.put();
        Ok(())
    }

    fn int(&mut self, i: i64) {
        match i {
            0..=0xff => self.out.extend_from_slice(&[b'K', i as u8]),
            0x100..=0xffff => {
                self.out.push(b'M');
                self.out.extend_from_slice(&(i as u16).to_le_bytes());
            }
            _ if i32::try_from(i).is_ok() => {
                self.out.push(b'J');
                self.out.extend_from_slice(&(i as i32).to_le_bytes());
            }
            _ => {
                // LONG1: the shortest two's complement little-endian form.
                let bytes = i.to_le_bytes();
                let mut len = 8;
                while len > 1 {
                    let (last, prev) = (bytes[len - 1], bytes[len - 2]);
                    let redundant =
                        (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0);
                    if !redundant {
                        break;
                    }
                    len -= 1;
                }
                self.out.extend_from_slice(&[0x8a, len as u8]);
                self.out.extend_from_slice(&bytes[..len]);
            }
        }
    }

    fn str(&mut self, s: &str) {
        let mut chars = s.chars();
        let singleton = match (chars.next(), chars.next()) {
            (None, _) => true,
            (Some(c), None) => u32::from(c) < 256,
            _ => false,
        };
        if singleton {
            if let Some(&slot) = self.singletons.get(s) {
                self.fetch(slot);
                return;
            }
            self.singletons.insert(s.to_string(), self.memo);
        }
        self.new_str(s);
    }

    /// A string object of its own, as torch's `str(len(id_map))` storage keys are.
    fn new_str(&mut self, s: &str) {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        self.put();
    }

    /// Protocol 2 has no bytes opcode: Python 3 writes `_codecs.encode(latin1 text, "latin1")`
    /// (and `bytes()` for empty ones, which `torch.load(weights_only=True)` refuses, so those
    /// are encoded too).
    fn bytes(&mut self, bytes: &[u8]) {
        self.global("_codecs", "encode");
        let text: String = bytes.iter().map(|&b| char::from(b)).collect();
        self.str(&text);
        self.shared_str("latin1");
        self.out.push(0x86);
        self.put();
        self.out.push(b'R');
        self.put();
    }

    /// `_rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())` over a storage of
    /// its own, written contiguous.
    fn tensor(&mut self, tensor: &Tensor) -> Result<()> {
        let kind = tensor.f_kind()?;
        let storage_class = storage_class(kind)?;
        let size = tensor.size();
        let mut stride = vec![1i64; size.len()];
        for d in (0..size.len().saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * size[d + 1].max(1);
        }
        let key = self.storages.len().to_string();
        self.storages.push(tensor.shallow_clone());

        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(b'(');
        self.out.push(b'(');
        self.shared_str("storage");
        self.global("torch", storage_class);
        self.new_str(&key);
        self.shared_str("cpu");
        self.int(tensor.numel() as i64);
        self.out.push(b't');
        self.put();
        self.out.push(b'Q');
        self.int(0);
        self.int_tuple(&size)?;
        self.int_tuple(&stride)?;
        self.out.push(0x89);
        self.global("collections", "OrderedDict");
        self.out.push(b')');
        self.out.push(b'R');
        self.put();
        self.out.push(b't');
        self.put();
        self.out.push(b'R');
        self.put();
        Ok(())
    }

    fn int_tuple(&mut self, ints: &[i64]) -> Result<()> {
        let items: Vec<Value> = ints.iter().map(|&i| Value::Int(i)).collect();
        self.tuple(&items, 0)
    }

    /// GLOBAL, or a memo fetch when this global was written before.
    fn global(&mut self, module: &'static str, name: &'static str) {
        if self.get((module, name)) {
            return;
        }
        self.out.push(b'c');
        for part in [module, name] {
            self.out.extend_from_slice(part.as_bytes());
            self.out.push(b'\n');
        }
        self.shared.insert((module, name), self.memo);
        self.put();
    }

    fn shared_str(&mut self, s: &'static str) {
        if !self.get(("", s)) {
            self.shared.insert(("", s), self.memo);
            self.new_str(s);
        }
    }

    fn get(&mut self, key: (&'static str, &'static str)) -> bool {
        let Some(&slot) = self.shared.get(&key) else {
            return false;
        };
        self.fetch(slot);
        true
    }

    fn fetch(&mut self, slot: u32) {
        match u8::try_from(slot) {
            Ok(slot) => self.out.extend_from_slice(&[b'h', slot]),
            Err(_) => {
                self.out.push(b'j');
                self.out.extend_from_slice(&slot.to_le_bytes());
            }
        }
    }

    /// Memoises the object just written, as the pickler does with every container and string.
    fn put(&mut self) {
        match u8::try_from(self.memo) {
            Ok(slot) => self.out.extend_from_slice(&[b'q', slot]),
            Err(_) => {
                self.out.push(b'r');
                self.out.extend_from_slice(&self.memo.to_le_bytes());
            }
        }
        self.memo += 1;
    }
}

/// The `torch.<X>Storage` class torch names a storage of `kind` by.
fn storage_class(kind: Kind) -> Result<&'static str> {
    Ok(match kind {
        Kind::Float => "FloatStorage",
        Kind::Half => "HalfStorage",
        Kind::BFloat16 => "BFloat16Storage",
        Kind::Double => "DoubleStorage",
        Kind::Int64 => "LongStorage",
        Kind::Int => "IntStorage",
        Kind::Int16 => "ShortStorage",
        Kind::Int8 => "CharStorage",
        Kind::Uint8 => "ByteStorage",
        Kind::Bool => "BoolStorage",
        Kind::ComplexFloat => "ComplexFloatStorage",
        Kind::ComplexDouble => "ComplexDoubleStorage",
        other => bail!("tensors of {other:?} cannot be written"),
    })
}
