//! Effects presets: named effect chains saved by the user, beside a few built-in ones that are
//! offered without being stored (their names are reserved).

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use timbre_audio::effects::EffectChain;

pub(super) const CREATE: &str = "
CREATE TABLE effect_presets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    chain TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);";

const MAX_NAME_CHARS: usize = 64;

/// The built-in presets, as their JSON (the format a saved preset's file has).
const BUILT_IN: [(&str, &str); 3] = [
    (
        "Clean vocal",
        r#"{"effects": [
            {"effect": "high_pass", "cutoff_hz": 80},
            {"effect": "de_esser", "frequency_hz": 6500, "threshold_db": -28, "ratio": 3},
            {"effect": "compressor", "threshold_db": -20, "ratio": 3, "knee_db": 6,
             "attack_ms": 8, "release_ms": 120, "makeup_db": 4},
            {"effect": "peaking_eq", "frequency_hz": 3000, "gain_db": 2, "q": 0.8},
            {"effect": "limiter", "ceiling_db": -1}
        ]}"#,
    ),
    (
        "Radio",
        r#"{"effects": [
            {"effect": "high_pass", "cutoff_hz": 300},
            {"effect": "low_pass", "cutoff_hz": 3400, "q": 0.9},
            {"effect": "peaking_eq", "frequency_hz": 1500, "gain_db": 5, "q": 1.2},
            {"effect": "compressor", "threshold_db": -24, "ratio": 6, "attack_ms": 3,
             "release_ms": 80, "makeup_db": 8},
            {"effect": "limiter", "ceiling_db": -1}
        ]}"#,
    ),
    (
        "Hall",
        r#"{"effects": [
            {"effect": "high_pass", "cutoff_hz": 60},
            {"effect": "reverb", "decay_seconds": 2.4, "pre_delay_ms": 30, "damping": 0.4,
             "mix": 0.3},
            {"effect": "limiter", "ceiling_db": -1}
        ]}"#,
    ),
];

/// A named effect chain: a built-in one or a row of `effect_presets`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct EffectPreset {
    /// Its name: 1 to 64 characters, unique (built-in names are reserved whatever their case).
    pub name: String,
    /// The effects, in the order they apply.
    pub chain: EffectChain,
    /// Offered by the app, not stored; cannot be replaced or deleted.
    pub built_in: bool,
    /// When it was first saved (UTC, RFC 3339); None for a built-in preset.
    pub created_at: Option<String>,
    /// When it was last saved (UTC, RFC 3339); None for a built-in preset.
    pub updated_at: Option<String>,
}

/// The built-in presets ("Clean vocal", "Radio", "Hall"), in that order.
pub fn built_in() -> Vec<EffectPreset> {
    BUILT_IN
        .iter()
        .map(|(name, json)| EffectPreset {
            name: (*name).to_string(),
            chain: EffectChain::from_json(json).expect("the built-in presets are valid"),
            built_in: true,
            created_at: None,
            updated_at: None,
        })
        .collect()
}

fn is_built_in(name: &str) -> bool {
    BUILT_IN
        .iter()
        .any(|(built_in, _)| built_in.eq_ignore_ascii_case(name))
}

/// The built-in presets, then the saved ones by name.
pub fn list(conn: &Connection) -> Result<Vec<EffectPreset>> {
    let mut stmt = conn.prepare(
        "SELECT name, chain, created_at, updated_at FROM effect_presets ORDER BY name COLLATE NOCASE",
    )?;
    let saved = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?
        .map(|row| {
            let (name, chain, created_at, updated_at) = row?;
            Ok(EffectPreset {
                chain: EffectChain::from_json(&chain)
                    .with_context(|| format!("the saved effects preset {name:?}"))?,
                name,
                built_in: false,
                created_at: Some(created_at),
                updated_at: Some(updated_at),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(built_in().into_iter().chain(saved).collect())
}

/// The preset called `name` (built-in names match whatever their case).
pub fn get(conn: &Connection, name: &str) -> Result<EffectPreset> {
    if let Some(preset) = built_in()
        .into_iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
    {
        return Ok(preset);
    }
    let row = conn
        .query_row(
            "SELECT chain, created_at, updated_at FROM effect_presets WHERE name = ?1",
            [name],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )
        .optional()?;
    let Some((chain, created_at, updated_at)) = row else {
        return Err(crate::error::not_found(format!(
            "no effects preset named {name:?}"
        )));
    };
    Ok(EffectPreset {
        name: name.to_string(),
        chain: EffectChain::from_json(&chain)
            .with_context(|| format!("the saved effects preset {name:?}"))?,
        built_in: false,
        created_at: Some(created_at),
        updated_at: Some(updated_at),
    })
}

/// Saves `chain` as `name`, replacing a saved preset of that name (keeping when it was made).
pub fn save(conn: &Connection, name: &str, chain: &EffectChain) -> Result<EffectPreset> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(crate::error::invalid_input(format!(
            "an effects preset needs a name of 1 to {MAX_NAME_CHARS} characters"
        )));
    }
    if is_built_in(name) {
        return Err(crate::error::invalid_input(format!(
            "{name:?} is a built-in effects preset: save under another name"
        )));
    }
    chain
        .check()
        .map_err(|e| crate::error::invalid_input(format!("effects preset {name:?}: {e}")))?;
    let now = super::now();
    conn.execute(
        "INSERT INTO effect_presets (name, chain, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (name) DO UPDATE SET chain = excluded.chain, updated_at = excluded.updated_at",
        params![name, chain.to_json(), now],
    )?;
    get(conn, name)
}

/// Deletes the saved preset `name`; refuses a built-in one, and is not found when there is none.
pub fn delete(conn: &Connection, name: &str) -> Result<()> {
    if is_built_in(name) {
        return Err(crate::error::invalid_input(format!(
            "{name:?} is a built-in effects preset and cannot be deleted"
        )));
    }
    let removed = conn.execute("DELETE FROM effect_presets WHERE name = ?1", [name])?;
    if removed == 0 {
        return Err(crate::error::not_found(format!(
            "no effects preset named {name:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, kind_of};
    use timbre_audio::effects::{Effect, Gain};

    fn gain(db: f64) -> EffectChain {
        EffectChain {
            effects: vec![Effect::Gain(Gain { db })],
        }
    }

    #[test]
    fn presets_are_saved_replaced_listed_and_deleted_by_name() {
        let conn = crate::db::open_in_memory();
        let first = save(&conn, "Quiet", &gain(-6.0)).unwrap();
        assert_eq!(first.chain, gain(-6.0));
        let replaced = save(&conn, " Quiet ", &gain(-3.0)).unwrap();
        assert_eq!(replaced.chain, gain(-3.0));
        assert_eq!(replaced.created_at, first.created_at);
        save(&conn, "Another", &EffectChain::default()).unwrap();
        let names: Vec<String> = list(&conn).unwrap().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["Clean vocal", "Radio", "Hall", "Another", "Quiet"]);
        delete(&conn, "Quiet").unwrap();
        let err = get(&conn, "Quiet").unwrap_err();
        assert_eq!(kind_of(&err), ErrorKind::NotFound);
        assert_eq!(err.to_string(), "no effects preset named \"Quiet\"");
        assert_eq!(
            kind_of(&delete(&conn, "Quiet").unwrap_err()),
            ErrorKind::NotFound
        );
    }

    #[test]
    fn built_in_presets_are_offered_and_reserved() {
        let conn = crate::db::open_in_memory();
        assert_eq!(get(&conn, "radio").unwrap().name, "Radio");
        assert!(get(&conn, "Hall").unwrap().built_in);
        let err = save(&conn, "hall", &gain(1.0)).unwrap_err().to_string();
        assert!(err.contains("built-in"), "{err}");
        assert!(delete(&conn, "Clean vocal").is_err());
        assert_eq!(built_in().len(), 3);
    }

    #[test]
    fn a_bad_name_or_chain_is_refused_and_a_damaged_row_is_named() {
        let conn = crate::db::open_in_memory();
        assert!(save(&conn, "  ", &gain(0.0)).is_err());
        let err = save(&conn, "Loud", &gain(99.0)).unwrap_err().to_string();
        assert_eq!(
            err,
            "effects preset \"Loud\": effect 1 (gain): db must be between -60 and 40, not 99"
        );
        conn.execute(
            "INSERT INTO effect_presets (name, chain, created_at, updated_at)
             VALUES ('Future', '{\"effects\":[{\"effect\":\"vocoder\"}]}', 'x', 'x')",
            [],
        )
        .unwrap();
        let err = format!("{:#}", get(&conn, "Future").unwrap_err());
        assert!(
            err.starts_with("the saved effects preset \"Future\": effect 1 (vocoder): unknown"),
            "{err}"
        );
    }
}
