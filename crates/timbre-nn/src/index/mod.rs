//! The faiss IVF-Flat index RVC ships with each voice model, and RVC's retrieval with it.
//!
//! Matches facebookresearch/faiss (`faiss/IndexIVF.cpp`, `faiss/IndexIVFFlat.cpp`,
//! `faiss/invlists/InvertedLists.cpp`: search with squared L2, the `nprobe` nearest centroids'
//! lists scanned, results sorted ascending, id -1 at `f32::MAX` when fewer than k are found) and
//! RVC-Project/Retrieval-based-Voice-Conversion-WebUI (`infer-web.py` `train_index`,
//! `infer/modules/vc/pipeline.py`: each feature frame is replaced in part by the mean of its 8
//! nearest stored frames weighted by (1/d)²). Pure Rust over row-major f32 slices, but for
//! k-means' assignment step (libtorch's matrix product, where faiss uses BLAS) and the
//! `blend_tensor` boundary.

mod format;
mod kmeans;
mod rvc_train;
mod search;

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use search::{Hit, QUERY_BLOCK, TopK, for_each_query_chunk, l2_squared, scan_block, search_blocks};

/// How to find a feature's neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// faiss's IVF search: only the lists of the `nprobe` nearest centroids (RVC uses 1).
    Probe {
        /// Lists scanned per query; at least 1, capped at the number of lists.
        nprobe: usize,
    },
    /// Every stored vector (the true nearest neighbours).
    Exact,
}

/// The vectors of one inverted list, with their ids.
struct InvertedList {
    ids: Vec<i64>,
    vectors: Vec<f32>,
}

/// A faiss `IndexIVFFlat` with a flat L2 coarse quantizer, in memory.
pub struct IvfFlatIndex {
    dim: usize,
    nprobe: usize,
    /// `nlist × dim` coarse centroids.
    centroids: Vec<f32>,
    lists: Vec<InvertedList>,
    /// id → (list, row), for `reconstruct`.
    positions: HashMap<i64, (u32, u32)>,
    count: usize,
    /// The file it was read from, for messages.
    source: Option<PathBuf>,
}

/// RVC's number of inverted lists for `rows` training vectors: min(⌊16·√rows⌋, rows / 39),
/// at least 1 (RVC itself fails below 39 rows).
pub fn rvc_list_count(rows: usize) -> usize {
    ((16.0 * (rows as f64).sqrt()) as usize)
        .min(rows / 39)
        .max(1)
}

impl IvfFlatIndex {
    fn from_parts(
        dim: usize,
        nprobe: usize,
        centroids: Vec<f32>,
        lists: Vec<InvertedList>,
    ) -> Result<Self> {
        ensure!(
            dim > 0 && centroids.len() == lists.len() * dim,
            "{} centroid values for {} lists",
            centroids.len(),
            lists.len()
        );
        ensure!(
            u32::try_from(lists.len()).is_ok(),
            "{} inverted lists are more than supported",
            lists.len()
        );
        let mut index = Self {
            dim,
            nprobe,
            centroids,
            lists: Vec::new(),
            positions: HashMap::new(),
            count: 0,
            source: None,
        };
        for (number, list) in lists.iter().enumerate() {
            ensure!(
                list.vectors.len() == list.ids.len() * dim,
                "list {number} holds {} values for {} ids",
                list.vectors.len(),
                list.ids.len()
            );
            ensure!(
                u32::try_from(list.ids.len()).is_ok(),
                "list {number} holds {} vectors, more than supported",
                list.ids.len()
            );
            for (row, &id) in list.ids.iter().enumerate() {
                index
                    .positions
                    .entry(id)
                    .or_insert((number as u32, row as u32));
            }
            index.count += list.ids.len();
        }
        index.lists = lists;
        Ok(index)
    }

    /// The dimension of the stored vectors (256 for RVC v1 models, 768 for v2).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of stored vectors (faiss's `ntotal`).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the index stores no vectors.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The number of inverted lists (and coarse centroids).
    pub fn nlist(&self) -> usize {
        self.lists.len()
    }

    /// The nprobe saved with the index (RVC saves 1); searches take theirs explicitly.
    pub fn nprobe(&self) -> usize {
        self.nprobe
    }

    /// The stored vector with this id (a row of faiss's `reconstruct_n(0, ntotal)`).
    pub fn reconstruct(&self, id: i64) -> Result<&[f32]> {
        let &(list, row) = self
            .positions
            .get(&id)
            .with_context(|| format!("{}: no vector has id {id}", self.name()))?;
        Ok(self.vector(list, row))
    }

    /// The `k` nearest stored vectors of each query (row-major, `dim` values each) among the
    /// lists of its `nprobe` nearest centroids: (squared L2 distances, ids), `k` per query,
    /// ascending; id -1 at distance `f32::MAX` where fewer than `k` were found, as faiss returns.
    pub fn search(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
        nprobe: usize,
    ) -> Result<(Vec<f32>, Vec<i64>)> {
        let hits = self.search_hits(queries, dim, k, SearchMode::Probe { nprobe })?;
        Ok(hits.iter().map(|hit| (hit.distance, hit.id)).unzip())
    }

    /// Like `search`, over every stored vector.
    pub fn search_exact(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
    ) -> Result<(Vec<f32>, Vec<i64>)> {
        let hits = self.search_hits(queries, dim, k, SearchMode::Exact)?;
        Ok(hits.iter().map(|hit| (hit.distance, hit.id)).unzip())
    }

    /// RVC's retrieval: each feature row (row-major, `dim` values) becomes
    /// `index_rate · Σ wᵢ·vᵢ + (1 − index_rate) · feature` over its `k` nearest stored vectors vᵢ,
    /// with wᵢ ∝ (1/dᵢ)² normalised to sum 1.
    ///
    /// RVC computes (1/d)² in f32: a neighbour at distance 0 gives an infinite weight and a NaN
    /// row. We take the limit instead: all the weight on the exact match(es), so the retrieved
    /// vector is the stored one. The weights are computed as (d_min/dᵢ)², the same ratios
    /// without overflow. A row with no neighbour found (only empty lists probed) is left as is
    /// where RVC would produce NaN.
    pub fn blend(
        &self,
        features: &[f32],
        dim: usize,
        index_rate: f32,
        k: usize,
        mode: SearchMode,
    ) -> Result<Vec<f32>> {
        ensure!(
            (0.0..=1.0).contains(&index_rate),
            "the index rate must be between 0 and 1, not {index_rate}"
        );
        let hits = self.search_hits(features, dim, k, mode)?;
        let mut blended = Vec::with_capacity(features.len());
        let mut weights = vec![0f32; k];
        for (feature, hits) in features.chunks_exact(dim).zip(hits.chunks_exact(k)) {
            let start = blended.len();
            blended.extend_from_slice(feature);
            if !neighbour_weights(hits, &mut weights) {
                continue;
            }
            let row = &mut blended[start..];
            row.fill(0.0);
            for (hit, &weight) in hits
                .iter()
                .zip(&weights)
                .filter(|(_, weight)| **weight != 0.0)
            {
                for (sum, value) in row.iter_mut().zip(self.vector(hit.list, hit.row)) {
                    *sum += weight * value;
                }
            }
            for (value, original) in row.iter_mut().zip(feature) {
                *value = *value * index_rate + (1.0 - index_rate) * original;
            }
        }
        Ok(blended)
    }

    /// `blend` for features as a tensor `[frames, dim]` or `[1, frames, dim]` of any float kind
    /// on any device; the result has the input's shape, kind and device.
    pub fn blend_tensor(
        &self,
        features: &Tensor,
        index_rate: f32,
        k: usize,
        mode: SearchMode,
    ) -> Result<Tensor> {
        let shape = features.size();
        let dim = match shape.as_slice() {
            [_, dim] | [1, _, dim] => *dim as usize,
            _ => bail!("features of shape {shape:?}: expected [frames, dim] or [1, frames, dim]"),
        };
        let values = features
            .to_device(Device::Cpu)
            .to_kind(Kind::Float)
            .contiguous()
            .view([-1]);
        let values = Vec::<f32>::try_from(&values).context("reading the features")?;
        let blended = self.blend(&values, dim, index_rate, k, mode)?;
        Ok(Tensor::from_slice(&blended)
            .view(shape.as_slice())
            .to_kind(features.kind())
            .to_device(features.device()))
    }

    fn name(&self) -> String {
        match &self.source {
            Some(path) => path.display().to_string(),
            None => "the index".to_string(),
        }
    }

    fn vector(&self, list: u32, row: u32) -> &[f32] {
        let start = row as usize * self.dim;
        &self.lists[list as usize].vectors[start..start + self.dim]
    }

    /// Checks that `values` are vectors of this index's dimension; returns how many.
    fn check_vectors(&self, values: &[f32], dim: usize) -> Result<usize> {
        if dim != self.dim {
            let model = |dim| match dim {
                256 => Some("v1"),
                768 => Some("v2"),
                _ => None,
            };
            match (model(self.dim), model(dim)) {
                (Some(index_version), Some(feature_version)) => bail!(
                    "{}: this index was built for {index_version} models ({}-dimensional features) but the features are {dim}-dimensional ({feature_version}); use the model's own index",
                    self.name(),
                    self.dim
                ),
                _ => bail!(
                    "{}: this index holds {}-dimensional vectors but the features are {dim}-dimensional; use the index built for this model",
                    self.name(),
                    self.dim
                ),
            }
        }
        ensure!(
            values.len().is_multiple_of(dim),
            "{} values do not form vectors of dimension {dim}",
            values.len()
        );
        Ok(values.len() / dim)
    }

    fn push(&mut self, list: usize, id: i64, vector: &[f32]) -> Result<()> {
        let stored = &mut self.lists[list];
        let row = u32::try_from(stored.ids.len()).context("an inverted list is full")?;
        stored.ids.push(id);
        stored.vectors.extend_from_slice(vector);
        self.positions.entry(id).or_insert((list as u32, row));
        self.count += 1;
        Ok(())
    }

    fn search_hits(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        let rows = self.check_vectors(queries, dim)?;
        ensure!(k > 0, "k must be at least 1");
        let mut hits = vec![Hit::MISSING; rows * k];
        match mode {
            SearchMode::Probe { nprobe } => {
                ensure!(nprobe > 0, "nprobe must be at least 1");
                // faiss probes at most every list.
                let nprobe = nprobe.min(self.nlist());
                for_each_query_chunk(queries, dim, k, &mut hits, |queries, out| {
                    self.probe(queries, k, nprobe, out)
                });
            }
            SearchMode::Exact => {
                for_each_query_chunk(queries, dim, k, &mut hits, |queries, out| {
                    // Ties go to the smaller id, as in a flat index that stores vectors by id.
                    search_blocks(queries, dim, k, out, |block, tops| {
                        for (number, list) in self.lists.iter().enumerate() {
                            scan_block(
                                block,
                                dim,
                                &list.vectors,
                                number as u32,
                                |row| list.ids[row],
                                tops,
                                true,
                            );
                        }
                    });
                });
            }
        }
        Ok(hits)
    }

    /// IVF search of consecutive queries: blocks of queries against the centroids, then each
    /// query's lists, nearest centroid first.
    fn probe(&self, queries: &[f32], k: usize, nprobe: usize, out: &mut [Hit]) {
        let dim = self.dim;
        let mut coarse: Vec<TopK> = (0..QUERY_BLOCK).map(|_| TopK::new(nprobe)).collect();
        let mut best = TopK::new(k);
        for (block, out) in queries
            .chunks(QUERY_BLOCK * dim)
            .zip(out.chunks_mut(QUERY_BLOCK * k))
        {
            let coarse = &mut coarse[..block.len() / dim];
            coarse.iter_mut().for_each(TopK::reset);
            scan_block(
                block,
                dim,
                &self.centroids,
                0,
                |centroid| centroid as i64,
                coarse,
                false,
            );
            for ((query, probes), out) in block
                .chunks_exact(dim)
                .zip(coarse.iter())
                .zip(out.chunks_mut(k))
            {
                best.reset();
                for probe in probes.hits().iter().filter(|probe| probe.is_found()) {
                    let list = &self.lists[probe.id as usize];
                    for (row, (vector, &id)) in
                        list.vectors.chunks_exact(dim).zip(&list.ids).enumerate()
                    {
                        let distance = l2_squared(query, vector);
                        best.offer(Hit {
                            distance,
                            id,
                            list: probe.id as u32,
                            row: row as u32,
                        });
                    }
                }
                out.copy_from_slice(best.hits());
            }
        }
    }
}

/// RVC's weights for one row's neighbours, into `weights`; false when none was found.
fn neighbour_weights(hits: &[Hit], weights: &mut [f32]) -> bool {
    let Some(nearest) = hits
        .iter()
        .filter(|hit| hit.is_found())
        .map(|hit| hit.distance)
        .reduce(f32::min)
    else {
        return false;
    };
    let nearest = f64::from(nearest);
    let relative = |hit: &Hit| match (hit.is_found(), nearest == 0.0) {
        (false, _) => 0.0,
        (true, true) => f64::from(u8::from(hit.distance == 0.0)),
        (true, false) => (nearest / f64::from(hit.distance)).powi(2),
    };
    let total: f64 = hits.iter().map(relative).sum();
    for (hit, weight) in hits.iter().zip(weights.iter_mut()) {
        *weight = (relative(hit) / total) as f32;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two lists in dimension 2: around (0, 0) ids 0..3, around (10, 10) ids 3..5.
    fn two_lists() -> IvfFlatIndex {
        let lists = vec![
            InvertedList {
                ids: vec![0, 1, 2],
                vectors: vec![0.0, 0.0, 1.0, 0.0, 0.0, 2.0],
            },
            InvertedList {
                ids: vec![3, 4],
                vectors: vec![10.0, 10.0, 11.0, 10.0],
            },
        ];
        IvfFlatIndex::from_parts(2, 1, vec![0.0, 0.0, 10.0, 10.0], lists).unwrap()
    }

    #[test]
    fn one_probe_sees_only_the_nearest_list_and_pads_like_faiss() {
        let index = two_lists();
        let (distances, ids) = index.search(&[0.5, 0.0], 2, 4, 1).unwrap();
        assert_eq!(ids, [0, 1, 2, -1]);
        assert_eq!(distances, [0.25, 0.25, 4.25, f32::MAX]);
        let (_, ids) = index.search(&[0.5, 0.0], 2, 4, 2).unwrap();
        assert_eq!(ids, [0, 1, 2, 3]);
        let (_, exact) = index.search_exact(&[10.6, 10.0], 2, 2).unwrap();
        assert_eq!(exact, [4, 3]);
    }

    #[test]
    fn blend_weights_neighbours_by_inverse_squared_distance() {
        let index = two_lists();
        // Distances 1 and 4 to ids 3 and 4: weights 1 and 1/16, normalised.
        let feature = [10.0, 9.0];
        let (distances, ids) = index.search_exact(&feature, 2, 2).unwrap();
        assert_eq!((ids, distances), (vec![3, 4], vec![1.0, 2.0]));
        let blended = index
            .blend(&feature, 2, 0.75, 2, SearchMode::Exact)
            .unwrap();
        let (w3, w4) = (1.0 / 1.25, 0.25 / 1.25);
        let expected = [
            0.75 * (w3 * 10.0 + w4 * 11.0) + 0.25 * 10.0,
            0.75 * (w3 * 10.0 + w4 * 10.0) + 0.25 * 9.0,
        ];
        assert!(
            blended
                .iter()
                .zip(expected)
                .all(|(a, b)| (a - b).abs() < 1e-5),
            "{blended:?} vs {expected:?}"
        );
        assert_eq!(
            index.blend(&feature, 2, 0.0, 2, SearchMode::Exact).unwrap(),
            feature
        );
    }

    #[test]
    fn a_feature_equal_to_a_stored_vector_retrieves_exactly_that_vector() {
        let index = two_lists();
        let blended = index
            .blend(&[1.0, 0.0], 2, 1.0, 3, SearchMode::Probe { nprobe: 1 })
            .unwrap();
        assert_eq!(blended, [1.0, 0.0]);
        assert!(blended.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn rows_without_any_neighbour_are_kept() {
        let lists = vec![
            InvertedList {
                ids: vec![],
                vectors: vec![],
            },
            InvertedList {
                ids: vec![0],
                vectors: vec![5.0],
            },
        ];
        let index = IvfFlatIndex::from_parts(1, 1, vec![0.0, 5.0], lists).unwrap();
        assert_eq!(
            index
                .blend(&[0.5, 4.0], 1, 0.5, 2, SearchMode::Probe { nprobe: 1 })
                .unwrap(),
            [0.5, 4.5]
        );
    }

    #[test]
    fn v1_features_on_a_v2_index_name_both_and_the_fix() {
        let index = IvfFlatIndex::from_parts(
            768,
            1,
            vec![0.0; 768],
            vec![InvertedList {
                ids: vec![],
                vectors: vec![],
            }],
        )
        .unwrap();
        let error = index
            .search(&[0.0; 256], 256, 8, 1)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("v2 models (768")
                && error.contains("256-dimensional (v1)")
                && error.contains("model's own index"),
            "{error}"
        );
        let error = index
            .search(&[0.0; 300], 300, 8, 1)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("768-dimensional vectors") && error.contains("300"),
            "{error}"
        );
    }

    #[test]
    fn blend_tensor_keeps_shape_and_kind() {
        let index = two_lists();
        let features = Tensor::from_slice(&[10.0f32, 9.0, 0.0, 1.0])
            .view([1, 2, 2])
            .to_kind(Kind::Double);
        let blended = index
            .blend_tensor(&features, 0.5, 2, SearchMode::Exact)
            .unwrap();
        assert_eq!(
            (blended.size(), blended.kind()),
            (vec![1, 2, 2], Kind::Double)
        );
        let direct = index
            .blend(&[10.0, 9.0, 0.0, 1.0], 2, 0.5, 2, SearchMode::Exact)
            .unwrap();
        let values = Vec::<f64>::try_from(&blended.view([-1])).unwrap();
        assert!(
            values
                .iter()
                .zip(direct)
                .all(|(a, b)| (*a as f32 - b).abs() < 1e-6)
        );
        assert!(
            index
                .blend_tensor(
                    &Tensor::zeros([2, 2, 2], (Kind::Float, Device::Cpu)),
                    0.5,
                    2,
                    SearchMode::Exact
                )
                .is_err()
        );
    }

    #[test]
    fn rvc_list_counts() {
        assert_eq!(rvc_list_count(2000), 51);
        assert_eq!(rvc_list_count(1500), 38);
        assert_eq!(rvc_list_count(100_000), 2564);
        assert_eq!(rvc_list_count(10), 1);
    }
}
