//! How far our output is from the reference's.

use tch::{Kind, Tensor};

/// The largest absolute difference; shapes must match.
pub fn max_abs(ours: &Tensor, reference: &Tensor) -> anyhow::Result<f64> {
    same_shape(ours, reference)?;
    Ok(
        (ours.to_kind(Kind::Double) - reference.to_kind(Kind::Double))
            .abs()
            .max()
            .double_value(&[]),
    )
}

/// Signal-to-noise ratio of ours against the reference, in dB.
pub fn snr_db(ours: &Tensor, reference: &Tensor) -> anyhow::Result<f64> {
    same_shape(ours, reference)?;
    let reference = reference.to_kind(Kind::Double);
    let noise = ours.to_kind(Kind::Double) - &reference;
    let signal_power = reference.square().sum(Kind::Double).double_value(&[]);
    let noise_power = noise.square().sum(Kind::Double).double_value(&[]);
    Ok(10.0 * (signal_power / noise_power.max(1e-30)).log10())
}

fn same_shape(ours: &Tensor, reference: &Tensor) -> anyhow::Result<()> {
    anyhow::ensure!(
        ours.size() == reference.size(),
        "shape {:?}, reference {:?}",
        ours.size(),
        reference.size()
    );
    Ok(())
}
