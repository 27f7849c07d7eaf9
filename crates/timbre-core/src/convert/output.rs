//! The converted audio written to a temporary file as the render hands it over, in the job's
//! output format, so a long output is never held in memory (except FLAC, whose encoder takes
//! the whole signal).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;
use timbre_audio::{AudioBuffer, WavStreamWriter};
use timbre_nn::pipeline::OutputSink;

use crate::output_format::OutputFormat;

pub(crate) struct OutputFile {
    format: OutputFormat,
    tmp_dir: PathBuf,
    file: NamedTempFile,
    wav: Option<(WavStreamWriter, u32)>,
    /// FLAC: the samples, encoded at the end.
    flac: Option<AudioBuffer>,
}

impl OutputFile {
    /// A file in `tmp_dir`, the library's own temporary folder: one a killed process leaves
    /// behind is removed at the next start, not left in the system's.
    pub fn new(format: OutputFormat, tmp_dir: &Path) -> Result<OutputFile> {
        let file = tempfile::Builder::new()
            .suffix(&format!(".{}", format.extension()))
            .tempfile_in(tmp_dir)
            .with_context(|| format!("creating the output file in {}", tmp_dir.display()))?;
        Ok(OutputFile {
            format,
            tmp_dir: tmp_dir.to_path_buf(),
            file,
            wav: None,
            flac: None,
        })
    }

    /// The complete file.
    pub fn finish(self) -> Result<NamedTempFile> {
        if let Some((wav, _)) = self.wav {
            wav.finish()?;
        }
        if let Some(buffer) = self.flac {
            timbre_audio::write_flac(self.file.path(), &buffer, 16)?;
        }
        Ok(self.file)
    }
}

impl OutputSink for OutputFile {
    fn scratch_dir(&self) -> Option<&Path> {
        Some(&self.tmp_dir)
    }

    fn begin(&mut self, sample_rate: u32) -> Result<()> {
        let Some(fmt) = self.format.wav_sample_format() else {
            self.flac = Some(AudioBuffer::new(sample_rate, vec![Vec::new()]));
            return Ok(());
        };
        let wav = WavStreamWriter::create(self.file.path(), sample_rate, 1, fmt)?;
        self.wav = Some((wav, sample_rate));
        Ok(())
    }

    fn write(&mut self, samples: &[f32]) -> Result<()> {
        if let Some((wav, rate)) = &mut self.wav {
            wav.write(&AudioBuffer::new(*rate, vec![samples.to_vec()]))?;
        }
        if let Some(buffer) = &mut self.flac {
            buffer.channels[0].extend_from_slice(samples);
        }
        Ok(())
    }
}
