//! The GE2E speaker encoder as Resemblyzer runs it: resemblyzer 0.1.4 (PyPI) with its bundled
//! `resemblyzer/pretrained.pt`. [`SpeakerEncoder::embed_utterance`] is
//! `VoiceEncoder.embed_utterance(wav, return_partials=False, rate=1.3, min_coverage=0.75)`:
//! `compute_partial_slices` cuts the utterance into 1.6 s partials 77 frames apart, each goes
//! through the network (a 3-layer LSTM 40 → 256, `Linear(256, 256)` and ReLU on the last layer's
//! final hidden state, L2-normalised) and the mean of the partial embeddings, L2-normalised, is
//! the utterance's. [`mel_frames`] is `audio.wav_to_mel_spectrogram` (librosa's power mel
//! spectrogram, not a log-mel) and [`preprocess`] is `audio.preprocess_wav` on a buffer
//! (resampling to 16 kHz, `normalize_volume` to -30 dBFS, increase only, `trim_long_silences`
//! with the WebRTC VAD).
//!
//! One choice where the reference changed under its feet: librosa ≥ 0.10 pads centred STFT frames
//! with zeros (`pad_mode="constant"`) where the librosa that Resemblyzer was written against and
//! its model trained with reflected the signal. Ours reflects, as the model was trained; the
//! parity test runs the reference with `pad_mode="reflect"`. It changes the first and the last
//! 10 ms frame only. The other: resampling is ours ([`timbre_audio::resample`], rubato's FFT
//! resampler) where `preprocess_wav` calls `librosa.resample` (soxr); 16 kHz input is untouched
//! by both.

use std::ops::Range;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};
use timbre_audio::AudioBuffer;
use webrtc_vad::{SampleRate, Vad, VadMode};

use crate::checkpoint;
use crate::layers::Linear;
use crate::rmvpe::{MelScale, mel_filterbank};
use crate::weights::Weights;

/// The rate everything runs at (upstream `sampling_rate`), in Hz.
pub const SAMPLING_RATE: u32 = 16_000;
/// STFT window of the mel spectrogram (upstream `mel_window_length`), in milliseconds.
pub const MEL_WINDOW_LENGTH_MS: usize = 25;
/// Hop of the mel spectrogram (upstream `mel_window_step`), in milliseconds.
pub const MEL_WINDOW_STEP_MS: usize = 10;
/// Mel bands (upstream `mel_n_channels`).
pub const MEL_N_CHANNELS: i64 = 40;
/// Mel frames in one partial utterance (upstream `partials_n_frames`): 1.6 s.
pub const PARTIALS_N_FRAMES: usize = 160;
/// The VAD's frame (upstream `vad_window_length`), in milliseconds.
pub const VAD_WINDOW_LENGTH_MS: usize = 30;
/// VAD frames averaged to smooth the verdicts (upstream `vad_moving_average_width`).
pub const VAD_MOVING_AVERAGE_WIDTH: usize = 8;
/// Silent VAD frames kept on each side of speech (upstream `vad_max_silence_length`).
pub const VAD_MAX_SILENCE_LENGTH: usize = 6;
/// The loudness `preprocess` raises quieter audio to (upstream `audio_norm_target_dBFS`).
pub const AUDIO_NORM_TARGET_DBFS: f64 = -30.0;
/// LSTM width (upstream `model_hidden_size`).
pub const MODEL_HIDDEN_SIZE: i64 = 256;
/// Embedding width (upstream `model_embedding_size`).
pub const MODEL_EMBEDDING_SIZE: i64 = 256;
/// LSTM layers (upstream `model_num_layers`).
pub const MODEL_NUM_LAYERS: i64 = 3;
/// Partial utterances per second that `embed_utterance` takes by default.
pub const RATE: f64 = 1.3;
/// The share of a last partial that must be audio for it to be kept, by default.
pub const MIN_COVERAGE: f64 = 0.75;

/// STFT size in samples: 25 ms at 16 kHz.
const N_FFT: usize = SAMPLING_RATE as usize * MEL_WINDOW_LENGTH_MS / 1000;
/// Samples per mel frame: 10 ms at 16 kHz.
const HOP: usize = SAMPLING_RATE as usize * MEL_WINDOW_STEP_MS / 1000;
/// Samples per VAD frame: 30 ms at 16 kHz.
const VAD_SAMPLES: usize = SAMPLING_RATE as usize * VAD_WINDOW_LENGTH_MS / 1000;
/// Upstream `int16_max`: float samples to 16-bit PCM and back.
const INT16_MAX: f32 = 32_767.0;
/// Partials through the network at once (the result does not depend on it).
const BATCH: usize = 256;

/// A loaded GE2E speaker encoder.
pub struct SpeakerEncoder {
    /// `weight_ih, weight_hh, bias_ih, bias_hh` of each layer, in torch's order.
    lstm: Vec<Tensor>,
    linear: Linear,
    device: Device,
}

impl SpeakerEncoder {
    /// Loads Resemblyzer's `pretrained.pt` (`{"step", "model_state", "optimizer_state"}`, a
    /// legacy `torch.save` file) on `device` in float32.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)
            .with_context(|| format!("loading the speaker encoder {}", path.display()))?;
        let Some(state) = root.get("model_state") else {
            bail!(
                "{}: not a Resemblyzer speaker encoder (it has no `model_state`)",
                path.display()
            );
        };
        let weights = checkpoint::weights_from_dict(state, path)
            .with_context(|| format!("{}: reading its `model_state`", path.display()))?
            .to(device, Kind::Float);
        if !weights.contains("lstm.weight_ih_l0") {
            bail!(
                "{}: not Resemblyzer's GE2E encoder: its `model_state` has no `lstm.weight_ih_l0`",
                path.display()
            );
        }
        Self::from_weights(&weights, device)
            .with_context(|| format!("{}: not Resemblyzer's GE2E encoder", path.display()))
    }

    fn from_weights(w: &Weights, device: Device) -> Result<Self> {
        let gates = 4 * MODEL_HIDDEN_SIZE;
        let mut lstm = Vec::new();
        for layer in 0..MODEL_NUM_LAYERS {
            let input = if layer == 0 {
                MEL_N_CHANNELS
            } else {
                MODEL_HIDDEN_SIZE
            };
            lstm.push(w.get_shaped(&format!("lstm.weight_ih_l{layer}"), &[gates, input])?);
            lstm.push(w.get_shaped(
                &format!("lstm.weight_hh_l{layer}"),
                &[gates, MODEL_HIDDEN_SIZE],
            )?);
            lstm.push(w.get_shaped(&format!("lstm.bias_ih_l{layer}"), &[gates])?);
            lstm.push(w.get_shaped(&format!("lstm.bias_hh_l{layer}"), &[gates])?);
        }
        ensure!(
            !w.contains(&format!("lstm.weight_ih_l{MODEL_NUM_LAYERS}")),
            "its LSTM has more than {MODEL_NUM_LAYERS} layers"
        );
        let _ = w.get_shaped("linear.weight", &[MODEL_EMBEDDING_SIZE, MODEL_HIDDEN_SIZE])?;
        let _ = w.get_shaped("linear.bias", &[MODEL_EMBEDDING_SIZE])?;
        Ok(Self {
            lstm,
            linear: Linear::load(w, "linear")?,
            device,
        })
    }

    /// The device the weights are on; mel frames are moved there to run.
    pub fn device(&self) -> Device {
        self.device
    }

    /// `VoiceEncoder.forward`: unit-length embeddings `[batch, 256]` of mel spectrograms
    /// `[batch, frames, 40]` (on this encoder's device).
    pub fn forward(&self, mels: &Tensor) -> Tensor {
        let batch = mels.size()[0];
        let zeros = Tensor::zeros(
            [MODEL_NUM_LAYERS, batch, MODEL_HIDDEN_SIZE],
            (Kind::Float, mels.device()),
        );
        let params: Vec<&Tensor> = self.lstm.iter().collect();
        let (_, hidden, _) = mels.lstm(
            &[&zeros, &zeros],
            &params,
            true,
            MODEL_NUM_LAYERS,
            0.0,
            false,
            false,
            true,
        );
        let raw = self.linear.forward(&hidden.select(0, -1)).relu();
        &raw / raw.norm_scalaropt_dim(2.0, [1], true)
    }

    /// The partial embeddings `[partials, 256]` (on the CPU) of 16 kHz audio and the mel frames
    /// each covers: `embed_utterance(wav, return_partials=True, rate, min_coverage)` less the
    /// mean.
    pub fn embed_partials(
        &self,
        wav_16k: &[f32],
        rate: f64,
        min_coverage: f64,
    ) -> Result<(Tensor, Vec<Range<usize>>)> {
        let slices = compute_partial_slices(wav_16k.len(), rate, min_coverage)?;
        let max_wave_length = slices.last().map_or(0, |s| s.end * HOP);
        let mel = if max_wave_length >= wav_16k.len() {
            let mut padded = wav_16k.to_vec();
            padded.resize(max_wave_length, 0.0);
            mel_frames(&padded)
        } else {
            mel_frames(wav_16k)
        };
        let _guard = tch::no_grad_guard();
        let mut parts = Vec::new();
        for chunk in slices.chunks(BATCH) {
            let mels: Vec<Tensor> = chunk
                .iter()
                .map(|s| mel.narrow(0, s.start as i64, PARTIALS_N_FRAMES as i64))
                .collect();
            let mels = Tensor::stack(&mels, 0).to_device(self.device);
            parts.push(tch::autocast(false, || self.forward(&mels)).to_device(Device::Cpu));
        }
        Ok((Tensor::cat(&parts, 0), slices))
    }

    /// The unit-length 256-value embedding of an utterance in 16 kHz mono audio (preprocessed
    /// with [`preprocess`], as Resemblyzer expects): `embed_utterance(wav)` with its defaults,
    /// `rate=1.3, min_coverage=0.75`. Fails on empty audio.
    pub fn embed_utterance(&self, wav_16k: &[f32]) -> Result<Vec<f32>> {
        self.embed_utterance_with(wav_16k, RATE, MIN_COVERAGE)
    }

    /// [`embed_utterance`](Self::embed_utterance) with Resemblyzer's `rate` (partials per
    /// second, 0.625 to 100) and `min_coverage` (0 excluded to 1).
    pub fn embed_utterance_with(
        &self,
        wav_16k: &[f32],
        rate: f64,
        min_coverage: f64,
    ) -> Result<Vec<f32>> {
        ensure!(
            !wav_16k.is_empty(),
            "speaker encoder: the utterance has no samples"
        );
        let (partials, _) = self.embed_partials(wav_16k, rate, min_coverage)?;
        let raw = partials.mean_dim(0, false, Kind::Float);
        unit(Vec::try_from(raw)?)
    }

    /// `embed_speaker`: the unit-length mean of the utterances' embeddings.
    pub fn embed_speaker(&self, wavs_16k: &[&[f32]]) -> Result<Vec<f32>> {
        ensure!(!wavs_16k.is_empty(), "speaker encoder: no utterances");
        let mut sum = vec![0.0f32; MODEL_EMBEDDING_SIZE as usize];
        for wav in wavs_16k {
            for (s, e) in sum.iter_mut().zip(self.embed_utterance(wav)?) {
                *s += e;
            }
        }
        let count = wavs_16k.len() as f32;
        unit(sum.into_iter().map(|s| s / count).collect())
    }
}

/// `v / ‖v‖₂`; fails on a zero (or not finite) vector.
fn unit(v: Vec<f32>) -> Result<Vec<f32>> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt() as f32;
    ensure!(
        norm.is_finite() && norm > 0.0,
        "speaker encoder: the embedding is zero (norm {norm})"
    );
    Ok(v.into_iter().map(|x| x / norm).collect())
}

/// The similarity of two unit-length embeddings: their dot product (their cosine).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `VoiceEncoder.compute_partial_slices(n_samples, rate, min_coverage)`: the mel frames of each
/// partial utterance (samples are the frames × 160). Slices may reach past the audio; the audio
/// is then zero-padded up to the last one's end. Always at least one.
pub fn compute_partial_slices(
    n_samples: usize,
    rate: f64,
    min_coverage: f64,
) -> Result<Vec<Range<usize>>> {
    ensure!(
        min_coverage > 0.0 && min_coverage <= 1.0,
        "min_coverage {min_coverage} is not in (0, 1]"
    );
    ensure!(
        rate.is_finite() && rate > 0.0,
        "rate {rate} is not positive"
    );
    let samples_per_frame = HOP as i64;
    // `int(np.ceil((n_samples + 1) / samples_per_frame))`.
    let n_frames = (n_samples as i64 + 1 + samples_per_frame - 1) / samples_per_frame;
    // `int(np.round((sampling_rate / rate) / samples_per_frame))`: halves to even.
    let frame_step =
        ((f64::from(SAMPLING_RATE) / rate) / samples_per_frame as f64).round_ties_even() as i64;
    ensure!(frame_step > 0, "the rate {rate} is too high");
    let partial = PARTIALS_N_FRAMES as i64;
    ensure!(
        frame_step <= partial,
        "the rate {rate} is too low, it should be {} at least",
        f64::from(SAMPLING_RATE) / (samples_per_frame * partial) as f64
    );
    let steps = (n_frames - partial + frame_step + 1).max(1);
    let mut slices: Vec<Range<usize>> = (0..steps)
        .step_by(frame_step as usize)
        .map(|i| i as usize..(i + partial) as usize)
        .collect();
    let last = slices.last().expect("at least one step").start * HOP;
    let coverage = (n_samples as f64 - last as f64) / (PARTIALS_N_FRAMES * HOP) as f64;
    if coverage < min_coverage && slices.len() > 1 {
        slices.pop();
    }
    Ok(slices)
}

/// `audio.wav_to_mel_spectrogram`: `[samples / 160 + 1, 40]` float32 on the CPU for 16 kHz
/// audio. librosa's `melspectrogram` at 16 kHz: centred frames of 400 samples (25 ms) every 160
/// (10 ms), the signal reflected at the ends, a periodic Hann window, power 2, 40 Slaney mel
/// bands (Slaney-normalised) from 0 to 8 kHz, no log. The STFT runs in float64 and is rounded to
/// complex64 as librosa's is; the rest is float32, as librosa's.
pub fn mel_frames(wav_16k: &[f32]) -> Tensor {
    let silence = [0.0f32];
    let wav = if wav_16k.is_empty() {
        &silence[..]
    } else {
        wav_16k
    };
    let padded: Vec<f64> = reflect_pad(wav, N_FFT / 2)
        .into_iter()
        .map(f64::from)
        .collect();
    let n_fft = N_FFT as i64;
    let window = Tensor::hann_window_periodic(n_fft, true, (Kind::Double, Device::Cpu));
    let spectrum = Tensor::from_slice(&padded).stft(
        n_fft,
        HOP as i64,
        n_fft,
        Some(&window),
        false,
        true,
        true,
        false,
    );
    let power = spectrum.to_kind(Kind::ComplexFloat).abs().square();
    let bins = n_fft / 2 + 1;
    let filterbank = mel_filterbank(
        SAMPLING_RATE,
        n_fft,
        MEL_N_CHANNELS,
        0.0,
        f64::from(SAMPLING_RATE) / 2.0,
        MelScale::Slaney,
    );
    let filterbank = Tensor::from_slice(&filterbank).view([MEL_N_CHANNELS, bins]);
    filterbank.matmul(&power).transpose(0, 1).contiguous()
}

/// numpy's `np.pad(x, pad, "reflect")`: mirrored about the end samples, the reflection
/// continuing periodically when the pad is longer than the signal.
fn reflect_pad(signal: &[f32], pad: usize) -> Vec<f32> {
    let len = signal.len() as i64;
    let reflect = |i: i64| -> f32 {
        if len == 1 {
            return signal[0];
        }
        let period = 2 * (len - 1);
        let m = i.rem_euclid(period);
        signal[if m < len { m } else { period - m } as usize]
    };
    let pad = pad as i64;
    (-pad..len + pad).map(reflect).collect()
}

/// Which way [`normalize_volume`] may change the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeChange {
    /// Raise or lower to the target.
    Any,
    /// Only raise quieter audio (upstream `increase_only=True`, what `preprocess_wav` uses).
    IncreaseOnly,
    /// Only lower louder audio (upstream `decrease_only=True`).
    DecreaseOnly,
}

/// `audio.preprocess_wav` on a mono buffer: resampled to 16 kHz, raised to -30 dBFS when
/// quieter, and with long silences trimmed ([`trim_long_silences`]). Fails only when the rate
/// cannot be resampled.
pub fn preprocess(wav: &[f32], sample_rate: u32) -> Result<Vec<f32>> {
    let wav = if sample_rate == SAMPLING_RATE {
        wav.to_vec()
    } else {
        let buffer = AudioBuffer::new(sample_rate, vec![wav.to_vec()]);
        let resampled = timbre_audio::resample(&buffer, SAMPLING_RATE).with_context(|| {
            format!("speaker encoder: resampling {sample_rate} Hz audio to {SAMPLING_RATE}")
        })?;
        resampled.channels.into_iter().next().unwrap_or_default()
    };
    let wav = normalize_volume(&wav, AUDIO_NORM_TARGET_DBFS, VolumeChange::IncreaseOnly);
    Ok(trim_long_silences(&wav))
}

/// `audio.normalize_volume(wav, target_dBFS, …)`: scaled so that its RMS (on the 16-bit scale)
/// is `target_dbfs`, or unchanged where `change` forbids that direction. Silent (or empty) audio
/// is returned unchanged, where the reference's gain would be infinite.
pub fn normalize_volume(wav: &[f32], target_dbfs: f64, change: VolumeChange) -> Vec<f32> {
    // As numpy computes it in float32, but for the mean of the squares, summed in float64.
    let mean_square = wav
        .iter()
        .map(|x| f64::from(x * INT16_MAX).powi(2))
        .sum::<f64>()
        / wav.len().max(1) as f64;
    let rms = (mean_square as f32).sqrt();
    if rms == 0.0 || !rms.is_finite() {
        return wav.to_vec();
    }
    let wave_dbfs = 20.0 * (rms / INT16_MAX).log10();
    let dbfs_change = target_dbfs as f32 - wave_dbfs;
    let refused = match change {
        VolumeChange::Any => false,
        VolumeChange::IncreaseOnly => dbfs_change < 0.0,
        VolumeChange::DecreaseOnly => dbfs_change > 0.0,
    };
    if refused {
        return wav.to_vec();
    }
    let gain = 10f32.powf(dbfs_change / 20.0);
    wav.iter().map(|x| x * gain).collect()
}

/// `audio.trim_long_silences`: the audio cut to whole 30 ms frames, the WebRTC VAD's verdict
/// (mode 3) on each frame in 16-bit PCM, smoothed by a moving average over 8 frames and
/// rounded, the speech dilated by 6 frames each side, and only the frames so marked kept.
pub fn trim_long_silences(wav_16k: &[f32]) -> Vec<f32> {
    let wav = &wav_16k[..wav_16k.len() - wav_16k.len() % VAD_SAMPLES];
    let mut vad = Vad::new_with_rate_and_mode(SampleRate::Rate16kHz, VadMode::VeryAggressive);
    let voice_flags: Vec<bool> = wav
        .chunks_exact(VAD_SAMPLES)
        .map(|frame| {
            let pcm: Vec<i16> = frame.iter().map(|x| to_int16(*x)).collect();
            vad.is_voice_segment(&pcm).unwrap_or(false)
        })
        .collect();
    let mask = dilate(
        &moving_average_mask(&voice_flags, VAD_MOVING_AVERAGE_WIDTH),
        VAD_MAX_SILENCE_LENGTH / 2,
    );
    wav.chunks_exact(VAD_SAMPLES)
        .zip(mask)
        .filter(|(_, keep)| *keep)
        .flat_map(|(frame, _)| frame.iter().copied())
        .collect()
}

/// `np.round(x * int16_max).astype(np.int16)`: halves to even, and out-of-range values wrap
/// around as numpy's cast does.
fn to_int16(x: f32) -> i16 {
    (x * INT16_MAX).round_ties_even() as i64 as i16
}

/// `np.round(moving_average(flags, width)).astype(bool)`: the mean over `width` frames, from
/// `(width - 1) / 2` before to `width / 2` after (zeros past the ends), rounded half to even, so
/// a frame is speech when more than half of its window is.
fn moving_average_mask(flags: &[bool], width: usize) -> Vec<bool> {
    let before = (width - 1) / 2;
    (0..flags.len())
        .map(|j| {
            let start = j.saturating_sub(before);
            let end = (j + width - before).min(flags.len());
            let count = flags[start..end].iter().filter(|f| **f).count();
            2 * count > width
        })
        .collect()
}

/// `scipy.ndimage.binary_dilation(mask, np.ones(2 * radius + 1))`: a frame is kept when any
/// frame within `radius` of it is (outside the ends counts as not).
fn dilate(mask: &[bool], radius: usize) -> Vec<bool> {
    (0..mask.len())
        .map(|j| {
            let start = j.saturating_sub(radius);
            let end = (j + radius + 1).min(mask.len());
            mask[start..end].iter().any(|m| *m)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from resemblyzer 0.1.4's `VoiceEncoder.compute_partial_slices(n, 1.3, 0.75)`.
    #[test]
    fn partial_slices_match_resemblyzer() {
        let starts = |n: usize| -> Vec<usize> {
            let slices = compute_partial_slices(n, RATE, MIN_COVERAGE).unwrap();
            assert!(slices.iter().all(|s| s.end - s.start == PARTIALS_N_FRAMES));
            slices.iter().map(|s| s.start).collect()
        };
        for n in [0, 1, 159, 160, 16_000, 25_600, 30_000] {
            assert_eq!(starts(n), [0], "{n} samples");
        }
        for n in [32_000, 37_919, 37_920, 40_000] {
            assert_eq!(starts(n), [0, 77], "{n} samples");
        }
        assert_eq!(starts(48_000), [0, 77, 154]);
        assert_eq!(starts(100_000), [0, 77, 154, 231, 308, 385, 462]);
        assert_eq!(
            starts(160_000),
            [0, 77, 154, 231, 308, 385, 462, 539, 616, 693, 770, 847]
        );
    }

    /// The coverage rule at its edge and other rates, from resemblyzer 0.1.4 as above: 31,520
    /// samples make 197 frames, so steps 0 and 77; the second partial starts at sample 12,320
    /// and is kept from 12,320 + 0.75 × 25,600 = 31,520 samples on. Only the last partial is
    /// ever dropped, so a coverage of 1 still keeps one that is short of a full partial.
    #[test]
    fn the_last_partial_is_kept_from_three_quarters_coverage() {
        let starts = |n: usize, rate: f64, coverage: f64| -> Vec<usize> {
            let slices = compute_partial_slices(n, rate, coverage).unwrap();
            slices.iter().map(|s| s.start).collect()
        };
        assert_eq!(starts(31_519, RATE, MIN_COVERAGE), [0]);
        assert_eq!(starts(31_520, RATE, MIN_COVERAGE), [0, 77]);
        assert_eq!(starts(37_919, RATE, 1.0), [0, 77]);
        assert_eq!(starts(25_000, 2.0, 0.3), [0]);
        // `frame_step = round(16000 / rate / 160)`: 1.3 → 77 frames, 1.0 → 100, 0.625 → 160.
        assert_eq!(
            starts(100_000, RATE, 0.5),
            [0, 77, 154, 231, 308, 385, 462, 539]
        );
        assert_eq!(starts(100_000, 1.0, 0.5), [0, 100, 200, 300, 400, 500]);
        assert_eq!(starts(100_000, 0.625, 0.5), [0, 160, 320, 480]);
        assert!(compute_partial_slices(100_000, 0.6, 0.5).is_err());
        assert!(compute_partial_slices(100_000, 1.3, 0.0).is_err());
        assert!(compute_partial_slices(100_000, 1000.0, 0.5).is_err());
    }

    #[test]
    fn moving_average_and_dilation_follow_numpy_and_scipy() {
        let flags = |s: &str| s.chars().map(|c| c == '1').collect::<Vec<bool>>();
        let show = |m: &[bool]| {
            m.iter()
                .map(|b| if *b { '1' } else { '0' })
                .collect::<String>()
        };
        // Window j-3..=j+4: five speech frames in it make speech, four (a half) do not.
        assert_eq!(
            show(&moving_average_mask(&flags("000011111000000"), 8)),
            "000011110000000"
        );
        assert_eq!(
            show(&moving_average_mask(&flags("0000111100000"), 8)),
            "0000000000000"
        );
        assert_eq!(show(&moving_average_mask(&flags("11111"), 8)), "11110");
        assert!(moving_average_mask(&[], 8).is_empty());
        assert_eq!(
            show(&dilate(&flags("00000000001000000000001"), 3)),
            "00000001111111000001111"
        );
    }

    #[test]
    fn int16_conversion_rounds_half_to_even_and_wraps() {
        assert_eq!(to_int16(0.5 / INT16_MAX), 0);
        assert_eq!(to_int16(1.5 / INT16_MAX), 2);
        assert_eq!(to_int16(-1.0), -32_767);
        // numpy: np.float32(40000).astype(np.int16) == -25536.
        assert_eq!(to_int16(40_000.0 / INT16_MAX), -25_536);
    }

    fn harmonic(secs: f64, amplitude: f32) -> Vec<f32> {
        let n = (secs * f64::from(SAMPLING_RATE)) as usize;
        (0..n)
            .map(|i| {
                let t = i as f64 / f64::from(SAMPLING_RATE);
                let x: f64 = (1..=20)
                    .map(|k| (std::f64::consts::TAU * 140.0 * k as f64 * t).sin() / k as f64)
                    .sum();
                // Syllables: a 4 Hz envelope.
                let envelope = (std::f64::consts::PI * 4.0 * t).sin().abs();
                (x * envelope * 0.5) as f32 * amplitude
            })
            .collect()
    }

    fn rms_dbfs(wav: &[f32]) -> f64 {
        let ms = wav.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>() / wav.len() as f64;
        10.0 * ms.log10()
    }

    #[test]
    fn volume_is_raised_to_minus_30_dbfs_and_never_lowered_by_preprocess() {
        let quiet = harmonic(1.0, 0.01);
        let raised = normalize_volume(&quiet, AUDIO_NORM_TARGET_DBFS, VolumeChange::IncreaseOnly);
        assert!(
            (rms_dbfs(&raised) + 30.0).abs() < 1e-3,
            "{}",
            rms_dbfs(&raised)
        );
        let loud = harmonic(1.0, 1.0);
        assert!(rms_dbfs(&loud) > -30.0);
        assert_eq!(
            normalize_volume(&loud, AUDIO_NORM_TARGET_DBFS, VolumeChange::IncreaseOnly),
            loud
        );
        let lowered = normalize_volume(&loud, AUDIO_NORM_TARGET_DBFS, VolumeChange::Any);
        assert!((rms_dbfs(&lowered) + 30.0).abs() < 1e-3);
        assert_eq!(
            normalize_volume(&quiet, AUDIO_NORM_TARGET_DBFS, VolumeChange::DecreaseOnly),
            quiet
        );
        let silence = vec![0.0f32; 100];
        assert_eq!(
            normalize_volume(&silence, AUDIO_NORM_TARGET_DBFS, VolumeChange::Any),
            silence
        );
    }

    #[test]
    fn long_silences_are_cut_to_the_dilation_and_sound_is_kept() {
        let window = VAD_SAMPLES;
        // Silence alone is all cut, as is the tail that is no whole VAD frame.
        assert!(trim_long_silences(&vec![0.0; 10 * window + 7]).is_empty());
        assert!(trim_long_silences(&[0.1; 100]).is_empty());
        // Sound, 3 s of silence, sound: the silence shrinks to at most the frames within reach
        // of the smoothing (4 after, 3 before) and the dilation (3 each side).
        let sound = harmonic(1.5, 0.3);
        let mut wav = sound.clone();
        wav.extend(vec![0.0; 3 * SAMPLING_RATE as usize]);
        wav.extend(&sound);
        let trimmed = trim_long_silences(&wav);
        assert_eq!(trimmed.len() % window, 0);
        let removed = wav.len() - wav.len() % window - trimmed.len();
        assert!(
            removed >= 3 * SAMPLING_RATE as usize - 14 * window,
            "only {removed} samples cut"
        );
        let longest_silent_run = trimmed
            .chunks_exact(window)
            .fold((0, 0), |(run, longest), frame| {
                let run = if frame.iter().all(|x| *x == 0.0) {
                    run + 1
                } else {
                    0
                };
                (run, longest.max(run))
            })
            .1;
        assert!(
            longest_silent_run <= 14,
            "{longest_silent_run} silent frames"
        );
        assert!(
            longest_silent_run >= 2,
            "{longest_silent_run} silent frames"
        );
        // The sound itself is kept: most of its frames, in order.
        assert!(
            trimmed.len() >= 2 * sound.len() * 3 / 4,
            "{}",
            trimmed.len()
        );
    }

    #[test]
    fn mel_frames_have_one_frame_per_hop_and_a_sine_peaks_in_its_band() {
        for samples in [0usize, 1, 150, 400, 16_000, 16_161] {
            let mel = mel_frames(&vec![0.0; samples]);
            assert_eq!(mel.size(), [samples as i64 / 160 + 1, 40], "{samples}");
        }
        let sine: Vec<f32> = (0..16_000)
            .map(|i| (std::f32::consts::TAU * 1000.0 * i as f32 / 16_000.0).sin())
            .collect();
        let mel = mel_frames(&sine);
        // 1 kHz is 15 Slaney mels; the 40 bands span 0 to 8 kHz (45.2 mels): band 12 is centred
        // at 14.5 mels, band 13 at 15.6.
        let peak = mel.select(0, 50).argmax(0, false).int64_value(&[]);
        assert!((12..=13).contains(&peak), "peak band {peak}");
        // Power: a unit sine's 400-sample Hann window holds 400 × 0.5 / 2 = 100 in amplitude
        // at its bin, 1e4 in power, spread over the band by the filter's Slaney norm.
        assert!(mel.max().double_value(&[]) > 10.0);
    }

    #[test]
    fn reflect_padding_is_numpys() {
        assert_eq!(
            reflect_pad(&[1.0, 2.0, 3.0, 4.0], 2),
            [3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]
        );
        assert_eq!(
            reflect_pad(&[1.0, 2.0, 3.0, 4.0], 5),
            [
                2.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 3.0
            ]
        );
        assert_eq!(reflect_pad(&[7.0], 2), [7.0; 5]);
    }
}
