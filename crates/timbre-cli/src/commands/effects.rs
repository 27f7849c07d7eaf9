//! `timbre effects list|show|save|delete`: effects presets, the built-in ones and those saved in
//! the library, each an effect chain in JSON.

use super::open_library;
use crate::output::Output;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use timbre_core::db::effect_presets::{self, EffectPreset};

#[derive(clap::Subcommand)]
pub enum Command {
    /// The built-in presets, then the saved ones.
    List,
    /// A preset's chain, as the JSON `save` takes.
    Show { name: String },
    /// Save a preset's JSON file under a name (replacing a saved preset of that name).
    Save { name: String, file: PathBuf },
    /// Delete a saved preset.
    Delete { name: String },
}

pub fn run(data_dir: Option<&Path>, out: &Output, cmd: Command) -> Result<ExitCode> {
    let library = open_library(data_dir)?;
    match cmd {
        Command::List => {
            let presets = effect_presets::list(&library.conn())?;
            out.print(&presets, || {
                presets
                    .iter()
                    .map(preset_line)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Show { name } => {
            let preset = effect_presets::get(&library.conn(), &name)?;
            out.print(&preset, || preset.chain.to_json());
        }
        Command::Save { name, file } => {
            let chain = timbre_core::effects::read_file(&file)?;
            let preset = library.edit(|conn| effect_presets::save(conn, &name, &chain))?;
            out.print(&preset, || format!("saved      {}", preset_line(&preset)));
        }
        Command::Delete { name } => {
            library.edit(|conn| effect_presets::delete(conn, &name))?;
            out.print(&serde_json::json!({ "deleted": name }), || {
                format!("deleted    {name}")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn preset_line(preset: &EffectPreset) -> String {
    let effects: Vec<&str> = preset.chain.effects.iter().map(|e| e.name()).collect();
    let origin = if preset.built_in { "built-in" } else { "saved" };
    format!("{:<24} {origin:<9} {}", preset.name, effects.join(" → "))
}
