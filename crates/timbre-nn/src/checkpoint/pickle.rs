//! A pickle machine of our own for protocols 0 to 5, following the opcode semantics of
//! CPython's `Lib/pickle.py` (`_Unpickler`, python/cpython) for every opcode `torch.save` and
//! the `pickle` module write, except the copyreg extension registry and out-of-band buffers.
//!
//! It builds a `Graph` rather than a tree. Every push consumes input bytes and every length
//! field is checked against the bytes left, so the stack, the memo and the graph stay bounded by
//! the input, and nothing here recurses.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow, bail};

use super::graph::{DictNode, Graph, Id, Node};
use super::literals::{
    global_name, latin1_or_utf8, little_endian_int, parse_float, parse_index, parse_int,
    python_string_literal, raw_unicode_escape,
};
use super::torch_objects;

/// One unpickled stream: its graph, its root, and where its STOP ended in the input.
pub(crate) struct Unpickled {
    pub graph: Graph,
    pub root: Id,
    pub end: usize,
}

/// Runs the pickle at the start of `data` up to its STOP.
pub(crate) fn unpickle(data: &[u8]) -> Result<Unpickled> {
    let mut machine = Machine {
        input: data,
        pos: 0,
        graph: Graph::default(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
    };
    loop {
        let at = machine.pos;
        if let Some(root) = machine
            .step()
            .with_context(|| format!("pickle byte {at}"))?
        {
            let end = machine.pos;
            return Ok(Unpickled {
                graph: machine.graph,
                root,
                end,
            });
        }
    }
}

struct Machine<'a> {
    input: &'a [u8],
    pos: usize,
    graph: Graph,
    stack: Vec<Id>,
    /// Stack lengths at each MARK.
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
}

impl<'a> Machine<'a> {
    /// Executes one opcode; the root once STOP is reached.
    fn step(&mut self) -> Result<Option<Id>> {
        let opcode = self.take(1)?[0];
        if let Some(node) = self.literal(opcode)? {
            let id = self.graph.add(node);
            self.stack.push(id);
            return Ok(None);
        }
        let pushed = match opcode {
            b'.' => return self.pop().map(Some),
            b'(' => {
                self.marks.push(self.stack.len());
                None
            }
            b'0' if self.stack.len() > self.floor() => self.pop().map(|_| None)?,
            b'0' | b'1' => self.pop_mark().map(|_| None)?,
            b'2' => Some(self.top()?),
            b't' | b'l' | 0x91 => {
                let items = self.pop_mark()?;
                let node = match opcode {
                    b't' => Node::Tuple(items),
                    b'l' => Node::List(items),
                    _ => Node::Set(items),
                };
                Some(self.graph.add(node))
            }
            0x85..=0x87 => {
                let items = self.pop_n(usize::from(opcode - 0x84))?;
                Some(self.graph.add(Node::Tuple(items)))
            }
            b'd' => {
                let items = self.pop_mark()?;
                let dict = self.graph.add(Node::Dict(DictNode::default()));
                self.set_items(dict, items)?;
                Some(dict)
            }
            b'a' => {
                let value = self.pop()?;
                self.graph.append(self.top()?, value)?;
                None
            }
            b'e' | 0x90 => {
                let items = self.pop_mark()?;
                let target = self.top()?;
                for item in items {
                    self.graph.append(target, item)?;
                }
                None
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                self.graph.set_item(self.top()?, key, value)?;
                None
            }
            b'u' => {
                let items = self.pop_mark()?;
                self.set_items(self.top()?, items)?;
                None
            }
            b'g' | b'h' | b'j' => {
                let index = self.memo_index(opcode)?;
                Some(
                    *self
                        .memo
                        .get(&index)
                        .ok_or_else(|| anyhow!("memo entry {index} is not set"))?,
                )
            }
            b'p' | b'q' | b'r' | 0x94 => {
                let index = self.memo_index(opcode)?;
                self.memo.insert(index, self.top()?);
                None
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(module), Some(name)) =
                    (self.graph.as_str(module), self.graph.as_str(name))
                else {
                    bail!("STACK_GLOBAL needs two strings")
                };
                Some(self.graph.add(Node::Global(global_name(module, name))))
            }
            b'R' | 0x81 => {
                let args = self.pop()?;
                let callable = self.pop()?;
                Some(self.call(callable, self.tuple_items(args)?)?)
            }
            0x92 => {
                let kwargs = self.pop()?;
                let args = self.pop()?;
                let class = self.pop()?;
                let mut args = self.tuple_items(args)?;
                if !matches!(self.graph.node(kwargs), Node::Dict(dict) if dict.entries.is_empty()) {
                    args.push(kwargs);
                }
                Some(self.call(class, args)?)
            }
            b'i' => {
                let module = self.line()?;
                let class = Node::Global(global_name(module, self.line()?));
                let class = self.graph.add(class);
                let args = self.pop_mark()?;
                Some(self.call(class, args)?)
            }
            b'o' => {
                let mut items = self.pop_mark()?.into_iter();
                let class = items.next().ok_or_else(|| anyhow!("OBJ without a class"))?;
                Some(self.call(class, items.collect())?)
            }
            b'b' => {
                let state = self.pop()?;
                self.graph.build(self.top()?, state);
                None
            }
            b'P' => {
                let pid = Node::Str(self.line()?.into());
                let pid = self.graph.add(pid);
                Some(torch_objects::persistent_load(&mut self.graph, pid)?)
            }
            b'Q' => {
                let pid = self.pop()?;
                Some(torch_objects::persistent_load(&mut self.graph, pid)?)
            }
            0x80 => match self.take(1)?[0] {
                protocol if protocol > 5 => bail!("pickle protocol {protocol} is newer than 5"),
                _ => None,
            },
            0x95 => match self.u64_len()? {
                frame if frame > self.input.len() - self.pos => {
                    bail!("FRAME of {frame} bytes runs past the end of the data")
                }
                _ => None,
            },
            0x98 => None,
            0x97 => bail!("NEXT_BUFFER: out-of-band buffers are not supported"),
            0x82..=0x84 => bail!("the copyreg extension registry (EXT opcodes) is not supported"),
            other => bail!("unknown opcode 0x{other:02x}"),
        };
        self.stack.extend(pushed);
        Ok(None)
    }

    /// The node a value opcode pushes; None for the other opcodes.
    fn literal(&mut self, opcode: u8) -> Result<Option<Node>> {
        Ok(Some(match opcode {
            b'N' => Node::None,
            0x88 => Node::Bool(true),
            0x89 => Node::Bool(false),
            b'I' => match self.line()? {
                "00" => Node::Bool(false),
                "01" => Node::Bool(true),
                line => parse_int(line)?,
            },
            b'L' => parse_int(self.line()?.trim_end_matches('L'))?,
            b'J' => Node::Int(i32::from_le_bytes(self.array()?).into()),
            b'K' => Node::Int(self.take(1)?[0].into()),
            b'M' => Node::Int(u16::from_le_bytes(self.array()?).into()),
            0x8a | 0x8b => little_endian_int(self.counted(opcode)?),
            b'F' => parse_float(self.line()?)?,
            b'G' => Node::Float(f64::from_be_bytes(self.array()?)),
            b'S' => Node::Str(python_string_literal(self.line()?)?.into()),
            b'V' => Node::Str(raw_unicode_escape(self.line_bytes()?)?.into()),
            b'T' | b'U' => Node::Str(latin1_or_utf8(self.counted(opcode)?).into()),
            b'X' | 0x8c | 0x8d => Node::Str(String::from_utf8_lossy(self.counted(opcode)?).into()),
            b'B' | b'C' | 0x8e | 0x96 => Node::Bytes(self.counted(opcode)?.to_vec()),
            b')' => Node::Tuple(Vec::new()),
            b']' => Node::List(Vec::new()),
            b'}' => Node::Dict(DictNode::default()),
            0x8f => Node::Set(Vec::new()),
            b'c' => {
                let module = self.line()?;
                Node::Global(global_name(module, self.line()?))
            }
            _ => return Ok(None),
        }))
    }

    fn call(&mut self, callable: Id, args: Vec<Id>) -> Result<Id> {
        let Node::Global(name) = self.graph.node(callable) else {
            bail!(
                "call of {}, not of a class or function",
                self.graph.kind_name(callable)
            )
        };
        let name = name.clone();
        torch_objects::call(&mut self.graph, &name, args).with_context(|| format!("calling {name}"))
    }

    fn tuple_items(&self, args: Id) -> Result<Vec<Id>> {
        let items = self.graph.items(args);
        let items = items
            .ok_or_else(|| anyhow!("arguments are {}, not a tuple", self.graph.kind_name(args)))?;
        Ok(items.to_vec())
    }

    fn set_items(&mut self, target: Id, items: Vec<Id>) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            bail!("SETITEMS with an odd number of items");
        }
        for pair in items.chunks_exact(2) {
            self.graph.set_item(target, pair[0], pair[1])?;
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let left = self.input.len() - self.pos;
        if len > left {
            bail!("truncated: needs {len} bytes, {left} left");
        }
        let input = self.input;
        self.pos += len;
        Ok(&input[self.pos - len..self.pos])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u64_len(&mut self) -> Result<usize> {
        let len = u64::from_le_bytes(self.array()?);
        usize::try_from(len).map_err(|_| anyhow!("length {len} does not fit in memory"))
    }

    /// The payload of an opcode with a 1, 4 or 8-byte length field.
    fn counted(&mut self, opcode: u8) -> Result<&'a [u8]> {
        let len = match opcode {
            b'U' | b'C' | 0x8a | 0x8c => usize::from(self.take(1)?[0]),
            b'T' | b'X' | b'B' | 0x8b => u32::from_le_bytes(self.array()?) as usize,
            _ => self.u64_len()?,
        };
        self.take(len)
    }

    /// The memo index of GET/PUT (text), BINGET/BINPUT (1 byte), LONG_BINGET/LONG_BINPUT (4
    /// bytes) or MEMOIZE (the next free one).
    fn memo_index(&mut self, opcode: u8) -> Result<u64> {
        Ok(match opcode {
            b'g' | b'p' => parse_index(self.line()?)?,
            b'h' | b'q' => self.take(1)?[0].into(),
            b'j' | b'r' => u32::from_le_bytes(self.array()?).into(),
            _ => self.memo.len() as u64,
        })
    }

    /// A text argument of the protocol 0 opcodes, up to its newline.
    fn line(&mut self) -> Result<&'a str> {
        std::str::from_utf8(self.line_bytes()?).map_err(|_| anyhow!("text argument is not UTF-8"))
    }

    fn line_bytes(&mut self) -> Result<&'a [u8]> {
        let input = self.input;
        let rest = &input[self.pos..];
        let end = rest.iter().position(|&b| b == b'\n');
        let end = end.ok_or_else(|| anyhow!("truncated: line without newline"))?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }

    /// The stack length below which the current MARK's items end.
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> Result<Id> {
        self.top()?;
        self.stack.pop().ok_or_else(|| anyhow!("stack underflow"))
    }

    fn pop_n(&mut self, count: usize) -> Result<Vec<Id>> {
        if self.stack.len() < self.floor() + count {
            bail!("stack underflow");
        }
        Ok(self.stack.split_off(self.stack.len() - count))
    }

    fn top(&self) -> Result<Id> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.floor() => Ok(id),
            _ => bail!("stack underflow"),
        }
    }

    fn pop_mark(&mut self) -> Result<Vec<Id>> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| anyhow!("no MARK to pop to"))?;
        Ok(self.stack.split_off(mark))
    }
}

#[cfg(test)]
mod tests;
