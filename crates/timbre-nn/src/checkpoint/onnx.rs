//! ONNX model files (the protobuf `ModelProto` of onnx/onnx.proto3): the graph's nodes in order,
//! with their inputs, outputs and attributes, and its initializers as tensors. A model file of
//! ours reads its weights and layer settings from these; nothing here runs a graph.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail, ensure};
use tch::{Kind, Tensor};

/// One node of the graph.
#[derive(Debug)]
pub struct Node {
    /// The operator (`Conv`, `Reshape`, …).
    pub op_type: String,
    /// Names of the values it takes, in order.
    pub inputs: Vec<String>,
    /// Names of the values it makes, in order.
    pub outputs: Vec<String>,
    attributes: HashMap<String, Attribute>,
}

/// A node attribute, of the kinds the models we read take settings from.
#[derive(Debug, Clone, PartialEq)]
enum Attribute {
    Int(i64),
    Ints(Vec<i64>),
    /// A kind this reader keeps no value of (floats, strings, tensors, graphs).
    Other,
}

/// The graph of an ONNX file: its nodes in order and its initializers by name.
pub struct OnnxGraph {
    nodes: Vec<Node>,
    initializers: HashMap<String, Tensor>,
    source: PathBuf,
}

impl OnnxGraph {
    /// Reads `path`, failing with the file's name when it is not an ONNX model.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes =
            std::fs::read(path).with_context(|| format!("{}: unreadable", path.display()))?;
        Self::parse(&bytes, path)
            .with_context(|| format!("{}: not an ONNX model this player can read", path.display()))
    }

    fn parse(bytes: &[u8], path: &Path) -> Result<Self> {
        let mut graph = None;
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            if number == 7 {
                graph = Some(value.bytes()?);
            }
        }
        let graph = graph.ok_or_else(|| anyhow!("it has no graph"))?;
        let (mut nodes, mut initializers) = (Vec::new(), HashMap::new());
        for field in Fields::new(graph) {
            match field? {
                (1, value) => nodes.push(parse_node(value.bytes()?)?),
                (5, value) => {
                    let (name, tensor) = parse_tensor(value.bytes()?)?;
                    initializers.insert(name, tensor);
                }
                _ => {}
            }
        }
        ensure!(!nodes.is_empty(), "its graph has no nodes");
        Ok(Self {
            nodes,
            initializers,
            source: path.to_path_buf(),
        })
    }

    /// The file the graph was read from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The initializer called `name`.
    pub fn initializer(&self, name: &str) -> Result<Tensor> {
        self.initializers
            .get(name)
            .map(Tensor::shallow_clone)
            .ok_or_else(|| anyhow!("{}: no initializer `{name}`", self.source.display()))
    }

    /// The nodes of `op_type`, in graph order.
    pub fn nodes_of<'a>(&'a self, op_type: &'a str) -> impl Iterator<Item = &'a Node> {
        self.nodes.iter().filter(move |n| n.op_type == op_type)
    }

    /// The nodes that take `output` as an input.
    pub fn consumers<'a>(&'a self, output: &'a str) -> impl Iterator<Item = &'a Node> {
        self.nodes
            .iter()
            .filter(move |n| n.inputs.iter().any(|i| i == output))
    }

    /// The initializers of `shape` and `kind`, by name order (deterministic, unlike the map's).
    pub fn initializers_shaped(&self, shape: &[i64], kind: Kind) -> Vec<(&str, Tensor)> {
        let mut found: Vec<(&str, Tensor)> = self
            .initializers
            .iter()
            .filter(|(_, t)| t.size() == shape && t.kind() == kind)
            .map(|(name, t)| (name.as_str(), t.shallow_clone()))
            .collect();
        found.sort_by_key(|(name, _)| *name);
        found
    }
}

impl Node {
    /// The integer list attribute `name`, or `default` when the node leaves it out.
    pub fn ints(&self, name: &str, default: &[i64]) -> Result<Vec<i64>> {
        match self.attributes.get(name) {
            None => Ok(default.to_vec()),
            Some(Attribute::Ints(values)) => Ok(values.clone()),
            Some(other) => bail!(
                "the {} node's `{name}` is {other:?}, not a list of integers",
                self.op_type
            ),
        }
    }

    /// The integer attribute `name`, or `default` when the node leaves it out.
    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        match self.attributes.get(name) {
            None => Ok(default),
            Some(Attribute::Int(value)) => Ok(*value),
            Some(other) => bail!(
                "the {} node's `{name}` is {other:?}, not an integer",
                self.op_type
            ),
        }
    }
}

fn parse_node(bytes: &[u8]) -> Result<Node> {
    let mut node = Node {
        op_type: String::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: HashMap::new(),
    };
    for field in Fields::new(bytes) {
        match field? {
            (1, value) => node.inputs.push(value.string()?),
            (2, value) => node.outputs.push(value.string()?),
            (4, value) => node.op_type = value.string()?,
            (5, value) => {
                let (name, attribute) = parse_attribute(value.bytes()?)?;
                node.attributes.insert(name, attribute);
            }
            _ => {}
        }
    }
    Ok(node)
}

fn parse_attribute(bytes: &[u8]) -> Result<(String, Attribute)> {
    let (mut name, mut int, mut ints) = (String::new(), None, Vec::new());
    // AttributeProto.type: INT 2, INTS 7.
    let mut kind = 0;
    for field in Fields::new(bytes) {
        match field? {
            (1, value) => name = value.string()?,
            (3, value) => int = Some(value.varint()? as i64),
            (8, value) => value.varints(&mut ints)?,
            (20, value) => kind = value.varint()?,
            _ => {}
        }
    }
    let attribute = match kind {
        2 => Attribute::Int(int.ok_or_else(|| anyhow!("attribute `{name}` has no value"))?),
        7 => Attribute::Ints(ints),
        _ => Attribute::Other,
    };
    Ok((name, attribute))
}

/// TensorProto.data_type values and the libtorch kinds they are read into.
fn kind_of(data_type: u64) -> Result<(Kind, usize)> {
    Ok(match data_type {
        1 => (Kind::Float, 4),
        6 => (Kind::Int, 4),
        7 => (Kind::Int64, 8),
        9 => (Kind::Bool, 1),
        10 => (Kind::Half, 2),
        11 => (Kind::Double, 8),
        other => bail!("a tensor of ONNX data type {other}, which this reader does not take"),
    })
}

fn parse_tensor(bytes: &[u8]) -> Result<(String, Tensor)> {
    let (mut name, mut dims, mut data_type) = (String::new(), Vec::new(), 0);
    let (mut raw, mut floats, mut ints, mut doubles) = (None, Vec::new(), Vec::new(), Vec::new());
    for field in Fields::new(bytes) {
        match field? {
            (1, value) => value.varints(&mut dims)?,
            (2, value) => data_type = value.varint()?,
            (4, value) => value.floats(&mut floats)?,
            // int32_data (also bool and float16 bits) and int64_data, as varints.
            (5 | 7, value) => value.varints(&mut ints)?,
            (8, value) => name = value.string()?,
            (9, value) => raw = Some(value.bytes()?),
            (10, value) => value.doubles(&mut doubles)?,
            (13 | 14, _) => bail!("tensor `{name}` keeps its data in another file"),
            _ => {}
        }
    }
    let (kind, width) = kind_of(data_type).with_context(|| format!("tensor `{name}`"))?;
    let count: i64 = dims.iter().product();
    let tensor = if let Some(raw) = raw {
        ensure!(
            raw.len() == count as usize * width,
            "tensor `{name}` has {} bytes for {count} values of {width}",
            raw.len()
        );
        Tensor::from_data_size(raw, &dims, kind)
    } else {
        let typed = match kind {
            Kind::Float => Tensor::from_slice(&floats),
            Kind::Double => Tensor::from_slice(&doubles),
            _ => Tensor::from_slice(&ints).to_kind(kind),
        };
        ensure!(
            typed.numel() == count as usize,
            "tensor `{name}` has {} values for its shape {dims:?}",
            typed.numel()
        );
        typed.reshape(&dims)
    };
    Ok((name, tensor))
}

/// A field's value as the wire gives it.
enum Wire<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Bytes(&'a [u8]),
    Fixed32([u8; 4]),
}

impl<'a> Wire<'a> {
    fn bytes(self) -> Result<&'a [u8]> {
        match self {
            Wire::Bytes(b) => Ok(b),
            _ => bail!("a field that should be length-delimited is not"),
        }
    }

    fn string(self) -> Result<String> {
        Ok(String::from_utf8(self.bytes()?.to_vec())?)
    }

    fn varint(self) -> Result<u64> {
        match self {
            Wire::Varint(v) => Ok(v),
            _ => bail!("a field that should be a varint is not"),
        }
    }

    /// A repeated varint field, packed or one value per field.
    fn varints(self, out: &mut Vec<i64>) -> Result<()> {
        match self {
            Wire::Varint(v) => out.push(v as i64),
            Wire::Bytes(mut b) => {
                while !b.is_empty() {
                    out.push(read_varint(&mut b)? as i64);
                }
            }
            _ => bail!("a repeated integer field has the wrong wire type"),
        }
        Ok(())
    }

    fn floats(self, out: &mut Vec<f32>) -> Result<()> {
        match self {
            Wire::Fixed32(b) => out.push(f32::from_le_bytes(b)),
            Wire::Bytes(b) if b.len() % 4 == 0 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))),
            ),
            _ => bail!("a repeated float field has the wrong wire type or length"),
        }
        Ok(())
    }

    fn doubles(self, out: &mut Vec<f64>) -> Result<()> {
        match self {
            Wire::Fixed64(b) => out.push(f64::from_le_bytes(b)),
            Wire::Bytes(b) if b.len() % 8 == 0 => out.extend(
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))),
            ),
            _ => bail!("a repeated double field has the wrong wire type or length"),
        }
        Ok(())
    }
}

fn read_varint(bytes: &mut &[u8]) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or_else(|| anyhow!("truncated"))?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("a varint longer than ten bytes")
}

fn take<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N]> {
    ensure!(bytes.len() >= N, "truncated");
    let (head, rest) = bytes.split_at(N);
    *bytes = rest;
    Ok(head.try_into().expect("N bytes"))
}

/// The fields of one protobuf message, in order: (field number, value).
struct Fields<'a> {
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    fn next_field(&mut self) -> Result<(u64, Wire<'a>)> {
        let key = read_varint(&mut self.bytes)?;
        let value = match key & 7 {
            0 => Wire::Varint(read_varint(&mut self.bytes)?),
            1 => Wire::Fixed64(take::<8>(&mut self.bytes)?),
            2 => {
                let len = read_varint(&mut self.bytes)? as usize;
                ensure!(self.bytes.len() >= len, "truncated");
                let (head, rest) = self.bytes.split_at(len);
                self.bytes = rest;
                Wire::Bytes(head)
            }
            5 => Wire::Fixed32(take::<4>(&mut self.bytes)?),
            other => bail!("protobuf wire type {other}"),
        };
        Ok((key >> 3, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Wire<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() {
            return None;
        }
        let field = self.next_field();
        if field.is_err() {
            self.bytes = &[];
        }
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field key and a length-delimited value.
    fn message(number: u64, body: &[u8]) -> Vec<u8> {
        let mut out = varint(number << 3 | 2);
        out.extend(varint(body.len() as u64));
        out.extend_from_slice(body);
        out
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    fn tagged_varint(number: u64, v: u64) -> Vec<u8> {
        let mut out = varint(number << 3);
        out.extend(varint(v));
        out
    }

    fn conv_model() -> Vec<u8> {
        let mut weight = Vec::new();
        // dims packed [2, 3]; data_type FLOAT; name; raw_data.
        weight.extend(message(1, &[2, 3]));
        weight.extend(tagged_varint(2, 1));
        weight.extend(message(8, b"w"));
        let raw: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        weight.extend(message(9, &raw));
        let mut shape = Vec::new();
        // dims unpacked [2]; INT64; int64_data unpacked, one negative.
        shape.extend(tagged_varint(1, 2));
        shape.extend(tagged_varint(2, 7));
        shape.extend(tagged_varint(7, 5));
        shape.extend(tagged_varint(7, -1i64 as u64));
        shape.extend(message(8, b"s"));
        let mut pads = message(1, b"pads");
        pads.extend(message(8, &[1, 0, 1, 0]));
        pads.extend(tagged_varint(20, 7));
        let mut group = message(1, b"group");
        group.extend(tagged_varint(3, 2));
        group.extend(tagged_varint(20, 2));
        let mut node = message(1, b"x");
        node.extend(message(1, b"w"));
        node.extend(message(2, b"y"));
        node.extend(message(4, b"Conv"));
        node.extend(message(5, &pads));
        node.extend(message(5, &group));
        let mut graph = message(1, &node);
        graph.extend(message(5, &weight));
        graph.extend(message(5, &shape));
        let mut model = tagged_varint(1, 8);
        model.extend(message(7, &graph));
        model
    }

    #[test]
    fn nodes_attributes_and_initializers_are_read() {
        let graph = OnnxGraph::parse(&conv_model(), Path::new("m.onnx")).unwrap();
        let conv = graph.nodes_of("Conv").next().unwrap();
        assert_eq!(conv.inputs, ["x", "w"]);
        assert_eq!(conv.outputs, ["y"]);
        assert_eq!(conv.ints("pads", &[]).unwrap(), [1, 0, 1, 0]);
        assert_eq!(conv.ints("dilations", &[1, 1]).unwrap(), [1, 1]);
        assert!(conv.int("pads", 0).is_err());
        assert_eq!(conv.int("group", 1).unwrap(), 2);
        let w = graph.initializer("w").unwrap();
        assert_eq!(w.size(), [2, 3]);
        assert_eq!(
            Vec::<f32>::try_from(w.flatten(0, -1)).unwrap(),
            [0., 1., 2., 3., 4., 5.]
        );
        let s = graph.initializer("s").unwrap();
        assert_eq!(s.kind(), Kind::Int64);
        assert_eq!(Vec::<i64>::try_from(s).unwrap(), [5, -1]);
        assert_eq!(graph.consumers("w").count(), 1);
        assert!(graph.initializer("missing").is_err());
    }

    #[test]
    fn a_cut_file_or_another_format_is_refused_by_name() {
        let model = conv_model();
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("cut.onnx", &model[..model.len() - 5]),
            ("zip.onnx", &b"PK\x03\x04 not a protobuf"[..]),
            ("empty.onnx", &b""[..]),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = format!("{:#}", OnnxGraph::read(&path).err().unwrap());
            assert!(
                err.contains(name) && err.contains("not an ONNX model"),
                "{err}"
            );
        }
    }
}
