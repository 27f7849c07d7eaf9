//! Measurements on generated speech with noise at known levels; the thresholds sit a safe margin
//! under what the steps measured when they were set (numbers in the comments).

use super::*;
use crate::analysis::{loudness_lufs, rms};
use crate::quality::si_sdr;
use crate::signal::{pink_noise, sine, speech_like, white_noise};

fn only(options: impl FnOnce(&mut EnhanceOptions)) -> EnhanceOptions {
    let mut none = EnhanceOptions {
        mono: false,
        high_pass_hz: None,
        declick: false,
        denoise_strength: None,
        trim: None,
        loudness_lufs: None,
        true_peak_ceiling_db: None,
    };
    options(&mut none);
    none
}

fn run(buffer: AudioBuffer, options: &EnhanceOptions) -> (AudioBuffer, EnhanceReport) {
    enhance(buffer, options, &mut |_, _| true).unwrap()
}

/// `speech` plus `noise` scaled to `snr_db` below it (power over the whole signal).
fn noisy(speech: &[f32], noise: &[f32], snr_db: f64) -> Vec<f32> {
    let power = |x: &[f32]| x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len() as f64;
    let gain = (power(speech) / power(noise) / 10f64.powf(snr_db / 10.0)).sqrt() as f32;
    speech
        .iter()
        .zip(noise)
        .map(|(s, n)| s + gain * n)
        .collect()
}

fn true_peak_dbtp(buffer: &AudioBuffer) -> f64 {
    let mut meter = ebur128::EbuR128::new(
        buffer.channels.len() as u32,
        buffer.sample_rate,
        ebur128::Mode::TRUE_PEAK,
    )
    .unwrap();
    let planes: Vec<&[f32]> = buffer.channels.iter().map(Vec::as_slice).collect();
    meter.add_frames_planar_f32(&planes).unwrap();
    let peak = (0..buffer.channels.len() as u32)
        .map(|c| meter.true_peak(c).unwrap())
        .fold(0.0, f64::max);
    20.0 * peak.log10()
}

/// Of the speech's 20 ms frames (weighted by their energy), the share that kept at least a
/// quarter of their energy (lost no more than 6 dB); frames 40 dB under the loudest are silence.
fn speech_kept(out: &[f32], clean: &[f32], rate: u32) -> f64 {
    let frame = rate as usize / 50;
    let energy = |x: &[f32]| x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>();
    let frames: Vec<(f64, f64)> = clean
        .chunks(frame)
        .zip(out.chunks(frame))
        .map(|(c, o)| (energy(c), energy(o)))
        .collect();
    let loudest = frames.iter().map(|f| f.0).fold(0.0, f64::max);
    let voiced = frames.iter().filter(|f| f.0 > loudest * 1e-4);
    let total: f64 = voiced.clone().map(|f| f.0).sum();
    voiced
        .filter(|f| f.1 >= 0.25 * f.0)
        .map(|f| f.0)
        .sum::<f64>()
        / total
}

/// SI-SDR improvement over the noisy input at 16 kHz (so through the 48 kHz resampling both
/// ways). Measured, white / pink noise: 0 dB +8.90 / +8.78, 5 dB +6.76 / +6.87, 10 dB
/// +3.45 / +3.67; speech kept 0.999 / 0.988 and more.
#[test]
fn denoising_improves_si_sdr_and_keeps_the_speech() {
    let speech = speech_like(16000, 3.0, 11).audio.channels.remove(0);
    let noises = [
        ("white", white_noise(16000, 3.0, 5).channels.remove(0)),
        ("pink", pink_noise(16000, 3.0, 5).channels.remove(0)),
    ];
    let options = only(|o| o.denoise_strength = Some(1.0));
    for (name, noise) in &noises {
        for (snr, least_improvement) in [(0.0, 7.0), (5.0, 5.0), (10.0, 2.5)] {
            let input = noisy(&speech, noise, snr);
            let before = si_sdr(&input, &speech).unwrap();
            let (out, report) = run(AudioBuffer::new(16000, vec![input]), &options);
            let out = &out.channels[0];
            assert_eq!(out.len(), speech.len());
            let improvement = si_sdr(out, &speech).unwrap() - before;
            let kept = speech_kept(out, &speech, 16000);
            assert!(
                improvement >= least_improvement,
                "{name} noise at {snr} dB: +{improvement:.2} dB"
            );
            assert!(
                kept >= 0.95,
                "{name} noise at {snr} dB: {kept:.3} of the speech kept"
            );
            assert!(report.noise_removed_db.unwrap() > 0.0);
        }
    }
}

/// Every syllable lies inside what trimming keeps, and long silences go.
#[test]
fn trimming_keeps_every_syllable() {
    let rate = 16000;
    let first = speech_like(rate, 2.5, 21);
    let second = speech_like(rate, 2.5, 22);
    let pause = vec![0.0; rate as usize * 3 / 2];
    let lead = vec![0.0; rate as usize];
    let clean: Vec<f32> = [
        &lead[..],
        &first.audio.channels[0],
        &pause,
        &second.audio.channels[0],
        &lead,
    ]
    .concat();
    let offset = |at: usize, r: &std::ops::Range<usize>| r.start + at..r.end + at;
    let second_at = lead.len() + first.audio.frames() + pause.len();
    let syllables: Vec<_> = first
        .syllables
        .iter()
        .map(|r| offset(lead.len(), r))
        .chain(second.syllables.iter().map(|r| offset(second_at, r)))
        .collect();
    let noise = white_noise(rate, clean.len() as f64 / f64::from(rate), 9)
        .channels
        .remove(0);
    let input = AudioBuffer::new(rate, vec![noisy(&clean, &noise, 25.0)]);
    let options = TrimOptions::default();
    let plan = vad::plan(&input, &options, &mut |_| true).unwrap().unwrap();
    for syllable in &syllables {
        assert!(
            plan.keep
                .iter()
                .any(|k| k.start <= syllable.start && syllable.end <= k.end),
            "syllable {syllable:?} is cut by {:?}",
            plan.keep
        );
    }
    let (out, report) = run(input.clone(), &only(|o| o.trim = Some(options)));
    let kept: usize = plan.keep.iter().map(|k| k.len()).sum();
    assert_eq!(out.frames(), kept);
    // Lead-in and tail: 1.3 s each less the 0.2 s margin; the 1.5 s pause (plus the quiet ends
    // of the pieces) shortened to 0.6 s.
    let trimmed = report.seconds_trimmed.unwrap();
    assert!(trimmed > 2.8, "{trimmed} s trimmed");
}

#[test]
fn loudness_lands_on_the_target_under_the_true_peak_ceiling() {
    let speech = speech_like(48000, 4.0, 31).audio;
    let noise = white_noise(48000, 4.0, 2).channels.remove(0);
    for (level, target) in [(0.15, -20.0), (1.0, -20.0), (0.3, -23.0)] {
        let samples: Vec<f32> = noisy(&speech.channels[0], &noise, 30.0)
            .iter()
            .map(|x| x * level)
            .collect();
        let options = only(|o| {
            o.loudness_lufs = Some(target);
            o.true_peak_ceiling_db = Some(-1.0);
        });
        let (out, report) = run(AudioBuffer::new(48000, vec![samples]), &options);
        let lufs = loudness_lufs(&out).unwrap();
        assert!(
            (lufs - target).abs() <= 0.5,
            "{lufs} LUFS for {target}: {report:?}"
        );
        assert!(true_peak_dbtp(&out) <= -1.0, "{report:?}");
    }
    let whisper: Vec<f32> = speech.channels[0].iter().map(|x| x * 0.01).collect();
    let options = only(|o| o.loudness_lufs = Some(-20.0));
    let (_, report) = run(AudioBuffer::new(48000, vec![whisper]), &options);
    assert_eq!(report.gain_db, Some(level::MAX_GAIN_DB));
    assert!(report.notes[0].contains("very quiet"), "{:?}", report.notes);
}

/// A sine at a quarter of the sample rate, phased so every sample misses the crest by 3 dB: only
/// a true-peak limiter catches it.
#[test]
fn limiter_keeps_true_peaks_below_the_ceiling() {
    let rate = 48000;
    let inter_sample: Vec<f32> = (0..rate as usize)
        .map(|i| {
            (std::f64::consts::FRAC_PI_2 * i as f64 + std::f64::consts::FRAC_PI_4).sin() as f32
        })
        .collect();
    let mut loud_speech = speech_like(rate, 1.0, 41).audio.channels.remove(0);
    loud_speech.iter_mut().for_each(|x| *x *= 2.5);
    let options = only(|o| o.true_peak_ceiling_db = Some(-1.0));
    for samples in [inter_sample, loud_speech] {
        let input = AudioBuffer::new(rate, vec![samples.clone(), samples]);
        assert!(true_peak_dbtp(&input) > -0.1);
        let (out, report) = run(input, &options);
        let peak = true_peak_dbtp(&out);
        assert!(peak <= -1.0, "{peak} dBTP: {report:?}");
        assert!(report.peaks_limited.unwrap() >= 1);
        // Limiting, not muting: the level stays within a few dB of the ceiling.
        assert!(rms(&out) > 0.1, "{}", rms(&out));
    }
    let quiet = AudioBuffer::new(rate, vec![sine(rate, 440.0, 0.5, 0.5).channels.remove(0)]);
    let (out, report) = run(quiet.clone(), &options);
    assert_eq!(out, quiet);
    assert_eq!(report.peaks_limited, Some(0));
}

#[test]
fn the_presets_run_end_to_end_on_stereo_8_khz_audio() {
    let speech = speech_like(8000, 3.0, 51).audio.channels.remove(0);
    let noise = pink_noise(8000, 3.0, 1).channels.remove(0);
    let left = noisy(&speech, &noise, 10.0);
    let input = AudioBuffer::new(8000, vec![left.clone(), left]);
    let (training, report) = run(input.clone(), &Preset::Training.options());
    assert_eq!((training.sample_rate, training.channel_count()), (8000, 1));
    assert!(training.frames() < input.frames());
    assert!(
        (report.loudness_lufs.unwrap() + 20.0).abs() < 0.5,
        "{report:?}"
    );
    let (natural, report) = run(input.clone(), &Preset::Natural.options());
    assert_eq!(natural.channel_count(), 2);
    assert_eq!(natural.frames(), input.frames());
    assert_eq!(report.seconds_trimmed, None);
}

#[test]
fn silence_comes_through_with_notes() {
    let silence = AudioBuffer::new(16000, vec![vec![0.0; 32000]]);
    let (out, report) = run(silence.clone(), &EnhanceOptions::default());
    assert_eq!(out, silence);
    assert_eq!(report.notes.len(), 2, "{:?}", report.notes);
    assert!(report.notes[0].contains("no speech"));
    let empty = AudioBuffer::new(16000, vec![Vec::new()]);
    assert_eq!(run(empty.clone(), &EnhanceOptions::default()).0, empty);
}

#[test]
fn cancelling_stops_with_an_error() {
    let speech = speech_like(16000, 1.0, 3).audio;
    let result = enhance(speech, &EnhanceOptions::default(), &mut |f, _| f < 0.3);
    assert!(matches!(result, Err(ProcessError::Cancelled)));
}

#[test]
fn presets_serialize_and_fill_missing_fields() {
    let options: EnhanceOptions = serde_json::from_str(r#"{"denoise_strength": null}"#).unwrap();
    assert_eq!(options.denoise_strength, None);
    assert_eq!(
        options.loudness_lufs,
        Preset::Training.options().loudness_lufs
    );
    let natural: Preset = serde_json::from_str(r#""natural""#).unwrap();
    assert_eq!(natural, Preset::Natural);
}

/// The cover's remix limits a stream: blocks of any size give what the whole buffer gives.
#[test]
fn the_limiter_streamed_in_odd_blocks_equals_the_whole_buffer() {
    let rate = 44_100;
    let loud = |f: f32| -> Vec<f32> {
        (0..rate as usize / 2)
            .map(|i| 1.6 * (i as f32 * f).sin() * (i as f32 * 0.0003).sin())
            .collect()
    };
    let stereo = AudioBuffer::new(rate, vec![loud(0.05), loud(0.07)]);
    let mut whole = stereo.clone();
    let report = level::limit(&mut whole, -1.0, &mut |_| true).unwrap();
    assert!(report.peaks >= 1);
    let mut limiter = TruePeakLimiter::new(rate, 2, -1.0);
    let mut streamed = vec![Vec::new(), Vec::new()];
    for block in stereo.channels[0]
        .chunks(1_013)
        .zip(stereo.channels[1].chunks(1_013))
    {
        let out = limiter.push(&[block.0.to_vec(), block.1.to_vec()]);
        for (all, part) in streamed.iter_mut().zip(out) {
            all.extend(part);
        }
    }
    let (rest, streamed_report) = limiter.finish();
    for (all, part) in streamed.iter_mut().zip(rest) {
        all.extend(part);
    }
    assert_eq!(streamed, whole.channels);
    assert_eq!(streamed_report, report);
}
