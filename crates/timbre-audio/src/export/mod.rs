//! Finished audio in the formats people publish: WAV, FLAC, MP3 (LAME, built from the C that
//! mp3lame-encoder vendors), Ogg Vorbis (libvorbis with aoTuV's tuning, vendored by vorbis_rs)
//! and Opus (the system libopus through the `opus` crate, in an Ogg container written with
//! `ogg`), tagged by lofty. Everything decodes again through `crate::decode` (symphonia, with
//! our libopus decoder for Opus).
//!
//! Every codec is written block by block through [`EncodedWriter`], holding no more than a
//! codec frame, a resampler chunk and an output buffer, so a long song is never held whole.

mod lossy;
mod ogg_opus;
mod tags;
#[cfg(test)]
mod tests;
mod writer;
#[cfg(test)]
mod writer_tests;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use tempfile::NamedTempFile;

pub use tags::{Tags, read_tags, write_tags};
pub use writer::EncodedWriter;

use crate::buffer::AudioBuffer;
use crate::encode::SampleFormat;
use crate::error::{AudioError, AudioErrorKind};

/// What a file is encoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// WAV in the given sample format.
    Wav(SampleFormat),
    /// 16-bit.
    Flac,
    /// 192 kbit/s CBR (joint stereo for two channels).
    Mp3,
    /// Quality 6 of 10 VBR (about 190 kbit/s for stereo).
    Vorbis,
    /// 128 kbit/s VBR per channel pair, at 48 kHz.
    Opus,
}

impl Codec {
    /// File extension for the codec, without the dot (Vorbis is "ogg").
    pub fn extension(self) -> &'static str {
        match self {
            Codec::Wav(_) => "wav",
            Codec::Flac => "flac",
            Codec::Mp3 => "mp3",
            Codec::Vorbis => "ogg",
            Codec::Opus => "opus",
        }
    }
}

/// Writes `buffer` to `path` in `codec` with `tags`. The file is encoded and tagged under a
/// hidden temporary name beside `path` and renamed into place only when complete, so a failure
/// (a full disk) leaves no partial file; errors name `path`.
pub fn export(
    path: &Path,
    buffer: &AudioBuffer,
    codec: Codec,
    tags: &Tags,
) -> Result<(), AudioError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let named = naming(path);
    let tmp = file_to_be(dir, ".timbre-export-", &format!(".{}", codec.extension()))
        .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))?;
    write_encoded(tmp.path(), buffer, codec).map_err(&named)?;
    write_tags(tmp.path(), tags).map_err(&named)?;
    tmp.persist(path)
        .map_err(|e| AudioError::io(Some(path), "could not write the file", &e.error))?;
    Ok(())
}

/// A hidden temporary file in `dir`, to be renamed into place once complete, with the mode any
/// other program's new file gets: 0666 less the umask (a temporary file's own, 0600, would
/// stay with the renamed file).
pub fn file_to_be(dir: &Path, prefix: &str, suffix: &str) -> std::io::Result<NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).suffix(suffix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// `buffer` encoded in `codec` into `path`, untagged: [`EncodedWriter`] given it in one block.
pub fn write_encoded(path: &Path, buffer: &AudioBuffer, codec: Codec) -> Result<(), AudioError> {
    let mut writer =
        EncodedWriter::create(path, codec, buffer.sample_rate, buffer.channel_count())?;
    writer.write(&buffer.channels)?;
    writer.finish()
}

/// Creates `path` behind a buffer, for an encoder to write into.
fn create_file(path: &Path) -> Result<BufWriter<File>, AudioError> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))
}

/// Flushes and syncs what [`create_file`] made, so a full disk shows here and not later.
fn close_file(out: BufWriter<File>, path: &Path) -> Result<(), AudioError> {
    let file = out
        .into_inner()
        .map_err(|e| AudioError::io(Some(path), "could not write the file", e.error()))?;
    file.sync_all()
        .map_err(|e| AudioError::io(Some(path), "could not write the file", &e))
}

/// Sets `path` on errors that come without one (the resampler's).
fn naming(path: &Path) -> impl Fn(AudioError) -> AudioError + '_ {
    move |mut err| {
        err.path = Some(path.to_path_buf());
        err
    }
}

pub(crate) fn write_error(path: &Path, err: &std::io::Error) -> AudioError {
    AudioError::io(Some(path), "could not write the file", err)
}

pub(crate) fn codec_error(path: &Path, codec: &str, detail: impl std::fmt::Display) -> AudioError {
    AudioError::new(
        AudioErrorKind::Unsupported,
        Some(path),
        format!("cannot be encoded as {codec}: {detail}"),
    )
}

/// Lossy codecs here take one or two channels.
fn check_stereo(channels: u16, path: &Path, codec: &str) -> Result<(), AudioError> {
    match channels {
        1 | 2 => Ok(()),
        n => Err(codec_error(
            path,
            codec,
            format!("it holds one or two channels, not {n}"),
        )),
    }
}

fn write_all(out: &mut impl Write, bytes: &[u8], path: &Path) -> Result<(), AudioError> {
    out.write_all(bytes).map_err(|e| write_error(path, &e))
}
