//! The converted audio written to a temporary file as the render hands it over. A WAV is
//! streamed to disk through the effects chain, so a long output is never held in memory; FLAC and
//! the lossy formats (whose encoders here take the whole signal) gather it first, and run the
//! effects and encode it at the end.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;
use timbre_audio::effects::{EffectChain, EffectStream};
use timbre_audio::export::{self, Tags};
use timbre_audio::{AudioBuffer, WavStreamWriter};
use timbre_nn::pipeline::OutputSink;

use crate::output_format::OutputFormat;

/// A WAV written as the samples come, through the effects when there are any.
struct StreamedWav {
    writer: WavStreamWriter,
    rate: u32,
    effects: Option<EffectStream>,
}

pub(crate) struct OutputFile {
    format: OutputFormat,
    effects: Option<EffectChain>,
    tmp_dir: PathBuf,
    file: NamedTempFile,
    wav: Option<StreamedWav>,
    /// The samples, processed and encoded at the end.
    gathered: Option<AudioBuffer>,
}

impl OutputFile {
    /// A file in `tmp_dir`, the library's own temporary folder: one a killed process leaves
    /// behind is removed at the next start, not left in the system's.
    pub fn new(
        format: OutputFormat,
        effects: Option<EffectChain>,
        tmp_dir: &Path,
    ) -> Result<OutputFile> {
        let file = tempfile::Builder::new()
            .suffix(&format!(".{}", format.extension()))
            .tempfile_in(tmp_dir)
            .with_context(|| format!("creating the output file in {}", tmp_dir.display()))?;
        Ok(OutputFile {
            format,
            effects: effects.filter(|chain| !chain.effects.is_empty()),
            tmp_dir: tmp_dir.to_path_buf(),
            file,
            wav: None,
            gathered: None,
        })
    }

    /// The complete file, tagged.
    pub fn finish(self, tags: &Tags) -> Result<NamedTempFile> {
        if let Some(mut wav) = self.wav {
            if let Some(effects) = wav.effects.take() {
                wav.writer
                    .write(&AudioBuffer::new(wav.rate, effects.finish()))?;
            }
            wav.writer.finish()?;
        }
        if let Some(mut buffer) = self.gathered {
            if let Some(chain) = &self.effects {
                chain.apply(&mut buffer).map_err(effects_error)?;
            }
            export::write_encoded(self.file.path(), &buffer, self.format.codec())?;
        }
        export::write_tags(self.file.path(), tags)?;
        Ok(self.file)
    }
}

impl OutputSink for OutputFile {
    fn scratch_dir(&self) -> Option<&Path> {
        Some(&self.tmp_dir)
    }

    fn begin(&mut self, sample_rate: u32) -> Result<()> {
        match self.format.wav_sample_format() {
            Some(fmt) => {
                let effects = self
                    .effects
                    .as_ref()
                    .map(|chain| chain.stream(sample_rate, 1))
                    .transpose()
                    .map_err(effects_error)?;
                self.wav = Some(StreamedWav {
                    writer: WavStreamWriter::create(self.file.path(), sample_rate, 1, fmt)?,
                    rate: sample_rate,
                    effects,
                });
            }
            _ => self.gathered = Some(AudioBuffer::new(sample_rate, vec![Vec::new()])),
        }
        Ok(())
    }

    fn write(&mut self, samples: &[f32]) -> Result<()> {
        if let Some(wav) = &mut self.wav {
            let block = vec![samples.to_vec()];
            let block = match &mut wav.effects {
                Some(effects) => effects.push(&block),
                None => block,
            };
            wav.writer.write(&AudioBuffer::new(wav.rate, block))?;
        }
        if let Some(buffer) = &mut self.gathered {
            buffer.channels[0].extend_from_slice(samples);
        }
        Ok(())
    }
}

fn effects_error(err: timbre_audio::effects::ChainError) -> anyhow::Error {
    crate::error::invalid_input(format!("effects: {err}"))
}
