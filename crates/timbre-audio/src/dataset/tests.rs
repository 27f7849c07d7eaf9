use super::parity_tests::{Rng, burst, gap, speech_with_pauses};
use super::*;

const SR: u32 = 40_000;

fn kinds(report: &DatasetReport) -> Vec<WarningKind> {
    report.warnings.iter().map(|w| w.kind).collect()
}

fn quick() -> PrepareConfig {
    PrepareConfig {
        pitch: false,
        ..PrepareConfig::default()
    }
}

#[test]
fn slicer_converts_its_settings_like_the_reference() {
    let at_40k = Slicer::new(SR, &SlicerConfig::default()).unwrap();
    assert_eq!(at_40k.hop_size(), 600);
    // 44.1 kHz · 15 ms = 661.5 samples: Python's round goes to the even 662.
    assert_eq!(
        Slicer::new(44_100, &SlicerConfig::default())
            .unwrap()
            .hop_size(),
        662
    );
    assert!((at_40k.threshold() - 10f64.powf(-2.1)).abs() < 1e-15);
    let bad = [
        SlicerConfig {
            min_interval_ms: 2000,
            ..SlicerConfig::default()
        },
        SlicerConfig {
            max_sil_kept_ms: 10,
            ..SlicerConfig::default()
        },
        SlicerConfig {
            threshold_db: f64::NAN,
            ..SlicerConfig::default()
        },
    ];
    for cfg in bad {
        assert!(Slicer::new(SR, &cfg).is_err(), "{cfg:?}");
    }
    assert!(Slicer::new(10, &SlicerConfig::default()).is_err());
}

#[test]
fn short_audio_and_unbroken_audio_come_back_whole() {
    let slicer = Slicer::new(SR, &SlicerConfig::default()).unwrap();
    // The reference compares the sample count with min_length in frames (100 at 40 kHz).
    assert_eq!(slicer.slice(&[0.0f32; 100]), vec![0..100]);
    assert_eq!(slicer.slice::<f32>(&[]), vec![0..0]);
    let voiced = burst(SR, 3.0, 150.0, 0.5, &mut Rng::new(1));
    assert_eq!(slicer.slice(&voiced), vec![0..voiced.len()]);
}

#[test]
fn silences_are_cut_and_the_long_slice_pieced() {
    let audio = speech_with_pauses(SR, 1);
    let slicer = Slicer::new(SR, &SlicerConfig::default()).unwrap();
    let slices = slicer.slice(&audio);
    assert!(slices.len() >= 5, "{slices:?}");
    assert!(slices.windows(2).all(|w| w[0].end <= w[1].start));
    let longest = slices.iter().map(|s| s.len()).max().unwrap();
    assert!(longest > 9 * SR as usize, "{slices:?}");
    let prepared = prepare_dataset(&[("a", &audio, SR)], SR, &quick()).unwrap();
    let report = &prepared.report;
    assert!(report.pieces > slices.len(), "{report:?}");
    assert!(
        report.silence_ratio > 0.05 && report.silence_ratio < 0.5,
        "{report:?}"
    );
    assert!((report.input_seconds - audio.len() as f64 / 40_000.0).abs() < 1e-9);
    for (i, piece) in prepared.pieces.iter().enumerate() {
        assert_eq!((piece.source, piece.index), (0, i));
        let peak = piece
            .audio_target_sr
            .iter()
            .fold(0.0f32, |m, x| m.max(x.abs()));
        // 0.675 + 0.25 · the piece's own peak (about 0.5 here).
        assert!((0.75..0.85).contains(&peak), "{peak}");
        let expected = (piece.audio_target_sr.len() * 16_000).div_ceil(40_000);
        assert_eq!(piece.audio_16k.len(), expected);
    }
}

#[test]
fn silence_only_gives_no_pieces_and_says_so() {
    let zeros = vec![0.0f32; 3 * SR as usize];
    let hiss = gap(SR, 3.0, 1e-3, &mut Rng::new(2));
    for audio in [&zeros, &hiss] {
        let report = prepare_dataset(&[("quiet", audio, SR)], SR, &quick())
            .unwrap()
            .report;
        let kinds = kinds(&report);
        assert!(kinds.contains(&WarningKind::SilenceOnly), "{report:?}");
        assert!(kinds.contains(&WarningKind::TooLittleAudio), "{report:?}");
        assert!(!kinds.contains(&WarningKind::Noisy), "{report:?}");
        assert_eq!(report.files[0].active_seconds, 0.0);
    }
    let report = prepare_dataset(&[("zeros", &zeros, SR)], SR, &quick())
        .unwrap()
        .report;
    assert_eq!((report.pieces, report.files[0].slices), (0, 0));
    assert_eq!(report.silence_ratio, 1.0);
}

#[test]
fn clipping_and_loud_pieces_are_counted() {
    let mut audio = burst(SR, 3.0, 150.0, 1.3, &mut Rng::new(3));
    audio.iter_mut().for_each(|x| *x = x.clamp(-1.0, 1.0));
    let report = prepare_dataset(&[("hot", &audio, SR)], SR, &quick())
        .unwrap()
        .report;
    assert!(report.clipping_ratio > MAX_CLIPPING_RATIO, "{report:?}");
    assert!(kinds(&report).contains(&WarningKind::Clipped));
    assert_eq!(report.filtered, 0);

    let loud = burst(SR, 3.0, 150.0, 3.0, &mut Rng::new(3));
    let report = prepare_dataset(&[("loud", &loud, SR)], SR, &quick())
        .unwrap()
        .report;
    assert_eq!((report.pieces, report.filtered), (0, 1));

    let clean = burst(SR, 3.0, 150.0, 0.5, &mut Rng::new(3));
    let report = prepare_dataset(&[("clean", &clean, SR)], SR, &quick())
        .unwrap()
        .report;
    assert_eq!(report.clipping_ratio, 0.0);
    assert!(!kinds(&report).contains(&WarningKind::Clipped));
}

#[test]
fn report_measures_pitch_and_noise() {
    let audio = speech_with_pauses(SR, 4);
    let prepared =
        prepare_dataset(&[("clean", &audio, SR)], SR, &PrepareConfig::default()).unwrap();
    let report = &prepared.report;
    let pitch = report.pitch.expect("voiced frames");
    // The bursts' f0 spans 110–200 Hz with ±3% vibrato.
    assert!(pitch.low_hz > 100.0 && pitch.low_hz < 125.0, "{pitch:?}");
    assert!(pitch.high_hz > 185.0 && pitch.high_hz < 210.0, "{pitch:?}");
    assert!(report.snr_db.unwrap() > 30.0, "{report:?}");
    assert!(report.speech_band_ratio.unwrap() > 0.9, "{report:?}");
    assert_eq!(kinds(report), vec![WarningKind::TooLittleAudio]);
    let message = &report.warnings[0].message;
    let seconds = format!("too little audio: {:.0} s;", report.kept_seconds);
    assert!(message.starts_with(&seconds), "{message}");
    assert!(message.contains("at least ~10 minutes"), "{message}");

    let mut rng = Rng::new(9);
    let noisy: Vec<f32> = audio
        .iter()
        .map(|&x| x + (0.1 * rng.next()) as f32)
        .collect();
    let report = prepare_dataset(&[("noisy", &noisy, SR)], SR, &quick())
        .unwrap()
        .report;
    assert!(kinds(&report).contains(&WarningKind::Noisy), "{report:?}");
}

#[test]
fn files_are_numbered_resampled_and_reported_in_order() {
    let a = burst(SR, 2.0, 150.0, 0.5, &mut Rng::new(1));
    let b = burst(44_100, 5.0, 150.0, 0.5, &mut Rng::new(2));
    let prepared = prepare_dataset(&[("a", &a, SR), ("b", &b, 44_100)], SR, &quick()).unwrap();
    let ids: Vec<(usize, usize)> = prepared
        .pieces
        .iter()
        .map(|p| (p.source, p.index))
        .collect();
    assert_eq!(ids, vec![(0, 0), (1, 0), (1, 1)]);
    let report = &prepared.report;
    assert_eq!(report.files[1].name, "b");
    assert!((report.files[1].input_seconds - 5.0).abs() < 1e-9);
    // 5 s at 40 kHz: a 3.7 s piece and the 1.6 s from 3.4 s on.
    let lengths: Vec<usize> = prepared.pieces[1..]
        .iter()
        .map(|p| p.audio_target_sr.len())
        .collect();
    assert_eq!(lengths, vec![148_000, 64_000]);
    assert!(
        (report.kept_seconds - (2.0 + 3.7 + 1.6)).abs() < 1e-9,
        "{report:?}"
    );

    let json = serde_json::to_value(report).unwrap();
    assert_eq!(json["warnings"][0]["kind"], "too_little_audio");
    assert_eq!(json["files"][0]["pieces"], 1);
    let back: DatasetReport = serde_json::from_value(json).unwrap();
    assert_eq!(&back, report);
}

#[test]
fn preparer_refuses_unusable_settings() {
    assert!(DatasetPreparer::new(90, &PrepareConfig::default()).is_err());
    let overlapping = PrepareConfig {
        per: 0.3,
        ..PrepareConfig::default()
    };
    assert!(DatasetPreparer::new(SR, &overlapping).is_err());
    let mut preparer = DatasetPreparer::new(SR, &quick()).unwrap();
    assert!(preparer.add_file("zero rate", &[0.1; 100], 0).is_err());
    let empty = preparer.add_file("empty", &[], SR).unwrap();
    assert!(empty.is_empty());
    let report = preparer.finish();
    assert_eq!(report.files.len(), 1);
    assert_eq!(report.silent_pieces, 1);
}
