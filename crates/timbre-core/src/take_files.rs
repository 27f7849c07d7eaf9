//! Audio into takes: a take described from its audio, committed once per content (an existing
//! take with the same audio is returned instead), and a captured recording saved as one. The
//! import job, the cleaning and cover jobs, recording and live all save takes through here.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::Connection;
use timbre_audio::{AudioBuffer, SampleFormat, analysis};

use crate::db::takes::{self, NewTake, Origin, Take};
use crate::library::{Library, Notification};
use crate::store::StoredObject;

/// The points of a take's overview waveform.
pub(crate) const WAVEFORM_BINS: usize = 120;

/// Saves a captured buffer as a 32-bit float WAV take.
pub fn save_recording(
    library: &Library,
    audio: &AudioBuffer,
    name: Option<&str>,
    voice_id: Option<i64>,
) -> Result<Take> {
    if audio.frames() == 0 {
        return Err(crate::error::invalid_input(
            "the recording is empty: no audio was captured",
        ));
    }
    let bytes = timbre_audio::encode_wav(audio, SampleFormat::Float32)?;
    let stored = library.store().ingest_bytes(&bytes, "wav")?;
    let name = name.map(str::trim).filter(|n| !n.is_empty()).map_or_else(
        || {
            format!(
                "Recording {}",
                crate::db::now()
                    .get(..19)
                    .unwrap_or_default()
                    .replace('T', " ")
            )
        },
        str::to_string,
    );
    let new = describe(
        audio,
        &stored.sha256,
        "wav",
        name,
        None,
        Origin::Recorded,
        voice_id,
    );
    Ok(commit_take(library, stored, &new, |_, _, _| Ok(()))?.0)
}

pub(crate) fn describe(
    audio: &AudioBuffer,
    sha256: &str,
    format: &str,
    name: String,
    source: Option<&Path>,
    origin: Origin,
    voice_id: Option<i64>,
) -> NewTake {
    NewTake {
        voice_id,
        name,
        sha256: sha256.to_string(),
        format: format.to_string(),
        source_path: source.map(|p| p.display().to_string()),
        origin,
        duration_secs: audio.duration_secs(),
        sample_rate: audio.sample_rate,
        channels: audio.channel_count(),
        frames: audio.frames() as u64,
        peak_dbfs: f64::from(analysis::to_dbfs(analysis::peak(audio))),
        loudness_lufs: analysis::loudness_lufs(audio),
        waveform: analysis::waveform_peaks(audio, WAVEFORM_BINS),
    }
}

/// Adds the take unless its content is already there; either way `also` runs in the same
/// transaction. A stored object that ends up without a row is discarded.
pub(crate) fn commit_take(
    library: &Library,
    stored: StoredObject,
    new: &NewTake,
    also: impl FnOnce(&Connection, &Take, bool) -> Result<()>,
) -> Result<(Take, bool)> {
    let committed = (|| {
        let mut conn = library.conn();
        let tx = conn.transaction()?;
        let (take, duplicate) = match takes::find_by_sha(&tx, &new.sha256)? {
            Some(existing) => (existing, true),
            None => {
                let id = takes::insert(&tx, new)?;
                (takes::require(&tx, id)?, false)
            }
        };
        also(&tx, &take, duplicate)?;
        tx.commit().context("saving to the library database")?;
        Ok::<_, anyhow::Error>((take, duplicate))
    })();
    match committed {
        Ok(done) => {
            library.notify(Notification::LibraryChanged);
            Ok(done)
        }
        Err(err) => {
            library.discard(stored)?;
            Err(err)
        }
    }
}
