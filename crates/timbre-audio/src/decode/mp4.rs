//! What an MP4/M4A file says about its encoder's priming and padding, which symphonia 0.6 does
//! not apply: AAC encoders put 1,024 or 2,112 frames of priming before the audio and pad the
//! last packet. The audio track's single edit says where the audio starts (media time) and how
//! long it is; files from iTunes-era encoders say it instead in an `iTunSMPB` tag (priming,
//! padding and length in hexadecimal), which ffmpeg reads too.

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

/// What the file marks, by the edit list when it has one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Gapless {
    EditList(EditList),
    /// Frames of priming, and of audio after them.
    ITunSmpb {
        priming: u64,
        frames: u64,
    },
}

/// Container boxes descended into on the way to `elst`, `mdhd`, `hdlr` and the `iTunSMPB` tag.
const CONTAINERS: [&[u8; 4]; 7] = [
    b"moov", b"trak", b"edts", b"mdia", b"udta", b"ilst", b"----",
];
/// Boxes visited in all, so a damaged file of tiny boxes cannot keep us reading.
const MAX_BOXES: usize = 4096;
/// Nesting followed: the deepest box read (`moov/udta/meta/ilst/----/data`) is at level 6.
const MAX_DEPTH: usize = 8;

/// The edit list of `source`'s first audio track when `source` is an MP4 file whose track has one
/// edit to apply (one non-empty edit at normal rate), else its `iTunSMPB` tag, else None.
/// Rewinds `source`.
pub(super) fn read_gapless<R: Read + Seek>(source: &mut R) -> Option<Gapless> {
    let mut head = [0u8; 8];
    let is_mp4 = source.read_exact(&mut head).is_ok() && &head[4..8] == b"ftyp";
    let found = if is_mp4 {
        let end = source.seek(SeekFrom::End(0)).ok()?;
        let mut walk = Walk::default();
        walk.boxes(source, 0, end, 0).ok();
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
    /// The `iTunSMPB` tag's priming and length.
    itunsmpb: Option<(u64, u64)>,
    /// Whether the last `name` box read names the `iTunSMPB` tag.
    named_itunsmpb: bool,
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
    fn result(&self) -> Option<Gapless> {
        let edit_list = self.audio_track.and_then(|(edit, media_timescale)| {
            let edit = edit?;
            Some(EditList {
                media_time: edit.media_time,
                media_timescale,
                duration: edit.duration,
                movie_timescale: self.movie_timescale?,
            })
        });
        edit_list.map(Gapless::EditList).or_else(|| {
            let (priming, frames) = self.itunsmpb?;
            Some(Gapless::ITunSmpb { priming, frames })
        })
    }

    fn boxes<R: Read + Seek>(
        &mut self,
        r: &mut R,
        start: u64,
        end: u64,
        depth: usize,
    ) -> std::io::Result<()> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        let mut pos = start;
        while pos + 8 <= end {
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
                    self.boxes(r, body, pos + size, depth + 1)?;
                    if self.is_audio
                        && self.audio_track.is_none()
                        && let Some(timescale) = self.media_timescale
                    {
                        self.audio_track = Some((self.edit, timescale));
                    }
                }
                kind if CONTAINERS.contains(&kind) => self.boxes(r, body, pos + size, depth + 1)?,
                // A full box in MP4 files (version and flags first), a plain one in QuickTime.
                b"meta" => {
                    let version_or_size = read_u32(r)?;
                    let children = if version_or_size == 0 { body + 4 } else { body };
                    self.boxes(r, children, pos + size, depth + 1)?;
                }
                // Inside a `----` tag: version and flags, then the text.
                b"name" => {
                    let text = read_text(r, size - header, 4)?;
                    self.named_itunsmpb = text == "iTunSMPB";
                }
                // Type and locale, then the value.
                b"data" if self.named_itunsmpb => {
                    self.itunsmpb = parse_itunsmpb(&read_text(r, size - header, 8)?);
                    self.named_itunsmpb = false;
                }
                b"mvhd" => self.movie_timescale = Some(read_timescale(r)?),
                b"mdhd" => self.media_timescale = Some(read_timescale(r)?),
                // Version/flags, pre_defined, then the handler type.
                b"hdlr" => {
                    r.seek(SeekFrom::Current(8))?;
                    let mut handler = [0u8; 4];
                    r.read_exact(&mut handler)?;
                    // `meta` boxes have handlers too ("mdir"): only a sound one counts.
                    self.is_audio |= &handler == b"soun";
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

/// The text of a small tag box after `skip` bytes of its body; empty when it is not small.
fn read_text<R: Read>(r: &mut R, body: u64, skip: u64) -> std::io::Result<String> {
    const MAX_TAG: u64 = 1024;
    if body < skip || body > MAX_TAG {
        return Ok(String::new());
    }
    let mut bytes = vec![0u8; body as usize];
    r.read_exact(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes[skip as usize..]).into_owned())
}

/// `" 00000000 00000840 000001CA 00000000000A2BF6 …"`: reserved, priming, padding, length.
fn parse_itunsmpb(text: &str) -> Option<(u64, u64)> {
    let fields: Vec<u64> = text
        .split_whitespace()
        .take(4)
        .map(|f| u64::from_str_radix(f, 16).ok())
        .collect::<Option<_>>()?;
    match fields[..] {
        [_, priming, _, frames] if frames > 0 => Some((priming, frames)),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itunsmpb_gives_priming_and_length() {
        let tag = " 00000000 00000840 000001CA 00000000000A2BF6 00000000 00000000";
        assert_eq!(parse_itunsmpb(tag), Some((0x840, 0xA2BF6)));
        assert_eq!(parse_itunsmpb(" 00000000 00000840"), None);
        assert_eq!(parse_itunsmpb(" 0 840 1CA 0"), None, "no length");
        assert_eq!(parse_itunsmpb("not a tag at all"), None);
    }
}
