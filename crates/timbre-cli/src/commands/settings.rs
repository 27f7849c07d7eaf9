//! `timbre settings list|set`: show every setting, or change one (its value given as JSON, or as
//! bare text for a text setting).

use super::open_library;
use crate::output::Output;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use timbre_core::settings::Settings;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Show every setting.
    List,
    /// Change a setting (the value is JSON: 5, 2.5, true; text settings also take bare text).
    Set {
        key: String,
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    let settings = match cmd {
        Command::List => library.settings()?,
        Command::Set { key, value } => Settings::set(&library.conn(), &key, &value)?,
    };
    let value = serde_json::to_value(&settings)?;
    out.print(&value, || {
        value
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    });
    Ok(ExitCode::SUCCESS)
}
