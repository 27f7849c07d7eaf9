//! How far our output is from the reference's.

use tch::{Kind, Tensor};

/// The largest absolute difference; shapes must match.
pub fn max_abs(ours: &Tensor, reference: &Tensor) -> anyhow::Result<f64> {
    same_shape(ours, reference)?;
    Ok((on_cpu(ours) - on_cpu(reference))
        .abs()
        .max()
        .double_value(&[]))
}

/// Signal-to-noise ratio of ours against the reference, in dB.
pub fn snr_db(ours: &Tensor, reference: &Tensor) -> anyhow::Result<f64> {
    same_shape(ours, reference)?;
    let reference = on_cpu(reference);
    let noise = on_cpu(ours) - &reference;
    let signal_power = reference.square().sum(Kind::Double).double_value(&[]);
    let noise_power = noise.square().sum(Kind::Double).double_value(&[]);
    Ok(10.0 * (signal_power / noise_power.max(1e-30)).log10())
}

/// Ours may come from a GPU; the comparison is in float64 on the CPU.
pub fn on_cpu(t: &Tensor) -> Tensor {
    t.to_device(tch::Device::Cpu).to_kind(Kind::Double)
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
