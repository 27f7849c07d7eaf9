//! The song of a cover as a take: a file input is imported first, so the stems have a take to be
//! linked to (and a re-cover of the same file finds its stages by the take's content).

use anyhow::Result;
use timbre_audio::DecodeOptions;

use crate::db::takes::Take;
use crate::derived::{Source, SourceOrigin, find_or_insert};
use crate::input::AudioInput;
use crate::library::{Library, Notification};

/// The take of `input`: itself, or the file imported (the same content: the existing take).
pub(super) fn song_take(library: &Library, input: &AudioInput) -> Result<Take> {
    let decode = DecodeOptions {
        max_duration_secs: Some(library.settings()?.max_import_duration_secs),
    };
    let source = Source::open(library, input, &decode)?;
    match source.origin {
        SourceOrigin::Take(take) => Ok(take),
        SourceOrigin::File { new_take, .. } => {
            let (take, duplicate) = find_or_insert(&library.conn(), &new_take)?;
            if !duplicate {
                library.notify(Notification::LibraryChanged);
            }
            Ok(take)
        }
    }
}

/// Where the song came from, for messages: the file's path, or the take.
pub(super) fn label(input: &AudioInput, take: &Take) -> String {
    match input {
        AudioInput::File(path) => path.display().to_string(),
        AudioInput::Take(_) => format!("take {} ({})", take.id, take.name),
    }
}
