//! The separation models and the runs that use them, shared by the jobs that separate (isolate,
//! cover, dataset preparation): which checkpoints (RoFormer or MDX23C) the models folder holds,
//! which one a request means, and vocals and instrumental of a buffer by that model or by the
//! weight-free rough preview; a file separated block by block into two files (`stream`).

pub(crate) mod stream;

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};
use timbre_audio::AudioBuffer;
use timbre_nn::separation::{Separator, instrumental};

use crate::model_cache::{ModelCache, Shared};
use crate::models_folder::{SeparationModel, separation_models};
use crate::progress::ProgressBridge;
use timbre_nn::separation::VoiceTask;

/// Which separator to use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum IsolationMethod {
    /// The first separation model in the models folder, else the rough preview.
    #[default]
    Auto,
    /// The weight-free rough preview, even when a model is there.
    Rough,
    /// The separation model of this name (`separation/<name>.ckpt`).
    Model(String),
}

/// The separation models of one run: from the process's model cache, on the run's device.
pub struct Separators<'a> {
    models: &'a ModelCache,
    device: Device,
}

impl<'a> Separators<'a> {
    /// The separators of a run on `device`, loaded through `models`.
    pub fn new(models: &'a ModelCache, device: Device) -> Self {
        Self { models, device }
    }

    /// The device the run separates on.
    pub fn device(&self) -> Device {
        self.device
    }
}

/// Vocals and instrumental of `audio`: by `model`, or the rough preview without one.
pub(crate) fn separate_audio(
    separators: &Separators,
    model: Option<&SeparationModel>,
    audio: AudioBuffer,
    bridge: &mut ProgressBridge<'_>,
    label: &str,
    notes: &mut Vec<String>,
) -> Result<(AudioBuffer, AudioBuffer)> {
    match model {
        Some(model) => separators.separate(model, audio, bridge, label, notes),
        None => {
            let rough = timbre_audio::isolate::isolate_rough(audio, &mut |f| {
                bridge.report(f, format!("{label}: rough isolation"))
            });
            rough
                .map(|r| (r.vocals, r.instrumental))
                .map_err(|err| bridge.error(err))
        }
    }
}

/// The model `method` asks for to isolate the vocals of a mix, or None for the rough preview:
/// `Auto` takes the first model with a `vocals` stem; a named one must have one (a karaoke or
/// de-reverb model takes a vocal stem, not a mix).
pub(crate) fn choose_model(
    method: &IsolationMethod,
    dir: &Path,
) -> Result<Option<SeparationModel>> {
    match method {
        IsolationMethod::Rough => Ok(None),
        IsolationMethod::Auto => Ok(separation_models(dir)
            .into_iter()
            .find(|m| m.task == Some(VoiceTask::Vocals))),
        IsolationMethod::Model(name) => {
            let model = named_model(name, dir)?;
            if model.task != Some(VoiceTask::Vocals) {
                return Err(wrong_stems(
                    &model,
                    "vocals, so it cannot isolate a voice from a mix",
                ));
            }
            Ok(Some(model))
        }
    }
}

/// The model of a second pass over isolated vocals (karaoke, de-reverb, or another vocals
/// model): any whose stems hold a voice.
pub(crate) fn choose_second_pass(name: &str, dir: &Path) -> Result<SeparationModel> {
    let model = named_model(name, dir)?;
    if model.task.is_none() {
        return Err(wrong_stems(&model, "a voice (vocals, karaoke or noreverb)"));
    }
    Ok(model)
}

fn named_model(name: &str, dir: &Path) -> Result<SeparationModel> {
    let available = separation_models(dir);
    let names: Vec<String> = available.iter().map(|m| m.name.clone()).collect();
    available
        .into_iter()
        .find(|m| m.name == name)
        .ok_or_else(|| {
            crate::error::not_found(format!(
                "no separation model {name:?} in {}: put {name}.ckpt and {name}.yaml there (found: \
             {})",
                dir.join("separation").display(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })
}

/// The refusal of `model`, whose stems are not `wanted`.
fn wrong_stems(model: &SeparationModel, wanted: &str) -> anyhow::Error {
    let stems = if model.stems.is_empty() {
        "stems its config does not name (or an unreadable config)".to_string()
    } else {
        model.stems.join(" and ")
    };
    crate::error::invalid_input(format!(
        "{}: the separation model {:?} outputs {stems}, not {wanted}",
        model.config.display(),
        model.name
    ))
}

/// A separated tensor (channels × samples) as audio at `rate`.
pub(crate) fn to_buffer(tensor: &Tensor, rate: u32) -> Result<AudioBuffer> {
    let channels = (0..tensor.size()[0])
        .map(|c| Vec::<f32>::try_from(tensor.get(c).to_kind(tch::Kind::Float).contiguous()))
        .collect::<Result<Vec<_>, _>>()
        .context("reading the separated audio")?;
    Ok(AudioBuffer::new(rate, channels))
}

impl Separators<'_> {
    /// The separator of `model`, from the cache or loaded.
    pub(crate) fn loaded(
        &self,
        model: &SeparationModel,
        bridge: &mut ProgressBridge<'_>,
        label: &str,
    ) -> Result<Shared<Separator>> {
        bridge.report(0.0, format!("{label}: loading {}", model.name));
        Ok(self.models.separator(model, self.device)?.0)
    }

    /// Vocals and instrumental by the model, at the model's sample rate.
    pub(crate) fn separate(
        &self,
        model: &SeparationModel,
        mut audio: AudioBuffer,
        bridge: &mut ProgressBridge<'_>,
        label: &str,
        notes: &mut Vec<String>,
    ) -> Result<(AudioBuffer, AudioBuffer)> {
        let separator = self.loaded(model, bridge, label)?;
        let separator = separator.lock();
        let rate = u32::try_from(separator.sample_rate()).context("the model's sample rate")?;
        if audio.channels.len() > 2 {
            notes.push(format!(
                "{} channels mixed down to mono for the model",
                audio.channels.len()
            ));
            audio = audio.to_mono();
        }
        if audio.channels.len() == 1 {
            notes.push("mono input: separated as two identical channels".to_string());
        }
        if audio.sample_rate != rate {
            notes.push(format!(
                "resampled from {} Hz to the model's {rate} Hz",
                audio.sample_rate
            ));
            audio = timbre_audio::resample(&audio, rate)?;
        }
        let (channels, samples) = (audio.channels.len() as i64, audio.frames() as i64);
        let planar = audio.channels.concat();
        drop(audio);
        let mix = Tensor::from_slice(&planar).view([channels, samples]);
        drop(planar);
        let vocals = separator.vocals(&mix, |done, total| {
            bridge.report(
                done as f64 / total.max(1) as f64,
                format!("{label}: separating"),
            )
        });
        let vocals = match vocals {
            Ok(vocals) => vocals,
            Err(err) => return Err(bridge.stopped.take().unwrap_or(err)),
        };
        let accompaniment = instrumental(&mix, &vocals)?;
        Ok((to_buffer(&vocals, rate)?, to_buffer(&accompaniment, rate)?))
    }
}
