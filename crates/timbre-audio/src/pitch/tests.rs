//! Both trackers against known f0: project tones, synthetic voices with pitch glides in noise,
//! silence, noise alone and malformed input.

use super::{HOP, RVC_F0_MAX, RVC_F0_MIN, SAMPLE_RATE, frame_count, pm, yin};
use crate::test_util::sine;

type Tracker = fn(&[f32], f32, f32) -> Vec<f32>;
const TRACKERS: [(&str, Tracker); 2] = [("pm", pm::track), ("yin", yin::track)];

const FS: f64 = SAMPLE_RATE as f64;
/// Frames this close to a voicing boundary are left out of the scores (the analysis windows
/// straddle it).
const BOUNDARY_MARGIN_S: f64 = 0.04;

/// Deterministic standard-normal noise (xorshift + Box–Muller).
fn gaussian_noise(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..len)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Source {
    /// Harmonics at 1/k: a band-limited sawtooth.
    Sawtooth,
    /// Harmonics all at one level: a band-limited pulse train.
    Pulses,
}

/// 0.5 s of noise, a 2 s voice gliding exponentially from `f_start` to `f_end` in the same
/// noise at `snr_db`, 0.25 s more noise, then 0.25 s of digital silence. Returns the audio and
/// the true f0 at each grid frame (0 outside the voice).
fn scene(source: Source, f_start: f64, f_end: f64, snr_db: f64, seed: u64) -> (Vec<f32>, Vec<f64>) {
    let (onset, length) = (0.5, 2.0);
    let total = (3.0 * FS) as usize;
    let f0_at = |t: f64| {
        let progress = ((t - onset) / length).clamp(0.0, 1.0);
        f_start * (f_end / f_start).powf(progress)
    };
    let voiced = |t: f64| t >= onset && t < onset + length;
    let mut phase = 0.0;
    let mut voice: Vec<f64> = (0..total)
        .map(|n| {
            let t = n as f64 / FS;
            let f0 = f0_at(t);
            phase += std::f64::consts::TAU * f0 / FS;
            if !voiced(t) {
                return 0.0;
            }
            let harmonics = ((0.5 * FS / f0) as usize).min(40);
            (1..=harmonics)
                .map(|k| {
                    let level = match source {
                        Source::Sawtooth => 1.0 / k as f64,
                        Source::Pulses => 1.0,
                    };
                    level * (k as f64 * phase).sin()
                })
                .sum()
        })
        .collect();
    let peak = voice.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    voice.iter_mut().for_each(|v| *v *= 0.3 / peak);
    let voiced_power = voice.iter().map(|v| v * v).sum::<f64>() / (length * FS);
    let noise_level = (voiced_power / 10f64.powf(snr_db / 10.0)).sqrt();
    let silence_from = ((onset + length + 0.25) * FS) as usize;
    let audio = voice
        .iter()
        .zip(gaussian_noise(total, seed))
        .enumerate()
        .map(|(n, (v, noise))| {
            let noise = if n < silence_from {
                noise * noise_level
            } else {
                0.0
            };
            (v + noise) as f32
        })
        .collect();
    let truth = (0..frame_count(total))
        .map(|k| {
            let t = (k * HOP) as f64 / FS;
            if voiced(t) { f0_at(t) } else { 0.0 }
        })
        .collect();
    (audio, truth)
}

struct Score {
    median_error: f64,
    voiced_recall: f64,
    unvoiced_kept: f64,
}

/// Median relative f0 error on voiced frames the tracker also calls voiced, the share of voiced
/// frames it finds, and the share of unvoiced frames it leaves at 0 — all away from boundaries.
fn score(track: &[f32], truth: &[f64]) -> Score {
    assert_eq!(track.len(), truth.len());
    let margin = (BOUNDARY_MARGIN_S * FS / HOP as f64).ceil() as usize;
    let near_boundary = |k: usize| {
        let lo = k.saturating_sub(margin);
        let hi = (k + margin).min(truth.len() - 1);
        (lo..=hi).any(|j| (truth[j] > 0.0) != (truth[k] > 0.0))
    };
    let (mut errors, mut voiced, mut unvoiced, mut unvoiced_zero) = (Vec::new(), 0, 0, 0);
    for (k, (&f, &t)) in track.iter().zip(truth).enumerate() {
        if near_boundary(k) {
            continue;
        }
        if t > 0.0 {
            voiced += 1;
            if f > 0.0 {
                errors.push((f64::from(f) - t).abs() / t);
            }
        } else {
            unvoiced += 1;
            unvoiced_zero += usize::from(f == 0.0);
        }
    }
    let found = errors.len();
    errors.sort_by(f64::total_cmp);
    Score {
        median_error: errors.get(found / 2).copied().unwrap_or(f64::INFINITY),
        voiced_recall: found as f64 / voiced.max(1) as f64,
        unvoiced_kept: if unvoiced == 0 {
            1.0
        } else {
            unvoiced_zero as f64 / unvoiced as f64
        },
    }
}

fn assert_tracks_well(name: &str, label: &str, score: &Score) {
    assert!(
        score.median_error < 0.01,
        "{name} {label}: median error {:.4}",
        score.median_error
    );
    assert!(
        score.voiced_recall >= 0.95,
        "{name} {label}: voiced recall {:.3}",
        score.voiced_recall
    );
    assert!(
        score.unvoiced_kept >= 0.95,
        "{name} {label}: unvoiced kept {:.3}",
        score.unvoiced_kept
    );
}

#[test]
fn project_tones_are_tracked() {
    for freq in [70.0, 150.0, 440.0, 1000.0] {
        let tone = sine(SAMPLE_RATE, freq, 1.0, 0.5);
        let truth = vec![f64::from(freq); frame_count(tone.len())];
        for (name, track) in TRACKERS {
            let f0 = track(&tone, RVC_F0_MIN, RVC_F0_MAX);
            // Leave out the edges, where analysis windows run off the sound.
            let inner = &f0[5..f0.len() - 5];
            let score = score(inner, &truth[5..truth.len() - 5]);
            assert_tracks_well(name, &format!("{freq} Hz tone"), &score);
        }
    }
}

#[test]
fn gliding_voices_in_noise_are_tracked() {
    let cases = [
        (Source::Sawtooth, 100.0, 300.0),
        (Source::Sawtooth, 60.0, 120.0),
        (Source::Sawtooth, 500.0, 1000.0),
        (Source::Pulses, 250.0, 500.0),
        (Source::Pulses, 120.0, 200.0),
    ];
    for (seed, (source, from, to)) in cases.into_iter().enumerate() {
        let (audio, truth) = scene(source, from, to, 20.0, seed as u64 + 1);
        for (name, track) in TRACKERS {
            let score = score(&track(&audio, RVC_F0_MIN, RVC_F0_MAX), &truth);
            assert_tracks_well(name, &format!("{from}→{to} Hz glide"), &score);
        }
    }
}

#[test]
fn noise_alone_is_unvoiced() {
    let noise: Vec<f32> = gaussian_noise(2 * SAMPLE_RATE as usize, 9)
        .into_iter()
        .map(|v| (0.1 * v) as f32)
        .collect();
    for (name, track) in TRACKERS {
        let f0 = track(&noise, RVC_F0_MIN, RVC_F0_MAX);
        let voiced = f0.iter().filter(|&&f| f > 0.0).count();
        assert!(
            voiced * 20 <= f0.len(),
            "{name}: {voiced} of {} voiced",
            f0.len()
        );
    }
}

#[test]
fn voicing_starts_on_the_grid_frame_of_the_onset() {
    // A tone from 1.0 s on: frame 100 is the first whose centre lies in it.
    let tone = sine(SAMPLE_RATE, 200.0, 2.0, 0.3);
    let delayed: Vec<f32> = tone
        .iter()
        .enumerate()
        .map(|(n, &v)| if n >= SAMPLE_RATE as usize { v } else { 0.0 })
        .collect();
    for (name, track) in TRACKERS {
        let f0 = track(&delayed, RVC_F0_MIN, RVC_F0_MAX);
        let onset = f0.iter().position(|&f| f > 0.0).unwrap_or(f0.len());
        assert!(
            onset.abs_diff(100) <= 3,
            "{name}: voicing starts at frame {onset}"
        );
    }
}

#[test]
fn pm_matches_praat_on_a_glide() {
    // parselmouth 0.4.7 (Praat 6.1.38): Sound(x, 16000).to_pitch_ac(time_step=0.01,
    // voicing_threshold=0.6, pitch_floor=50, pitch_ceiling=1100), padded as RVC pads it, for
    // 0.25 s of a 12-harmonic sawtooth gliding linearly from 150 to 180 Hz.
    let praat = [
        0.0,
        0.0,
        0.0,
        153.60204750552435,
        154.80281300464662,
        156.00189029656298,
        157.20261600763362,
        158.40179078140434,
        159.60236325660844,
        160.80218763991823,
        162.00210168373331,
        163.20197260851984,
        164.40212269536823,
        165.60211875617912,
        166.80187043261745,
        168.00213086655327,
        169.20208872082705,
        170.40170147480788,
        171.60188093651686,
        172.80204677686322,
        174.00186982609603,
        175.20167359132012,
        176.40170984758944,
        0.0,
        0.0,
    ];
    let glide: Vec<f32> = (0..4000)
        .map(|n| {
            let t = n as f64 / FS;
            let phase = std::f64::consts::TAU * (150.0 * t + 0.5 * (30.0 / 0.25) * t * t);
            let wave: f64 = (1..=12).map(|k| (k as f64 * phase).sin() / k as f64).sum();
            (0.3 * wave) as f32
        })
        .collect();
    let ours = pm::track(&glide, RVC_F0_MIN, RVC_F0_MAX);
    // RVC keeps p_len = samples / 160 frames; the grid has one more, unvoiced here.
    assert_eq!(ours.len(), praat.len() + 1);
    assert_eq!(ours[praat.len()], 0.0);
    for (k, (&f, &p)) in ours.iter().zip(&praat).enumerate() {
        assert!(
            (f64::from(f) - p).abs() <= 1e-4 * p,
            "frame {k}: {f} vs Praat {p}"
        );
    }
}

#[test]
fn malformed_input_gives_unvoiced_frames_of_the_grid_length() {
    let tone = sine(SAMPLE_RATE, 220.0, 0.5, 0.5);
    for (name, track) in TRACKERS {
        assert_eq!(track(&[], 50.0, 1100.0), vec![0.0], "{name}");
        assert_eq!(track(&tone[..100], 50.0, 1100.0), vec![0.0], "{name}");
        assert_eq!(
            track(&vec![0.0; 5000], 50.0, 1100.0),
            vec![0.0; 32],
            "{name}"
        );
        assert_eq!(
            track(&vec![f32::NAN; 5000], 50.0, 1100.0),
            vec![0.0; 32],
            "{name}"
        );
        for (low, high) in [
            (0.0, 1100.0),
            (300.0, 200.0),
            (f32::NAN, 500.0),
            (50.0, f32::INFINITY),
        ] {
            assert_eq!(
                track(&tone, low, high),
                vec![0.0; frame_count(tone.len())],
                "{name}"
            );
        }
        // A few bad samples inside a voice do not stop the tracking around them.
        let mut damaged = tone.clone();
        damaged[4000] = f32::NAN;
        damaged[4001] = f32::NEG_INFINITY;
        let f0 = track(&damaged, 50.0, 1100.0);
        assert_eq!(f0.len(), frame_count(tone.len()));
        let voiced = f0.iter().filter(|&&f| (f - 220.0).abs() < 2.2).count();
        assert!(voiced >= f0.len() - 12, "{name}: {f0:?}");
    }
}

#[test]
fn praat_contour_gives_praats_own_frames_of_a_steady_tone() {
    let tone: Vec<f32> = (0..16_000)
        .map(|i| (std::f64::consts::TAU * 200.0 * i as f64 / 16_000.0).sin() as f32 * 0.5)
        .collect();
    let contour = super::pm::praat_contour(&tone, 65.0, 1100.0);
    // Windows of 3 periods of 65 Hz: (1 s − 46 ms) / 10 ms + 1 frames, centred.
    assert_eq!(contour.len(), 96);
    assert!(
        contour.iter().all(|f| (f - 200.0).abs() < 1.0),
        "{contour:?}"
    );
}
