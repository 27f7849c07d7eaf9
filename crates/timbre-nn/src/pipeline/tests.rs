//! The streamed pipeline against the whole-array one it replaced, with the small random-weight
//! models of the parity fixtures (`RVC_PARITY_DIR`, else `../shared/fixtures/rvc-parity`) and
//! the energy-conditioned voice of `tests/data/energy-parity`.

use tch::Device;

use super::render::synthesize_segment;
use super::*;
use crate::hubert::{FeatureVersion, Hubert};
use crate::index::IvfFlatIndex;
use crate::synthesizer::Synthesizer;
use timbre_test_support::{energy_parity_fixtures, rvc_parity_fixtures};

/// Nine seconds of a gliding tone with pauses, at 16 kHz.
fn input() -> Vec<f32> {
    (0..16_000 * 9)
        .map(|i| {
            let t = i as f32 / 16_000.0;
            let gate = if (t * 0.7).fract() < 0.8 { 1.0 } else { 0.02 };
            let hz = 180.0 + 40.0 * (t * 0.9).sin();
            gate * 0.4 * (std::f32::consts::TAU * hz * t).sin()
        })
        .collect()
}

/// What `render` computed before it streamed: every segment's output concatenated, then the RMS
/// mix, the resample and the peak-safe scaling over the whole array. An energy voice takes each
/// segment's span of the energy curve, as Vietnamese-RVC slices it like the pitch.
fn whole_array_render(
    analysis: &Analysis,
    audio: &[f32],
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
) -> Vec<f32> {
    let shifted = pitch::transpose(analysis.f0.as_ref().unwrap(), options.voice.transpose);
    let coarse = pitch::coarse(&shifted);
    let rate = model.info().sample_rate;
    let pad = options.chunking.pad_samples_at(rate);
    let mut out = Vec::new();
    for (i, segment) in analysis.segments.iter().enumerate() {
        let end = (segment.end / segments::WINDOW).min(coarse.len());
        let start = (segment.start / segments::WINDOW).min(end);
        let energy = model
            .info()
            .energy
            .then(|| &analysis.energy.as_ref().unwrap()[start..end]);
        let audio = synthesize_segment(
            &analysis.features(i).unwrap(),
            segment.end - segment.start,
            Some((&coarse[start..end], &shifted[start..end])),
            energy,
            model,
            index,
            options,
        )
        .unwrap();
        out.extend_from_slice(&audio[pad..audio.len() - pad]);
    }
    let filtered = timbre_audio::filter::rvc_highpass(audio);
    let mixed =
        timbre_audio::filter::change_rms(&filtered, 16_000, &out, rate, options.voice.rms_mix_rate);
    let buffer = timbre_audio::AudioBuffer::new(rate, vec![mixed]);
    let target = options.resample_rate.unwrap();
    let mut samples = timbre_audio::resample(&buffer, target).unwrap().channels[0].clone();
    let peak = samples.iter().fold(0f32, |m, s| m.max(s.abs())) / 0.99;
    if peak > 1.0 {
        samples.iter_mut().for_each(|s| *s /= peak);
    }
    samples
}

fn short_chunking_options() -> ConvertOptions {
    ConvertOptions {
        voice: crate::voice::VoiceParams {
            f0_method: F0Method::Yin,
            index_rate: 0.5,
            ..Default::default()
        },
        resample_rate: Some(44_100),
        chunking: Chunking {
            x_pad: 0.5,
            x_query: 1.0,
            x_center: 3.0,
            x_max: 4.0,
        },
        ..ConvertOptions::default()
    }
}

#[test]
fn a_multi_segment_render_streams_exactly_what_the_whole_array_pipeline_gave() {
    let dir = rvc_parity_fixtures();
    let hubert = Hubert::load(&dir.join("hubert_tiny/hubert_fairseq.pt"), Device::Cpu).unwrap();
    let model = Synthesizer::load(&dir.join("synth_v1_f0_40k/model.pth"), Device::Cpu).unwrap();
    let index =
        IvfFlatIndex::read(&dir.join("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index")).unwrap();
    let options = short_chunking_options();
    let audio = input();
    let tracker = PitchTracker::Yin;
    let none = &mut |_| Ok(());
    let analysis = analyze(
        audio.clone(),
        &hubert,
        FeatureVersion::V1,
        Some(&tracker),
        options.chunking,
        none,
    )
    .unwrap();
    assert!(analysis.segments.len() >= 3, "{:?}", analysis.segments);
    let expected = whole_array_render(&analysis, &audio, &model, Some(&index), &options);
    let streamed = render(&analysis, &model, Some(&index), &options, none).unwrap();
    assert_eq!(streamed.sample_rate, 44_100);
    assert_eq!(streamed.samples, expected);

    // Saved as it is computed and read back per segment, the analysis renders the same.
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("analysis.safetensors");
    let on_disk = analyze_to_file(
        audio.clone(),
        &hubert,
        FeatureVersion::V1,
        Some(&tracker),
        options.chunking,
        &path,
        none,
    )
    .unwrap();
    assert!(on_disk.memory_bytes() * 4 < analysis.memory_bytes());
    let from_disk = render(&on_disk, &model, Some(&index), &options, none).unwrap();
    assert_eq!(from_disk.samples, expected);
    let reloaded = Analysis::load(&path).unwrap();
    assert_eq!(reloaded.segments, analysis.segments);
    assert_eq!(reloaded.input_rms, analysis.input_rms);
    for i in 0..analysis.segments.len() {
        assert!(
            reloaded
                .features(i)
                .unwrap()
                .equal(&analysis.features(i).unwrap())
        );
    }
}

#[test]
fn an_energy_voice_takes_each_segments_frames_of_the_energy_curve() {
    let hubert_path = rvc_parity_fixtures().join("hubert_tiny/hubert_fairseq.pt");
    let hubert = Hubert::load(&hubert_path, Device::Cpu).unwrap();
    let voice = energy_parity_fixtures().join("energy_v1_40k/model.pth");
    let model = Synthesizer::load(&voice, Device::Cpu).unwrap();
    assert!(model.info().energy);
    let options = short_chunking_options();
    let audio = input();
    let none = &mut |_| Ok(());
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("analysis.safetensors");
    let (version, tracker) = (FeatureVersion::V1, PitchTracker::Yin);
    let analysis = analyze_to_file(
        audio.clone(),
        &hubert,
        version,
        Some(&tracker),
        options.chunking,
        &path,
        none,
    )
    .unwrap();
    assert!(analysis.segments.len() >= 3, "{:?}", analysis.segments);
    // Every analysis holds the curve the parity test checks against Vietnamese-RVC's.
    let curve = energy_curve(&audio, &options.chunking);
    assert_eq!(analysis.energy.as_ref(), Some(&curve));
    assert_eq!(curve.len(), analysis.f0.as_ref().unwrap().len());
    let expected = whole_array_render(&analysis, &audio, &model, None, &options);
    let streamed = render(&analysis, &model, None, &options, none).unwrap();
    assert_eq!(streamed.samples, expected);

    let mut flat = Analysis::load(&path).unwrap();
    flat.energy = Some(vec![0.1; curve.len()]);
    let other = render(&flat, &model, None, &options, none).unwrap();
    assert_ne!(other.samples, expected, "the energy must reach the voice");
    // An analysis saved before energy was part of it cannot serve an energy voice.
    flat.energy = None;
    let refused = render(&flat, &model, None, &options, none).err().unwrap();
    assert!(
        format!("{refused:#}").contains("analyse the input again"),
        "{refused:#}"
    );
}
