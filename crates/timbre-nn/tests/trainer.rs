//! The whole training step on a tiny generator, on the CPU: the losses fall on a fixed batch,
//! a saved run resumes to the same state and continues identically, old checkpoints are pruned,
//! and the exported model converts. A test binary of its own, its tests one at a time: they
//! draw from libtorch's global generator, which tests on other threads would also draw from.
//! Data-parallel training over Gloo is tested in `data_parallel`.

#[path = "trainer/data_parallel.rs"]
mod data_parallel;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use tch::{Device, Kind, Tensor};

use timbre_nn::checkpoint::{Value, read_torch_file};
use timbre_nn::device::Precision;
use timbre_nn::synthesizer::{Noise, Synthesizer, SynthesizerConfig};
use timbre_nn::train::batch::Batch;
use timbre_nn::train::config::{TrainSection, TrainingConfig};
use timbre_nn::train::discriminator::DiscriminatorWidth;
use timbre_nn::train::spectrogram::SpectrogramConfig;
use timbre_nn::train::trainer::{Trainer, export_checkpoint, generator_checkpoint};

static SERIAL: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const RATE: u32 = 16000;
const HOP: i64 = 160;
const FRAMES: i64 = 50;

/// 100 frames a second as RVC's rates have, on tiny channels, the discriminator's too.
fn tiny_config() -> TrainingConfig {
    TrainingConfig {
        train: TrainSection {
            seed: 1234,
            learning_rate: 1e-3,
            betas: (0.8, 0.99),
            eps: 1e-9,
            batch_size: 2,
            lr_decay: 0.999875,
            segment_size: 8 * HOP,
            c_mel: 45.0,
            c_kl: 1.0,
        },
        data: SpectrogramConfig {
            sampling_rate: RATE,
            n_fft: 512,
            hop_length: HOP,
            win_length: 512,
            n_mel_channels: 40,
            mel_fmin: 0.0,
            mel_fmax: None,
        },
        model: SynthesizerConfig {
            spec_channels: 257,
            segment_size: 8,
            inter_channels: 8,
            hidden_channels: 8,
            filter_channels: 16,
            n_heads: 2,
            n_layers: 1,
            kernel_size: 3,
            p_dropout: 0.0,
            resblock: "1".into(),
            resblock_kernel_sizes: vec![3],
            resblock_dilation_sizes: vec![vec![1, 3, 5]],
            upsample_rates: vec![8, 20],
            upsample_initial_channel: 16,
            upsample_kernel_sizes: vec![16, 40],
            spk_embed_dim: 2,
            gin_channels: 8,
            sr: RATE,
        },
        discriminator_width: DiscriminatorWidth::divided_by(16).unwrap(),
        version: "v2".into(),
        embedder: timbre_nn::hubert::Embedder::Contentvec,
    }
}

/// Two half-second sawtooth "voices" at 150 and 220 Hz.
fn fixed_batch(config: &TrainingConfig) -> Batch {
    voices_batch(config, &[(150.0, FRAMES), (220.0, FRAMES)], 7)
}

/// Sawtooth voices `(hz, frames)` with features of their own, zero-padded to the longest as
/// RVC collates them. Nothing is drawn from libtorch's generator, whose state the step's noise
/// depends on.
fn voices_batch(config: &TrainingConfig, voices: &[(f64, i64)], seed: i64) -> Batch {
    let longest = voices.iter().map(|v| v.1).max().unwrap();
    let n = voices.len() as i64;
    let cpu = (Kind::Float, Device::Cpu);
    let time = Tensor::arange(longest * HOP, cpu) / f64::from(config.data.sampling_rate);
    let within = |frames: i64, per: i64| {
        Tensor::arange(longest * per, cpu)
            .lt(frames * per)
            .to_kind(Kind::Float)
    };
    let stack = |f: &dyn Fn(f64, i64) -> Tensor| {
        Tensor::stack(
            &voices
                .iter()
                .map(|&(hz, frames)| f(hz, frames))
                .collect::<Vec<_>>(),
            0,
        )
    };
    let wave = stack(&|hz, frames| ((&time * hz).frac() * 2.0 - 1.0) * 0.3 * within(frames, HOP));
    let frames_mask = stack(&|_, frames| within(frames, 1));
    let spectrograms = timbre_nn::train::spectrogram::Spectrograms::new(config.data, Device::Cpu);
    let spec = spectrograms.linear(&wave).narrow(2, 0, longest) * frames_mask.unsqueeze(1);
    let hz = stack(&|hz, frames| within(frames, 1) * hz);
    let pitch = ((hz.clamp_min(50.0).log() - 50f64.ln()) / (1100f64.ln() - 50f64.ln()) * 254.0
        + 1.0)
        .to_kind(Kind::Int64)
        * frames_mask.to_kind(Kind::Int64);
    let phone = (Tensor::arange(n * longest * 768, cpu).view([n, longest, 768]) * 0.618
        + seed as f64)
        .sin()
        * frames_mask.unsqueeze(2);
    let lengths = Tensor::from_slice(&voices.iter().map(|v| v.1).collect::<Vec<_>>());
    Batch {
        phone,
        phone_lengths: lengths.copy(),
        pitch: Some(pitch),
        pitchf: Some(hz),
        spec,
        spec_lengths: lengths.copy(),
        wave: wave.unsqueeze(1),
        wave_lengths: &lengths * HOP,
        sid: Tensor::arange(n, (Kind::Int64, Device::Cpu)),
    }
}

fn trainer() -> Trainer {
    Trainer::new(tiny_config(), true, Device::Cpu, Precision::Float32).unwrap()
}

#[test]
fn the_losses_fall_on_a_fixed_batch() {
    let _serial = one_at_a_time();
    let mut trainer = trainer();
    let batch = fixed_batch(trainer.config());
    batch.check().unwrap();
    let losses: Vec<_> = (0..30).map(|_| trainer.step(&batch).unwrap()).collect();
    let mean_mel = |range: std::ops::Range<usize>| {
        losses[range.clone()].iter().map(|l| l.mel).sum::<f64>() / range.len() as f64
    };
    // Measured: about 90 over the first five steps, 20 over the last five.
    let (first, last) = (mean_mel(0..5), mean_mel(25..30));
    assert!(
        last < 0.5 * first,
        "mel loss {first:.2} over the first 5 steps, {last:.2} over the last 5"
    );
    assert!(
        losses
            .iter()
            .all(|l| l.g_total.is_finite() && l.d_total.is_finite())
    );
    assert_eq!(trainer.global_step(), 30);
}

fn state_of(dir: &Path) -> Vec<(String, Tensor)> {
    let generator = timbre_nn::train::checkpoint::read_training_checkpoint(
        &std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("G_"))
            .unwrap(),
    )
    .unwrap();
    let mut names: Vec<String> = generator.model.names().map(str::to_string).collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let t = generator.model.get(&n).unwrap();
            (n, t)
        })
        .collect()
}

#[test]
fn a_resumed_run_continues_exactly_where_it_was_saved() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut original = trainer();
    let batch = fixed_batch(original.config());
    for _ in 0..3 {
        original.step(&batch).unwrap();
    }
    original.finish_epoch();
    original.save_checkpoint(dir.path(), 2).unwrap();

    let mut resumed = trainer();
    // The step count saved wins over RVC's epoch × steps per epoch.
    assert_eq!(resumed.resume(dir.path(), 100).unwrap(), Some(1));
    assert_eq!(resumed.epoch(), 1);
    assert_eq!(resumed.global_step(), original.global_step());
    assert_eq!(resumed.learning_rate(), original.learning_rate());

    tch::manual_seed(99);
    let next_original = original.step(&batch).unwrap();
    tch::manual_seed(99);
    let next_resumed = resumed.step(&batch).unwrap();
    assert_eq!(next_original, next_resumed);

    let again = tempfile::tempdir().unwrap();
    original.save_checkpoint(again.path(), 1).unwrap();
    let other = tempfile::tempdir().unwrap();
    resumed.save_checkpoint(other.path(), 1).unwrap();
    for ((name, a), (_, b)) in state_of(again.path()).iter().zip(state_of(other.path())) {
        assert!(a.equal(&b), "{name} differs after one more step");
    }
}

#[test]
fn only_the_newest_checkpoints_are_kept() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = trainer();
    let batch = fixed_batch(trainer.config());
    for _ in 0..3 {
        trainer.step(&batch).unwrap();
        trainer.finish_epoch();
        trainer.save_checkpoint(dir.path(), 2).unwrap();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["D_2.pth", "D_3.pth", "G_2.pth", "G_3.pth"]);
    // A lone G (a write cut off before its D) is not resumed from.
    std::fs::copy(dir.path().join("G_3.pth"), dir.path().join("G_9.pth")).unwrap();
    let mut resumed = Trainer::new(tiny_config(), true, Device::Cpu, Precision::Float32).unwrap();
    assert_eq!(resumed.resume(dir.path(), 1).unwrap(), Some(3));
    assert_eq!(resumed.global_step(), 3);
}

/// What a kill during a save leaves: `G_3.pth` written, `D_3.pth` half written under its
/// temporary name, beside the pair of step 2 (and a `D_` whose `G_` is gone). The run resumes
/// from step 2 and the leftovers are removed.
#[test]
fn a_save_cut_off_is_cleared_and_the_run_resumes_from_the_last_whole_pair() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let later = tempfile::tempdir().unwrap();
    let mut original = trainer();
    let batch = fixed_batch(original.config());
    for _ in 0..2 {
        original.step(&batch).unwrap();
    }
    original.finish_epoch();
    original.save_checkpoint(dir.path(), 5).unwrap();
    original.step(&batch).unwrap();
    original.save_checkpoint(later.path(), 5).unwrap();
    std::fs::copy(later.path().join("G_3.pth"), dir.path().join("G_3.pth")).unwrap();
    let discriminator = std::fs::read(later.path().join("D_3.pth")).unwrap();
    let cut_off = dir.path().join(".D_3.pth.4242.0.tmp");
    std::fs::write(&cut_off, &discriminator[..discriminator.len() / 2]).unwrap();
    std::fs::copy(later.path().join("D_3.pth"), dir.path().join("D_1.pth")).unwrap();

    let mut resumed = trainer();
    resumed.resume(dir.path(), 1).unwrap().unwrap();
    assert_eq!(resumed.global_step(), 2);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["D_2.pth", "G_2.pth"]);
}

#[test]
fn nothing_to_resume_and_a_checkpoint_of_another_model_are_told_apart() {
    let _serial = one_at_a_time();
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(trainer().resume(empty.path(), 5).unwrap(), None);

    let dir = tempfile::tempdir().unwrap();
    let mut nono = Trainer::new(tiny_config(), false, Device::Cpu, Precision::Float32).unwrap();
    nono.finish_epoch();
    nono.save_checkpoint(dir.path(), 1).unwrap();
    let err = trainer().resume(dir.path(), 5).unwrap_err();
    assert!(format!("{err:#}").contains("G_0.pth"), "{err:#}");
}

#[test]
fn the_exported_model_converts() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = trainer();
    let batch = fixed_batch(trainer.config());
    trainer.step(&batch).unwrap();
    trainer.finish_epoch();
    let path = dir.path().join("voice.pth");
    trainer.export(&path, "Alto").unwrap();
    let model = Synthesizer::load(&path, Device::Cpu).unwrap();
    assert_eq!(model.info().sample_rate, RATE);
    let audio = model
        .infer(
            &batch.phone.narrow(0, 0, 1),
            &Tensor::from_slice(&[FRAMES]),
            batch.pitch.as_ref().map(|p| p.narrow(0, 0, 1)).as_ref(),
            batch.pitchf.as_ref().map(|p| p.narrow(0, 0, 1)).as_ref(),
            0,
            Noise::None,
        )
        .unwrap();
    assert_eq!(audio.size(), [1, 1, FRAMES * HOP]);
}

#[test]
fn a_saved_generator_exports_as_the_trainer_does() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = trainer();
    let batch = fixed_batch(trainer.config());
    trainer.step(&batch).unwrap();
    trainer.finish_epoch();
    trainer.save_checkpoint(dir.path(), 2).unwrap();
    trainer.step(&batch).unwrap();
    trainer.save_checkpoint(dir.path(), 2).unwrap();
    let first = generator_checkpoint(dir.path(), Some(1)).unwrap();
    assert_eq!(
        generator_checkpoint(dir.path(), None).unwrap(),
        dir.path().join("G_2.pth")
    );
    let err = generator_checkpoint(dir.path(), Some(7)).unwrap_err();
    assert!(err.to_string().contains("[1, 2]"), "{err}");

    // The same file name: torch's archives are named after it.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let exported = a.path().join("voice.pth");
    export_checkpoint(
        trainer.config(),
        true,
        &dir.path().join("G_2.pth"),
        &exported,
        "Alto",
    )
    .unwrap();
    let direct = b.path().join("voice.pth");
    trainer.export(&direct, "Alto").unwrap();
    // The same model and entries; only the creation date is each export's own.
    let (exported, direct) = (
        read_torch_file(&exported).unwrap(),
        read_torch_file(&direct).unwrap(),
    );
    let entries = |root: &Value| -> Vec<(String, String)> {
        root.as_dict()
            .unwrap()
            .iter()
            .map(|(key, value)| (key.as_str().unwrap().to_string(), value))
            .filter(|(key, _)| key != "creation_date" && key != "weight")
            .map(|(key, value)| (key, format!("{value:?}")))
            .collect()
    };
    assert_eq!(entries(&exported), entries(&direct));
    assert_eq!(exported.get("step").and_then(Value::as_i64), Some(2));
    let (ours, theirs) = (exported.get("weight"), direct.get("weight"));
    let (ours, theirs) = (
        ours.and_then(Value::as_dict).unwrap(),
        theirs.and_then(Value::as_dict).unwrap(),
    );
    assert_eq!(ours.len(), theirs.len());
    for ((name, a), (_, b)) in ours.iter().zip(theirs) {
        assert!(
            a.as_tensor().unwrap().equal(b.as_tensor().unwrap()),
            "{name:?}"
        );
    }
    assert!(first.is_file());
}

#[test]
fn precisions_the_device_cannot_train_in_are_refused() {
    let _serial = one_at_a_time();
    for precision in [Precision::Float16, Precision::BFloat16] {
        let err = Trainer::new(tiny_config(), true, Device::Cpu, precision)
            .err()
            .unwrap();
        assert!(err.to_string().contains("fp32"), "{err}");
    }
}
