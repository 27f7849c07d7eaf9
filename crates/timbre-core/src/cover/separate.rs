//! The cover's separation stages: the song into vocals and instrumental (a RoFormer of the
//! models folder, streamed; or the rough weight-free isolation), and the optional second pass
//! of another RoFormer (de-reverb, karaoke) over the vocals: its target stem is the lead that
//! gets converted, the rest (reverb, backing vocals) stays in the remix beside the instrumental.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::json;
use timbre_audio::{DecodeOptions, SampleFormat};

use super::stages::{Made, Stage, StageProgress, Stages};
use crate::db::takes::Take;
use crate::hashing;
use crate::library::Library;
use crate::models_folder::SeparationModel;
use crate::output_format::OutputFormat;
use crate::progress::ProgressBridge;
use crate::separation::Separators;
use crate::separation::stream::{SeparatedFiles, Span, separate_file};

/// Bumped when the rough isolation changes what it gives.
const ROUGH_VERSION: &str = "rough-1";

/// Vocals quieter than the song by more than this are no vocals.
const NO_VOCALS_BELOW_SONG_DB: f64 = 15.0;

pub(super) struct Split {
    pub vocals: Take,
    pub instrumental: Take,
}

/// The song's vocals and instrumental, from the cache or separated.
pub(super) fn isolate(
    stages: &mut Stages,
    separators: &Separators,
    model: Option<&SeparationModel>,
    notes: &mut Vec<String>,
) -> Result<Split> {
    let song = stages.song.clone();
    let library = stages.library();
    let method = match model {
        Some(model) => model_identity(model, separators)?,
        None => ROUGH_VERSION.to_string(),
    };
    let key = hashing::cache_key(&["cover-isolate", &song.sha256, &method]);
    let qualifier = if model.is_none() {
        ", rough preview"
    } else {
        ""
    };
    let method_name = model.map_or("rough".to_string(), |m| m.name.clone());
    if model.is_none() && song.channels == 1 {
        notes.push("mono song: no stereo centre to use, repetition alone separates".into());
    }
    let path = library.take_path(&song);
    let mut takes = stages.cached_or_run(
        Stage::Isolate,
        &key,
        &["vocals", "instrumental"],
        |progress| {
            let files = match model {
                Some(model) => {
                    separate_with(library, separators, model, &path, &model.name, progress)?
                }
                None => rough(library, &path, progress)?,
            };
            let params = json!({ "method": method_name, "stage": "cover" });
            Ok(vec![
                Made {
                    role: "vocals",
                    operation: "isolate_vocals",
                    name: format!("{} (vocals{qualifier})", song.name),
                    file: files.vocals,
                    format: "wav",
                    params: params.clone(),
                },
                Made {
                    role: "instrumental",
                    operation: "isolate_instrumental",
                    name: format!("{} (instrumental{qualifier})", song.name),
                    file: files.instrumental,
                    format: "wav",
                    params,
                },
            ])
        },
    )?;
    Ok(Split {
        vocals: take_role(&mut takes, "vocals")?,
        instrumental: take_role(&mut takes, "instrumental")?,
    })
}

/// The lead vocals (the model's target stem) and the rest of the vocals.
pub(super) fn second_pass(
    stages: &mut Stages,
    separators: &Separators,
    model: &SeparationModel,
    vocals: &Take,
) -> Result<(Take, Take)> {
    let library = stages.library();
    let key = hashing::cache_key(&[
        "cover-second-pass",
        &vocals.sha256,
        &model_identity(model, separators)?,
    ]);
    let song_name = stages.song.name.clone();
    let path = library.take_path(vocals);
    let mut takes =
        stages.cached_or_run(Stage::SecondPass, &key, &["lead", "backing"], |progress| {
            let files = separate_with(library, separators, model, &path, &model.name, progress)?;
            let params = json!({ "method": model.name, "stage": "cover_second_pass" });
            Ok(vec![
                Made {
                    role: "lead",
                    operation: "cover_lead_vocals",
                    name: format!("{song_name} (lead vocals, {})", model.name),
                    file: files.vocals,
                    format: "wav",
                    params: params.clone(),
                },
                Made {
                    role: "backing",
                    operation: "cover_backing_vocals",
                    name: format!("{song_name} (vocals without the lead, {})", model.name),
                    file: files.instrumental,
                    format: "wav",
                    params,
                },
            ])
        })?;
    Ok((
        take_role(&mut takes, "lead")?,
        take_role(&mut takes, "backing")?,
    ))
}

/// "No vocals found" when the isolated vocals are silent or far below the song.
pub(super) fn no_vocals_warning(song: &Take, vocals: &Take) -> Option<String> {
    let quiet = match (song.loudness_lufs, vocals.loudness_lufs) {
        (_, None) => true,
        (Some(song_lufs), Some(vocals_lufs)) => vocals_lufs < song_lufs - NO_VOCALS_BELOW_SONG_DB,
        (None, Some(_)) => false,
    };
    (quiet || vocals.peak_dbfs < -60.0).then(|| {
        format!(
            "no vocals found in {}: the cover is its instrumental with nothing converted over it",
            song.name
        )
    })
}

fn take_role(takes: &mut BTreeMap<String, Take>, role: &str) -> Result<Take> {
    takes
        .remove(role)
        .with_context(|| format!("the cover stage left no {role} take"))
}

/// Which model file, on which device (separations on another device differ in their last bits).
fn model_identity(model: &SeparationModel, separators: &Separators) -> Result<String> {
    Ok(format!(
        "{}|{}|{}|{:?}",
        model.name,
        hashing::identity(&model.checkpoint)?,
        hashing::identity(&model.config)?,
        separators.device()
    ))
}

/// The file through the model, block by block, into two float WAVs; `label` (the model's
/// name) starts the progress messages, which the stage prefixes with the song's.
fn separate_with(
    library: &Library,
    separators: &Separators,
    model: &SeparationModel,
    path: &std::path::Path,
    label: &str,
    progress: StageProgress<'_>,
) -> Result<SeparatedFiles> {
    let mut bridge = ProgressBridge::new(progress);
    let separator = separators.loaded(model, &mut bridge, label)?;
    let separator = separator.lock();
    let info = timbre_audio::probe_file(path)?;
    let span = Span::whole(path, &info, library)?;
    let tmp = library.store().tmp_dir();
    separate_file(
        &separator,
        &span,
        &tmp,
        OutputFormat::WavFloat,
        &mut bridge,
        label,
    )
}

/// The weight-free rough isolation (in memory, as the isolate job runs it).
fn rough(
    library: &Library,
    path: &std::path::Path,
    progress: StageProgress<'_>,
) -> Result<SeparatedFiles> {
    let decode = DecodeOptions {
        max_duration_secs: Some(library.settings()?.max_import_duration_secs),
    };
    let audio = timbre_audio::decode_file(path, &decode)?;
    let silent = timbre_audio::analysis::peak(&audio) == 0.0;
    let mut bridge = ProgressBridge::new(progress);
    let rough = timbre_audio::isolate::isolate_rough(audio, &mut |f| {
        bridge.report(f, "rough isolation".to_string())
    })
    .map_err(|err| bridge.error(err))?;
    let write = |part: &str, audio: &timbre_audio::AudioBuffer| -> Result<tempfile::TempPath> {
        let file = super::stages::temp_file(library, part, "wav")?;
        timbre_audio::write_wav(&file, audio, SampleFormat::Float32)?;
        Ok(file)
    };
    let vocals = write("vocals", &rough.vocals)?;
    drop(rough.vocals);
    let instrumental = write("instrumental", &rough.instrumental)?;
    Ok(SeparatedFiles {
        vocals,
        instrumental,
        silent,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::cover) fn take(loudness_lufs: Option<f64>, peak_dbfs: f64) -> Take {
        Take {
            id: 1,
            voice_id: None,
            name: "song".into(),
            sha256: "00".repeat(32),
            format: "wav".into(),
            source_path: None,
            origin: crate::db::takes::Origin::Imported,
            duration_secs: 1.0,
            sample_rate: 44_100,
            channels: 2,
            frames: 44_100,
            peak_dbfs,
            loudness_lufs,
            tags: vec![],
            waveform: vec![],
            created_at: String::new(),
        }
    }

    #[test]
    fn vocals_far_below_the_song_or_silent_are_no_vocals() {
        let song = take(Some(-14.0), -1.0);
        assert_eq!(no_vocals_warning(&song, &take(Some(-20.0), -6.0)), None);
        let quiet = no_vocals_warning(&song, &take(Some(-31.0), -20.0)).unwrap();
        assert!(quiet.starts_with("no vocals found in song"), "{quiet}");
        assert!(no_vocals_warning(&song, &take(None, f64::NEG_INFINITY)).is_some());
    }
}
