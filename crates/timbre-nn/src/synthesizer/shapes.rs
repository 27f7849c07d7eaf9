//! Sizes read from the weights of a model file, with errors that name the file and the layer.

use anyhow::{Result, bail};

use crate::weights::Weights;

/// The shape of tensor `name`, which must have `rank` dimensions.
pub(crate) fn tensor_shape(w: &Weights, name: &str, rank: usize) -> Result<Vec<i64>> {
    let shape = w.shape(name)?;
    if shape.len() != rank {
        bail!(
            "{}: tensor `{name}` has shape {shape:?}, expected {rank} dimensions",
            w.source().display()
        );
    }
    Ok(shape)
}

/// The shape of the weight of layer `prefix` (plain or weight-normalised), of `rank` dimensions.
pub(crate) fn weight_shape(w: &Weights, prefix: &str, rank: usize) -> Result<Vec<i64>> {
    let shape = w.weight_shape(prefix)?;
    if shape.len() != rank {
        bail!(
            "{}: `{prefix}` has a weight of shape {shape:?}, expected {rank} dimensions",
            w.source().display()
        );
    }
    Ok(shape)
}

/// Fails unless layer `prefix` has a weight of shape `expected` and, if it has a bias, one of
/// `bias_size` values.
pub(crate) fn check_layer(
    w: &Weights,
    prefix: &str,
    expected: &[i64],
    bias_size: i64,
) -> Result<()> {
    let shape = w.weight_shape(prefix)?;
    if shape != expected {
        bail!(
            "{}: `{prefix}` has a weight of shape {shape:?}, expected {expected:?}",
            w.source().display()
        );
    }
    let bias = format!("{prefix}.bias");
    if w.contains(&bias) {
        w.get_shaped(&bias, &[bias_size]).map(drop)?;
    }
    Ok(())
}

/// Fails unless convolution `prefix` has a weight of shape `expected` (`[out, in, kernel]`).
pub(crate) fn check_weight(w: &Weights, prefix: &str, expected: &[i64]) -> Result<()> {
    check_layer(w, prefix, expected, expected[0])
}

/// The indices `i` of the layers `prefix.i.*` present in `w`, ascending.
pub(crate) fn layer_indices(w: &Weights, prefix: &str) -> Vec<usize> {
    let dotted = format!("{prefix}.");
    let mut indices: Vec<usize> = w
        .names()
        .filter_map(|name| name.strip_prefix(&dotted)?.split('.').next()?.parse().ok())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// The number of layers `prefix.0.*` … `prefix.{n-1}.*`, which must be contiguous.
pub(crate) fn layer_count(w: &Weights, prefix: &str) -> Result<usize> {
    let indices = layer_indices(w, prefix);
    if indices.iter().enumerate().any(|(i, &index)| i != index) {
        bail!(
            "{}: the layers `{prefix}.N` are numbered {indices:?}, not 0, 1, 2, …",
            w.source().display()
        );
    }
    Ok(indices.len())
}
