//! The isolate job's streamed path: a file (or a span of it, for a sample) separated block by
//! block into two complete files (`separation::stream`), the source taken from the input.

use std::path::PathBuf;

use anyhow::{Context, Result};
use timbre_audio::AudioInfo;

use super::isolate::IsolateParams;
use crate::derived::{Source, scratch_dir};
use crate::input::AudioInput;
use crate::library::Library;
use crate::models_folder::SeparationModel;
use crate::progress::ProgressBridge;
use crate::separation::Separators;
use crate::separation::stream::{SeparatedFiles, Span, separate_file};

impl Separators<'_> {
    /// Separates the input block by block (resampled to the model's rate as it goes) into two
    /// complete files, or None, having stored nothing, when it needs the in-memory path (a
    /// sample of a file whose length is unknown before decoding).
    pub(super) fn separate_streamed(
        &self,
        library: &Library,
        model: &SeparationModel,
        params: &IsolateParams,
        bridge: &mut ProgressBridge<'_>,
        notes: &mut Vec<String>,
    ) -> Result<Option<(Source, SeparatedFiles)>> {
        let (path, name, info) = probe_input(library, &params.input)?;
        let separator = self.loaded(model, bridge, &name)?;
        let separator = separator.lock();
        let mut span = Span::whole(&path, &info, library)?;
        if let Some(secs) = params.preview_secs {
            let Some(frames) = info.frames else {
                return Ok(None);
            };
            let wanted = (secs.max(0.0) * f64::from(info.sample_rate)).round() as u64;
            if wanted >= frames {
                notes.push(format!(
                    "the input is only {:.1} s long: all of it was separated",
                    frames as f64 / f64::from(info.sample_rate)
                ));
            } else {
                span.start = (frames - wanted) / 2;
                span.frames = Some(wanted);
            }
        }
        let source = Source::open(library, &params.input, &span.decode)?;
        if info.channels > 2 {
            notes.push(format!(
                "{} channels mixed down to mono for the model",
                info.channels
            ));
        }
        if info.channels == 1 {
            notes.push("mono input: separated as two identical channels".to_string());
        }
        if i64::from(info.sample_rate) != separator.sample_rate() {
            notes.push(format!(
                "resampled from {} Hz to the model's {} Hz",
                info.sample_rate,
                separator.sample_rate()
            ));
        }
        let tmp = scratch_dir(library);
        match separate_file(&separator, &span, &tmp, params.format, bridge, &name) {
            Ok(files) => {
                if files.silent {
                    notes.push("the input is silent: so are both results".to_string());
                }
                Ok(Some((source, files)))
            }
            Err(err) => {
                let source_label = source.label();
                source.discard(library)?;
                Err(err.context(source_label))
            }
        }
    }
}

/// The input's audio file, its name for progress messages and what its header says; nothing
/// is stored yet.
fn probe_input(library: &Library, input: &AudioInput) -> Result<(PathBuf, String, AudioInfo)> {
    let resolved = input.resolve(library)?;
    let info = match &resolved.take {
        Some(take) => timbre_audio::probe_file(&resolved.path)
            .with_context(|| format!("take {} ({:?})", take.id, take.name))?,
        None => timbre_audio::probe_file(&resolved.path)?,
    };
    Ok((resolved.path, resolved.name, info))
}

#[cfg(test)]
#[path = "streamed_tests.rs"]
mod tests;
