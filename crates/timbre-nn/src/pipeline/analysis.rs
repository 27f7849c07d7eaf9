//! The model-independent half of a conversion: high-passed input, segments, HuBERT features per
//! segment, and the pitch and the energy (Vietnamese-RVC's, see `energy`) over the whole padded
//! input. One analysis serves every voice model of
//! the same feature size, which is what makes A/B between models instant. It is saved as
//! safetensors for the feature cache, segment by segment, and read back one segment at a time
//! (`store`), so a long input never needs all its features in memory.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Kind, Tensor};

use super::energy;
use super::pitch;
use super::segments::{self, Chunking, Segment, WINDOW};
use super::store;
use crate::crepe::Crepe;
use crate::fcpe::Fcpe;
use crate::hubert::{FeatureVersion, Hubert};
use crate::pesto::Pesto;
use crate::rmvpe::Rmvpe;
use crate::swift_f0::SwiftF0;

/// A source of pitch at the 10 ms grid.
pub enum PitchTracker<'a> {
    /// The RMVPE network, at RVC's voicing threshold of 0.03.
    Rmvpe(&'a Rmvpe),
    /// The FCPE network, at RVC's voicing threshold of 0.006.
    Fcpe(&'a Fcpe),
    /// Full or tiny, as the model loaded.
    Crepe(&'a Crepe),
    /// SwiftF0 over 50–1100 Hz, its 16 ms frames put on the 10 ms grid.
    SwiftF0(&'a SwiftF0),
    /// PESTO over 50–1100 Hz, voiced at a confidence of 0.5.
    Pesto(&'a Pesto),
    /// Praat-style autocorrelation (RVC's `pm`) over 50–1100 Hz, without weights.
    Pm,
    /// YIN over 50–1100 Hz, without weights.
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
            PitchTracker::Fcpe(model) => model.f0(audio_16k, crate::fcpe::THRESHOLD),
            PitchTracker::Crepe(model) => model.f0(audio_16k),
            PitchTracker::SwiftF0(model) => {
                model.f0(audio_16k, f64::from(F0_MIN), f64::from(F0_MAX))
            }
            PitchTracker::Pesto(model) => model.f0(audio_16k, F0_MIN, F0_MAX),
            PitchTracker::Pm => Ok(timbre_audio::pitch::pm::track(audio_16k, F0_MIN, F0_MAX)),
            PitchTracker::Yin => Ok(timbre_audio::pitch::yin::track(audio_16k, F0_MIN, F0_MAX)),
        }
    }
}

/// The pitch the converter tracks for 16 kHz audio: over the 48 Hz high-passed input, Hz per
/// 10 ms frame (`samples / 160 + 1` values), unvoiced frames 0 (conversion then fills them by
/// interpolation).
pub fn pitch_curve(audio_16k: &[f32], tracker: &PitchTracker) -> Result<Vec<f32>> {
    ensure!(!audio_16k.is_empty(), "the input has no samples");
    let mut f0 = tracker.track(&timbre_audio::filter::rvc_highpass(audio_16k))?;
    f0.resize(audio_16k.len() / WINDOW + 1, 0.0);
    Ok(f0)
}

/// What a conversion needs of the input alone: its length and loudness, segments, pitch and each
/// segment's HuBERT features.
pub struct Analysis {
    /// Samples of the 16 kHz input.
    pub input_len: usize,
    /// The loudness envelope of the high-passed input that the RMS mix follows
    /// (`timbre_audio::filter::envelope` at 16 kHz).
    pub input_rms: Vec<f64>,
    /// The chunking the segments were cut with (its `x_pad` is the input's padding).
    pub chunking: Chunking,
    /// Spans of the padded 16 kHz input, each converted in one synthesizer call.
    pub segments: Vec<Segment>,
    /// Pitch over the padded input in Hz, one value per 10 ms frame, unvoiced frames filled,
    /// not transposed. None when analysed for models without pitch.
    pub f0: Option<Vec<f32>>,
    /// Vietnamese-RVC's energy over the padded input, one RMS value per 10 ms frame as the pitch
    /// is laid out, for energy-conditioned voices. Every analysis computes it; None only in one
    /// saved before it was (which such a voice cannot use).
    pub energy: Option<Vec<f32>>,
    feature_dim: i64,
    features: Features,
}

/// The HuBERT features of each segment, `[1, frames, dim]`, before index retrieval: in memory,
/// or in a saved analysis and read one segment at a time.
enum Features {
    Memory(Vec<Tensor>),
    Disk(store::Reader),
}

/// Analyses 16 kHz mono audio, keeping the features in memory. `progress` hears the share done
/// and may stop the work. The input is taken whole and filtered and padded in place, so a long
/// one is never held twice.
pub fn analyze(
    audio_16k: Vec<f32>,
    hubert: &Hubert,
    version: FeatureVersion,
    tracker: Option<&PitchTracker>,
    chunking: Chunking,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Analysis> {
    let mut features = Vec::new();
    let mut analysis = run(
        audio_16k,
        hubert,
        version,
        tracker,
        chunking,
        progress,
        &mut |f| {
            features.push(f);
            Ok(())
        },
    )?;
    analysis.feature_dim = features.first().map_or(0, |f| f.size()[2]);
    analysis.features = Features::Memory(features);
    Ok(analysis)
}

/// [`analyze`], saving the analysis to `path` as it goes (each segment's features are written
/// and dropped once computed) and returning it backed by that file.
pub fn analyze_to_file(
    audio_16k: Vec<f32>,
    hubert: &Hubert,
    version: FeatureVersion,
    tracker: Option<&PitchTracker>,
    chunking: Chunking,
    path: &Path,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Analysis> {
    let segments = segments::segment_count(audio_16k.len(), &chunking);
    let mut writer = store::Writer::create(path, segments + META_TENSORS)?;
    let mut index = 0;
    let analysed = run(
        audio_16k,
        hubert,
        version,
        tracker,
        chunking,
        progress,
        &mut |f| {
            writer.add(&format!("features.{index}"), &f)?;
            index += 1;
            Ok(())
        },
    )
    .and_then(|analysis| analysis.write_meta(&mut writer));
    match analysed {
        Ok(()) => writer.finish()?,
        Err(err) => {
            writer.abandon();
            return Err(err);
        }
    }
    Analysis::load(path)
}

/// Tensors of a saved analysis besides the features.
const META_TENSORS: usize = 6;

/// Inputs up to this many pitch frames (5 minutes) are tracked whole, as the reference tracks
/// them; longer ones piece by piece, so the trackers' work buffers (RMVPE's spectrogram alone is
/// 25 MB a minute) do not grow with the input.
const PITCH_PIECE_FRAMES: usize = 30_000;
/// Frames of input each piece sees on either side beyond the frames it keeps, so a piece's edges
/// are tracked with the context the whole input gives them (RMVPE's own segments take its
/// receptive field and 256 frames).
const PITCH_CONTEXT_FRAMES: usize = 1_000;

/// Hz per 10 ms frame of `audio_16k` (`samples / 160 + 1` values), whole or in pieces.
fn track_in_pieces(tracker: &PitchTracker, audio_16k: &[f32]) -> Result<Vec<f32>> {
    track_in_pieces_of(tracker, audio_16k, PITCH_PIECE_FRAMES, PITCH_CONTEXT_FRAMES)
}

fn track_in_pieces_of(
    tracker: &PitchTracker,
    audio_16k: &[f32],
    piece_frames: usize,
    context_frames: usize,
) -> Result<Vec<f32>> {
    let frames = audio_16k.len() / WINDOW + 1;
    if frames <= piece_frames + 2 * context_frames {
        return tracker.track(audio_16k);
    }
    let mut f0 = Vec::with_capacity(frames);
    for keep_start in (0..frames).step_by(piece_frames) {
        let keep_end = (keep_start + piece_frames).min(frames);
        let run_start = keep_start.saturating_sub(context_frames);
        let run_end = (keep_end + context_frames).min(frames);
        let samples = &audio_16k[run_start * WINDOW..(run_end * WINDOW).min(audio_16k.len())];
        let mut piece = tracker.track(samples)?;
        piece.resize(run_end - run_start, 0.0);
        f0.extend_from_slice(&piece[keep_start - run_start..keep_end - run_start]);
        timbre_audio::memory::release_free_memory();
    }
    Ok(f0)
}

fn run(
    audio_16k: Vec<f32>,
    hubert: &Hubert,
    version: FeatureVersion,
    tracker: Option<&PitchTracker>,
    chunking: Chunking,
    progress: &mut dyn FnMut(f64) -> Result<()>,
    features: &mut dyn FnMut(Tensor) -> Result<()>,
) -> Result<Analysis> {
    ensure!(!audio_16k.is_empty(), "the input has no samples");
    let input_len = audio_16k.len();
    let mut filtered = audio_16k;
    timbre_audio::filter::rvc_highpass_in_place(&mut filtered);
    let input_rms = timbre_audio::filter::envelope(&filtered, segments::SAMPLE_RATE as u32);
    let segments = segments::segments(&filtered, &chunking);
    let padded = segments::reflect_pad_owned(filtered, chunking.pad_samples());
    let frames = padded.len() / WINDOW;
    let pitch_range = crate::profile::range("pitch");
    let f0 = match tracker {
        Some(tracker) => {
            let mut f0 = track_in_pieces(tracker, &padded)?;
            f0.resize(frames.max(f0.len()), 0.0);
            f0.truncate(frames);
            pitch::fill_unvoiced(&mut f0);
            Some(f0)
        }
        None => None,
    };
    drop(pitch_range);
    let energy = energy::frames(&padded, frames);
    timbre_audio::memory::release_free_memory();
    progress(0.2)?;
    let _guard = tch::no_grad_guard();
    let _range = crate::profile::range("hubert");
    for (i, segment) in segments.iter().enumerate() {
        let audio = Tensor::from_slice(&padded[segment.start..segment.end])
            .view([1, -1])
            .to_device(hubert.device());
        features(
            hubert
                .features(&audio, version)?
                .to_device(tch::Device::Cpu),
        )?;
        timbre_audio::memory::release_free_memory();
        progress(0.2 + 0.8 * (i + 1) as f64 / segments.len() as f64)?;
    }
    Ok(Analysis {
        input_len,
        input_rms,
        chunking,
        segments,
        f0,
        energy: Some(energy),
        feature_dim: 0,
        features: Features::Memory(Vec::new()),
    })
}

impl Analysis {
    /// Width of the features (256 for v1, 768 for v2); 0 when no segment has any.
    pub fn feature_dim(&self) -> i64 {
        self.feature_dim
    }

    /// The features of segment `i`, `[1, frames, dim]`.
    pub fn features(&self, i: usize) -> Result<Tensor> {
        match &self.features {
            Features::Memory(all) => all
                .get(i)
                .map(Tensor::shallow_clone)
                .with_context(|| format!("the analysis has no segment {i}")),
            Features::Disk(reader) => reader.read(&format!("features.{i}")),
        }
    }

    /// Bytes this analysis holds in memory (features kept on disk count nothing).
    pub fn memory_bytes(&self) -> u64 {
        let features = match &self.features {
            Features::Memory(all) => all.iter().map(|f| f.numel() as u64 * 4).sum(),
            Features::Disk(_) => 0,
        };
        features
            + self.input_rms.len() as u64 * 8
            + self.f0.as_ref().map_or(0, |f| f.len() as u64 * 4)
            + self.energy.as_ref().map_or(0, |e| e.len() as u64 * 4)
            + self.segments.len() as u64 * 16
    }

    /// Seconds of input analysed.
    pub fn duration_secs(&self) -> f64 {
        self.input_len as f64 / segments::SAMPLE_RATE as f64
    }

    /// Writes the analysis to `path` as safetensors, for [`Analysis::load`].
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut writer = store::Writer::create(path, self.segments.len() + META_TENSORS)?;
        for i in 0..self.segments.len() {
            writer.add(&format!("features.{i}"), &self.features(i)?)?;
        }
        self.write_meta(&mut writer)?;
        writer.finish()
    }

    fn write_meta(&self, writer: &mut store::Writer) -> Result<()> {
        let bounds: Vec<i64> = self
            .segments
            .iter()
            .flat_map(|s| [s.start as i64, s.end as i64])
            .collect();
        let c = &self.chunking;
        writer.add("input_len", &Tensor::from_slice(&[self.input_len as i64]))?;
        writer.add("input_rms", &Tensor::from_slice(&self.input_rms))?;
        writer.add("segments", &Tensor::from_slice(&bounds))?;
        writer.add(
            "chunking",
            &Tensor::from_slice(&[c.x_pad, c.x_query, c.x_center, c.x_max]),
        )?;
        if let Some(f0) = &self.f0 {
            writer.add("f0", &Tensor::from_slice(f0))?;
        }
        if let Some(energy) = &self.energy {
            writer.add("energy", &Tensor::from_slice(energy))?;
        }
        Ok(())
    }

    /// Opens a saved analysis; its features stay on disk until a segment asks for them.
    pub fn load(path: &Path) -> Result<Analysis> {
        let reader = store::Reader::open(path)?;
        let input_len = Vec::<i64>::try_from(reader.read("input_len")?)?;
        let input_rms = Vec::<f64>::try_from(reader.read("input_rms")?)?;
        let bounds = Vec::<i64>::try_from(reader.read("segments")?)?;
        let c = Vec::<f64>::try_from(reader.read("chunking")?)?;
        if c.len() != 4 || bounds.len() % 2 != 0 || input_len.len() != 1 {
            bail!("{}: not a saved analysis", path.display());
        }
        let segments: Vec<Segment> = bounds
            .chunks(2)
            .map(|p| Segment {
                start: p[0] as usize,
                end: p[1] as usize,
            })
            .collect();
        for i in 0..segments.len() {
            ensure!(
                reader.has(&format!("features.{i}")),
                "{}: `features.{i}` is missing",
                path.display()
            );
        }
        let feature_dim = reader
            .shape("features.0")
            .and_then(|s| s.get(2).copied())
            .unwrap_or(0);
        let curve = |name: &str| -> Result<Option<Vec<f32>>> {
            match reader.has(name) {
                true => Ok(Some(Vec::<f32>::try_from(reader.read(name)?)?)),
                false => Ok(None),
            }
        };
        let (f0, energy) = (curve("f0")?, curve("energy")?);
        Ok(Analysis {
            input_len: input_len[0] as usize,
            input_rms,
            chunking: Chunking {
                x_pad: c[0],
                x_query: c[1],
                x_center: c[2],
                x_max: c[3],
            },
            segments,
            f0,
            energy,
            feature_dim,
            features: Features::Disk(reader),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use timbre_test_support::max_abs_difference;

    #[test]
    fn pitch_tracked_in_pieces_is_the_pitch_tracked_whole() {
        let rate = segments::SAMPLE_RATE as f32;
        let audio: Vec<f32> = (0..16_000 * 12)
            .map(|i| {
                let t = i as f32 / rate;
                let hz = 180.0 + 40.0 * (t * 0.7).sin();
                0.5 * (2.0 * std::f32::consts::PI * hz * t).sin()
            })
            .collect();
        let whole = PitchTracker::Yin.track(&audio).unwrap();
        let pieces = track_in_pieces_of(&PitchTracker::Yin, &audio, 250, 60).unwrap();
        assert_eq!(pieces.len(), whole.len());
        assert!(whole.iter().filter(|f| **f > 0.0).count() > whole.len() * 9 / 10);
        let worst = max_abs_difference(&whole, &pieces);
        assert!(worst < 1e-3, "{worst} Hz");
    }
}
