//! Title, artist and comment, in each format's own tag: ID3v2 for MP3 and Vorbis comments for
//! FLAC, Ogg Vorbis and Opus, through lofty; a RIFF `LIST/INFO` chunk appended to a WAV by hand,
//! as lofty rewrites a WAV through memory and a long conversion's WAV is never held whole.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use lofty::config::WriteOptions;
use lofty::prelude::{Accessor, TagExt, TaggedFileExt};
use lofty::tag::Tag;

use crate::error::{AudioError, AudioErrorKind};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
/// The text tags written to and read from exported files; an empty string means none.
pub struct Tags {
    /// Track title (ID3 `TIT2`, Vorbis `TITLE`, RIFF `INAM`).
    pub title: String,
    /// Artist (ID3 `TPE1`, Vorbis `ARTIST`, RIFF `IART`).
    pub artist: String,
    /// Free-text comment (ID3 `COMM`, Vorbis `COMMENT`, RIFF `ICMT`).
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
    if is_wav(path)? {
        return append_riff_info(path, tags)
            .map_err(|e| AudioError::io(Some(path), "could not write its tags", &e));
    }
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
    let Some(tag) = file.primary_tag().or_else(|| file.first_tag()) else {
        return Ok(Tags::default());
    };
    let text = |value: Option<std::borrow::Cow<'_, str>>| value.map(|v| v.into_owned());
    Ok(Tags {
        title: text(tag.title()).unwrap_or_default(),
        artist: text(tag.artist()).unwrap_or_default(),
        comment: text(tag.comment()).unwrap_or_default(),
    })
}

fn is_wav(path: &Path) -> Result<bool, AudioError> {
    let mut head = [0u8; 12];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| AudioError::io(Some(path), "could not read the file", &e))?;
    Ok(read == 12 && &head[..4] == b"RIFF" && &head[8..] == b"WAVE")
}

/// Appends `LIST/INFO` with `INAM`, `IART` and `ICMT` and updates the RIFF size, in place.
fn append_riff_info(path: &Path, tags: &Tags) -> std::io::Result<()> {
    let mut info = b"INFO".to_vec();
    for (id, text) in [
        (b"INAM", &tags.title),
        (b"IART", &tags.artist),
        (b"ICMT", &tags.comment),
    ] {
        let mut value = text.as_bytes().to_vec();
        value.push(0);
        info.extend_from_slice(id);
        info.extend_from_slice(&(value.len() as u32).to_le_bytes());
        if value.len() % 2 == 1 {
            value.push(0);
        }
        info.extend_from_slice(&value);
    }
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let mut end = file.seek(SeekFrom::End(0))?;
    // Chunks start on even offsets.
    if end % 2 == 1 {
        file.write_all(&[0])?;
        end += 1;
    }
    let mut chunk = b"LIST".to_vec();
    chunk.extend_from_slice(&(info.len() as u32).to_le_bytes());
    chunk.extend_from_slice(&info);
    file.write_all(&chunk)?;
    let riff_size = u32::try_from(end + chunk.len() as u64 - 8)
        .map_err(|_| std::io::Error::other("the WAV would pass 4 GiB"))?;
    file.seek(SeekFrom::Start(4))?;
    file.write_all(&riff_size.to_le_bytes())?;
    file.sync_all()
}
