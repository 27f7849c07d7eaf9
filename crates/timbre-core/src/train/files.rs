//! A training on disk, under `<data dir>/trainings/<id>/`:
//!
//! - `checkpoints/`: RVC's `G_<step>.pth` / `D_<step>.pth` pairs, the newest few;
//! - `previews/epoch_<n>.wav`: the fixed piece resynthesised after epoch `n`;
//! - `judge/step_<n>.wav`: the first held-out piece as checkpoint `G_<n>` converts it;
//! - `<name>.pth` and `<name>.index`: the exported inference model and its index, which the
//!   library copies into its store when the training ends;
//! - `exports/<name>_G_<step>.pth`: models exported from checkpoints on request.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use timbre_audio::{AudioBuffer, SampleFormat};

/// The paths of one training's files, under `<data dir>/trainings/<id>/`.
pub struct TrainingFiles {
    root: PathBuf,
    stem: String,
}

impl TrainingFiles {
    /// The files of training `id`, whose exports are named after `name`.
    pub fn new(data_dir: &Path, id: i64, name: &str) -> Self {
        Self {
            root: folder(data_dir, id),
            stem: file_stem(name),
        }
    }

    /// The training's folder, `<data dir>/trainings/<id>`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of RVC's `G_<step>.pth` / `D_<step>.pth` checkpoint pairs.
    pub fn checkpoints(&self) -> PathBuf {
        self.root.join("checkpoints")
    }

    /// The preview rendered after `epoch`: `previews/epoch_<epoch>.wav`.
    pub fn preview(&self, epoch: i64) -> PathBuf {
        self.root
            .join("previews")
            .join(format!("epoch_{epoch}.wav"))
    }

    /// The judge's rendering of the first held-out piece by checkpoint `step`.
    pub fn judge_sample(&self, step: i64) -> PathBuf {
        self.root.join("judge").join(format!("step_{step}.wav"))
    }

    /// The exported inference model, `<name>.pth` (the name with unsafe characters as `_`).
    pub fn model(&self) -> PathBuf {
        self.root.join(format!("{}.pth", self.stem))
    }

    /// The feature index trained at the end, `<name>.index`.
    pub fn index(&self) -> PathBuf {
        self.root.join(format!("{}.index", self.stem))
    }

    /// The inference model exported from checkpoint `G_<step>`.
    pub fn export(&self, checkpoint: &str) -> PathBuf {
        self.root
            .join("exports")
            .join(format!("{}_{checkpoint}.pth", self.stem))
    }

    /// Writes `samples` as a float WAV at `path`, renamed into place when complete.
    pub fn write_wav(path: &Path, samples: Vec<f32>, rate: u32) -> Result<()> {
        let cannot_write = || format!("{}: cannot write", path.display());
        let dir = path.parent().context("a preview has no folder")?;
        std::fs::create_dir_all(dir).with_context(cannot_write)?;
        let bytes = timbre_audio::encode_wav(
            &AudioBuffer::new(rate, vec![samples]),
            SampleFormat::Float32,
        )?;
        let mut temp = tempfile::Builder::new()
            .prefix(".preview")
            .tempfile_in(dir)
            .with_context(cannot_write)?;
        std::io::Write::write_all(&mut temp, &bytes).with_context(cannot_write)?;
        temp.persist(path).with_context(cannot_write)?;
        Ok(())
    }
}

/// The folder of training `id`.
pub fn folder(data_dir: &Path, id: i64) -> PathBuf {
    data_dir.join("trainings").join(id.to_string())
}

/// A file name from a model's name: letters, digits, `-`, `_` and `.` kept, the rest `_`.
fn file_stem(name: &str) -> String {
    let stem: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim_start_matches('.');
    if stem.is_empty() {
        "model".into()
    } else {
        stem.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_after_the_training() {
        let files = TrainingFiles::new(Path::new("/data"), 7, " Ada / v2 ");
        assert_eq!(files.root(), Path::new("/data/trainings/7"));
        assert_eq!(files.model(), Path::new("/data/trainings/7/Ada___v2.pth"));
        assert_eq!(files.index(), Path::new("/data/trainings/7/Ada___v2.index"));
        assert_eq!(
            files.preview(12),
            Path::new("/data/trainings/7/previews/epoch_12.wav")
        );
        assert_eq!(file_stem("..."), "model");
        assert_eq!(file_stem("Élise"), "Élise");
    }

    #[test]
    fn a_preview_is_a_float_wav_at_the_model_rate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("previews/epoch_1.wav");
        TrainingFiles::write_wav(&path, vec![0.25, -0.5], 40_000).unwrap();
        let audio = timbre_audio::decode_file(&path, &Default::default()).unwrap();
        assert_eq!(audio.sample_rate, 40_000);
        assert_eq!(audio.channels, vec![vec![0.25, -0.5]]);
    }
}
