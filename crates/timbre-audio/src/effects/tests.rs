//! Each effect against its parameters.

use super::biquad::Coefficients;
use super::*;
use crate::signal::{sine, speech_like};

fn rms_db(samples: &[f32]) -> f64 {
    let power = samples.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / samples.len() as f64;
    10.0 * power.log10()
}

fn chain(effects: Vec<Effect>) -> EffectChain {
    EffectChain { effects }
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

#[test]
fn the_empty_chain_is_the_identity() {
    let original = speech_like(44_100, 1.0, 3).audio;
    let mut buffer = original.clone();
    EffectChain::default().apply(&mut buffer).unwrap();
    assert_eq!(buffer, original);
}

#[test]
fn gain_is_exact() {
    let original = speech_like(16_000, 0.5, 4).audio;
    let mut buffer = original.clone();
    chain(vec![Effect::Gain(Gain { db: -6.0 })])
        .apply(&mut buffer)
        .unwrap();
    let factor = 10f64.powf(-6.0 / 20.0) as f32;
    let expected: Vec<f32> = original.channels[0].iter().map(|x| x * factor).collect();
    assert_eq!(buffer.channels[0], expected);
    let mut unity = original.clone();
    chain(vec![Effect::Gain(Gain { db: 0.0 })])
        .apply(&mut unity)
        .unwrap();
    assert_eq!(unity, original);
}

#[test]
fn the_compressor_follows_its_static_curve() {
    let rate = 48_000;
    for (threshold_db, ratio, makeup_db) in
        [(-20.0, 4.0, 0.0), (-30.0, 2.0, 6.0), (-12.0, 10.0, 0.0)]
    {
        let p = Compressor {
            threshold_db,
            ratio,
            makeup_db,
            ..Compressor::default()
        };
        for input_db in [-40.0, -25.0, -15.0, -8.0, -4.0] {
            // A sine's RMS is its amplitude over √2.
            let amplitude = (db_to_gain(input_db) * 2f64.sqrt()) as f32;
            let mut buffer = sine(rate, 1_000.0, 1.0, amplitude);
            chain(vec![Effect::Compressor(p)])
                .apply(&mut buffer)
                .unwrap();
            let settled = &buffer.channels[0][rate as usize / 2..];
            let measured = rms_db(settled);
            let over = (input_db - threshold_db).max(0.0);
            let expected = input_db - over + over / ratio + makeup_db;
            assert!(
                (measured - expected).abs() < 0.25,
                "threshold {threshold_db}, ratio {ratio}: {input_db} dB in gave {measured:.2}, \
                 expected {expected:.2}"
            );
        }
    }
}

#[test]
fn peaking_eq_and_low_pass_match_their_analytic_responses() {
    let rate = 44_100;
    let cases = [
        Effect::PeakingEq(PeakingEq {
            frequency_hz: 1_000.0,
            gain_db: 9.0,
            q: 1.4,
        }),
        Effect::PeakingEq(PeakingEq {
            frequency_hz: 4_000.0,
            gain_db: -12.0,
            q: 0.7,
        }),
        Effect::LowPass(LowPass {
            cutoff_hz: 2_000.0,
            q: std::f64::consts::FRAC_1_SQRT_2,
        }),
    ];
    for effect in cases {
        let coefficients = match effect {
            Effect::PeakingEq(p) => Coefficients::peaking(p.frequency_hz, p.gain_db, p.q, 44_100.0),
            Effect::LowPass(p) => Coefficients::low_pass(p.cutoff_hz, p.q, 44_100.0),
            _ => unreachable!(),
        };
        for frequency in [100.0, 500.0, 1_000.0, 2_000.0, 4_000.0, 8_000.0, 15_000.0] {
            let mut buffer = sine(rate, frequency, 1.0, 0.25);
            let before = rms_db(&buffer.channels[0][rate as usize / 2..]);
            chain(vec![effect.clone()]).apply(&mut buffer).unwrap();
            let after = rms_db(&buffer.channels[0][rate as usize / 2..]);
            let expected = 20.0
                * coefficients
                    .magnitude(f64::from(frequency), 44_100.0)
                    .log10();
            assert!(
                (after - before - expected).abs() < 0.5,
                "{effect:?} at {frequency} Hz: {:.2} dB, expected {expected:.2}",
                after - before
            );
        }
    }
}

/// RT60 from the Schroeder backward integral of the impulse response, by a line fitted to the
/// decay between -5 and -25 dB (T20).
fn schroeder_rt60(response: &[f32], rate: u32) -> f64 {
    let mut remaining = 0.0;
    let mut curve: Vec<f64> = response
        .iter()
        .rev()
        .map(|&x| {
            remaining += f64::from(x).powi(2);
            remaining
        })
        .collect();
    curve.reverse();
    let total = curve[0];
    let points: Vec<(f64, f64)> = curve
        .iter()
        .enumerate()
        .map(|(i, e)| (i as f64 / f64::from(rate), 10.0 * (e / total).log10()))
        .filter(|(_, db)| (-25.0..=-5.0).contains(db))
        .collect();
    let n = points.len() as f64;
    let (mean_t, mean_db) = points
        .iter()
        .fold((0.0, 0.0), |(t, d), p| (t + p.0 / n, d + p.1 / n));
    let (covariance, variance) = points.iter().fold((0.0, 0.0), |(c, v), (t, db)| {
        (c + (t - mean_t) * (db - mean_db), v + (t - mean_t).powi(2))
    });
    -60.0 / (covariance / variance)
}

#[test]
fn the_reverb_decays_in_its_set_rt60() {
    for (rate, decay_seconds) in [(48_000, 0.6), (44_100, 1.5), (22_050, 3.0)] {
        let frames = (decay_seconds * 1.5 * f64::from(rate)) as usize;
        let mut impulse = vec![0.0f32; frames];
        impulse[0] = 1.0;
        let mut buffer = AudioBuffer::new(rate, vec![impulse.clone(), impulse]);
        let p = Reverb {
            decay_seconds,
            pre_delay_ms: 0.0,
            damping: 0.0,
            mix: 1.0,
        };
        chain(vec![Effect::Reverb(p)]).apply(&mut buffer).unwrap();
        assert_ne!(
            buffer.channels[0], buffer.channels[1],
            "channels decorrelate"
        );
        for channel in &buffer.channels {
            let rt60 = schroeder_rt60(channel, rate);
            let error = (rt60 / decay_seconds - 1.0).abs();
            assert!(
                error < 0.15,
                "set {decay_seconds} s at {rate} Hz, measured {rt60:.3} s"
            );
        }
    }
}

#[test]
fn the_limiter_never_passes_its_ceiling() {
    let mut buffer = speech_like(48_000, 2.0, 9).audio;
    let boost = Effect::Gain(Gain { db: 18.0 });
    for ceiling_db in [-1.0, -6.0] {
        let mut limited = buffer.clone();
        chain(vec![boost.clone(), Effect::Limiter(Limiter { ceiling_db })])
            .apply(&mut limited)
            .unwrap();
        let peak = true_peak_dbtp(&limited);
        assert!(peak <= ceiling_db, "ceiling {ceiling_db}: {peak:.3} dBTP");
        assert!(
            peak > ceiling_db - 1.0,
            "ceiling {ceiling_db}: {peak:.3} dBTP"
        );
    }
    chain(vec![boost]).apply(&mut buffer).unwrap();
    assert!(true_peak_dbtp(&buffer) > 0.0);
}

#[test]
fn the_de_esser_tames_sibilance_and_leaves_the_voice_band() {
    let rate = 48_000;
    let p = DeEsser {
        frequency_hz: 5_000.0,
        threshold_db: -30.0,
        ratio: 4.0,
    };
    let mut voice = sine(rate, 300.0, 1.0, 0.5);
    let before = rms_db(&voice.channels[0]);
    chain(vec![Effect::DeEsser(p)]).apply(&mut voice).unwrap();
    assert!((rms_db(&voice.channels[0]) - before).abs() < 0.1);
    let mut hiss = sine(rate, 9_000.0, 1.0, 0.3);
    let before = rms_db(&hiss.channels[0][24_000..]);
    chain(vec![Effect::DeEsser(p)]).apply(&mut hiss).unwrap();
    let reduced = before - rms_db(&hiss.channels[0][24_000..]);
    // About 0.75 of the ≈16 dB over the threshold (the split passes a little under it).
    assert!((8.0..14.0).contains(&reduced), "{reduced:.2} dB");
}

#[test]
fn every_effect_keeps_the_length_and_channels() {
    let original = AudioBuffer::new(
        48_000,
        vec![sine(48_000, 440.0, 0.5, 0.3).channels.remove(0); 3],
    );
    for name in Effect::NAMES {
        let mut buffer = original.clone();
        let effect = Effect::default_of(name).unwrap();
        let chain = chain(vec![effect]);
        chain.apply(&mut buffer).unwrap();
        assert_eq!(buffer.channels.len(), 3, "{name}");
        assert_eq!(buffer.frames(), original.frames(), "{name}");
        assert!(
            buffer.channels.iter().flatten().all(|x| x.is_finite()),
            "{name}"
        );
    }
}

#[test]
fn presets_round_trip_through_json() {
    let chain = chain(
        Effect::NAMES
            .iter()
            .map(|n| Effect::default_of(n).unwrap())
            .collect(),
    );
    assert_eq!(EffectChain::from_json(&chain.to_json()).unwrap(), chain);
    let sparse = EffectChain::from_json(r#"{"effects":[{"effect":"reverb","mix":0.5}]}"#).unwrap();
    assert_eq!(
        sparse.effects,
        [Effect::Reverb(Reverb {
            mix: 0.5,
            ..Reverb::default()
        })]
    );
}

#[test]
fn a_wrong_chain_names_the_effect_and_the_problem() {
    let err = |json: &str| EffectChain::from_json(json).unwrap_err().to_string();
    let unknown = err(r#"{"effects":[{"effect":"gain"},{"effect":"flanger"}]}"#);
    assert!(
        unknown.starts_with("effect 2 (flanger): unknown effect (known: gain,"),
        "{unknown}"
    );
    let misspelt = err(r#"{"effects":[{"effect":"compressor","ratoi":3}]}"#);
    assert!(
        misspelt.starts_with("effect 1 (compressor): unknown field `ratoi`"),
        "{misspelt}"
    );
    let range = err(r#"{"effects":[{"effect":"delay","feedback":1.5}]}"#);
    assert_eq!(
        range,
        "effect 1 (delay): feedback must be between 0 and 0.95, not 1.5"
    );
    let typed = err(r#"{"effects":[{"effect":"gain","db":"loud"}]}"#);
    assert!(
        typed.starts_with("effect 1 (gain): invalid type"),
        "{typed}"
    );
    assert!(err(r#"[1, 2]"#).starts_with("not an effects chain"));
    let mut low_rate = sine(8_000, 440.0, 0.1, 0.3);
    let original = low_rate.clone();
    let above_nyquist = chain(vec![
        Effect::Gain(Gain { db: 3.0 }),
        Effect::LowPass(LowPass {
            cutoff_hz: 6_000.0,
            ..LowPass::default()
        }),
    ]);
    let err = above_nyquist.apply(&mut low_rate).unwrap_err().to_string();
    assert_eq!(
        err,
        "effect 2 (low_pass): cutoff_hz 6000 must be below half the sample rate (4000 Hz)"
    );
    assert_eq!(low_rate, original, "nothing changed");
}

/// Every effect, each set to change the signal; the chorus sweeps deeper than its delay, so it
/// reads ahead.
fn every_effect() -> EffectChain {
    chain(vec![
        Effect::Gain(Gain { db: 6.0 }),
        Effect::HighPass(HighPass { cutoff_hz: 60.0 }),
        Effect::LowPass(LowPass {
            cutoff_hz: 9_000.0,
            q: 0.9,
        }),
        Effect::PeakingEq(PeakingEq {
            frequency_hz: 2_500.0,
            gain_db: 4.0,
            q: 1.2,
        }),
        Effect::Compressor(Compressor {
            threshold_db: -24.0,
            ratio: 4.0,
            knee_db: 6.0,
            attack_ms: 5.0,
            release_ms: 80.0,
            makeup_db: 4.0,
        }),
        Effect::DeEsser(DeEsser {
            frequency_hz: 5_000.0,
            threshold_db: -40.0,
            ratio: 6.0,
        }),
        Effect::Delay(Delay {
            time_ms: 180.0,
            feedback: 0.4,
            mix: 0.3,
        }),
        Effect::Chorus(Chorus {
            rate_hz: 1.5,
            depth_ms: 6.0,
            delay_ms: 4.0,
            mix: 0.4,
        }),
        Effect::Reverb(Reverb {
            decay_seconds: 1.2,
            pre_delay_ms: 25.0,
            damping: 0.4,
            mix: 0.3,
        }),
        Effect::Limiter(Limiter { ceiling_db: -3.0 }),
    ])
}

fn stereo_speech(rate: u32, seconds: f64) -> AudioBuffer {
    let left = speech_like(rate, seconds, 31).audio.channels.remove(0);
    let right = speech_like(rate, seconds, 32).audio.channels.remove(0);
    AudioBuffer::new(rate, vec![left, right])
}

fn frames(channels: &[Vec<f32>], range: std::ops::Range<usize>) -> Vec<Vec<f32>> {
    channels.iter().map(|c| c[range.clone()].to_vec()).collect()
}

#[test]
fn streaming_in_any_blocks_gives_what_apply_gives() {
    let input = stereo_speech(44_100, 5.0);
    let chain = every_effect();
    let mut whole = input.clone();
    chain.apply(&mut whole).unwrap();
    let mut stream = chain.stream(44_100, 2).unwrap();
    let mut streamed = vec![Vec::new(); 2];
    let mut start = 0;
    for size in [1, 7, 333, 4_096, 65_536, 0].into_iter().cycle() {
        if start == input.frames() {
            break;
        }
        let end = (start + size).min(input.frames());
        let out = stream.push(frames(&input.channels, start..end));
        assert!(out.iter().all(|c| c.len() == out[0].len()));
        streamed.iter_mut().zip(out).for_each(|(s, o)| s.extend(o));
        start = end;
    }
    streamed
        .iter_mut()
        .zip(stream.finish())
        .for_each(|(s, o)| s.extend(o));
    assert_eq!(streamed[0].len(), input.frames());
    assert_eq!(streamed, whole.channels);
    assert_ne!(whole, input);
}

#[test]
fn the_stream_holds_as_much_after_half_a_minute_as_after_seconds() {
    let rate = 44_100;
    let source = stereo_speech(rate, 5.0);
    let chain = every_effect();
    let held_after = |seconds: usize| {
        let mut stream = chain.stream(rate, 2).unwrap();
        let total = seconds * rate as usize;
        for start in (0..total).step_by(4_096) {
            let at = start % (source.frames() - 4_096);
            stream.push(frames(&source.channels, at..at + 4_096.min(total - start)));
        }
        stream.held_samples()
    };
    let short = held_after(5);
    assert_eq!(held_after(30), short);
    assert!(short < 5 * rate as usize, "{short} samples held");
}
