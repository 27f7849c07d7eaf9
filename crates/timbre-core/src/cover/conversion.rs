//! A cover with a voice is also a conversion of the song (`db::conversions`: input the song,
//! output the cover), so the Compare page plays the covers of one song with several voices
//! side by side, as it does conversions.

use anyhow::Result;
use serde_json::json;

use super::CoverSettings;
use crate::db::conversions::{self, NewConversion};
use crate::db::takes::Take;
use crate::library::Library;

/// The conversion row of `cover` made with `model_id`: the existing one, or one added.
pub(super) fn record(
    library: &Library,
    job_id: i64,
    song: &Take,
    cover: &Take,
    (model_id, model_name): (i64, &str),
    settings: &CoverSettings,
    seconds_taken: f64,
) -> Result<i64> {
    let existing = conversions::list(&library.conn(), Some(&song.sha256))?
        .into_iter()
        .find(|c| c.sha256 == cover.sha256 && c.model_id == Some(model_id));
    if let Some(existing) = existing {
        return Ok(existing.id);
    }
    // The options at the top, as a conversion's; the rest of the cover's settings beside them.
    let mut params = serde_json::to_value(&settings.options)?;
    params["cover"] = json!({
        "separation": settings.separation,
        "second_pass": settings.second_pass,
        "vocal_gain_db": settings.vocal_gain_db,
        "instrumental_gain_db": settings.instrumental_gain_db,
        "match_loudness": settings.match_loudness,
    });
    library.edit(|conn| {
        conversions::insert(
            conn,
            &NewConversion {
                job_id: Some(job_id),
                model_id,
                model_name: model_name.to_string(),
                input_take_id: Some(song.id),
                input_path: song.source_path.clone(),
                input_sha256: song.sha256.clone(),
                params,
                sha256: cover.sha256.clone(),
                format: cover.format.clone(),
                sample_rate: cover.sample_rate,
                duration_secs: cover.duration_secs,
                peak_dbfs: cover.peak_dbfs,
                seconds_taken,
            },
        )
    })
}
