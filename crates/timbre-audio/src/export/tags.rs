//! Title, artist and comment, in each format's own tag (ID3v2 for MP3 and WAV, Vorbis comments
//! for FLAC, Ogg Vorbis and Opus), through lofty.

use std::path::Path;

use lofty::config::WriteOptions;
use lofty::prelude::{Accessor, TagExt, TaggedFileExt};
use lofty::tag::Tag;

use crate::error::{AudioError, AudioErrorKind};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    pub title: String,
    pub artist: String,
    pub comment: String,
}

/// An I/O failure (a full disk) anywhere in lofty's chain of causes is reported as such.
fn tag_error(path: &Path, action: &str, err: &(dyn std::error::Error + 'static)) -> AudioError {
    let mut causes = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return AudioError::io(Some(path), action, io);
        }
        causes.push(cause.to_string());
        source = cause.source();
    }
    AudioError::new(
        AudioErrorKind::Unsupported,
        Some(path),
        format!("{action}: {}", causes.join(": ")),
    )
}

/// Sets the tags of the file at `path`, keeping any others it has.
pub fn write_tags(path: &Path, tags: &Tags) -> Result<(), AudioError> {
    let mut file =
        lofty::read_from_path(path).map_err(|e| tag_error(path, "could not read its tags", &e))?;
    if file.primary_tag().is_none() {
        file.insert_tag(Tag::new(file.primary_tag_type()));
    }
    let tag = file.primary_tag_mut().expect("inserted above");
    tag.set_title(tags.title.clone());
    tag.set_artist(tags.artist.clone());
    tag.set_comment(tags.comment.clone());
    tag.save_to_path(path, WriteOptions::default())
        .map_err(|e| tag_error(path, "could not write its tags", &e))
}

/// The file's title, artist and comment (empty where it has none).
pub fn read_tags(path: &Path) -> Result<Tags, AudioError> {
    let file =
        lofty::read_from_path(path).map_err(|e| tag_error(path, "could not read its tags", &e))?;
    let Some(tag) = file.primary_tag() else {
        return Ok(Tags::default());
    };
    let text = |value: Option<std::borrow::Cow<'_, str>>| value.map(|v| v.into_owned());
    Ok(Tags {
        title: text(tag.title()).unwrap_or_default(),
        artist: text(tag.artist()).unwrap_or_default(),
        comment: text(tag.comment()).unwrap_or_default(),
    })
}
