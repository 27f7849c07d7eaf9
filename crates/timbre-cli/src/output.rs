//! How the CLI prints: results on stdout as text or, with `--json`, as JSON; notes on stderr;
//! errors as their `ErrorReport`'s message or JSON; control characters in names shown as escapes.

use serde::Serialize;
use std::borrow::Cow;
use timbre_core::ErrorReport;

/// `text` for a terminal: control characters (a line break, a tab, an escape that would recolour
/// or move the cursor) shown as escapes (`\n`, `\t`, `\x1b`), everything else as it is. Names come
/// from file names and users; JSON output keeps them exact.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => shown.push_str("\\n"),
            '\t' => shown.push_str("\\t"),
            '\r' => shown.push_str("\\r"),
            // The control characters (Unicode's Cc) all lie below U+0100.
            c if c.is_control() => shown.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints `value` as JSON, or `human` otherwise.
    pub fn print<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).expect("values print as JSON")
            );
        } else {
            let text = human();
            if !text.is_empty() {
                println!("{text}");
            }
        }
    }

    /// One value of a stream of them: a line of compact JSON each, or `human`.
    pub fn line<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string(value).expect("values print as JSON")
            );
        } else {
            println!("{}", human());
        }
    }

    /// Progress and notes go to stderr so stdout stays parseable.
    pub fn note(&self, text: &str) {
        if !self.json {
            eprintln!("{text}");
        }
    }

    pub fn error(&self, err: &anyhow::Error) {
        let report = ErrorReport::from_anyhow(err);
        if self.json {
            eprintln!(
                "{}",
                serde_json::to_string(&report).expect("errors print as JSON")
            );
        } else {
            eprintln!("timbre: {}", report.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn control_characters_are_shown_as_escapes() {
        assert_eq!(escape_controls("Ada take 1 é"), "Ada take 1 é");
        assert_eq!(
            escape_controls("a\nb\tc\x1b[31md\r\u{7f}\u{85}"),
            "a\\nb\\tc\\x1b[31md\\r\\x7f\\x85"
        );
    }
}
