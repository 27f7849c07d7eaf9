//! Separation of a file block by block: the mix is decoded, separated and the vocals and
//! instrumental written a block at a time, so memory stays a few chunks of the model whatever
//! the file's length. Results go to temporary files that only become takes when complete.

use std::path::Path;

use anyhow::{Context, Result};
use tch::Tensor;
use timbre_audio::analysis::{self, Summary};
use timbre_audio::resample::StreamResampler;
use timbre_audio::{AudioBuffer, AudioInfo, DecodeOptions, FlacStreamWriter, WavStreamWriter};
use timbre_nn::separation::{MixStats, Separated, Separator};

use super::to_buffer;
use crate::db::takes::{NewTake, Origin};
use crate::library::Library;
use crate::output_format::OutputFormat;
use crate::progress::ProgressBridge;
use crate::store::StoredObject;

/// Samples decoded (and written) at a time: 10 s at 44.1 kHz.
pub(crate) const BLOCK_FRAMES: usize = 441_000;

/// The vocals and instrumental of `separate_file`, complete, in temporary files.
pub(crate) struct SeparatedFiles {
    pub vocals: tempfile::TempPath,
    pub instrumental: tempfile::TempPath,
    pub silent: bool,
}

/// What `separate_file` reads: which frames of which file, in blocks of how many.
pub(crate) struct Span<'a> {
    pub path: &'a Path,
    pub info: &'a AudioInfo,
    pub decode: DecodeOptions,
    pub start: u64,
    pub frames: Option<u64>,
    pub block_frames: usize,
}

impl<'a> Span<'a> {
    /// All of the file, in blocks of [`BLOCK_FRAMES`], decoded up to the library's longest
    /// import.
    pub(crate) fn whole(path: &'a Path, info: &'a AudioInfo, library: &Library) -> Result<Self> {
        Ok(Span {
            path,
            info,
            decode: DecodeOptions {
                max_duration_secs: Some(library.settings()?.max_import_duration_secs),
            },
            start: 0,
            frames: None,
            block_frames: BLOCK_FRAMES,
        })
    }
}

/// A cleaned take's file written as its audio comes: WAV, or FLAC at 24 bits.
pub(crate) enum StemWriter {
    Wav(WavStreamWriter),
    Flac(Box<FlacStreamWriter>),
}

impl StemWriter {
    pub(crate) fn create(
        path: &Path,
        format: OutputFormat,
        rate: u32,
        channels: u16,
    ) -> Result<Self> {
        Ok(match format.wav_sample_format() {
            Some(sample_format) => StemWriter::Wav(WavStreamWriter::create(
                path,
                rate,
                channels,
                sample_format,
            )?),
            None if format == OutputFormat::Flac => StemWriter::Flac(Box::new(
                FlacStreamWriter::create(path, rate, channels, 24)?,
            )),
            None => anyhow::bail!(
                "separated stems are kept lossless, not as {}",
                format.extension()
            ),
        })
    }

    pub(crate) fn write(&mut self, audio: &AudioBuffer) -> Result<()> {
        match self {
            StemWriter::Wav(wav) => wav.write_planes(&audio.channels)?,
            StemWriter::Flac(flac) => flac.write_planes(&audio.channels)?,
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<()> {
        match self {
            StemWriter::Wav(wav) => wav.finish()?,
            StemWriter::Flac(flac) => flac.finish()?,
        }
        Ok(())
    }
}

/// Separates the span (at the model's rate, one or two channels, or more mixed down to mono)
/// into vocals and instrumental files in `tmp_dir`, WAV or FLAC.
pub(crate) fn separate_file(
    separator: &Separator,
    span: &Span<'_>,
    tmp_dir: &Path,
    format: OutputFormat,
    bridge: &mut ProgressBridge<'_>,
    label: &str,
) -> Result<SeparatedFiles> {
    let vocals_index = separator.vocals_index()? as i64;
    let stopped =
        |bridge: &mut ProgressBridge<'_>, err: anyhow::Error| bridge.stopped.take().unwrap_or(err);
    let rate = separator.sample_rate() as u32;
    let scale = if separator.normalizes() {
        let mut stats = MixStats::default();
        let measured = for_each_model_block(span, rate, |block| {
            anyhow::ensure!(
                bridge.report(0.0, format!("{label}: measuring the mix")),
                "cancelled"
            );
            stats.add(&to_tensor(block));
            Ok(())
        });
        measured.map_err(|err| stopped(bridge, err))?;
        stats.scale()
    } else {
        None
    };
    let channels = if span.info.channels > 2 {
        1
    } else {
        span.info.channels
    };
    let total = span
        .frames
        .or(span.info.frames.map(|f| f.saturating_sub(span.start)))
        .map(|frames| resampled_frames(frames, span.info.sample_rate, rate));
    let mut stream = separator.stream(i64::from(channels), total.map(|f| f as i64), scale)?;
    let temp = |part: &str| {
        tempfile::Builder::new()
            .prefix(&format!(".isolate-{part}-"))
            .suffix(&format!(".{}", format.extension()))
            .tempfile_in(tmp_dir)
            .with_context(|| format!("creating a temporary file in {}", tmp_dir.display()))
            .map(|f| f.into_temp_path())
    };
    let (vocals_path, instrumental_path) = (temp("vocals")?, temp("instrumental")?);
    let mut vocals = StemWriter::create(&vocals_path, format, rate, channels)?;
    let mut instrumental = StemWriter::create(&instrumental_path, format, rate, channels)?;
    let mut silent = true;
    let mut write = |part: Separated| -> Result<()> {
        let voice = part.stems.get(vocals_index);
        vocals.write(&to_buffer(&voice, rate)?)?;
        instrumental.write(&to_buffer(&(&part.mix - &voice), rate)?)?;
        Ok(())
    };
    let mut report = |done: usize, total: usize| {
        bridge.report(
            done as f64 / total.max(1) as f64,
            format!("{label}: separating"),
        )
    };
    let separated = for_each_model_block(span, rate, |block| {
        silent &= analysis::peak(block) == 0.0;
        if let Some(part) = stream.push(&to_tensor(block), &mut report)? {
            write(part)?;
        }
        Ok(())
    })
    .and_then(|()| {
        if let Some(part) = stream.finish(&mut report)? {
            write(part)?;
        }
        Ok(())
    });
    separated.map_err(|err| stopped(bridge, err))?;
    vocals.finish()?;
    instrumental.finish()?;
    Ok(SeparatedFiles {
        vocals: vocals_path,
        instrumental: instrumental_path,
        silent,
    })
}

/// Calls `each` with the blocks of `span`, mixed down to mono past two channels.
fn for_each_block(span: &Span<'_>, mut each: impl FnMut(&AudioBuffer) -> Result<()>) -> Result<()> {
    let mut reader = timbre_audio::open_blocks(span.path, &span.decode)?;
    let mut position = 0u64;
    let end = span.frames.map(|f| span.start + f);
    while let Some(block) = reader.next_block(span.block_frames)? {
        let n = block.frames() as u64;
        let (from, to) = (
            span.start.max(position),
            end.map_or(position + n, |e| e.min(position + n)),
        );
        position += n;
        if from < to {
            let skip = (from - (position - n)) as usize;
            let take = (to - from) as usize;
            let block = if take == block.frames() {
                block
            } else {
                let channels = block.channels.iter().map(|c| c[skip..skip + take].to_vec());
                AudioBuffer::new(block.sample_rate, channels.collect())
            };
            if block.channels.len() > 2 {
                each(&block.to_mono())?;
            } else {
                each(&block)?;
            }
        }
        if end.is_some_and(|e| position >= e) {
            break;
        }
    }
    Ok(())
}

/// Frames that `frames` at `from` Hz become at `to` Hz (`timbre_audio::resample`'s rounding).
fn resampled_frames(frames: u64, from: u32, to: u32) -> u64 {
    if from == to {
        return frames;
    }
    (frames as f64 * f64::from(to) / f64::from(from)).round() as u64
}

/// [`for_each_block`] at `rate`: each channel through a stream resampler when the file has
/// another rate, which equals resampling the whole span (`timbre_audio::resample`).
fn for_each_model_block(
    span: &Span<'_>,
    rate: u32,
    mut each: impl FnMut(&AudioBuffer) -> Result<()>,
) -> Result<()> {
    let source_rate = span.info.sample_rate;
    if source_rate == rate {
        return for_each_block(span, each);
    }
    let channels = if span.info.channels > 2 {
        1
    } else {
        span.info.channels as usize
    };
    let mut resamplers = (0..channels)
        .map(|_| StreamResampler::new(source_rate, rate))
        .collect::<Result<Vec<_>, _>>()?;
    let mut emit = |outputs: Vec<Vec<f32>>| -> Result<()> {
        if outputs.first().is_some_and(|c| !c.is_empty()) {
            each(&AudioBuffer::new(rate, outputs))?;
        }
        Ok(())
    };
    for_each_block(span, |block| {
        let mut outputs = Vec::with_capacity(channels);
        for (resampler, channel) in resamplers.iter_mut().zip(&block.channels) {
            let mut out = Vec::new();
            resampler.push(channel, &mut out)?;
            outputs.push(out);
        }
        emit(outputs)
    })?;
    let mut outputs = Vec::with_capacity(channels);
    for resampler in resamplers {
        let mut out = Vec::new();
        resampler.finish(&mut out)?;
        outputs.push(out);
    }
    emit(outputs)
}

fn to_tensor(block: &AudioBuffer) -> Tensor {
    let (channels, frames) = (block.channels.len() as i64, block.frames() as i64);
    Tensor::from_slice(&block.channels.concat()).view([channels, frames])
}

/// The take row of the audio file `path` (stored as `stored`), read block by block with the
/// checks of `decode`.
pub(crate) fn describe_file(
    path: &Path,
    decode: &DecodeOptions,
    stored: &StoredObject,
    format: &str,
    name: String,
    voice_id: Option<i64>,
) -> Result<NewTake> {
    let mut reader = timbre_audio::open_blocks(path, decode)?;
    // The waveform's bins need the length up front; a header without it costs a first pass.
    let frames = match reader.info().frames {
        Some(frames) => frames as usize,
        None => {
            let mut count = 0;
            while let Some(block) = reader.next_block(BLOCK_FRAMES)? {
                count += block.frames();
            }
            reader = timbre_audio::open_blocks(path, decode)?;
            count
        }
    };
    let (rate, channels) = (reader.sample_rate(), reader.info().channels);
    let mut summary = Summary::new(
        rate,
        usize::from(channels),
        frames,
        crate::take_files::WAVEFORM_BINS,
    );
    while let Some(block) = reader.next_block(BLOCK_FRAMES)? {
        summary.add(&block);
    }
    let rate = reader.sample_rate();
    Ok(NewTake {
        voice_id,
        name,
        sha256: stored.sha256.clone(),
        format: format.to_string(),
        source_path: None,
        origin: Origin::Imported,
        duration_secs: summary.frames() as f64 / f64::from(rate.max(1)),
        sample_rate: rate,
        channels,
        frames: summary.frames() as u64,
        peak_dbfs: f64::from(analysis::to_dbfs(summary.peak())),
        loudness_lufs: summary.loudness_lufs(),
        waveform: summary.waveform().to_vec(),
    })
}
