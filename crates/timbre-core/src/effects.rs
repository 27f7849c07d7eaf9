//! Which effects chain a command asked for: the name of a preset (built-in or saved in the
//! library) or the path of a preset's JSON file, one argument for the CLI and the app.

use std::path::Path;

use anyhow::Result;
use timbre_audio::effects::EffectChain;

use crate::db::effect_presets;
use crate::library::Library;

/// A file when `preset_or_file` names one, else a preset; neither is an error naming both.
pub fn resolve(library: &Library, preset_or_file: &str) -> Result<EffectChain> {
    let path = Path::new(preset_or_file);
    if path.is_file() {
        return read_file(path);
    }
    match effect_presets::get(&library.conn(), preset_or_file) {
        Ok(preset) => Ok(preset.chain),
        Err(err) if crate::error::kind_of(&err) == crate::ErrorKind::NotFound => {
            Err(crate::error::not_found(format!(
                "{preset_or_file:?} is neither an effects preset nor a file (`timbre effects list` shows the presets)"
            )))
        }
        Err(err) => Err(err),
    }
}

/// A preset's JSON file, its problems named with the file.
pub fn read_file(path: &Path) -> Result<EffectChain> {
    let json = std::fs::read_to_string(path).map_err(|e| {
        crate::error::invalid_input(format!("{}: cannot read: {e}", path.display()))
    })?;
    EffectChain::from_json(&json)
        .map_err(|e| crate::error::invalid_input(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_name_or_a_file_resolves_and_neither_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(&dir.path().join("lib")).unwrap();
        assert!(!resolve(&library, "Hall").unwrap().effects.is_empty());
        let file = dir.path().join("mine.json");
        std::fs::write(&file, r#"{"effects":[{"effect":"gain","db":-3}]}"#).unwrap();
        let chain = resolve(&library, file.to_str().unwrap()).unwrap();
        assert_eq!(chain.effects.len(), 1);
        std::fs::write(&file, r#"{"effects":[{"effect":"flanger"}]}"#).unwrap();
        let err = resolve(&library, file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "{}: effect 1 (flanger): unknown effect",
                file.display()
            )),
            "{err}"
        );
        let err = resolve(&library, "Nope").unwrap_err().to_string();
        assert!(err.contains("\"Nope\" is neither"), "{err}");
    }
}
