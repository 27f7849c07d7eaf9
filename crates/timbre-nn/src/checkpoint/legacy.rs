//! The format `torch.save` wrote before torch 1.6 (and still writes with
//! `_use_new_zipfile_serialization=False`), as pytorch/pytorch `torch/serialization.py`
//! `_legacy_save` / `_legacy_load` define it: consecutive pickles of the magic number, the
//! protocol version, `sys_info`, the saved object (storages as persistent ids) and the list of
//! storage keys; then, for each key in that order, the element count (8 bytes little-endian)
//! and the raw data of the storage.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow, bail};
use tch::{Kind, Tensor};

use super::Value;
use super::convert::to_value;
use super::graph::Node;
use super::pickle::{Unpickled, unpickle};

const MAGIC_NUMBER: i128 = 0x1950a86a20f9469cfc6c;
const PROTOCOL_VERSION: i128 = 1001;

pub(super) fn read(bytes: &[u8]) -> Result<Value> {
    let magic = unpickle(bytes)
        .ok()
        .filter(|m| m.graph.as_int(m.root) == Some(MAGIC_NUMBER));
    let Some(magic) = magic else {
        bail!("not a torch.save checkpoint: neither a zip archive nor the legacy format")
    };
    let mut pos = magic.end;
    let mut next = |what: &str| -> Result<Unpickled> {
        let unpickled = unpickle(&bytes[pos..])
            .with_context(|| format!("legacy checkpoint: {what} at byte {pos} is unreadable"))?;
        pos += unpickled.end;
        Ok(unpickled)
    };
    let version = next("the protocol version")?;
    if version.graph.as_int(version.root) != Some(PROTOCOL_VERSION) {
        bail!("legacy checkpoint with an unknown protocol version (expected {PROTOCOL_VERSION})");
    }
    let sys_info = next("sys_info")?;
    if let Some(little) = sys_info.graph.dict_get(sys_info.root, "little_endian")
        && matches!(sys_info.graph.node(little), Node::Bool(false))
    {
        bail!("saved on a big-endian machine: only little-endian checkpoints are supported");
    }
    let main = next("the saved object")?;
    let keys = next("the list of storage keys")?;
    let keys = keys
        .graph
        .items(keys.root)
        .ok_or_else(|| anyhow!("legacy checkpoint: the storage key list is not a list"))?
        .iter()
        .map(|&k| match keys.graph.node(k) {
            Node::Str(key) => Ok(key.to_string()),
            Node::Int(key) => Ok(key.to_string()),
            _ => bail!(
                "legacy checkpoint: a storage key is {}",
                keys.graph.kind_name(k)
            ),
        });
    let keys = keys.collect::<Result<Vec<_>>>()?;

    let mut root_kinds: HashMap<&str, (Kind, i64)> = HashMap::new();
    for (_, storage) in main.graph.storages() {
        root_kinds
            .entry(storage.key.as_str())
            .or_insert((storage.kind, storage.numel));
    }
    let mut data = HashMap::new();
    for key in &keys {
        let &(kind, numel) = root_kinds
            .get(key.as_str())
            .ok_or_else(|| anyhow!("storage {key} is listed but no tensor refers to it"))?;
        let count = bytes
            .get(pos..pos + 8)
            .ok_or_else(|| anyhow!("truncated before the data of storage {key}"))?;
        let count = u64::from_le_bytes(count.try_into()?);
        pos += 8;
        if i64::try_from(count).ok() != Some(numel) {
            bail!("storage {key} holds {count} elements, its reference says {numel}");
        }
        let len = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(kind.elt_size_in_bytes()));
        let raw = len
            .and_then(|len| bytes.get(pos..pos.checked_add(len)?))
            .ok_or_else(|| anyhow!("truncated in the data of storage {key}"))?;
        pos += raw.len();
        let tensor = Tensor::f_from_data_size(raw, &[numel], kind)
            .with_context(|| format!("storage {key} ({kind:?})"))?;
        data.insert(key.as_str(), tensor);
    }

    let mut storages = HashMap::new();
    for (id, storage) in main.graph.storages() {
        let root = data
            .get(storage.key.as_str())
            .ok_or_else(|| anyhow!("storage {} has no data in the file", storage.key))?;
        if root.kind() != storage.kind {
            bail!(
                "storage {} is referred to as both {:?} and {:?}",
                storage.key,
                root.kind(),
                storage.kind
            );
        }
        let tensor = match &storage.view {
            Some((view_key, offset, size)) => {
                if offset
                    .checked_add(*size)
                    .is_none_or(|end| end > root.numel() as i64)
                {
                    bail!(
                        "view {view_key} ({size} elements at {offset}) lies outside storage {}",
                        storage.key
                    );
                }
                root.f_narrow(0, *offset, *size)?
            }
            None => root.shallow_clone(),
        };
        storages.insert(id, tensor);
    }
    to_value(&main.graph, main.root, &storages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legacy file whose tensor lies in a view (elements 2..5) of a 6-element root storage,
    /// which torch before 1.0 wrote and `_legacy_load` still reads.
    fn legacy_file_with_a_view(count: u64) -> Vec<u8> {
        let mut file = b"\x80\x02\x8a\x0a".to_vec();
        file.extend(&MAGIC_NUMBER.to_le_bytes()[..10]);
        file.extend(b".\x80\x02M\xe9\x03.\x80\x02}.");
        file.extend(b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(");
        file.extend(b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x04\x00\x00\x00rootX\x03\x00\x00\x00cpuK\x06");
        file.extend(b"(X\x04\x00\x00\x00viewK\x02K\x03ttQ");
        file.extend(b"K\x01K\x02\x85K\x01\x85\x89}tR.");
        file.extend(b"\x80\x02]X\x04\x00\x00\x00roota.");
        file.extend(count.to_le_bytes());
        for value in 0..6 {
            file.extend((value as f32 * 10.0).to_le_bytes());
        }
        file
    }

    #[test]
    fn tensors_in_storage_views_read_from_the_right_place() {
        let Value::Tensor(tensor) = read(&legacy_file_with_a_view(6)).unwrap() else {
            panic!("not a tensor")
        };
        assert_eq!(Vec::<f32>::try_from(&tensor).unwrap(), [30.0, 40.0]);
    }

    #[test]
    fn a_storage_of_the_wrong_length_is_an_error() {
        let message = format!("{:#}", read(&legacy_file_with_a_view(7)).unwrap_err());
        assert!(
            message.contains("storage root holds 7 elements, its reference says 6"),
            "{message}"
        );
        let file = legacy_file_with_a_view(6);
        let message = format!("{:#}", read(&file[..file.len() - 1]).unwrap_err());
        assert!(
            message.contains("truncated in the data of storage root"),
            "{message}"
        );
    }
}
