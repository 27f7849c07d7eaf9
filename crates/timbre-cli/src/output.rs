use serde::Serialize;
use timbre_core::ErrorReport;

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
