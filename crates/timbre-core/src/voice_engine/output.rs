//! The converted audio written to a temporary file as the render hands it over: through the
//! effects chain as a stream, into the format's encoder as a stream, so a long output is never
//! held in memory.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;
use timbre_audio::effects::{EffectChain, EffectStream};
use timbre_audio::export::{self, EncodedWriter, Tags};
use timbre_nn::pipeline::OutputSink;

use crate::output_format::OutputFormat;

pub(crate) struct OutputFile {
    format: OutputFormat,
    effects: Option<EffectChain>,
    tmp_dir: PathBuf,
    file: NamedTempFile,
    /// Set up by `begin`, when the rate is known.
    encoding: Option<Encoding>,
}

struct Encoding {
    writer: EncodedWriter,
    effects: Option<EffectStream>,
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
            encoding: None,
        })
    }

    /// The complete file, tagged.
    pub fn finish(self, tags: &Tags) -> Result<NamedTempFile> {
        if let Some(Encoding {
            mut writer,
            effects,
        }) = self.encoding
        {
            if let Some(effects) = effects {
                writer.write(&effects.finish())?;
            }
            writer.finish()?;
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
        let effects = self
            .effects
            .as_ref()
            .map(|chain| chain.stream(sample_rate, 1))
            .transpose()
            .map_err(|e| crate::error::invalid_input(format!("effects: {e}")))?;
        let writer = EncodedWriter::create(self.file.path(), self.format.codec(), sample_rate, 1)?;
        self.encoding = Some(Encoding { writer, effects });
        Ok(())
    }

    fn write(&mut self, samples: &[f32]) -> Result<()> {
        if let Some(encoding) = &mut self.encoding {
            let block = vec![samples.to_vec()];
            let block = match &mut encoding.effects {
                Some(effects) => effects.push(block),
                None => block,
            };
            encoding.writer.write(&block)?;
        }
        Ok(())
    }
}
