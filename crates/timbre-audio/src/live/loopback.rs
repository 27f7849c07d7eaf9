//! Measured latency, ported from rvc-next 0.2.16's `engine/audio_io/loopback.py`: play test
//! bursts on the output and find them again in the input.
//!
//! [`LoopbackProbe`] is a [`BlockProcessor`], so the bursts go through the same rings and prefill
//! as converted audio; what it measures is the round trip from the processor's output back to
//! its input, in samples. With no underruns that is the whole session's latency except the
//! engine's own delay ([`super::latency::engine_delay_ms`]).
//!
//! Each burst is a different band-limited noise sequence, so a burst cannot be mistaken for
//! another however long the round trip is, and its cross-correlation with the recording has one
//! sharp peak even in a noisy, reverberant room. A burst counts as found when that peak stands
//! 20 dB above the correlation's noise floor; the measurement holds when most bursts are found
//! and agree within 2 ms.

use std::sync::{Arc, Mutex, PoisonError};

use timbre_fft::num_complex::Complex;

use super::BlockProcessor;
use crate::analysis::median;

/// Length of each test burst, in seconds.
pub const BURST_SECS: f64 = 0.1;
/// Time from the start of one burst to the start of the next, in seconds.
pub const INTERVAL_SECS: f64 = 0.25;
/// Silence before the first burst, while the streams settle.
pub const LEAD_SECS: f64 = 0.3;
/// A burst counts as found when its correlation peak stands this many dB above the floor.
pub const MIN_SNR_DB: f64 = 20.0;
/// Found bursts further apart than this make the measurement inconsistent (dropouts, a
/// drifting clock).
pub const MAX_SPREAD_MS: f64 = 2.0;
const LOW_HZ: f64 = 300.0;
const HIGH_HZ: f64 = 6000.0;
const SEED: u64 = 7;

/// `count` distinct noise bursts of [`BURST_SECS`], band-limited to 300 Hz–6 kHz (what small
/// speakers and microphones pass), peaking at `level_db` dBFS, with 2 ms fades.
pub fn bursts(sample_rate: u32, count: usize, level_db: f64) -> Vec<Vec<f32>> {
    let rate = f64::from(sample_rate);
    let n = (BURST_SECS * rate).round() as usize;
    let high = HIGH_HZ.min(0.45 * rate);
    let fade = ((0.002 * rate) as usize).max(1);
    let ramp: Vec<f64> = (0..fade)
        .map(|i| {
            let x = if fade > 1 {
                i as f64 / (fade - 1) as f64
            } else {
                0.0
            };
            (x * std::f64::consts::FRAC_PI_2).sin().powi(2)
        })
        .collect();
    let timbre_fft::RealFft { forward, inverse } = timbre_fft::real_fft_f64(n);
    (0..count)
        .map(|k| {
            let mut noise = Gaussian::new(SEED + k as u64);
            let mut x: Vec<f64> = (0..n).map(|_| noise.next()).collect();
            let mut spectrum = forward.make_output_vec();
            forward
                .process(&mut x, &mut spectrum)
                .expect("sizes from the plan");
            for (bin, value) in spectrum.iter_mut().enumerate() {
                let freq = bin as f64 * rate / n as f64;
                if !(LOW_HZ..=high).contains(&freq) {
                    *value = Complex::default();
                }
            }
            // The DC and Nyquist bins are outside the band, so they are already real.
            inverse
                .process(&mut spectrum, &mut x)
                .expect("sizes from the plan");
            for (i, r) in ramp.iter().enumerate() {
                x[i] *= r;
                x[n - 1 - i] *= r;
            }
            let peak = x.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-9);
            let scale = 10f64.powf(level_db / 20.0) / peak;
            x.iter().map(|v| (v * scale) as f32).collect()
        })
        .collect()
}

/// Deterministic standard normal samples (xorshift64* and Box–Muller).
struct Gaussian(u64);

impl Gaussian {
    fn new(seed: u64) -> Self {
        Gaussian(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (bits as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The lag (0…`max_delay`) at which `burst`, played at `start`, best matches `recording`, and
/// the peak's ratio to the correlation's noise floor in dB.
pub fn find_delay(
    recording: &[f32],
    burst: &[f32],
    start: usize,
    max_delay: usize,
) -> (usize, f64) {
    let n = burst.len();
    let from = start.min(recording.len());
    let region = &recording[from..(start + max_delay + n).min(recording.len())];
    if n == 0 || region.len() < n {
        return (0, f64::NEG_INFINITY);
    }
    let lags = region.len() - n + 1;
    let size = (region.len() + n).next_power_of_two();
    let timbre_fft::RealFft { forward, inverse } = timbre_fft::real_fft_f64(size);
    let spectrum_of = |samples: &[f32]| {
        let mut padded = vec![0.0f64; size];
        for (p, &s) in padded.iter_mut().zip(samples) {
            *p = f64::from(s);
        }
        let mut spectrum = forward.make_output_vec();
        forward
            .process(&mut padded, &mut spectrum)
            .expect("sizes from the plan");
        spectrum
    };
    let mut product = spectrum_of(region);
    for (a, b) in product.iter_mut().zip(spectrum_of(burst)) {
        *a *= b.conj();
    }
    // A real signal's DC and Nyquist bins are real; rounding leaves a tiny imaginary part.
    product[0].im = 0.0;
    product[size / 2].im = 0.0;
    let mut corr = vec![0.0f64; size];
    inverse
        .process(&mut product, &mut corr)
        .expect("sizes from the plan");
    let mag: Vec<f64> = corr[..lags].iter().map(|c| c.abs()).collect();
    let lag = (0..lags).fold(0, |best, i| if mag[i] > mag[best] { i } else { best });
    // The floor is the median magnitude away from the peak (reflections near it are signal).
    let guard = (n / 20).max(1);
    let mut rest: Vec<f64> = mag[..lag.saturating_sub(guard)]
        .iter()
        .chain(&mag[(lag + guard).min(lags)..])
        .copied()
        .collect();
    let floor = median(&mut rest).unwrap_or(0.0);
    if floor <= 0.0 {
        let snr = if mag[lag] > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        return (lag, snr);
    }
    (lag, 20.0 * (mag[lag] / floor).log10())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "LoopbackFailure")]
/// Why a loopback measurement did not hold.
pub enum LoopbackFailure {
    /// Too few bursts came back.
    NoSignal,
    /// The bursts that came back disagree by more than [`MAX_SPREAD_MS`].
    Inconsistent,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
/// Outcome of a loopback latency measurement.
pub struct LoopbackResult {
    /// Whether enough bursts were found and they agree (`reason` is `None`).
    pub ok: bool,
    /// Sample rate of the processor's stream, in Hz; the unit of the delays.
    pub sample_rate: u32,
    /// Samples from the processor's output back to its input (the median of the found bursts).
    pub round_trip: Option<u32>,
    /// `round_trip` in milliseconds.
    pub round_trip_ms: Option<f64>,
    /// Each found burst's round trip, in samples.
    pub delays: Vec<u32>,
    /// Bursts sent.
    pub pings: u32,
    /// The weakest found burst's correlation peak over the noise floor.
    pub snr_db: Option<f64>,
    /// Peak of everything recorded, in dBFS rounded to 0.1 dB (-120 for no input).
    pub input_peak_db: f64,
    /// Whether the recorded peak reached -0.1 dBFS or above.
    pub clipped: bool,
    /// Why the measurement failed; `None` when `ok`.
    pub reason: Option<LoopbackFailure>,
}

impl LoopbackResult {
    /// The spread of the found bursts' round trips.
    pub fn jitter_ms(&self) -> Option<f64> {
        let (min, max) = (self.delays.iter().min()?, self.delays.iter().max()?);
        Some(1000.0 * f64::from(max - min) / f64::from(self.sample_rate))
    }
}

/// Finds every burst in `recording` (indexed as the processor's input) and judges the result.
pub fn analyse(
    recording: &[f32],
    sent: &[Vec<f32>],
    starts: &[usize],
    sample_rate: u32,
    max_delay: usize,
) -> LoopbackResult {
    let found: Vec<(usize, f64)> = sent
        .iter()
        .zip(starts)
        .map(|(burst, &start)| find_delay(recording, burst, start, max_delay))
        .filter(|&(_, snr)| snr >= MIN_SNR_DB)
        .collect();
    let peak = recording.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let level = if recording.is_empty() {
        -120.0
    } else {
        (f64::from(crate::analysis::to_dbfs(peak)) * 10.0).round() / 10.0
    };
    let delays: Vec<u32> = found.iter().map(|&(d, _)| d as u32).collect();
    let mut result = LoopbackResult {
        ok: false,
        sample_rate,
        round_trip: None,
        round_trip_ms: None,
        delays,
        pings: sent.len() as u32,
        snr_db: None,
        input_peak_db: level,
        clipped: level >= -0.1,
        reason: Some(LoopbackFailure::NoSignal),
    };
    if found.len() < 2.max(sent.len().div_ceil(2)) {
        return result;
    }
    let snr = found.iter().map(|&(_, s)| s).fold(f64::INFINITY, f64::min);
    let mut as_f64: Vec<f64> = result.delays.iter().map(|&d| f64::from(d)).collect();
    let round_trip = median(&mut as_f64).expect("at least two delays") as u32;
    result.snr_db = Some((snr * 10.0).round() / 10.0);
    result.round_trip = Some(round_trip);
    result.round_trip_ms = Some(1000.0 * f64::from(round_trip) / f64::from(sample_rate));
    let spread = result.jitter_ms().expect("at least two delays");
    result.reason = (spread > MAX_SPREAD_MS).then_some(LoopbackFailure::Inconsistent);
    result.ok = result.reason.is_none();
    result
}

struct ProbeSignal {
    sample_rate: u32,
    sent: Vec<Vec<f32>>,
    starts: Vec<usize>,
    max_delay: usize,
    /// The whole test signal: silence, the bursts, then silence while the last comes back.
    signal: Vec<f32>,
    /// What came into the processor, and how many samples it has been given.
    heard: Mutex<(Vec<f32>, usize)>,
}

/// A [`BlockProcessor`] that records each input block and answers with the next stretch of the
/// test signal (silence, `pings` bursts [`INTERVAL_SECS`] apart, then silence while the last one
/// comes back). Done once `max_delay_secs` has passed after the last burst.
pub struct LoopbackProbe {
    signal: Arc<ProbeSignal>,
    block: usize,
}

/// Watches a [`LoopbackProbe`] from outside the processing thread.
#[derive(Clone)]
pub struct LoopbackWatch(Arc<ProbeSignal>);

impl LoopbackProbe {
    /// Probe at `sample_rate` Hz in `block`-sample blocks: `pings` bursts (at least one) peaking
    /// at `level_db` dBFS, each listened for up to `max_delay_secs` after it is sent.
    pub fn new(
        sample_rate: u32,
        block: usize,
        max_delay_secs: f64,
        pings: usize,
        level_db: f64,
    ) -> Self {
        let rate = f64::from(sample_rate);
        let sent = bursts(sample_rate, pings.max(1), level_db);
        let (lead, interval) = ((LEAD_SECS * rate) as usize, (INTERVAL_SECS * rate) as usize);
        let starts: Vec<usize> = (0..sent.len()).map(|k| lead + k * interval).collect();
        let max_delay = (max_delay_secs * rate) as usize;
        let total = starts[starts.len() - 1] + sent[sent.len() - 1].len() + max_delay;
        let mut signal = vec![0.0; total];
        for (burst, &start) in sent.iter().zip(&starts) {
            signal[start..start + burst.len()].copy_from_slice(burst);
        }
        let signal = Arc::new(ProbeSignal {
            sample_rate,
            sent,
            starts,
            max_delay,
            heard: Mutex::new((vec![0.0; total], 0)),
            signal,
        });
        LoopbackProbe {
            signal,
            block: block.max(1),
        }
    }

    /// A handle to follow this probe and read its result once it is moved into a session.
    pub fn watch(&self) -> LoopbackWatch {
        LoopbackWatch(Arc::clone(&self.signal))
    }
}

impl BlockProcessor for LoopbackProbe {
    fn block_size(&self) -> usize {
        self.block
    }

    fn process(&mut self, input: &[f32]) -> anyhow::Result<Vec<f32>> {
        let probe = &*self.signal;
        let mut heard = probe.heard.lock().unwrap_or_else(PoisonError::into_inner);
        let (recording, position) = &mut *heard;
        // Past the end (the session runs on until it is stopped) it answers with silence.
        let pos = (*position).min(probe.signal.len());
        let take = input.len().min(probe.signal.len() - pos);
        recording[pos..pos + take].copy_from_slice(&input[..take]);
        let mut out = vec![0.0; input.len()];
        out[..take].copy_from_slice(&probe.signal[pos..pos + take]);
        *position = pos + input.len();
        Ok(out)
    }
}

impl LoopbackWatch {
    /// Whether the probe has been given its whole test signal's length of input.
    pub fn finished(&self) -> bool {
        let heard = self.0.heard.lock().unwrap_or_else(PoisonError::into_inner);
        heard.1 >= self.0.signal.len()
    }

    /// Seconds of input the probe needs in all.
    pub fn duration_secs(&self) -> f64 {
        self.0.signal.len() as f64 / f64::from(self.0.sample_rate)
    }

    /// Analyses what has been heard so far; call once [`LoopbackWatch::finished`] is true.
    pub fn result(&self) -> LoopbackResult {
        let heard = self.0.heard.lock().unwrap_or_else(PoisonError::into_inner);
        let p = &*self.0;
        analyse(&heard.0, &p.sent, &p.starts, p.sample_rate, p.max_delay)
    }
}

/// The longest round trip looked for: a second, or more with long blocks (prefill and rings
/// hold several).
pub fn max_delay_secs(block: usize, sample_rate: u32) -> f64 {
    (4.0 * block as f64 / f64::from(sample_rate) + 0.5).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 16000;
    const BLOCK: usize = 160;

    /// Runs a probe through a simulated loop: its output comes back `delay(t)` samples later,
    /// plus deterministic noise at `noise` peak amplitude.
    fn run_loop(delay: impl Fn(usize) -> usize, noise: f32, gain: f32) -> LoopbackResult {
        let mut probe = LoopbackProbe::new(RATE, BLOCK, 1.0, 4, -12.0);
        let watch = probe.watch();
        let mut played: Vec<f32> = Vec::new();
        let mut rng = Gaussian::new(99);
        let mut t = 0;
        while !watch.finished() {
            let block: Vec<f32> = (t..t + BLOCK)
                .map(|i| {
                    let echo = i
                        .checked_sub(delay(i))
                        .and_then(|j| played.get(j))
                        .copied()
                        .unwrap_or(0.0);
                    gain * echo + noise * (rng.next() as f32).clamp(-3.0, 3.0) / 3.0
                })
                .collect();
            played.extend(probe.process(&block).unwrap());
            t += BLOCK;
        }
        // Blocks after the end are silence and leave the recording as it was.
        assert_eq!(
            probe.process(&[0.5; 2 * BLOCK]).unwrap(),
            vec![0.0; 2 * BLOCK]
        );
        watch.result()
    }

    #[test]
    fn bursts_are_distinct_band_limited_and_at_level() {
        let b = bursts(RATE, 3, -12.0);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].len(), 1600);
        let peak = b[0].iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(
            (f64::from(crate::analysis::to_dbfs(peak)) + 12.0).abs() < 0.01,
            "{peak}"
        );
        assert_ne!(b[0], b[1]);
        // Faded in and out.
        assert_eq!(b[0][0], 0.0);
        assert_eq!(b[0][1599], 0.0);
        // A burst found in itself peaks at lag 0; the others do not stand out.
        let (lag, snr) = find_delay(&b[1], &b[1], 0, 0);
        assert_eq!(lag, 0);
        assert!(snr.is_infinite() && snr > 0.0);
    }

    #[test]
    fn finds_a_known_delay_exactly() {
        // A block loop cannot answer within its own block, so a block is the shortest round trip.
        for delay in [BLOCK, BLOCK + 1, 480, 4321] {
            let result = run_loop(|_| delay, 0.0, 1.0);
            assert!(result.ok, "{delay}: {result:?}");
            assert_eq!(result.round_trip, Some(delay as u32), "{result:?}");
            assert_eq!(result.delays, vec![delay as u32; 4]);
            assert_eq!(result.jitter_ms(), Some(0.0));
        }
    }

    #[test]
    fn finds_the_delay_in_noise_and_attenuation() {
        let result = run_loop(|_| 3000, 0.05, 0.3);
        assert!(result.ok, "{result:?}");
        assert_eq!(result.round_trip, Some(3000));
        assert!(result.snr_db.unwrap() >= MIN_SNR_DB, "{result:?}");
        assert!(!result.clipped);
        assert!(result.input_peak_db < -5.0, "{result:?}");
    }

    #[test]
    fn nothing_coming_back_is_no_signal() {
        let result = run_loop(|_| 2000, 0.1, 0.0);
        assert!(!result.ok);
        assert_eq!(result.reason, Some(LoopbackFailure::NoSignal));
        assert_eq!(result.round_trip, None);
        let silent = run_loop(|_| 2000, 0.0, 0.0);
        assert_eq!(silent.reason, Some(LoopbackFailure::NoSignal));
    }

    #[test]
    fn bursts_that_disagree_are_inconsistent() {
        // 200 samples (12.5 ms) of extra delay from the third burst on: a dropout.
        let switch = (LEAD_SECS * f64::from(RATE)) as usize + 2 * 4000;
        let result = run_loop(|i| if i < switch { 1000 } else { 1200 }, 0.0, 1.0);
        assert!(!result.ok, "{result:?}");
        assert_eq!(result.reason, Some(LoopbackFailure::Inconsistent));
        assert_eq!(result.delays, vec![1000, 1000, 1200, 1200]);
        assert_eq!(result.jitter_ms(), Some(12.5));
    }

    #[test]
    fn max_delay_grows_with_long_blocks() {
        assert_eq!(max_delay_secs(4800, 48000), 1.0);
        assert_eq!(max_delay_secs(48000, 48000), 4.5);
    }
}
