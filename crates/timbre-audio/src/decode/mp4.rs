//! The edit list of an MP4/M4A audio track, which symphonia 0.6 reads but does not apply: AAC
//! encoders put 1,024 or 2,112 frames of priming before the audio and pad the last packet, and
//! the track's single edit says where the audio starts (media time) and how long it is.

use std::io::{Read, Seek, SeekFrom};

/// What the first audio track's edit list marks, in its own units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct EditList {
    /// Where the audio starts, in the track's media timescale.
    pub media_time: u64,
    pub media_timescale: u32,
    /// How long the audio lasts, in the movie timescale; 0 when the edit does not say.
    pub duration: u64,
    pub movie_timescale: u32,
}

/// Container boxes descended into on the way to `elst`, `mdhd` and `hdlr`.
const CONTAINERS: [&[u8; 4]; 4] = [b"moov", b"trak", b"edts", b"mdia"];
/// Boxes visited in all, so a damaged file of tiny boxes cannot keep us reading.
const MAX_BOXES: usize = 4096;

/// The edit list of `source`'s first audio track when `source` is an MP4 file whose track has one
/// edit to apply (one non-empty edit at normal rate), else None. Rewinds `source`.
pub(super) fn read_edit_list<R: Read + Seek>(source: &mut R) -> Option<EditList> {
    let mut head = [0u8; 8];
    let is_mp4 = source.read_exact(&mut head).is_ok() && &head[4..8] == b"ftyp";
    let found = if is_mp4 {
        let end = source.seek(SeekFrom::End(0)).ok()?;
        let mut walk = Walk::default();
        walk.boxes(source, 0, end).ok();
        walk.result()
    } else {
        None
    };
    source.seek(SeekFrom::Start(0)).ok()?;
    found
}

#[derive(Default)]
struct Walk {
    visited: usize,
    movie_timescale: Option<u32>,
    /// The first audio track's edit and media timescale, once a `trak` is known to be audio.
    audio_track: Option<(Option<Edit>, u32)>,
    /// What the `trak` being read holds so far.
    edit: Option<Edit>,
    media_timescale: Option<u32>,
    is_audio: bool,
}

#[derive(Clone, Copy)]
struct Edit {
    media_time: u64,
    duration: u64,
}

impl Walk {
    fn result(&self) -> Option<EditList> {
        let (edit, media_timescale) = self.audio_track?;
        let edit = edit?;
        Some(EditList {
            media_time: edit.media_time,
            media_timescale,
            duration: edit.duration,
            movie_timescale: self.movie_timescale?,
        })
    }

    fn boxes<R: Read + Seek>(&mut self, r: &mut R, start: u64, end: u64) -> std::io::Result<()> {
        let mut pos = start;
        while pos + 8 <= end && self.audio_track.is_none() {
            self.visited += 1;
            if self.visited > MAX_BOXES {
                return Ok(());
            }
            r.seek(SeekFrom::Start(pos))?;
            let size = u64::from(read_u32(r)?);
            let mut kind = [0u8; 4];
            r.read_exact(&mut kind)?;
            let (header, size) = match size {
                0 => (8, end - pos),
                1 => (16, read_u64(r)?),
                n => (8, n),
            };
            if size < header || pos.checked_add(size).is_none_or(|box_end| box_end > end) {
                return Ok(());
            }
            let body = pos + header;
            match &kind {
                b"trak" => {
                    (self.edit, self.media_timescale, self.is_audio) = (None, None, false);
                    self.boxes(r, body, pos + size)?;
                    if self.is_audio
                        && let Some(timescale) = self.media_timescale
                    {
                        self.audio_track = Some((self.edit, timescale));
                    }
                }
                kind if CONTAINERS.contains(&kind) => self.boxes(r, body, pos + size)?,
                b"mvhd" => self.movie_timescale = Some(read_timescale(r)?),
                b"mdhd" => self.media_timescale = Some(read_timescale(r)?),
                // Version/flags, pre_defined, then the handler type.
                b"hdlr" => {
                    r.seek(SeekFrom::Current(8))?;
                    let mut handler = [0u8; 4];
                    r.read_exact(&mut handler)?;
                    self.is_audio = &handler == b"soun";
                }
                b"elst" => self.edit = read_single_edit(r)?,
                _ => {}
            }
            pos += size;
        }
        Ok(())
    }
}

/// The timescale of an `mvhd` or `mdhd` box (both place it after the version's dates).
fn read_timescale<R: Read + Seek>(r: &mut R) -> std::io::Result<u32> {
    let version = read_u32(r)? >> 24;
    r.seek(SeekFrom::Current(if version == 1 { 16 } else { 8 }))?;
    read_u32(r)
}

/// The one edit that selects audio, skipping empty edits (media time -1); None when there are
/// several, a rate other than 1, or none.
fn read_single_edit<R: Read>(r: &mut R) -> std::io::Result<Option<Edit>> {
    let version = read_u32(r)? >> 24;
    let count = read_u32(r)?;
    if count > 64 {
        return Ok(None);
    }
    let mut found = None;
    for _ in 0..count {
        let (duration, media_time) = if version == 1 {
            (read_u64(r)?, read_u64(r)? as i64)
        } else {
            (u64::from(read_u32(r)?), i64::from(read_u32(r)? as i32))
        };
        let rate = read_u32(r)?;
        if media_time < 0 {
            continue;
        }
        if found.is_some() || rate != 0x0001_0000 {
            return Ok(None);
        }
        found = Some(Edit {
            media_time: media_time as u64,
            duration,
        });
    }
    Ok(found)
}

fn read_u32<R: Read>(r: &mut R) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64<R: Read>(r: &mut R) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}
