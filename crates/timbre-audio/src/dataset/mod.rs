//! Training-set preparation as RVC's `infer/modules/train/preprocess.py` (`PreProcess`) does it,
//! per file: the causal 48 Hz high-pass (`lfilter` of a 5th-order Butterworth at the model rate),
//! slicing at silences ([`Slicer`]), overlapping pieces of 3.7 s ([`pieces`]), peak
//! normalisation with its skip rule ([`normalize_piece`]), each kept piece at the model rate
//! (`0_gt_wavs`) and at 16 kHz (`1_16k_wavs`), plus a [`DatasetReport`].
//!
//! Differences from the reference, on purpose: input at another rate is resampled with
//! [`crate::resample`] (the reference decodes through ffmpeg at the model rate); the 16 kHz copy
//! is resampled with rubato (the reference: librosa's soxr_hq), to librosa's length
//! `ceil(n · 16000 / sr)`; pieces are numbered 0, 1, 2… per file (the reference's counter skips a
//! number at each slice's last piece and so writes a slice's first full piece over the previous
//! slice's last one); all-zero pieces are dropped rather than divided by a zero peak.

mod pieces;
mod report;
mod slicer;

#[cfg(test)]
mod parity_tests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub use pieces::{
    RVC_MAX_PIECE_PEAK, RVC_PIECE_OVERLAP, RVC_PIECE_SECONDS, Rejected, normalize_piece, pieces,
};
pub use report::{
    CLIP_LEVEL, DatasetReport, DatasetWarning, FileReport, HeldOutReport, MAX_CLIPPING_RATIO,
    MIN_KEPT_SECONDS, MIN_SNR_DB, MIN_SPEECH_BAND_RATIO, PitchRange, SPEECH_BAND_HZ, WarningKind,
};
pub use slicer::{Slicer, SlicerConfig};

use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};
use crate::filter::{RVC_HIGHPASS_CUTOFF_HZ, RVC_HIGHPASS_ORDER, butter_highpass, lfilter};
use crate::pitch::{RVC_F0_MAX, RVC_F0_MIN, yin};
use report::ReportBuilder;

/// Rate of the second copy of each piece (what HuBERT and the f0 extractors read).
pub const FEATURE_RATE: u32 = 16_000;

/// The preprocessing settings; the defaults are RVC's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrepareConfig {
    /// Silence-slicing settings (RVC's `Slicer` arguments).
    pub slicer: SlicerConfig,
    /// Piece length, in seconds (RVC's `per`).
    pub per: f64,
    /// Overlap between consecutive pieces, in seconds.
    pub overlap: f64,
    /// Track pitch (YIN) over the kept pieces for the report's pitch range.
    pub pitch: bool,
}

impl Default for PrepareConfig {
    fn default() -> Self {
        PrepareConfig {
            slicer: SlicerConfig::default(),
            per: RVC_PIECE_SECONDS,
            overlap: RVC_PIECE_OVERLAP,
            pitch: true,
        }
    }
}

/// One training piece: `index` counts the kept pieces of input `source` from 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// Position of the input file in the order it was added, from 0.
    pub source: usize,
    /// Position among this file's kept pieces, from 0.
    pub index: usize,
    /// The normalised piece at the model rate (what goes to `0_gt_wavs`).
    pub audio_target_sr: Vec<f32>,
    /// The same piece at 16 kHz (what goes to `1_16k_wavs`).
    pub audio_16k: Vec<f32>,
}

#[derive(Debug, Clone, PartialEq)]
/// Output of [`prepare_dataset`]: every kept piece of every input, with the report.
pub struct PreparedDataset {
    /// Kept pieces, in input order and then piece order.
    pub pieces: Vec<Piece>,
    /// Per-file and overall statistics and warnings.
    pub report: DatasetReport,
}

/// Prepares files one at a time (so a caller can write each file's pieces out before decoding
/// the next), then [`DatasetPreparer::finish`] gives the report.
pub struct DatasetPreparer {
    target_sr: u32,
    cfg: PrepareConfig,
    slicer: Slicer,
    highpass: (Vec<f64>, Vec<f64>),
    report: ReportBuilder,
}

impl DatasetPreparer {
    /// Fails for a model rate too low for the 48 Hz high-pass and for invalid settings.
    pub fn new(target_sr: u32, cfg: &PrepareConfig) -> Result<Self, AudioError> {
        let invalid = |detail: String| AudioError::new(AudioErrorKind::Unsupported, None, detail);
        let highpass = butter_highpass(
            RVC_HIGHPASS_ORDER,
            RVC_HIGHPASS_CUTOFF_HZ,
            f64::from(target_sr),
        )
        .ok_or_else(|| invalid(format!("cannot prepare a dataset at {target_sr} Hz")))?;
        let valid_pieces = cfg.per.is_finite() && cfg.overlap >= 0.0 && cfg.per > cfg.overlap;
        if !valid_pieces {
            return Err(invalid(format!(
                "invalid piece settings: per {} s must exceed overlap {} s >= 0",
                cfg.per, cfg.overlap
            )));
        }
        Ok(DatasetPreparer {
            target_sr,
            cfg: *cfg,
            slicer: Slicer::new(target_sr, &cfg.slicer)?,
            highpass,
            report: ReportBuilder::new(),
        })
    }

    /// Prepares one mono input at `sample_rate`; its pieces name it by the order of this call.
    pub fn add_file(
        &mut self,
        name: &str,
        samples: &[f32],
        sample_rate: u32,
    ) -> Result<Vec<Piece>, AudioError> {
        let source = self.report.file_count();
        let named = |e: AudioError| AudioError::new(e.kind, None, format!("{name}: {}", e.detail));
        let rate = f64::from(self.target_sr);
        let mut file = FileReport {
            name: name.to_owned(),
            input_seconds: seconds(samples.len(), sample_rate),
            input_samples: samples.len(),
            clipped_samples: samples.iter().filter(|x| x.abs() >= CLIP_LEVEL).count(),
            ..FileReport::default()
        };
        let audio: Cow<[f32]> = if sample_rate == self.target_sr {
            Cow::Borrowed(samples)
        } else {
            let buffer = AudioBuffer::new(sample_rate, vec![samples.to_vec()]);
            let mut out = crate::resample(&buffer, self.target_sr).map_err(named)?;
            Cow::Owned(out.channels.pop().unwrap_or_default())
        };
        let filtered = lfilter(&self.highpass.0, &self.highpass.1, &audio);
        drop(audio);
        let rms = self.slicer.frame_rms(&filtered);
        let loud_frames = rms
            .iter()
            .filter(|&&r| r >= self.slicer.threshold())
            .count();
        file.active_seconds = (loud_frames * self.slicer.hop_size()) as f64 / rate;
        let mut out = Vec::new();
        for slice in self.slicer.slice_with_rms(filtered.len(), &rms) {
            file.slices += 1;
            file.sliced_seconds += slice.len() as f64 / rate;
            for range in pieces(slice, self.target_sr, self.cfg.per, self.cfg.overlap) {
                match normalize_piece(&filtered[range]) {
                    Ok(audio) => {
                        let (audio, audio_16k) =
                            to_feature_rate(audio, self.target_sr).map_err(named)?;
                        let f0 = self
                            .cfg
                            .pitch
                            .then(|| yin::track(&audio_16k, RVC_F0_MIN, RVC_F0_MAX));
                        self.report.add_piece(&audio_16k, f0.as_deref());
                        file.kept_seconds += audio.len() as f64 / rate;
                        out.push(Piece {
                            source,
                            index: out.len(),
                            audio_target_sr: audio,
                            audio_16k,
                        });
                    }
                    Err(Rejected::TooLoud { .. }) => file.filtered += 1,
                    Err(Rejected::Silent) => file.silent_pieces += 1,
                }
            }
        }
        file.pieces = out.len();
        self.report.add_file(file, &filtered, self.target_sr);
        Ok(out)
    }

    /// Ends preparation and returns the report over all files added.
    pub fn finish(self) -> DatasetReport {
        self.report.finish()
    }
}

/// Runs [`DatasetPreparer`] over `(name, mono samples, sample rate)` inputs, in order.
pub fn prepare_dataset(
    inputs: &[(&str, &[f32], u32)],
    target_sr: u32,
    cfg: &PrepareConfig,
) -> Result<PreparedDataset, AudioError> {
    let mut preparer = DatasetPreparer::new(target_sr, cfg)?;
    let mut pieces = Vec::new();
    for &(name, samples, rate) in inputs {
        pieces.extend(preparer.add_file(name, samples, rate)?);
    }
    Ok(PreparedDataset {
        pieces,
        report: preparer.finish(),
    })
}

fn seconds(samples: usize, rate: u32) -> f64 {
    if rate == 0 {
        0.0
    } else {
        samples as f64 / f64::from(rate)
    }
}

/// `audio` and a copy at 16 kHz, `ceil(n · 16000 / rate)` samples long as `librosa.resample`
/// makes it.
fn to_feature_rate(audio: Vec<f32>, rate: u32) -> Result<(Vec<f32>, Vec<f32>), AudioError> {
    let len = (audio.len() as u64 * u64::from(FEATURE_RATE)).div_ceil(u64::from(rate)) as usize;
    let mut buffer = AudioBuffer::new(rate, vec![audio]);
    let mut out = crate::resample(&buffer, FEATURE_RATE)?
        .channels
        .pop()
        .unwrap_or_default();
    out.resize(len, 0.0);
    Ok((buffer.channels.pop().unwrap_or_default(), out))
}
