//! What preparing a dataset found: durations, pieces kept and dropped, clipping, silence, pitch
//! range, a noise estimate, and warnings in plain words.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use timbre_fft::RealToComplex;

/// Input samples at or above this magnitude count as clipped.
pub const CLIP_LEVEL: f32 = 0.999;
/// Below this much kept audio, the dataset is too small to train on.
pub const MIN_KEPT_SECONDS: f64 = 60.0;
/// A share of clipped input samples above this is worth a warning (0.1%).
pub const MAX_CLIPPING_RATIO: f64 = 0.001;
/// An estimated signal-to-noise ratio below this is noisy.
pub const MIN_SNR_DB: f64 = 15.0;
/// A share of the kept audio's energy between [`SPEECH_BAND_HZ`] below this is noisy.
pub const MIN_SPEECH_BAND_RATIO: f64 = 0.6;
/// The band holding nearly all of a voice's energy (fundamental through the formants).
pub const SPEECH_BAND_HZ: (f64, f64) = (80.0, 4000.0);
/// Frames for the noise floor estimate, in seconds.
const NOISE_FRAME_SECONDS: f64 = 0.03;
/// Percentiles of frame energy taken as the noise floor and as the signal level.
const NOISE_PERCENTILE: f64 = 0.10;
const SIGNAL_PERCENTILE: f64 = 0.95;
/// Estimates are capped here (digital silence has no noise floor).
const MAX_SNR_DB: f64 = 100.0;
/// FFT frame for the speech-band ratio, at 16 kHz.
const BAND_FFT: usize = 512;

/// One input file's share of the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct FileReport {
    /// Name the file was added under.
    pub name: String,
    /// Length of the input as given, at its own rate, in seconds.
    pub input_seconds: f64,
    /// Audio the slicer kept (silences cut).
    pub sliced_seconds: f64,
    /// Audio in the pieces written (overlaps counted in each piece).
    pub kept_seconds: f64,
    /// Slicer frames above its threshold, in seconds.
    pub active_seconds: f64,
    /// Slices the slicer cut the file into.
    pub slices: usize,
    /// Pieces kept and written.
    pub pieces: usize,
    /// Pieces dropped as too loud (peak above 2.5).
    pub filtered: usize,
    /// Pieces dropped as empty or all zeros.
    pub silent_pieces: usize,
    /// Length of the input in samples, at its own rate.
    pub input_samples: usize,
    /// Input samples at or above [`CLIP_LEVEL`] in magnitude.
    pub clipped_samples: usize,
}

/// 5th, 50th and 95th percentile of the f0 of voiced 10 ms frames of the kept pieces.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PitchRange {
    /// 5th percentile, in Hz.
    pub low_hz: f32,
    /// Median, in Hz.
    pub median_hz: f32,
    /// 95th percentile, in Hz.
    pub high_hz: f32,
    /// Voiced frames the percentiles are over.
    pub voiced_frames: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "DatasetWarningKind")]
#[serde(rename_all = "snake_case")]
/// What a dataset warning is about.
pub enum WarningKind {
    /// Under [`MIN_KEPT_SECONDS`] of audio kept.
    TooLittleAudio,
    /// No pieces kept, or nothing above the slicer's threshold.
    SilenceOnly,
    /// More than [`MAX_CLIPPING_RATIO`] of the input samples clipped.
    Clipped,
    /// SNR estimate below [`MIN_SNR_DB`] or speech-band share below [`MIN_SPEECH_BAND_RATIO`].
    Noisy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
/// A problem with the dataset, for the user.
pub struct DatasetWarning {
    /// Which check raised it.
    pub kind: WarningKind,
    /// Plain-English explanation with the measured numbers and what to do.
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
/// What preparing a dataset found, per file and summed over all files.
pub struct DatasetReport {
    /// Per-file reports, in the order the files were added.
    pub files: Vec<FileReport>,
    /// Total input length, in seconds.
    pub input_seconds: f64,
    /// Total audio the slicer kept (silences cut), in seconds.
    pub sliced_seconds: f64,
    /// Total audio in the pieces written (overlaps counted in each piece), in seconds.
    pub kept_seconds: f64,
    /// Pieces kept over all files.
    pub pieces: usize,
    /// Pieces dropped as too loud (peak above 2.5) over all files.
    pub filtered: usize,
    /// Pieces dropped as empty or all zeros over all files.
    pub silent_pieces: usize,
    /// Share of input samples at or above [`CLIP_LEVEL`].
    pub clipping_ratio: f64,
    /// Share of the (high-passed) input the slicer dropped.
    pub silence_ratio: f64,
    /// Pitch range of the kept pieces; `None` when pitch tracking is off or no frame was voiced.
    pub pitch: Option<PitchRange>,
    /// 95th over 10th percentile of 30 ms frame energies of the high-passed input, in dB.
    pub snr_db: Option<f64>,
    /// Share of the kept pieces' energy (at 16 kHz) within [`SPEECH_BAND_HZ`].
    pub speech_band_ratio: Option<f64>,
    /// Problems found, empty when the dataset looks fine.
    pub warnings: Vec<DatasetWarning>,
    /// The pieces kept out of training for judging its checkpoints (chosen by the dataset job
    /// after slicing; none in a dataset prepared before held-out sets existed).
    #[serde(default)]
    pub held_out: HeldOutReport,
}

/// The held-out set of a dataset: speech the model never trains on, which the checkpoint
/// judge converts to score each checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct HeldOutReport {
    /// Pieces held out.
    pub pieces: usize,
    /// Their length in all, in seconds.
    pub seconds: f64,
    /// The inputs they came from.
    pub sources: Vec<String>,
    /// True when whole inputs were held out; false when the end of the longest input was.
    pub whole_sources: bool,
}

/// Accumulates the report file by file, keeping only small per-frame statistics.
pub(super) struct ReportBuilder {
    files: Vec<FileReport>,
    frame_energies: Vec<f32>,
    f0: Vec<f32>,
    band_energy: f64,
    total_energy: f64,
    target_samples: usize,
    sliced_samples: usize,
    fft: Arc<dyn RealToComplex<f64>>,
    window: Vec<f64>,
}

impl ReportBuilder {
    pub(super) fn new() -> Self {
        let window = (0..BAND_FFT)
            .map(|i| 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / BAND_FFT as f64).cos())
            .collect();
        ReportBuilder {
            files: Vec::new(),
            frame_energies: Vec::new(),
            f0: Vec::new(),
            band_energy: 0.0,
            total_energy: 0.0,
            target_samples: 0,
            sliced_samples: 0,
            fft: timbre_fft::real_fft_f64(BAND_FFT).forward,
            window,
        }
    }

    pub(super) fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Records a file: its report, and its high-passed audio (at `rate`) for the noise floor.
    pub(super) fn add_file(&mut self, file: FileReport, filtered: &[f64], rate: u32) {
        let frame = ((NOISE_FRAME_SECONDS * f64::from(rate)) as usize).max(1);
        self.frame_energies.extend(
            filtered
                .chunks_exact(frame)
                .map(|c| (c.iter().map(|x| x * x).sum::<f64>() / frame as f64) as f32),
        );
        self.target_samples += filtered.len();
        self.sliced_samples += (file.sliced_seconds * f64::from(rate)).round() as usize;
        self.files.push(file);
    }

    /// Records a kept piece at 16 kHz: its speech-band energy and, if given, its f0 track.
    pub(super) fn add_piece(&mut self, audio_16k: &[f32], f0: Option<&[f32]>) {
        let mut spectrum = self.fft.make_output_vec();
        let mut frame = vec![0.0; BAND_FFT];
        let bin_hz = 16_000.0 / BAND_FFT as f64;
        for chunk in audio_16k.chunks(BAND_FFT) {
            for (i, slot) in frame.iter_mut().enumerate() {
                *slot = chunk.get(i).map_or(0.0, |&x| f64::from(x)) * self.window[i];
            }
            if self.fft.process(&mut frame, &mut spectrum).is_err() {
                continue;
            }
            for (k, bin) in spectrum.iter().enumerate() {
                let power = bin.norm_sqr();
                let hz = k as f64 * bin_hz;
                self.total_energy += power;
                if (SPEECH_BAND_HZ.0..=SPEECH_BAND_HZ.1).contains(&hz) {
                    self.band_energy += power;
                }
            }
        }
        if let Some(f0) = f0 {
            self.f0.extend(f0.iter().copied().filter(|&f| f > 0.0));
        }
    }

    pub(super) fn finish(mut self) -> DatasetReport {
        let sum = |f: fn(&FileReport) -> f64| self.files.iter().map(f).sum::<f64>();
        let count = |f: fn(&FileReport) -> usize| self.files.iter().map(f).sum::<usize>();
        let input_samples = count(|f| f.input_samples);
        let mut report = DatasetReport {
            input_seconds: sum(|f| f.input_seconds),
            sliced_seconds: sum(|f| f.sliced_seconds),
            kept_seconds: sum(|f| f.kept_seconds),
            pieces: count(|f| f.pieces),
            filtered: count(|f| f.filtered),
            silent_pieces: count(|f| f.silent_pieces),
            clipping_ratio: ratio(count(|f| f.clipped_samples), input_samples),
            silence_ratio: 1.0 - ratio(self.sliced_samples, self.target_samples),
            ..DatasetReport::default()
        };
        if self.target_samples == 0 {
            report.silence_ratio = 0.0;
        }
        let active = sum(|f| f.active_seconds);
        self.f0.sort_by(f32::total_cmp);
        report.pitch = (!self.f0.is_empty()).then(|| PitchRange {
            low_hz: percentile(&self.f0, 0.05),
            median_hz: percentile(&self.f0, 0.5),
            high_hz: percentile(&self.f0, 0.95),
            voiced_frames: self.f0.len(),
        });
        self.frame_energies.sort_by(f32::total_cmp);
        let signal = percentile(&self.frame_energies, SIGNAL_PERCENTILE);
        let noise = percentile(&self.frame_energies, NOISE_PERCENTILE);
        report.snr_db = (signal > 0.0).then(|| {
            let floor = f64::from(noise).max(f64::from(signal) * 10f64.powf(-MAX_SNR_DB / 10.0));
            10.0 * (f64::from(signal) / floor).log10()
        });
        report.speech_band_ratio =
            (self.total_energy > 0.0).then(|| self.band_energy / self.total_energy);
        report.files = self.files;
        report.warnings = warnings(&report, active);
        report
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// numpy's default (linear) percentile of sorted values; 0 for none.
pub(super) fn percentile(sorted: &[f32], q: f64) -> f32 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let position = q.clamp(0.0, 1.0) * last as f64;
    let (low, fraction) = (position.floor() as usize, position.fract());
    let high = (low + 1).min(last);
    let (a, b) = (f64::from(sorted[low]), f64::from(sorted[high]));
    (a + (b - a) * fraction) as f32
}

fn warnings(report: &DatasetReport, active_seconds: f64) -> Vec<DatasetWarning> {
    let mut out = Vec::new();
    let mut warn = |kind, message: String| out.push(DatasetWarning { kind, message });
    let silent = report.pieces == 0 || active_seconds == 0.0;
    if silent {
        warn(
            WarningKind::SilenceOnly,
            "silence only: nothing above the slicer's -42 dB threshold to train on".into(),
        );
    }
    if report.kept_seconds < MIN_KEPT_SECONDS {
        warn(
            WarningKind::TooLittleAudio,
            format!(
                "too little audio: {:.0} s; RVC needs at least ~10 minutes for a good model, \
                 1 minute minimum",
                report.kept_seconds
            ),
        );
    }
    if report.clipping_ratio > MAX_CLIPPING_RATIO {
        warn(
            WarningKind::Clipped,
            format!(
                "clipped: {:.2}% of the input samples are at full scale; record with less gain",
                report.clipping_ratio * 100.0
            ),
        );
    }
    let low_snr = report.snr_db.is_some_and(|db| db < MIN_SNR_DB);
    let off_band = report
        .speech_band_ratio
        .is_some_and(|r| r < MIN_SPEECH_BAND_RATIO);
    if !silent && (low_snr || off_band) {
        warn(
            WarningKind::Noisy,
            format!(
                "noisy: estimated signal-to-noise ratio {:.0} dB, {:.0}% of the energy in the \
                 speech band; denoise the recordings (enhance) or record somewhere quieter",
                report.snr_db.unwrap_or(0.0),
                report.speech_band_ratio.unwrap_or(0.0) * 100.0
            ),
        );
    }
    out
}
