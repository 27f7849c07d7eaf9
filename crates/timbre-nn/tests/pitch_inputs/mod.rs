//! The inputs the pitch parity tests (crepe, fcpe) share, at 16 kHz: generated tones of known
//! pitch, and espeak-ng's speech.

use std::path::Path;

pub const RATE: u32 = 16_000;

pub fn tone(secs: f64, f0: impl Fn(f64) -> f64, noise_snr_db: Option<f64>) -> Vec<f32> {
    timbre_test_support::tone(RATE, secs, f0, noise_snr_db)
}

/// espeak-ng's voice saying `text`, resampled to 16 kHz.
pub fn speech(dir: &Path, text: &str) -> Vec<f32> {
    // Beside, not among, the inputs the reference reads.
    let folder = dir.join("espeak");
    std::fs::create_dir_all(&folder).unwrap();
    let wav = folder.join("speech.wav");
    timbre_test_support::espeak(&wav, text);
    let decoded = timbre_audio::decode_file(&wav, &Default::default()).unwrap();
    let resampled = timbre_audio::resample(&decoded.to_mono(), RATE).unwrap();
    resampled.channels.into_iter().next().unwrap()
}

/// What a pitch reference script wrote: the tensors of its `reference.safetensors` and what it
/// printed.
pub struct Reference {
    tensors: Vec<(String, tch::Tensor)>,
    /// The JSON the script printed (the weights it read).
    pub printed: serde_json::Value,
}

impl Reference {
    /// Writes `inputs` as 16 kHz float WAVs into `dir` and runs `tests/<script>` on them with
    /// `args` after the folder; panics when it fails.
    pub fn run(dir: &Path, inputs: &[(&str, Vec<f32>)], script: &str, args: &[String]) -> Self {
        for (input, audio) in inputs {
            let buffer = timbre_audio::AudioBuffer::new(RATE, vec![audio.clone()]);
            let wav = dir.join(format!("{input}.wav"));
            timbre_audio::write_wav(&wav, &buffer, timbre_audio::SampleFormat::Float32).unwrap();
        }
        let output = std::process::Command::new(timbre_test_support::reference_python())
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests")
                    .join(script),
            )
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "the reference failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Self {
            printed: serde_json::from_slice(&output.stdout).unwrap(),
            tensors: tch::Tensor::read_safetensors(dir.join("reference.safetensors")).unwrap(),
        }
    }

    /// The file the script says it read under `key`, checked to be `expected`.
    pub fn read_file(&self, key: &str, expected: &Path) -> std::path::PathBuf {
        let path = std::path::PathBuf::from(self.printed[key].as_str().unwrap());
        assert_eq!(
            path.canonicalize().unwrap(),
            expected.canonicalize().unwrap(),
            "the reference and this test read the same file"
        );
        path
    }

    /// The tensor `key`.
    pub fn get(&self, key: &str) -> tch::Tensor {
        self.tensors
            .iter()
            .find(|(n, _)| n == key)
            .map(|(_, t)| t.shallow_clone())
            .unwrap_or_else(|| panic!("{key} missing from the reference"))
    }
}
