//! The model-independent half of a conversion: high-passed input, segments, HuBERT features per
//! segment and the pitch over the whole padded input. One analysis serves every voice model of
//! the same feature size, which is what makes A/B between models instant; it is saved to and
//! loaded from disk as safetensors for the feature cache.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Kind, Tensor};

use super::pitch;
use super::segments::{self, Chunking, Segment, WINDOW};
use crate::hubert::{FeatureVersion, Hubert};
use crate::rmvpe::Rmvpe;

/// A source of pitch at the 10 ms grid.
pub enum PitchTracker<'a> {
    Rmvpe(&'a Rmvpe),
    Pm,
    Yin,
}

const F0_MIN: f32 = 50.0;
const F0_MAX: f32 = 1100.0;
const RMVPE_THRESHOLD: f32 = 0.03;

impl PitchTracker<'_> {
    /// Hz per 10 ms frame (0 = unvoiced), `samples / 160 + 1` frames.
    pub fn track(&self, audio_16k: &[f32]) -> Result<Vec<f32>> {
        match self {
            PitchTracker::Rmvpe(model) => {
                let audio = Tensor::from_slice(audio_16k).to_device(model.device());
                let f0 = model.f0(&audio, RMVPE_THRESHOLD)?;
                Ok(Vec::<f32>::try_from(
                    f0.to_kind(Kind::Float).to_device(tch::Device::Cpu),
                )?)
            }
            PitchTracker::Pm => Ok(timbre_audio::pitch::pm::track(audio_16k, F0_MIN, F0_MAX)),
            PitchTracker::Yin => Ok(timbre_audio::pitch::yin::track(audio_16k, F0_MIN, F0_MAX)),
        }
    }
}

pub struct Analysis {
    /// The high-passed input at 16 kHz, unpadded (the RMS mix follows its envelope).
    pub filtered: Vec<f32>,
    pub chunking: Chunking,
    pub segments: Vec<Segment>,
    /// HuBERT features of each segment, `[1, frames, dim]`, before index retrieval.
    pub features: Vec<Tensor>,
    /// Pitch over the padded input in Hz, one value per 10 ms frame, unvoiced frames filled,
    /// not transposed. None when analysed for models without pitch.
    pub f0: Option<Vec<f32>>,
}

/// Analyses 16 kHz mono audio. `progress` hears the share done and may stop the work.
pub fn analyze(
    audio_16k: &[f32],
    hubert: &Hubert,
    version: FeatureVersion,
    tracker: Option<&PitchTracker>,
    chunking: Chunking,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Analysis> {
    ensure!(!audio_16k.is_empty(), "the input has no samples");
    let filtered = timbre_audio::filter::rvc_highpass(audio_16k);
    let padded = segments::reflect_pad(&filtered, chunking.pad_samples());
    let segments = segments::segments(&filtered, &chunking);
    let frames = padded.len() / WINDOW;
    let f0 = match tracker {
        Some(tracker) => {
            let mut f0 = tracker.track(&padded)?;
            f0.resize(frames.max(f0.len()), 0.0);
            f0.truncate(frames);
            pitch::fill_unvoiced(&mut f0);
            Some(f0)
        }
        None => None,
    };
    progress(0.2)?;
    let mut features = Vec::with_capacity(segments.len());
    let _guard = tch::no_grad_guard();
    for (i, segment) in segments.iter().enumerate() {
        let audio = Tensor::from_slice(&padded[segment.start..segment.end])
            .view([1, -1])
            .to_device(hubert.device());
        features.push(
            hubert
                .features(&audio, version)?
                .to_device(tch::Device::Cpu),
        );
        progress(0.2 + 0.8 * (i + 1) as f64 / segments.len() as f64)?;
    }
    Ok(Analysis {
        filtered,
        chunking,
        segments,
        features,
        f0,
    })
}

impl Analysis {
    pub fn feature_dim(&self) -> i64 {
        self.features.first().map_or(0, |f| f.size()[2])
    }

    /// Seconds of input analysed.
    pub fn duration_secs(&self) -> f64 {
        self.filtered.len() as f64 / 16_000.0
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let bounds: Vec<i64> = self
            .segments
            .iter()
            .flat_map(|s| [s.start as i64, s.end as i64])
            .collect();
        let c = &self.chunking;
        let mut named = vec![
            ("filtered".to_string(), Tensor::from_slice(&self.filtered)),
            ("segments".to_string(), Tensor::from_slice(&bounds)),
            (
                "chunking".to_string(),
                Tensor::from_slice(&[c.x_pad, c.x_query, c.x_center, c.x_max]),
            ),
        ];
        if let Some(f0) = &self.f0 {
            named.push(("f0".to_string(), Tensor::from_slice(f0)));
        }
        for (i, f) in self.features.iter().enumerate() {
            named.push((
                format!("features.{i}"),
                f.to_device(tch::Device::Cpu).to_kind(Kind::Float),
            ));
        }
        let tmp = path.with_extension("tmp");
        Tensor::write_safetensors(&named, &tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Analysis> {
        let named = Tensor::read_safetensors(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let get = |name: &str| {
            named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.shallow_clone())
                .with_context(|| format!("{}: `{name}` is missing", path.display()))
        };
        let filtered = Vec::<f32>::try_from(get("filtered")?)?;
        let bounds = Vec::<i64>::try_from(get("segments")?)?;
        let c = Vec::<f64>::try_from(get("chunking")?)?;
        if c.len() != 4 || bounds.len() % 2 != 0 {
            bail!("{}: not a saved analysis", path.display());
        }
        let segments: Vec<Segment> = bounds
            .chunks(2)
            .map(|p| Segment {
                start: p[0] as usize,
                end: p[1] as usize,
            })
            .collect();
        let features = (0..segments.len())
            .map(|i| get(&format!("features.{i}")))
            .collect::<Result<_>>()?;
        let f0 = get("f0").ok().map(Vec::<f32>::try_from).transpose()?;
        let chunking = Chunking {
            x_pad: c[0],
            x_query: c[1],
            x_center: c[2],
            x_max: c[3],
        };
        Ok(Analysis {
            filtered,
            chunking,
            segments,
            features,
            f0,
        })
    }
}
