//! Decoding of the pickle opcodes' literal arguments: the text forms of protocol 0, Python 2
//! byte strings, and integers wider than 64 bits.

use anyhow::{Result, anyhow, bail};

use super::graph::Node;

/// "module.Name", with the Python 2 module names protocol 2 writes mapped to Python 3's.
pub(super) fn global_name(module: &str, name: &str) -> String {
    let module = match module {
        "__builtin__" => "builtins",
        "copy_reg" => "copyreg",
        other => other,
    };
    format!("{module}.{name}")
}

/// Two's complement little-endian bytes as an int (128 bits at most; wider ones, which no
/// checkpoint field needs exactly, become the nearest float).
pub(super) fn little_endian_int(bytes: &[u8]) -> Node {
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    if bytes.len() <= 16 {
        let mut buffer = [if negative { 0xff } else { 0 }; 16];
        buffer[..bytes.len()].copy_from_slice(bytes);
        return Node::Int(i128::from_le_bytes(buffer));
    }
    let magnitude = bytes
        .iter()
        .rev()
        .fold(0.0, |acc, &b| acc * 256.0 + f64::from(b));
    Node::Float(if negative {
        magnitude - 2f64.powi(8 * bytes.len() as i32)
    } else {
        magnitude
    })
}

pub(super) fn parse_int(text: &str) -> Result<Node> {
    let text = text.trim();
    match text.parse::<i128>() {
        Ok(value) => Ok(Node::Int(value)),
        Err(_) => text
            .parse::<f64>()
            .map(Node::Float)
            .map_err(|_| anyhow!("`{text}` is not an integer")),
    }
}

pub(super) fn parse_float(text: &str) -> Result<Node> {
    let value = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("FLOAT `{text}` is not a number"))?;
    Ok(Node::Float(value))
}

pub(super) fn parse_index(text: &str) -> Result<u64> {
    text.trim()
        .parse()
        .map_err(|_| anyhow!("memo index `{text}` is not a number"))
}

/// Python 2 byte strings: UTF-8 when they are, else Latin-1 (one char per byte).
pub(super) fn latin1_or_utf8(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// The argument of protocol 0's STRING: a quoted Python 2 literal with backslash escapes.
pub(super) fn python_string_literal(line: &str) -> Result<String> {
    let body = line
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| line.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
        .ok_or_else(|| anyhow!("STRING argument is not quoted"))?;
    let mut bytes = Vec::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buffer = [0; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        let escaped = chars
            .next()
            .ok_or_else(|| anyhow!("STRING ends in a backslash"))?;
        let byte = match escaped {
            'n' => b'\n',
            't' => b'\t',
            'r' => b'\r',
            '0' => 0,
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                u8::from_str_radix(&hex, 16).map_err(|_| anyhow!("bad \\x escape in STRING"))?
            }
            other if other.is_ascii() => other as u8,
            _ => bail!("bad escape in STRING"),
        };
        bytes.push(byte);
    }
    Ok(latin1_or_utf8(&bytes))
}

/// The argument of protocol 0's UNICODE: raw-unicode-escape, i.e. Latin-1 bytes with `\uXXXX`
/// and `\UXXXXXXXX` escapes for the other characters.
pub(super) fn raw_unicode_escape(line: &[u8]) -> Result<String> {
    let mut text = String::with_capacity(line.len());
    let mut rest = line;
    while let Some((&byte, after)) = rest.split_first() {
        let digits = match after.first() {
            Some(b'u') if byte == b'\\' => 4,
            Some(b'U') if byte == b'\\' => 8,
            _ => {
                text.push(char::from(byte));
                rest = after;
                continue;
            }
        };
        let hex = after
            .get(1..1 + digits)
            .and_then(|h| std::str::from_utf8(h).ok())
            .ok_or_else(|| anyhow!("bad escape in UNICODE"))?;
        let code = u32::from_str_radix(hex, 16).map_err(|_| anyhow!("bad escape in UNICODE"))?;
        text.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
        rest = &after[1 + digits..];
    }
    Ok(text)
}
