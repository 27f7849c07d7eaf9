//! Test tones and a quick pitch check: generated signals for calibration, demos and tests.
//! Everything random here comes from a seeded generator, so a signal repeats exactly.

use std::f64::consts::{PI, TAU};
use std::ops::Range;

use crate::buffer::AudioBuffer;

/// A mono sine of `seconds` (rounded to whole frames), starting at phase 0.
pub fn sine(sample_rate: u32, freq: f32, seconds: f64, amplitude: f32) -> AudioBuffer {
    let frames = (seconds * f64::from(sample_rate)).round() as usize;
    let step = std::f64::consts::TAU * f64::from(freq) / f64::from(sample_rate);
    let samples = (0..frames)
        .map(|i| amplitude * (step * i as f64).sin() as f32)
        .collect();
    AudioBuffer::new(sample_rate, vec![samples])
}

/// Frequency of a periodic signal from the spacing of its first and last upward zero
/// crossings (interpolated between samples); None with fewer than two crossings.
pub fn zero_crossing_frequency(samples: &[f32], sample_rate: u32) -> Option<f64> {
    let crossings: Vec<f64> = samples
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| i as f64 + f64::from(-w[0] / (w[1] - w[0])))
        .collect();
    let (first, last) = (crossings.first()?, crossings.last()?);
    (crossings.len() >= 2)
        .then(|| (crossings.len() - 1) as f64 * f64::from(sample_rate) / (last - first))
}

/// xorshift64*: small, seedable and the same on every platform.
struct Random(u64);

impl Random {
    fn new(seed: u64) -> Self {
        Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.uniform()
    }

    /// Standard normal, by Box–Muller.
    fn gaussian(&mut self) -> f64 {
        let radius = (-2.0 * (1.0 - self.uniform()).ln()).sqrt();
        radius * (TAU * self.uniform()).cos()
    }
}

fn frames_of(sample_rate: u32, seconds: f64) -> usize {
    (seconds * f64::from(sample_rate)).round() as usize
}

fn scaled_to_rms(mut samples: Vec<f32>, target: f64) -> Vec<f32> {
    let energy: f64 = samples.iter().map(|&x| f64::from(x).powi(2)).sum();
    if energy > 0.0 {
        let gain = (target / (energy / samples.len() as f64).sqrt()) as f32;
        samples.iter_mut().for_each(|x| *x *= gain);
    }
    samples
}

/// Mono Gaussian white noise with an RMS of 1.
pub fn white_noise(sample_rate: u32, seconds: f64, seed: u64) -> AudioBuffer {
    let mut random = Random::new(seed);
    let samples = (0..frames_of(sample_rate, seconds))
        .map(|_| random.gaussian() as f32)
        .collect();
    AudioBuffer::new(sample_rate, vec![scaled_to_rms(samples, 1.0)])
}

/// Mono pink (1/f) noise with an RMS of 1: white noise through Paul Kellet's pinking filter.
pub fn pink_noise(sample_rate: u32, seconds: f64, seed: u64) -> AudioBuffer {
    let mut random = Random::new(seed);
    let mut b = [0.0f64; 7];
    let samples = (0..frames_of(sample_rate, seconds))
        .map(|_| {
            let white = random.gaussian();
            b[0] = 0.99886 * b[0] + white * 0.0555179;
            b[1] = 0.99332 * b[1] + white * 0.0750759;
            b[2] = 0.96900 * b[2] + white * 0.1538520;
            b[3] = 0.86650 * b[3] + white * 0.3104856;
            b[4] = 0.55000 * b[4] + white * 0.5329522;
            b[5] = -0.7616 * b[5] - white * 0.0168980;
            let pink = b.iter().sum::<f64>() + white * 0.5362;
            b[6] = white * 0.115926;
            pink as f32
        })
        .collect();
    AudioBuffer::new(sample_rate, vec![scaled_to_rms(samples, 1.0)])
}

/// A speech-like test signal and the frame ranges of its syllables (everything else is silent).
#[derive(Debug, Clone)]
pub struct SpeechLike {
    /// The mono signal at the requested rate.
    pub audio: AudioBuffer,
    /// Frame ranges of the syllables, in order; all other frames are zero.
    pub syllables: Vec<Range<usize>>,
}

/// Formants (F1, F2, F3 in Hz) of the vowels a, e, i, o, u.
const VOWELS: [[f64; 3]; 5] = [
    [730.0, 1090.0, 2440.0],
    [530.0, 1840.0, 2480.0],
    [270.0, 2290.0, 3010.0],
    [570.0, 840.0, 2410.0],
    [300.0, 870.0, 2240.0],
];

/// A mono voice-like signal peaking at 0.5: words of two to four syllables with pauses between
/// them; each syllable a harmonic tone gliding in pitch (100–220 Hz), shaped by three formant
/// resonators of a vowel and by a rise-and-fall envelope. Leading and trailing 0.3 s are silent.
pub fn speech_like(sample_rate: u32, seconds: f64, seed: u64) -> SpeechLike {
    let mut random = Random::new(seed);
    let rate = f64::from(sample_rate);
    let mut samples = vec![0.0f32; frames_of(sample_rate, seconds)];
    let mut syllables = Vec::new();
    let mut at = 0.3;
    'words: loop {
        for _ in 0..2 + (random.uniform() * 3.0) as usize {
            let length = random.between(0.12, 0.28);
            if at + length > seconds - 0.3 {
                break 'words;
            }
            let start = frames_of(sample_rate, at);
            let end = frames_of(sample_rate, at + length);
            let f0 = (random.between(100.0, 180.0), random.between(0.85, 1.25));
            let vowel = VOWELS[(random.uniform() * VOWELS.len() as f64) as usize];
            syllable(&mut samples[start..end], rate, f0, vowel);
            syllables.push(start..end);
            at += length + random.between(0.03, 0.07);
        }
        at += random.between(0.25, 0.6);
    }
    let peak = samples.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if peak > 0.0 {
        samples.iter_mut().for_each(|x| *x *= 0.5 / peak);
    }
    SpeechLike {
        audio: AudioBuffer::new(sample_rate, vec![samples]),
        syllables,
    }
}

/// Writes one syllable into `out`: pitch from `f0.0` to `f0.0 * f0.1` over its length.
fn syllable(out: &mut [f32], rate: f64, f0: (f64, f64), formants: [f64; 3]) {
    let len = out.len() as f64;
    let mut phase = 0.0f64;
    let mut resonators = formants.map(|f| Resonator::new(f, 60.0 + f * 0.06, rate));
    for (i, sample) in out.iter_mut().enumerate() {
        let position = i as f64 / len;
        let pitch = f0.0 * f0.1.powf(position);
        phase = (phase + pitch / rate).fract();
        let harmonics = ((0.45 * rate / pitch) as usize).min(40);
        let source: f64 = (1..=harmonics)
            .map(|k| (TAU * phase * k as f64).sin() / k as f64)
            .sum();
        let voiced: f64 = resonators
            .iter_mut()
            .zip([1.0, 0.7, 0.35])
            .map(|(r, gain)| gain * r.process(source))
            .sum();
        *sample = (voiced * (PI * position).sin().powf(0.6)) as f32;
    }
}

/// A two-pole resonator with unit gain at its centre frequency.
struct Resonator {
    a1: f64,
    a2: f64,
    gain: f64,
    state: [f64; 2],
}

impl Resonator {
    fn new(centre_hz: f64, bandwidth_hz: f64, rate: f64) -> Self {
        let r = (-PI * bandwidth_hz / rate).exp();
        let theta = TAU * centre_hz / rate;
        Resonator {
            a1: -2.0 * r * theta.cos(),
            a2: r * r,
            gain: (1.0 - r) * (1.0 - 2.0 * r * (2.0 * theta).cos() + r * r).sqrt(),
            state: [0.0; 2],
        }
    }

    fn process(&mut self, x: f64) -> f64 {
        let y = self.gain * x - self.a1 * self.state[0] - self.a2 * self.state[1];
        self.state = [y, self.state[0]];
        y
    }
}

/// A stereo loop in 4/4 at 120 bpm that repeats every two-second bar: kick, snare and hi-hats
/// panned left, two chords a bar (C major, A minor) panned right, each part at about the same
/// level, peaking near 0.5. The drum sounds are made once and repeated sample for sample.
pub fn backing_track(sample_rate: u32, seconds: f64) -> AudioBuffer {
    let rate = f64::from(sample_rate);
    let frames = frames_of(sample_rate, seconds);
    let beat = frames_of(sample_rate, 0.5);
    let mut random = Random::new(7);
    let kick: Vec<f32> = (0..frames_of(sample_rate, 0.25))
        .map(|i| {
            let t = i as f64 / rate;
            let phase = TAU * (50.0 * t + 70.0 * (1.0 - (-t * 30.0).exp()) / 30.0);
            (phase.sin() * (-t * 14.0).exp()) as f32
        })
        .collect();
    let snare: Vec<f32> = (0..frames_of(sample_rate, 0.15))
        .map(|i| {
            let t = i as f64 / rate;
            let body = 0.5 * (TAU * 185.0 * t).sin() + 0.6 * random.gaussian();
            (body * (-t * 25.0).exp()) as f32
        })
        .collect();
    let mut last = 0.0;
    let hat: Vec<f32> = (0..frames_of(sample_rate, 0.04))
        .map(|i| {
            let white = random.gaussian();
            let bright = white - last;
            last = white;
            (0.3 * bright * (-(i as f64) / rate * 90.0).exp()) as f32
        })
        .collect();
    let mut drums = vec![0.0f32; frames];
    let mut place = |sound: &[f32], at: usize| {
        for (d, s) in drums.iter_mut().skip(at).zip(sound) {
            *d += s;
        }
    };
    for bar_start in (0..frames).step_by(4 * beat) {
        for beat_index in 0..4 {
            let at = bar_start + beat_index * beat;
            place(if beat_index % 2 == 0 { &kick } else { &snare }, at);
            place(&hat, at);
            place(&hat, at + beat / 2);
        }
    }
    const CHORDS: [[f64; 3]; 2] = [[261.63, 329.63, 392.0], [220.0, 261.63, 329.63]];
    let chords: Vec<f32> = (0..frames)
        .map(|i| {
            let in_bar = i % (4 * beat);
            let notes = CHORDS[in_bar / (2 * beat)];
            let t = (in_bar % (2 * beat)) as f64 / rate;
            let tone: f64 = notes
                .iter()
                .flat_map(|f| (1..=6).map(move |k| (TAU * f * k as f64 * t).sin() / k as f64))
                .sum();
            (0.25 * tone * (-t * 1.5).exp()) as f32
        })
        .collect();
    let left = drums.iter().zip(&chords).map(|(d, c)| 0.4 * d + 0.12 * c);
    let right = drums.iter().zip(&chords).map(|(d, c)| 0.12 * d + 0.4 * c);
    AudioBuffer::new(sample_rate, vec![left.collect(), right.collect()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use timbre_test_support::max_abs_difference;

    #[test]
    fn a_generated_sine_measures_its_own_frequency() {
        let tone = sine(16000, 440.0, 1.0, 0.5);
        assert_eq!(tone.frames(), 16000);
        let freq = zero_crossing_frequency(&tone.channels[0], 16000).unwrap();
        assert!((freq - 440.0).abs() < 0.1, "{freq}");
        assert_eq!(zero_crossing_frequency(&[0.0; 100], 16000), None);
    }

    #[test]
    fn noises_have_unit_rms_and_repeat_with_their_seed() {
        let white = white_noise(16000, 1.0, 3);
        let pink = pink_noise(16000, 1.0, 3);
        for noise in [&white, &pink] {
            assert!((crate::analysis::rms(noise) - 1.0).abs() < 1e-3);
        }
        assert_eq!(white, white_noise(16000, 1.0, 3));
        assert_ne!(white, white_noise(16000, 1.0, 4));
        // Pink noise: neighbouring samples correlate strongly, white noise's do not.
        let lag_one = |x: &[f32]| x.windows(2).map(|w| w[0] * w[1]).sum::<f32>() / x.len() as f32;
        assert!(lag_one(&white.channels[0]).abs() < 0.05);
        assert!(lag_one(&pink.channels[0]) > 0.5);
    }

    #[test]
    fn speech_like_is_syllables_separated_by_silence() {
        let speech = speech_like(16000, 4.0, 1);
        let samples = &speech.audio.channels[0];
        assert_eq!(samples.len(), 64000);
        assert!(speech.syllables.len() >= 8, "{}", speech.syllables.len());
        let peak = samples.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        assert!((peak - 0.5).abs() < 1e-6);
        let outside =
            (0..samples.len()).filter(|i| !speech.syllables.iter().any(|s| s.contains(i)));
        assert!(outside.into_iter().all(|i| samples[i] == 0.0));
        for syllable in &speech.syllables {
            let part = AudioBuffer::new(16000, vec![samples[syllable.clone()].to_vec()]);
            assert!(crate::analysis::rms(&part) > 0.03);
        }
    }

    #[test]
    fn backing_track_repeats_every_bar() {
        let track = backing_track(8000, 4.5);
        assert_eq!(track.channel_count(), 2);
        let bar = 16000;
        for channel in &track.channels {
            let (first, second) = (&channel[..bar], &channel[bar..2 * bar]);
            let worst = max_abs_difference(first, second);
            assert!(worst < 1e-3, "{worst}");
        }
        assert!(crate::analysis::peak(&track) < 1.0);
    }
}
