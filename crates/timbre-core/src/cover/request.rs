//! What the CLI and the app ask of covers: one request, checked once, then one `cover` job per
//! song.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::effects::EffectChain;
use timbre_nn::pipeline::ConvertOptions;

use super::{CoverParams, KIND};
use crate::db::jobs::Job;
use crate::db::models;
use crate::error::{check_range, invalid_input};
use crate::input::{self, AudioInput};
use crate::jobs::JobSystem;
use crate::library::Library;
use crate::output_format::OutputFormat;
use crate::separation::{IsolationMethod, choose_model, choose_second_pass};

/// How every song of a request is covered.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct CoverSettings {
    /// The voice; None: the vocals pass through unconverted (the remix of the original).
    pub model_id: Option<i64>,
    /// Every conversion parameter, as the convert job takes them: the UI sets the voice's part,
    /// the offline ones keep their defaults.
    #[serde(default)]
    #[ts(as = "timbre_nn::voice::VoiceParams")]
    pub options: ConvertOptions,
    /// A RoFormer of the models folder's `separation/`, or the rough weight-free isolation.
    #[serde(default)]
    pub separation: IsolationMethod,
    /// Another separation model over the vocals (de-reverb, karaoke): its target stem is
    /// converted, the rest stays in the remix.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub second_pass: Option<String>,
    /// Gain on the converted vocals in the remix, in dB, -60 to 24; 0 when absent.
    #[serde(default)]
    pub vocal_gain_db: f64,
    /// Gain on the instrumental (and a second pass's backing vocals) in dB, -60 to 24; 0 if absent.
    #[serde(default)]
    pub instrumental_gain_db: f64,
    /// Bring the converted vocals to the original vocals' loudness before the gains.
    #[serde(default = "default_true")]
    pub match_loudness: bool,
    /// How the cover and its remix are encoded; 16-bit WAV unless given.
    #[serde(default)]
    pub format: OutputFormat,
    /// Effects over the converted vocals before the remix.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub effects: Option<EffectChain>,
}

fn default_true() -> bool {
    true
}

/// A batch of covers: every song with the same settings, one job each.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoverRequest {
    /// The songs to cover, takes or files; at least one.
    pub songs: Vec<AudioInput>,
    /// How every song is covered; its fields sit at the top level of the request.
    #[serde(flatten)]
    pub settings: CoverSettings,
    /// Also write each cover into this folder.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
}

/// Checks the request (voice, options, gains, separation models, songs) and queues one job per
/// song.
pub fn submit(system: &JobSystem, request: CoverRequest) -> Result<Vec<Job>> {
    check(system.library(), &request, false)?;
    let out_dir = request
        .out_dir
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    let mut jobs = Vec::with_capacity(request.songs.len());
    for song in request.songs {
        let params = CoverParams {
            song: song.absolute()?,
            settings: request.settings.clone(),
            out_dir: out_dir.clone(),
        };
        jobs.push(system.submit(KIND, serde_json::to_value(&params)?)?);
    }
    Ok(jobs)
}

/// Checks `request` as [`submit`] does, before anything is stored. `pending_model`: a voice
/// file is to be imported for it once it passes (so HuBERT is needed though `model_id` is
/// not set yet).
pub fn check(library: &Library, request: &CoverRequest, pending_model: bool) -> Result<()> {
    if request.songs.is_empty() {
        return Err(invalid_input("choose at least one song to cover"));
    }
    let settings = &request.settings;
    crate::voice_engine::check_options(&settings.options)?;
    check_range("vocal_gain_db", settings.vocal_gain_db, -60.0, 24.0)?;
    check_range(
        "instrumental_gain_db",
        settings.instrumental_gain_db,
        -60.0,
        24.0,
    )?;
    let model = match settings.model_id {
        Some(id) => Some(models::require(&library.conn(), id)?),
        None => None,
    };
    let models_dir = crate::models_folder::of(library)?;
    choose_model(&settings.separation, &models_dir)?;
    if let Some(name) = &settings.second_pass {
        choose_second_pass(name, &models_dir)?;
    }
    if let Some(model) = &model {
        crate::models_folder::require_voice_embedder(&models_dir, &model.metadata)
            .with_context(|| model.name.clone())?;
    } else if pending_model {
        crate::models_folder::require_hubert(&models_dir)?;
    }
    input::check_all(library, &request.songs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(songs: Vec<AudioInput>) -> CoverRequest {
        CoverRequest {
            songs,
            settings: serde_json::from_value(serde_json::json!({ "model_id": null })).unwrap(),
            out_dir: None,
        }
    }

    #[test]
    fn settings_default_to_matched_loudness_and_unity_gains() {
        let settings = request(vec![]).settings;
        assert!(settings.match_loudness);
        assert_eq!(
            (settings.vocal_gain_db, settings.instrumental_gain_db),
            (0.0, 0.0)
        );
        assert_eq!(settings.separation, IsolationMethod::Auto);
    }

    #[test]
    fn a_bad_request_queues_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let library = std::sync::Arc::new(crate::Library::open(dir.path()).unwrap());
        let system =
            JobSystem::new(library, crate::handlers::job_handlers(&Default::default())).unwrap();
        let err = submit(&system, request(vec![])).unwrap_err().to_string();
        assert!(err.contains("at least one song"), "{err}");
        let song = dir.path().join("song.wav");
        std::fs::write(&song, b"").unwrap();
        let mut loud = request(vec![AudioInput::File(song.clone())]);
        loud.settings.vocal_gain_db = 90.0;
        let err = submit(&system, loud).unwrap_err().to_string();
        assert!(
            err.starts_with("vocal_gain_db must be between -60 and 24"),
            "{err}"
        );
        let mut voiced = request(vec![AudioInput::File(song.clone())]);
        voiced.settings.model_id = Some(7);
        let err = submit(&system, voiced).unwrap_err();
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
        let mut second = request(vec![AudioInput::File(song)]);
        second.settings.second_pass = Some("dereverb".into());
        let err = submit(&system, second).unwrap_err().to_string();
        assert!(err.contains("no separation model \"dereverb\""), "{err}");
        assert!(
            crate::db::jobs::list(&system.library().conn(), 10)
                .unwrap()
                .is_empty()
        );
    }
}
