//! fairseq's `conv_feature_layers` setting (facebookresearch/fairseq
//! `fairseq/models/hubert/hubert.py`): the feature extractor's convolutions as a Python
//! expression, read without Python.

use anyhow::{Context, Result, bail, ensure};

/// One convolution of fairseq's feature extractor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvLayerSpec {
    /// Output channels (the first of fairseq's tuple).
    pub dim: i64,
    /// Kernel size (the second).
    pub kernel: i64,
    /// Stride (the third).
    pub stride: i64,
}

/// The most convolutions a `conv_feature_layers` may describe (the real ones have 7).
const MAX_CONV_LAYERS: usize = 64;

/// fairseq's `conv_feature_layers`, a Python expression of lists of `(dim, kernel, stride)`
/// tuples joined by `+` and repeated by `*`, e.g.
/// `"[(512,10,5)] + [(512,3,2)] * 4 + [(512,2,2)] * 2"`.
pub fn parse_conv_feature_layers(text: &str) -> Result<Vec<ConvLayerSpec>> {
    let mut parser = LiteralParser {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let layers = parser.sum()?;
    parser.skip_spaces();
    ensure!(
        parser.pos == parser.bytes.len(),
        "unexpected {:?} at offset {}",
        &text[parser.pos..],
        parser.pos
    );
    ensure!(!layers.is_empty(), "no convolutions");
    Ok(layers)
}

enum Operand {
    Layers(Vec<ConvLayerSpec>),
    Count(i64),
}

struct LiteralParser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl LiteralParser<'_> {
    fn skip_spaces(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, expected: u8) -> bool {
        let found = self.peek() == Some(expected);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, expected: u8) -> Result<()> {
        ensure!(
            self.eat(expected),
            "expected `{}` at offset {}",
            expected as char,
            self.pos
        );
        Ok(())
    }

    fn sum(&mut self) -> Result<Vec<ConvLayerSpec>> {
        let mut layers = self.product()?;
        while self.eat(b'+') {
            layers.extend(self.product()?);
            ensure!(
                layers.len() <= MAX_CONV_LAYERS,
                "more than {MAX_CONV_LAYERS} convolutions"
            );
        }
        Ok(layers)
    }

    fn product(&mut self) -> Result<Vec<ConvLayerSpec>> {
        let mut acc = self.operand()?;
        while self.eat(b'*') {
            acc = match (acc, self.operand()?) {
                (Operand::Layers(layers), Operand::Count(n))
                | (Operand::Count(n), Operand::Layers(layers)) => {
                    ensure!(
                        (n.max(0) as usize).saturating_mul(layers.len()) <= MAX_CONV_LAYERS,
                        "more than {MAX_CONV_LAYERS} convolutions"
                    );
                    Operand::Layers(layers.repeat(n.max(0) as usize))
                }
                (Operand::Count(a), Operand::Count(b)) => Operand::Count(a.saturating_mul(b)),
                (Operand::Layers(_), Operand::Layers(_)) => {
                    bail!("a list multiplied by a list at offset {}", self.pos)
                }
            };
        }
        match acc {
            Operand::Layers(layers) => Ok(layers),
            Operand::Count(n) => {
                bail!("a bare number {n} where a list of (dim, kernel, stride) was expected")
            }
        }
    }

    fn operand(&mut self) -> Result<Operand> {
        match self.peek() {
            Some(b'[') => {
                self.pos += 1;
                let mut layers = Vec::new();
                while !self.eat(b']') {
                    layers.push(self.layer()?);
                    ensure!(
                        layers.len() <= MAX_CONV_LAYERS,
                        "more than {MAX_CONV_LAYERS} convolutions"
                    );
                    if !self.eat(b',') {
                        self.expect(b']')?;
                        break;
                    }
                }
                Ok(Operand::Layers(layers))
            }
            Some(b'(') => {
                self.pos += 1;
                let layers = self.sum()?;
                self.expect(b')')?;
                Ok(Operand::Layers(layers))
            }
            _ => Ok(Operand::Count(self.number()?)),
        }
    }

    fn layer(&mut self) -> Result<ConvLayerSpec> {
        self.expect(b'(')?;
        let dim = self.number()?;
        self.expect(b',')?;
        let kernel = self.number()?;
        self.expect(b',')?;
        let stride = self.number()?;
        self.eat(b',');
        self.expect(b')')?;
        ensure!(
            dim > 0 && kernel > 0 && stride > 0,
            "convolution ({dim}, {kernel}, {stride}) must have positive sizes"
        );
        Ok(ConvLayerSpec {
            dim,
            kernel,
            stride,
        })
    }

    fn number(&mut self) -> Result<i64> {
        self.skip_spaces();
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        ensure!(self.pos > start, "expected a number at offset {start}");
        let digits = std::str::from_utf8(&self.bytes[start..self.pos])?;
        digits
            .parse()
            .with_context(|| format!("number {digits} at offset {start}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dim: i64, kernel: i64, stride: i64) -> ConvLayerSpec {
        ConvLayerSpec {
            dim,
            kernel,
            stride,
        }
    }

    #[test]
    fn parses_the_standard_conv_feature_layers() {
        let layers =
            parse_conv_feature_layers("[(512,10,5)] + [(512,3,2)] * 4 + [(512,2,2)] * 2").unwrap();
        let expected: Vec<_> = [spec(512, 10, 5)]
            .into_iter()
            .chain([spec(512, 3, 2); 4])
            .chain([spec(512, 2, 2); 2])
            .collect();
        assert_eq!(layers, expected);
    }

    #[test]
    fn parses_spacing_trailing_commas_parentheses_and_left_repeats() {
        let layers =
            parse_conv_feature_layers(" [ (32, 10, 5), ] + 2 * ([(32,3,2)] + [(16 ,2,2,)]) ")
                .unwrap();
        assert_eq!(
            layers,
            vec![
                spec(32, 10, 5),
                spec(32, 3, 2),
                spec(16, 2, 2),
                spec(32, 3, 2),
                spec(16, 2, 2)
            ]
        );
    }

    #[test]
    fn rejects_malformed_conv_feature_layers() {
        for bad in [
            "",
            "[(512,10)]",
            "[(512,10,5)] +",
            "[(512,10,5)] * [(1,1,1)]",
            "[(512,10,5)] * 100",
            "4",
            "[(0,3,2)]",
        ] {
            assert!(parse_conv_feature_layers(bad).is_err(), "{bad:?} parsed");
        }
    }
}
