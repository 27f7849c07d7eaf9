//! `index` cases: our IVF-Flat reader, search and RVC blend against faiss's own results, and the
//! writer's round trip of the file.

use anyhow::{Context, Result, ensure};
use serde_json::Value as Json;
use tch::{Kind, Tensor};
use timbre_nn::index::{IvfFlatIndex, SearchMode};

use super::Case;
use super::compare::max_abs;

fn count(case: &Case, key: &str) -> Result<usize> {
    let value = case.json[key]
        .as_u64()
        .with_context(|| format!("case {}: `{key}` is missing", case.name()))?;
    Ok(usize::try_from(value)?)
}

fn floats(tensor: &Tensor) -> Result<Vec<f32>> {
    Ok(Vec::<f32>::try_from(
        &tensor.to_kind(Kind::Float).contiguous().view([-1]),
    )?)
}

pub fn check(case: &Case, _manifest: &Json) -> Result<String> {
    let path = case.path("index")?;
    let k = count(case, "k")?;
    let nprobe = count(case, "nprobe")?;
    let index_rate = case.json["index_rate"]
        .as_f64()
        .with_context(|| format!("case {}: `index_rate` is missing", case.name()))?;
    let tolerance = case.tolerance("max_abs")?;
    let io = case.io()?;
    let query = io.get("query")?;
    let &[rows, dim] = query.size().as_slice() else {
        anyhow::bail!("`query` has shape {:?}, expected [rows, dim]", query.size());
    };
    let queries = floats(&query)?;
    let index = IvfFlatIndex::read(&path)?;
    let dim = usize::try_from(dim)?;

    let (distances, ids) = index.search(&queries, dim, k, nprobe)?;
    let reference_ids = Vec::<i64>::try_from(&io.get("ids")?.contiguous().view([-1]))?;
    ensure!(
        reference_ids.len() == ids.len(),
        "{} ids, faiss has {}",
        ids.len(),
        reference_ids.len()
    );
    let equal_ids = ids
        .iter()
        .zip(&reference_ids)
        .filter(|(a, b)| a == b)
        .count();
    ensure!(
        equal_ids == ids.len(),
        "ids: {equal_ids}/{} equal to faiss's",
        ids.len()
    );
    let shape = [rows, i64::try_from(k)?];
    let distance_error = max_abs(
        &Tensor::from_slice(&distances).view(shape),
        &io.get("distances")?,
    )?;
    ensure!(
        distance_error <= tolerance,
        "distances max_abs {distance_error:.2e} > {tolerance:.0e}"
    );

    let blended = index.blend(
        &queries,
        dim,
        index_rate as f32,
        k,
        SearchMode::Probe { nprobe },
    )?;
    let blend_error = max_abs(
        &Tensor::from_slice(&blended).view([rows, i64::try_from(dim)?]),
        &io.get("blended")?,
    )?;
    ensure!(
        blend_error <= tolerance,
        "blended max_abs {blend_error:.2e} > {tolerance:.0e}"
    );

    let (_, exact_ids) = index.search_exact(&queries, dim, k)?;
    let reference_exact = Vec::<i64>::try_from(&io.get("exact_ids")?.contiguous().view([-1]))?;
    let equal_exact = exact_ids
        .iter()
        .zip(&reference_exact)
        .filter(|(a, b)| a == b)
        .count();
    ensure!(
        equal_exact == reference_exact.len(),
        "exact ids: {equal_exact}/{} equal",
        reference_exact.len()
    );

    let folder = tempfile::tempdir()?;
    let copy = folder.path().join("copy.index");
    index.write(&copy)?;
    let round_trip = std::fs::read(&copy)? == std::fs::read(&path)?;
    ensure!(
        round_trip,
        "writing the index back does not reproduce {} byte for byte",
        path.display()
    );

    Ok(format!(
        "ids {equal_ids}/{} equal, distances max_abs {distance_error:.1e}, blended max_abs {blend_error:.1e}, exact ids {equal_exact}/{} equal (tol {tolerance:.0e}); rewritten byte for byte",
        ids.len(),
        reference_exact.len()
    ))
}
