//! Signal measures a checkpoint judge scores a trained voice model with: how closely its output
//! follows held-out speech in spectrum and in pitch, and how much metallic buzz it adds.
//! Everything here is a pure function of mono `f32` samples or f0 tracks.

use std::collections::HashMap;
use std::sync::Arc;

use crate::analysis::median;
use timbre_fft::RealToComplex;
use timbre_fft::num_complex::Complex64;

/// FFT sizes of the three mel resolutions at 22.05–32 kHz: about 21, 43 and 85 ms at 24 kHz.
const MEL_FFT_SIZES: [usize; 3] = [512, 1024, 2048];
/// The rate `MEL_FFT_SIZES` are for; other rates scale them by whole octaves.
const MEL_BASE_RATE: f64 = 24_000.0;
/// Mel bands per spectrogram, as HiFi-GAN's mel loss (and RVC's at 32 kHz) uses.
const MEL_BANDS: usize = 80;
/// Floor on mel magnitudes before the log (HiFi-GAN's `dynamic_range_compression`).
const MEL_FLOOR: f64 = 1e-5;

/// Mean absolute difference of log-mel spectrograms, averaged over three resolutions: the
/// multi-resolution form of the mel loss HiFi-GAN and RVC train with, in nats of log-mel
/// amplitude (0 = identical, larger = further apart; symmetric in `a` and `b`).
///
/// Each resolution is a Hann-windowed STFT with a hop of a quarter frame, frames wholly inside
/// the signal (no padding); its magnitudes (unnormalised, as `torch.stft` gives them) go
/// through 80 Slaney-normalised mel bands from 0 Hz to `sample_rate / 2` (librosa's default
/// filterbank), then `ln(max(mel, 1e-5))`. The FFT sizes are 512, 1024 and 2048 at 22.05, 24
/// and 32 kHz, doubled at 40, 44.1 and 48 kHz and halved at 16 kHz (the base sizes scaled by
/// `sample_rate / 24 kHz` to the nearest octave), so each resolution keeps about the same
/// length in time; the middle one is RVC's own mel-loss FFT at 32, 40 and 48 kHz. As in
/// training, digital silence against even a faint noise floor counts heavily: a band at the
/// floor in one signal and at `mel` in the other differs by ln(mel / 1e-5) nats.
///
/// Only the common length is compared (the shorter of the two: models pad their output by a
/// few milliseconds). `None` when that is shorter than one frame of the largest resolution, or
/// when `sample_rate` is 0.
pub fn multi_resolution_mel_distance(a: &[f32], b: &[f32], sample_rate: u32) -> Option<f64> {
    let len = a.len().min(b.len());
    let sizes = mel_fft_sizes(sample_rate)?;
    if len < sizes[2] {
        return None;
    }
    let total: f64 = sizes
        .iter()
        .map(|&n_fft| MelSpectrogram::new(n_fft, sample_rate).mean_distance(&a[..len], &b[..len]))
        .sum();
    Some(total / sizes.len() as f64)
}

/// The three FFT sizes at `sample_rate`, or `None` for a rate of 0.
fn mel_fft_sizes(sample_rate: u32) -> Option<[usize; 3]> {
    if sample_rate == 0 {
        return None;
    }
    let octaves = (f64::from(sample_rate) / MEL_BASE_RATE)
        .log2()
        .round()
        .clamp(-3.0, 3.0) as i32;
    Some(MEL_FFT_SIZES.map(|n| {
        if octaves >= 0 {
            n << octaves
        } else {
            n >> -octaves
        }
    }))
}

/// One mel filter: its weights on consecutive FFT bins from `first_bin`.
struct MelFilter {
    first_bin: usize,
    weights: Vec<f64>,
}

/// An STFT of one size and its mel filterbank.
struct MelSpectrogram {
    n_fft: usize,
    hop: usize,
    window: Vec<f64>,
    fft: Arc<dyn RealToComplex<f64>>,
    filters: Vec<MelFilter>,
}

impl MelSpectrogram {
    fn new(n_fft: usize, sample_rate: u32) -> Self {
        let window = (0..n_fft)
            .map(|i| 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n_fft as f64).cos())
            .collect();
        MelSpectrogram {
            n_fft,
            hop: n_fft / 4,
            window,
            fft: timbre_fft::real_fft_f64(n_fft).forward,
            filters: slaney_mel_filters(n_fft, f64::from(sample_rate), MEL_BANDS),
        }
    }

    /// Mean over frames and bands of |ln mel(a) - ln mel(b)|, for signals of equal length of
    /// at least one frame.
    fn mean_distance(&self, a: &[f32], b: &[f32]) -> f64 {
        let frames = (a.len() - self.n_fft) / self.hop + 1;
        let mut frame = vec![0.0; self.n_fft];
        let mut spectrum = self.fft.make_output_vec();
        let mut magnitudes = vec![0.0; spectrum.len()];
        let (mut mel_a, mut mel_b) = (vec![0.0; MEL_BANDS], vec![0.0; MEL_BANDS]);
        let mut total = 0.0;
        for t in 0..frames {
            let start = t * self.hop;
            for (signal, mel) in [(a, &mut mel_a), (b, &mut mel_b)] {
                let samples = &signal[start..start + self.n_fft];
                for ((x, &s), &w) in frame.iter_mut().zip(samples).zip(&self.window) {
                    *x = f64::from(s) * w;
                }
                self.fft
                    .process(&mut frame, &mut spectrum)
                    .expect("buffers are sized for this plan");
                for (m, bin) in magnitudes.iter_mut().zip(&spectrum) {
                    *m = bin.norm();
                }
                for (out, filter) in mel.iter_mut().zip(&self.filters) {
                    let bins = &magnitudes[filter.first_bin..];
                    let sum: f64 = filter.weights.iter().zip(bins).map(|(w, m)| w * m).sum();
                    *out = sum.max(MEL_FLOOR).ln();
                }
            }
            total += mel_a
                .iter()
                .zip(&mel_b)
                .map(|(x, y)| (x - y).abs())
                .sum::<f64>();
        }
        total / (frames * MEL_BANDS) as f64
    }
}

/// Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above.
fn hz_to_mel(hz: f64) -> f64 {
    if hz < 1000.0 {
        hz * 3.0 / 200.0
    } else {
        15.0 + (hz / 1000.0).ln() * 27.0 / 6.4f64.ln()
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    if mel < 15.0 {
        mel * 200.0 / 3.0
    } else {
        1000.0 * ((mel - 15.0) * 6.4f64.ln() / 27.0).exp()
    }
}

/// `bands` triangular filters evenly spaced in mel from 0 Hz to `rate / 2`, each scaled to unit
/// area in Hz (librosa's `filters.mel` with `htk=False, norm="slaney"`). At small FFT sizes the
/// lowest filters may fall between bins and stay empty, as librosa's do.
fn slaney_mel_filters(n_fft: usize, rate: f64, bands: usize) -> Vec<MelFilter> {
    let top = hz_to_mel(rate / 2.0);
    let edges: Vec<f64> = (0..bands + 2)
        .map(|i| mel_to_hz(top * i as f64 / (bands + 1) as f64))
        .collect();
    let bin_hz = rate / n_fft as f64;
    (0..bands)
        .map(|band| {
            let (low, centre, high) = (edges[band], edges[band + 1], edges[band + 2]);
            let area = 2.0 / (high - low);
            let weight = |bin: usize| {
                let hz = bin as f64 * bin_hz;
                let rising = (hz - low) / (centre - low);
                let falling = (high - hz) / (high - centre);
                rising.min(falling).max(0.0) * area
            };
            let first_bin = (low / bin_hz).ceil() as usize;
            let last_bin = ((high / bin_hz).floor() as usize).min(n_fft / 2);
            MelFilter {
                first_bin,
                weights: (first_bin..=last_bin).map(weight).collect(),
            }
        })
        .collect()
}

/// How closely one f0 track follows another, frame by frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PitchAgreement {
    /// Frames compared: the length of the shorter track.
    pub frames: usize,
    /// Frames voiced in both tracks, the frames the cents figures are taken over.
    pub voiced_frames: usize,
    /// Root-mean-square difference in cents (1200 per octave) over frames voiced in both;
    /// `None` when no frame is.
    pub rmse_cents: Option<f64>,
    /// Share of compared frames (0–1) on which the tracks agree whether the frame is voiced;
    /// 0 when no frames were compared, since an empty track shows no agreement.
    pub voicing_agreement: f64,
    /// Share of frames voiced in both (0–1) whose pitches differ by more than 600 cents (half an
    /// octave): octave jumps and other gross errors; `None` when no frame is voiced in both.
    pub octave_errors: Option<f64>,
}

/// Compares `estimate_f0` with `reference_f0`, two f0 tracks in Hz on the same frame grid, over
/// their common length. A frame is voiced where its f0 is positive and finite (0 is the trackers'
/// unvoiced mark).
pub fn pitch_agreement(reference_f0: &[f32], estimate_f0: &[f32]) -> PitchAgreement {
    let voiced = |f: f32| f > 0.0 && f.is_finite();
    let frames = reference_f0.len().min(estimate_f0.len());
    let (mut agreeing, mut voiced_frames, mut octave_errors) = (0usize, 0usize, 0usize);
    let mut squared_cents = 0.0f64;
    for (&r, &e) in reference_f0.iter().zip(estimate_f0) {
        if voiced(r) == voiced(e) {
            agreeing += 1;
        }
        if voiced(r) && voiced(e) {
            let cents = 1200.0 * (f64::from(e) / f64::from(r)).log2();
            squared_cents += cents * cents;
            voiced_frames += 1;
            if cents.abs() > 600.0 {
                octave_errors += 1;
            }
        }
    }
    let over_voiced = |n: f64| (voiced_frames > 0).then(|| n / voiced_frames as f64);
    PitchAgreement {
        frames,
        voiced_frames,
        rmse_cents: over_voiced(squared_cents).map(f64::sqrt),
        voicing_agreement: if frames == 0 {
            0.0
        } else {
            agreeing as f64 / frames as f64
        },
        octave_errors: over_voiced(octave_errors as f64),
    }
}

/// Analysis window of the inharmonic measure, in periods of the frame's f0: a Blackman window's
/// main lobe spans ±3 bins, ±f0/4 at twelve periods, so it fits inside a harmonic's own region
/// and its side lobes (−58 dB) leave a clean voice's gaps between harmonics at about −58 dB.
const INHARMONIC_WINDOW_PERIODS: f64 = 12.0;
/// Band the inharmonic measure looks at: below it hum and rumble, above it fricative noise
/// that belongs to real speech.
const INHARMONIC_BAND_HZ: (f64, f64) = (80.0, 5000.0);
/// The measure is clamped to ±this many dB, for frames with next to nothing on one side.
const INHARMONIC_LIMIT_DB: f64 = 100.0;
/// How far (in octaves) the f0 track may stray from a frame's own f0 within its window and
/// still be followed; a frame further off is taken for a tracker jump and passed over.
const WARP_MAX_OCTAVES: f64 = 0.5;

/// Energy between the harmonics relative to energy on them, in dB (negative: the harmonics
/// dominate), the median over voiced frames: the metallic or robotic buzz of a badly trained
/// voice model shows as partials and noise away from the multiples of f0.
///
/// `f0` is a track in Hz for `audio`, frame `i` centred at `i * f0_hop_secs` (0 or non-finite =
/// unvoiced; 10 ms hops are usual). Each voiced frame is analysed over twelve periods of its f0
/// (150 ms at 80 Hz, 30 ms at 400 Hz), resampled along the track (linear between frames) so
/// that the pitch is constant within the window: without that warp a glide of an octave a
/// second, common in speech, smears the upper harmonics over the gaps and raises a clean tone's
/// figure by 30 dB, to that of white noise 20 dB down. The warped window (Blackman, zero-padded
/// to at least twice its length) has its power in 80 Hz..min(5 kHz, `sample_rate / 2`) split
/// into the bins within f0/4 of some harmonic k·f0 (k ≥ 1) and the rest, half the band either
/// way. A window in periods makes the figure independent of the f0 itself. The median over
/// frames, rather than an energy-weighted mean, counts quiet frames as much as loud ones (buzz
/// is as audible in the quiet ones) and ignores the minority of frames where the f0 track is
/// wrong, at onsets or by an octave, which would otherwise read as all buzz. Per frame the
/// figure is clamped to ±100 dB.
///
/// For calibration, on harmonics of 1/k amplitude at 48 kHz: −56 to −61 dB clean, about −30 dB
/// with white noise 20 dB below the tone, about −10 dB with partials at (k + ½)·f0 10 dB below
/// the harmonics.
///
/// The figure depends on the voice as well as on the model (breathiness, jitter and creak all
/// raise it), so the judge measures the converted output and the held-out input it came from,
/// each with its own f0 track, and scores the difference: output minus input, in dB, positive
/// where the model puts energy between the harmonics that the real voice does not have.
///
/// `None` when no voiced frame's window lies wholly inside `audio`, when `sample_rate` is 0 or
/// `f0_hop_secs` is not positive.
pub fn inharmonic_energy_db(
    audio: &[f32],
    sample_rate: u32,
    f0: &[f32],
    f0_hop_secs: f64,
) -> Option<f64> {
    if sample_rate == 0 || !(f0_hop_secs > 0.0 && f0_hop_secs.is_finite()) {
        return None;
    }
    let rate = f64::from(sample_rate);
    let band = (INHARMONIC_BAND_HZ.0, INHARMONIC_BAND_HZ.1.min(rate / 2.0));
    let interpolator = SincInterpolator::new();
    let mut plans: HashMap<usize, Arc<dyn RealToComplex<f64>>> = HashMap::new();
    let mut warped = Vec::new();
    let mut frame_db = Vec::new();
    for (i, &hz) in f0.iter().enumerate() {
        let hz = f64::from(hz);
        if !(hz > 0.0 && hz.is_finite() && hz <= band.1) {
            continue;
        }
        let contour = Contour {
            track: f0,
            hop_secs: f0_hop_secs,
            centre_hz: hz,
            centre_secs: i as f64 * f0_hop_secs,
        };
        // Whole samples per period at the frame's own pitch, at least the sample rate's worth,
        // so the warp never decimates at the window's centre.
        let per_period = (rate / hz).ceil();
        let len = (INHARMONIC_WINDOW_PERIODS * per_period) as usize;
        if !warp(
            audio,
            rate,
            &contour,
            per_period,
            len,
            &interpolator,
            &mut warped,
        ) {
            continue;
        }
        let n_fft = (2 * len).next_power_of_two();
        let fft = plans
            .entry(n_fft)
            .or_insert_with(|| timbre_fft::real_fft_f64(n_fft).forward);
        let warped_rate = per_period * hz;
        let (near, far) = harmonic_split(&warped, hz, warped_rate, band, n_fft, fft.as_ref());
        let total = near + far;
        if total <= 0.0 {
            continue;
        }
        let floor = total * 10f64.powf(-INHARMONIC_LIMIT_DB / 10.0);
        frame_db.push(10.0 * (far.max(floor) / near.max(floor)).log10());
    }
    median(&mut frame_db)
}

/// An f0 track as a function of time around one voiced frame.
struct Contour<'a> {
    track: &'a [f32],
    hop_secs: f64,
    /// The frame's own f0: the contour strays from it by at most `WARP_MAX_OCTAVES`.
    centre_hz: f64,
    /// The frame's time.
    centre_secs: f64,
}

impl Contour<'_> {
    /// f0 at `secs`: linear between the two frames around it that are voiced and near the
    /// centre's f0, the one of them that is, or the centre's f0 where neither is.
    fn at(&self, secs: f64) -> f64 {
        let x = (secs / self.hop_secs).max(0.0);
        let before = x.floor() as usize;
        let trusted = |j: usize| {
            self.track.get(j).map(|&v| f64::from(v)).filter(|&v| {
                v > 0.0 && v.is_finite() && (v / self.centre_hz).log2().abs() <= WARP_MAX_OCTAVES
            })
        };
        match (trusted(before), trusted(before + 1)) {
            (Some(a), Some(b)) => a + (b - a) * (x - before as f64),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => self.centre_hz,
        }
    }
}

/// Resamples `audio` onto `len` points `1 / per_period` of a period apart along `contour`,
/// centred on its frame, into `out`: a window of constant pitch. `false` (and `out`
/// unspecified) when the window reaches past either end of `audio`.
fn warp(
    audio: &[f32],
    rate: f64,
    contour: &Contour,
    per_period: f64,
    len: usize,
    interpolator: &SincInterpolator,
    out: &mut Vec<f64>,
) -> bool {
    // Seconds from point `j` to the next (`direction` 1) or previous (-1): a midpoint step of
    // 1 / (per_period · f0) along the contour.
    let step = |secs: f64, direction: f64| {
        let half = 0.5 / (per_period * contour.at(secs));
        direction / (per_period * contour.at(secs + direction * half))
    };
    let centre = len / 2;
    let mut times = vec![0.0; len];
    times[centre] = contour.centre_secs;
    for j in centre + 1..len {
        times[j] = times[j - 1] + step(times[j - 1], 1.0);
    }
    for j in (0..centre).rev() {
        times[j] = times[j + 1] + step(times[j + 1], -1.0);
    }
    let reach = SINC_HALF_WIDTH as f64;
    if times[0] * rate < reach || times[len - 1] * rate + reach >= audio.len() as f64 {
        return false;
    }
    out.clear();
    out.extend(times.iter().map(|&t| interpolator.at(audio, t * rate)));
    true
}

/// Taps either side of the interpolation point.
const SINC_HALF_WIDTH: usize = 16;
/// Table steps per sample of the interpolation kernel.
const SINC_TABLE_STEPS: usize = 256;

/// Band-limited interpolation between samples: a Blackman-windowed sinc cut off at 0.45 of the
/// sample rate, 32 taps, tabulated. Its error is below −70 dB up to a third of the rate, past
/// the 5 kHz the inharmonic measure looks at from 16 kHz up.
struct SincInterpolator {
    /// The kernel at 0, 1/256, 2/256, … samples from its centre, to `SINC_HALF_WIDTH` and a
    /// step beyond.
    table: Vec<f64>,
}

impl SincInterpolator {
    fn new() -> Self {
        const CUTOFF: f64 = 0.45;
        let half = SINC_HALF_WIDTH as f64;
        let table = (0..=SINC_HALF_WIDTH * SINC_TABLE_STEPS + 1)
            .map(|i| {
                let u = i as f64 / SINC_TABLE_STEPS as f64;
                if u >= half {
                    return 0.0;
                }
                let sinc = if u == 0.0 {
                    2.0 * CUTOFF
                } else {
                    (std::f64::consts::TAU * CUTOFF * u).sin() / (std::f64::consts::PI * u)
                };
                let x = std::f64::consts::PI * u / half;
                sinc * (0.42 + 0.5 * x.cos() + 0.08 * (2.0 * x).cos())
            })
            .collect();
        SincInterpolator { table }
    }

    fn kernel(&self, offset: f64) -> f64 {
        let x = offset.abs() * SINC_TABLE_STEPS as f64;
        let i = x as usize;
        match (self.table.get(i), self.table.get(i + 1)) {
            (Some(&a), Some(&b)) => a + (b - a) * (x - i as f64),
            _ => 0.0,
        }
    }

    /// `signal` at fractional sample `position`, at least `SINC_HALF_WIDTH` from either end.
    fn at(&self, signal: &[f32], position: f64) -> f64 {
        let base = position.floor() as usize;
        (base + 1 - SINC_HALF_WIDTH..=base + SINC_HALF_WIDTH)
            .map(|n| f64::from(signal[n]) * self.kernel(position - n as f64))
            .sum()
    }
}

/// Power of one Blackman-windowed segment, sampled at `rate`, within `band` (Hz), split into
/// bins within f0/4 of a harmonic and the rest: `(near, far)`.
fn harmonic_split(
    segment: &[f64],
    f0: f64,
    rate: f64,
    band: (f64, f64),
    n_fft: usize,
    fft: &dyn RealToComplex<f64>,
) -> (f64, f64) {
    let len = segment.len();
    // A DC offset's window leaks a main lobe as wide as a harmonic's, up into the band at high f0.
    let mean = segment.iter().sum::<f64>() / len as f64;
    let mut frame = vec![0.0; n_fft];
    for (i, (x, &s)) in frame.iter_mut().zip(segment).enumerate() {
        let phase = std::f64::consts::TAU * i as f64 / len as f64;
        let window = 0.42 - 0.5 * phase.cos() + 0.08 * (2.0 * phase).cos();
        *x = (s - mean) * window;
    }
    let mut spectrum = vec![Complex64::default(); n_fft / 2 + 1];
    fft.process(&mut frame, &mut spectrum)
        .expect("buffers are sized for this plan");
    let bin_hz = rate / n_fft as f64;
    let first = (band.0 / bin_hz).ceil() as usize;
    let last = ((band.1 / bin_hz).floor() as usize).min(n_fft / 2);
    let (mut near, mut far) = (0.0, 0.0);
    for (k, bin) in spectrum.iter().enumerate().take(last + 1).skip(first) {
        let hz = k as f64 * bin_hz;
        let harmonic = (hz / f0).round().max(1.0) * f0;
        if (hz - harmonic).abs() <= f0 / 4.0 {
            near += bin.norm_sqr();
        } else {
            far += bin.norm_sqr();
        }
    }
    (near, far)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::{speech_like, white_noise};

    const RATE: u32 = 48_000;

    /// Harmonics k·f0 of amplitude 1/k below 8 kHz, on a phase that follows `f0(t)`, plus
    /// `buzz` times as much at (k + ½)·f0.
    fn voice(secs: f64, f0: impl Fn(f64) -> f64, buzz: f64) -> Vec<f32> {
        let rate = f64::from(RATE);
        let mut partials: Vec<(f64, f64)> = (1..=70).map(|k| (k as f64, 1.0 / k as f64)).collect();
        partials.extend((1..=70).map(|k| (k as f64 + 0.5, buzz / k as f64)));
        let mut phase = 0.0f64;
        (0..(secs * rate) as usize)
            .map(|i| {
                let hz = f0(i as f64 / rate);
                phase += std::f64::consts::TAU * hz / rate;
                let sum: f64 = partials
                    .iter()
                    .filter(|&&(multiple, amplitude)| multiple * hz < 8000.0 && amplitude > 0.0)
                    .map(|(multiple, amplitude)| amplitude * (multiple * phase).sin())
                    .sum();
                (0.1 * sum) as f32
            })
            .collect()
    }

    fn rms(x: &[f32]) -> f64 {
        (x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
    }

    /// `signal` at `rate` plus white noise `snr_db` below it.
    fn with_noise(signal: &[f32], rate: u32, snr_db: f64, seed: u64) -> Vec<f32> {
        let secs = signal.len() as f64 / f64::from(rate) + 0.01;
        let noise = white_noise(rate, secs, seed).channels.remove(0);
        let gain = (rms(signal) / 10f64.powf(snr_db / 20.0)) as f32;
        signal
            .iter()
            .zip(&noise)
            .map(|(s, n)| s + gain * n)
            .collect()
    }

    /// `f0(t)` every 10 ms for `secs`.
    fn track(secs: f64, f0: impl Fn(f64) -> f64) -> Vec<f32> {
        (0..(secs * 100.0) as usize)
            .map(|i| f0(i as f64 * 0.01) as f32)
            .collect()
    }

    fn speech(rate: u32, seed: u64) -> Vec<f32> {
        speech_like(rate, 1.5, seed).audio.channels.remove(0)
    }

    fn mel(a: &[f32], b: &[f32], rate: u32) -> f64 {
        multi_resolution_mel_distance(a, b, rate).expect("long enough")
    }

    #[test]
    fn mel_distance_is_zero_for_identical_audio_and_symmetric() {
        let (a, b) = (speech(24_000, 1), speech(24_000, 2));
        assert_eq!(mel(&a, &a, 24_000), 0.0);
        let forward = mel(&a, &b, 24_000);
        assert!(forward > 0.2, "{forward}");
        assert_eq!(forward, mel(&b, &a, 24_000));
    }

    #[test]
    fn mel_distance_grows_with_added_noise() {
        let clean = speech(24_000, 3);
        let distances: Vec<f64> = [40.0, 25.0, 10.0]
            .iter()
            .map(|&snr| mel(&clean, &with_noise(&clean, 24_000, snr, 5), 24_000))
            .collect();
        assert!(distances[0] > 0.0, "{distances:?}");
        assert!(
            distances.windows(2).all(|w| w[1] > w[0] + 0.5),
            "{distances:?}"
        );
    }

    #[test]
    fn mel_distance_barely_moves_for_a_one_sample_shift() {
        let a = speech(48_000, 4);
        let shifted = mel(&a, &a[1..], 48_000);
        let other = mel(&a, &speech(48_000, 6), 48_000);
        assert!(shifted < 0.01 * other, "shift {shifted}, other {other}");
    }

    #[test]
    fn mel_distance_compares_the_common_length_and_needs_one_frame() {
        let a = speech(24_000, 7);
        assert_eq!(
            multi_resolution_mel_distance(&a, &a[..a.len() - 100], 24_000),
            Some(0.0)
        );
        let tone = voice(0.1, |_| 150.0, 0.0);
        // 2048 samples is one frame of the largest resolution at 24 kHz, 4096 at 48 kHz.
        assert!(multi_resolution_mel_distance(&tone[..2048], &tone, 24_000).is_some());
        assert_eq!(
            multi_resolution_mel_distance(&tone[..2047], &tone, 24_000),
            None
        );
        assert_eq!(
            multi_resolution_mel_distance(&tone, &tone[..2048], 48_000),
            None
        );
        assert_eq!(multi_resolution_mel_distance(&tone, &tone, 0), None);
    }

    /// Two closed-form half-second signals, for comparison with librosa.
    fn formula(rate: u32, which: usize) -> Vec<f32> {
        use std::f64::consts::TAU;
        (0..rate as usize / 2)
            .map(|i| {
                let t = i as f64 / f64::from(rate);
                let x = if which == 0 {
                    0.3 * (TAU * 220.0 * t).sin()
                        + 0.2 * (TAU * 1375.5 * t + 0.3 * (TAU * 3.0 * t).sin()).sin()
                        + 0.05 * (TAU * (300.0 * t + 4000.0 * t * t)).sin()
                } else {
                    0.25 * (TAU * 233.0 * t).sin()
                        + 0.2 * (TAU * 1400.0 * t).sin()
                        + 0.02 * (TAU * 7000.0 * t).sin()
                };
                x as f32
            })
            .collect()
    }

    #[test]
    fn mel_distance_matches_librosa() {
        // numpy over librosa 0.11: `filters.mel(sr, n_fft, n_mels=80, htk=False,
        // norm="slaney")` on `abs(stft(x, n_fft, n_fft // 4, window="hann", center=False))`,
        // then `mean(abs(log(clip(mel_a, 1e-5)) - log(clip(mel_b, 1e-5))))` per resolution.
        for (rate, librosa) in [
            (16_000, 1.4263042645349586),
            (24_000, 1.3451759151310394),
            (48_000, 1.215377685816913),
        ] {
            let ours = mel(&formula(rate, 0), &formula(rate, 1), rate);
            assert!(
                (ours - librosa).abs() < 1e-8,
                "{rate}: {ours}, librosa {librosa}"
            );
        }
    }

    #[test]
    fn mel_resolutions_scale_with_the_rate_by_octaves() {
        assert_eq!(mel_fft_sizes(16_000), Some([256, 512, 1024]));
        for rate in [22_050, 24_000, 32_000] {
            assert_eq!(mel_fft_sizes(rate), Some([512, 1024, 2048]), "{rate}");
        }
        for rate in [40_000, 44_100, 48_000] {
            assert_eq!(mel_fft_sizes(rate), Some([1024, 2048, 4096]), "{rate}");
        }
    }

    #[test]
    fn slaney_filters_are_triangles_of_unit_area_on_the_slaney_scale() {
        assert!((hz_to_mel(1000.0) - 15.0).abs() < 1e-12);
        assert!((hz_to_mel(6400.0) - 42.0).abs() < 1e-9);
        assert!((hz_to_mel(600.0) - 9.0).abs() < 1e-12);
        for hz in [50.0, 999.0, 1000.0, 3000.0, 11_025.0] {
            assert!((mel_to_hz(hz_to_mel(hz)) - hz).abs() < 1e-9, "{hz}");
        }
        let (n_fft, rate) = (4096, 24_000.0);
        let filters = slaney_mel_filters(n_fft, rate, MEL_BANDS);
        assert_eq!(filters.len(), MEL_BANDS);
        let bin_hz = rate / n_fft as f64;
        let top = hz_to_mel(rate / 2.0);
        for (band, filter) in filters.iter().enumerate().skip(10) {
            let area: f64 = filter.weights.iter().sum::<f64>() * bin_hz;
            assert!((area - 1.0).abs() < 0.02, "band {band}: area {area}");
            let peak = filter
                .weights
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1));
            let peak_hz = (filter.first_bin + peak.unwrap().0) as f64 * bin_hz;
            let centre_hz = mel_to_hz(top * (band + 1) as f64 / (MEL_BANDS + 1) as f64);
            assert!(
                (peak_hz - centre_hz).abs() <= bin_hz,
                "band {band}: {peak_hz} Hz"
            );
        }
    }

    #[test]
    fn a_constant_semitone_offset_is_100_cents() {
        let reference = vec![200.0f32; 50];
        let sharp = vec![200.0 * 2f32.powf(1.0 / 12.0); 50];
        let agreement = pitch_agreement(&reference, &sharp);
        assert_eq!((agreement.frames, agreement.voiced_frames), (50, 50));
        assert!(
            (agreement.rmse_cents.unwrap() - 100.0).abs() < 1e-3,
            "{agreement:?}"
        );
        assert_eq!(agreement.voicing_agreement, 1.0);
        assert_eq!(agreement.octave_errors, Some(0.0));
    }

    #[test]
    fn voicing_flips_and_octave_jumps_are_counted() {
        // Frames: both voiced and equal; voiced only in the reference; both unvoiced; voiced
        // only in the estimate; both voiced an octave apart. The estimate's extra frame is
        // past the common length.
        let reference = [100.0, 100.0, 0.0, 0.0, 100.0];
        let estimate = [100.0, 0.0, 0.0, 100.0, 200.0, 300.0];
        let agreement = pitch_agreement(&reference, &estimate);
        assert_eq!((agreement.frames, agreement.voiced_frames), (5, 2));
        assert!((agreement.voicing_agreement - 0.6).abs() < 1e-12);
        let rmse = agreement.rmse_cents.unwrap();
        assert!(
            (rmse - (1200.0f64.powi(2) / 2.0).sqrt()).abs() < 1e-6,
            "{rmse}"
        );
        assert_eq!(agreement.octave_errors, Some(0.5));
    }

    #[test]
    fn empty_and_unvoiced_tracks_show_no_agreement_in_pitch() {
        let empty = pitch_agreement(&[], &[100.0]);
        assert_eq!(
            empty,
            PitchAgreement {
                frames: 0,
                voiced_frames: 0,
                rmse_cents: None,
                voicing_agreement: 0.0,
                octave_errors: None,
            }
        );
        let silent = pitch_agreement(&[0.0; 10], &[0.0; 10]);
        assert_eq!((silent.frames, silent.voicing_agreement), (10, 1.0));
        assert_eq!((silent.rmse_cents, silent.octave_errors), (None, None));
        // NaN and negative f0 are unvoiced, like 0.
        let odd = pitch_agreement(&[f32::NAN, 100.0, -5.0], &[0.0, 100.0, 0.0]);
        assert_eq!((odd.voicing_agreement, odd.voiced_frames), (1.0, 1));
        assert_eq!(odd.rmse_cents, Some(0.0));
    }

    fn inharmonic(audio: &[f32], f0: &[f32]) -> f64 {
        inharmonic_energy_db(audio, RATE, f0, 0.01).expect("voiced frames")
    }

    /// The measure of a 0.6 s tone at a steady `f0`: clean, with white noise 20 dB below it,
    /// and with partials at (k + ½)·f0 10 dB below the harmonics.
    fn clean_noisy_buzzy(f0: f64) -> [f64; 3] {
        let clean = voice(0.6, |_| f0, 0.0);
        let noisy = with_noise(&clean, RATE, 20.0, 11);
        let buzzy = voice(0.6, |_| f0, 10f64.powf(-0.5));
        let f0_track = track(0.6, |_| f0);
        [clean, noisy, buzzy].map(|audio| inharmonic(&audio, &f0_track))
    }

    #[test]
    fn clean_harmonics_score_far_below_noise_which_scores_below_buzz() {
        let [clean, noisy, buzzy] = clean_noisy_buzzy(150.0);
        assert!(clean < -50.0, "clean {clean}");
        assert!(noisy > clean + 20.0, "noisy {noisy}, clean {clean}");
        // Half the white noise in the band lies between the harmonics.
        assert!((-35.0..-25.0).contains(&noisy), "noisy {noisy}");
        assert!(buzzy > noisy + 15.0, "buzzy {buzzy}, noisy {noisy}");
        assert!((buzzy + 10.0).abs() < 1.0, "buzzy {buzzy}");
    }

    #[test]
    fn inharmonic_energy_hardly_depends_on_the_f0() {
        let (low, high) = (clean_noisy_buzzy(120.0), clean_noisy_buzzy(240.0));
        for (kind, (low, high)) in ["clean", "noisy", "buzzy"].iter().zip(low.iter().zip(high)) {
            assert!(
                (low - high).abs() < 3.0,
                "{kind}: {low} at 120 Hz, {high} at 240 Hz"
            );
        }
    }

    #[test]
    fn inharmonic_energy_follows_a_gliding_f0() {
        // An octave a second, 120 to 240 Hz: the upper harmonics sweep over the gaps within a
        // window unless the window follows the pitch.
        let glide = |t: f64| 120.0 * 2f64.powf(t);
        let gliding = voice(1.0, glide, 0.0);
        let matched = inharmonic(&gliding, &track(1.0, glide));
        assert!(matched < -50.0, "matched {matched}");
        let steady = inharmonic(&gliding, &track(1.0, |_| 170.0));
        assert!(steady > -10.0, "steady {steady}");
    }

    #[test]
    fn a_minority_of_wrong_f0_frames_does_not_move_the_median() {
        let clean = voice(0.6, |_| 150.0, 0.0);
        // Every fourth frame doubled, as trackers err: each of those reads as a third buzz.
        let f0_track: Vec<f32> = (0..60)
            .map(|i| if i % 4 == 0 { 300.0 } else { 150.0 })
            .collect();
        let value = inharmonic(&clean, &f0_track);
        assert!(value < -45.0, "{value}");
    }

    #[test]
    fn inharmonic_energy_needs_voiced_frames_inside_the_audio() {
        let tone = voice(0.6, |_| 150.0, 0.0);
        let f0_track = track(0.6, |_| 150.0);
        assert_eq!(inharmonic_energy_db(&tone, RATE, &[0.0; 60], 0.01), None);
        assert_eq!(inharmonic_energy_db(&tone, RATE, &[], 0.01), None);
        assert_eq!(inharmonic_energy_db(&tone, RATE, &f0_track, 0.0), None);
        assert_eq!(inharmonic_energy_db(&tone, 0, &f0_track, 0.01), None);
        // Twelve periods of 150 Hz are 80 ms: no window fits in 60 ms.
        assert_eq!(
            inharmonic_energy_db(&tone[..2880], RATE, &f0_track, 0.01),
            None
        );
        assert_eq!(
            inharmonic_energy_db(&[0.0; 28_800], RATE, &f0_track, 0.01),
            None
        );
    }
}
