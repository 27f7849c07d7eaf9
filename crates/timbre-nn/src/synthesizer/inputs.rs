//! The inputs a synthesizer call is given, checked against the model before anything runs:
//! RVC's `infer(phone, phone_lengths, pitch, nsff0, sid)` and Vietnamese-RVC's energy after them.

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::Synthesizer;

impl Synthesizer {
    /// The inputs of `infer` and training on the model's device, checked against the model:
    /// feature width, lengths, and pitch for a pitch model (pitch given to a model without is
    /// dropped). No energy: [`Synthesizer::checked_energy`] adds it.
    pub(super) fn checked_inputs(
        &self,
        phone: &Tensor,
        phone_lengths: &Tensor,
        pitch: Option<&Tensor>,
        pitchf: Option<&Tensor>,
    ) -> Result<Inputs> {
        let info = &self.info;
        let shape = phone.size();
        if shape.len() != 3 {
            bail!(
                "phone features must be [batch, frames, {}]; got shape {shape:?}",
                info.feature_dim
            );
        }
        let (batch, frames) = (shape[0], shape[1]);
        if shape[2] != info.feature_dim {
            bail!(
                "this is a {} model ({}-d features); the features given are {}-d",
                info.version,
                info.feature_dim,
                shape[2]
            );
        }
        if batch == 0 || frames == 0 {
            bail!("phone features of shape {shape:?} hold no frames");
        }
        let lengths = phone_lengths
            .to_device(self.device)
            .to_kind(Kind::Int64)
            .reshape([-1]);
        if lengths.size() != [batch] {
            bail!(
                "phone_lengths must hold one length per batch item ({batch}); got shape {:?}",
                phone_lengths.size()
            );
        }
        let (shortest, longest) = (
            lengths.min().int64_value(&[]),
            lengths.max().int64_value(&[]),
        );
        if shortest < 0 || longest > frames {
            bail!("phone_lengths must lie in 0..={frames}; got {shortest}..={longest}");
        }
        let phone = phone.to_device(self.device).to_kind(Kind::Float);
        if !bool::try_from(phone.isfinite().all())? {
            bail!("the phone features contain NaN or infinite values");
        }
        let (pitch, pitchf) = match self.enc_p.pitch_classes() {
            None => (None, None),
            Some(classes) => {
                let (Some(pitch), Some(pitchf)) = (pitch, pitchf) else {
                    bail!(
                        "this model is driven by pitch: give both the coarse pitch and the f0 in Hz"
                    );
                };
                for (name, tensor) in [("pitch", pitch), ("pitchf", pitchf)] {
                    if tensor.size() != [batch, frames] {
                        bail!(
                            "{name} must be [{batch}, {frames}] like the features; got shape {:?}",
                            tensor.size()
                        );
                    }
                }
                let pitch = pitch.to_device(self.device).to_kind(Kind::Int64);
                let (lowest, highest) =
                    (pitch.min().int64_value(&[]), pitch.max().int64_value(&[]));
                if lowest < 0 || highest >= classes {
                    bail!("coarse pitch must lie in 0..{classes}; got {lowest}..={highest}");
                }
                let pitchf = pitchf.to_device(self.device).to_kind(Kind::Float);
                if !bool::try_from(pitchf.isfinite().all())? {
                    bail!("the f0 contains NaN or infinite values");
                }
                (Some(pitch), Some(pitchf))
            }
        };
        Ok(Inputs {
            phone,
            lengths,
            pitch,
            pitchf,
            energy: None,
        })
    }

    /// The energy for checked `inputs`, on the model's device, for an energy-conditioned model;
    /// None for the others, whatever was given.
    pub(super) fn checked_energy(
        &self,
        energy: Option<&Tensor>,
        inputs: &Inputs,
    ) -> Result<Option<Tensor>> {
        let shape = inputs.phone.size();
        let (batch, frames) = (shape[0], shape[1]);
        Ok(match (self.enc_p.takes_energy(), energy) {
            (false, _) => None,
            (true, None) => {
                bail!("this model is conditioned on energy (Vietnamese-RVC): give each frame's RMS")
            }
            (true, Some(energy)) => {
                if energy.size() != [batch, frames] {
                    bail!(
                        "energy must be [{batch}, {frames}] like the features; got shape {:?}",
                        energy.size()
                    );
                }
                let energy = energy.to_device(self.device).to_kind(Kind::Float);
                if !bool::try_from(energy.isfinite().all())? {
                    bail!("the energy contains NaN or infinite values");
                }
                Some(energy)
            }
        })
    }
}

/// What the model runs on, checked and on its device.
pub(super) struct Inputs {
    /// Content features `[batch, frames, feature_dim]`.
    pub phone: Tensor,
    /// Valid frames per batch item `[batch]`.
    pub lengths: Tensor,
    /// Coarse pitch classes `[batch, frames]`, for a pitch model.
    pub pitch: Option<Tensor>,
    /// f0 in Hz `[batch, frames]`, for a pitch model.
    pub pitchf: Option<Tensor>,
    /// Each frame's RMS `[batch, frames]`, for an energy-conditioned model.
    pub energy: Option<Tensor>,
}
