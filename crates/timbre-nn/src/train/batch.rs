//! One training batch as RVC's `TextAudioCollateMultiNSFsid` (and `TextAudioCollate` without
//! pitch) returns it: items sorted by spectrogram length, longest first, each padded with zeros
//! to the longest.

use anyhow::{Result, ensure};
use tch::{Device, Tensor};

/// One collated training batch on the CPU or a device, longest item first.
pub struct Batch {
    /// `[batch, frames, feature_dim]` f32: HuBERT features repeated to 100 frames a second.
    pub phone: Tensor,
    /// `[batch]` i64.
    pub phone_lengths: Tensor,
    /// `[batch, frames]` i64 coarse pitch, for models with pitch.
    pub pitch: Option<Tensor>,
    /// `[batch, frames]` f32 pitch in Hz, for models with pitch.
    pub pitchf: Option<Tensor>,
    /// `[batch, n_fft / 2 + 1, frames]` f32 linear spectrogram of the target audio.
    pub spec: Tensor,
    /// `[batch]` i64.
    pub spec_lengths: Tensor,
    /// `[batch, 1, samples]` f32 target audio at the model rate, in [-1, 1].
    pub wave: Tensor,
    /// `[batch]` i64.
    pub wave_lengths: Tensor,
    /// `[batch]` i64 speaker ids.
    pub sid: Tensor,
}

impl Batch {
    /// Number of items in the batch.
    pub fn size(&self) -> i64 {
        self.phone.size()[0]
    }

    /// The same batch on `device` (pinned-memory-free copies; producers build on the CPU).
    pub fn to_device(&self, device: Device) -> Batch {
        let to = |t: &Tensor| t.to_device(device);
        Batch {
            phone: to(&self.phone),
            phone_lengths: to(&self.phone_lengths),
            pitch: self.pitch.as_ref().map(to),
            pitchf: self.pitchf.as_ref().map(to),
            spec: to(&self.spec),
            spec_lengths: to(&self.spec_lengths),
            wave: to(&self.wave),
            wave_lengths: to(&self.wave_lengths),
            sid: to(&self.sid),
        }
    }

    /// The same items zero-padded to `phone_frames` feature frames, `spec_frames` spectrogram
    /// frames and `wave_samples` samples (none shorter than the batch's own), as if collated
    /// beside longer items.
    pub fn padded_to(&self, phone_frames: i64, spec_frames: i64, wave_samples: i64) -> Batch {
        let pad = |t: &Tensor, dim: usize, length: i64| {
            let mut shape = t.size();
            let missing = length - shape[dim];
            assert!(missing >= 0, "padding never shortens a batch");
            if missing == 0 {
                return t.shallow_clone();
            }
            shape[dim] = missing;
            let zeros = Tensor::zeros(&shape, (t.kind(), t.device()));
            Tensor::cat(&[t.shallow_clone(), zeros], dim as i64)
        };
        Batch {
            phone: pad(&self.phone, 1, phone_frames),
            phone_lengths: self.phone_lengths.shallow_clone(),
            pitch: self.pitch.as_ref().map(|t| pad(t, 1, phone_frames)),
            pitchf: self.pitchf.as_ref().map(|t| pad(t, 1, phone_frames)),
            spec: pad(&self.spec, 2, spec_frames),
            spec_lengths: self.spec_lengths.shallow_clone(),
            wave: pad(&self.wave, 2, wave_samples),
            wave_lengths: self.wave_lengths.shallow_clone(),
            sid: self.sid.shallow_clone(),
        }
    }

    /// Shapes agree with one another (a producer's bug shows here, not deep in a forward).
    pub fn check(&self) -> Result<()> {
        let b = self.size();
        for (name, t) in [
            ("phone_lengths", &self.phone_lengths),
            ("spec_lengths", &self.spec_lengths),
            ("wave_lengths", &self.wave_lengths),
            ("sid", &self.sid),
        ] {
            ensure!(
                t.size() == [b],
                "batch {name} has shape {:?}, expected [{b}]",
                t.size()
            );
        }
        let frames = self.phone.size()[1];
        for (name, t) in [("pitch", &self.pitch), ("pitchf", &self.pitchf)] {
            if let Some(t) = t {
                ensure!(
                    t.size() == [b, frames],
                    "batch {name} has shape {:?}, expected [{b}, {frames}]",
                    t.size()
                );
            }
        }
        ensure!(
            self.spec.size()[0] == b && self.wave.size()[0] == b && self.wave.size()[1] == 1,
            "batch spec {:?} / wave {:?} do not hold {b} items",
            self.spec.size(),
            self.wave.size()
        );
        Ok(())
    }
}
