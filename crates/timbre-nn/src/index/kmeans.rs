//! Building an index like faiss's `IndexIVFFlat::train` + `add` (facebookresearch/faiss:
//! `faiss/Clustering.cpp`, `faiss/IndexIVF.cpp`) with the default `ClusteringParameters`:
//! 25 k-means iterations from centroids drawn among the points, at most 256 training points per
//! centroid, and empty clusters refilled by splitting a large one. The random draws are our own
//! (seeded), so centroids differ from faiss's for the same data, as they do between faiss seeds.

use anyhow::{Context, Result, ensure};
use tch::{Kind, Tensor};

use super::search::flat_search;
use super::{InvertedList, IvfFlatIndex};

const ITERATIONS: usize = 25;
const MAX_POINTS_PER_CENTROID: usize = 256;
/// faiss's relative perturbation between the two halves of a split cluster.
const SPLIT_PERTURBATION: f32 = 1.0 / 1024.0;

impl IvfFlatIndex {
    /// An empty index whose `nlist` centroids are trained by k-means on `vectors` (row-major,
    /// `dim` values each); its stored nprobe is 1, as RVC saves it.
    pub fn train(vectors: &[f32], dim: usize, nlist: usize, seed: u64) -> Result<Self> {
        ensure!(
            dim > 0 && vectors.len().is_multiple_of(dim),
            "{} training values do not form vectors of dimension {dim}",
            vectors.len()
        );
        let rows = vectors.len() / dim;
        ensure!(nlist > 0, "an index needs at least one inverted list");
        ensure!(
            rows >= nlist,
            "k-means needs at least as many training vectors ({rows}) as inverted lists ({nlist})"
        );
        ensure!(
            vectors.iter().all(|v| v.is_finite()),
            "the training vectors contain NaN or infinite values"
        );
        let mut random = SplitMix64::new(seed);
        let limit = nlist * MAX_POINTS_PER_CENTROID;
        let centroids = if rows > limit {
            let sample: Vec<f32> = random.permutation(rows)[..limit]
                .iter()
                .flat_map(|&row| &vectors[row * dim..(row + 1) * dim])
                .copied()
                .collect();
            kmeans(&sample, dim, nlist, &mut random)?
        } else {
            kmeans(vectors, dim, nlist, &mut random)?
        };
        let lists = (0..nlist)
            .map(|_| InvertedList {
                ids: Vec::new(),
                vectors: Vec::new(),
            })
            .collect();
        Self::from_parts(dim, 1, centroids, lists)
    }

    /// Adds vectors (row-major, `dim` values each) to the lists of their nearest centroids, with
    /// the next ids in order, as faiss's `add` does.
    pub fn add(&mut self, vectors: &[f32], dim: usize) -> Result<()> {
        self.check_vectors(vectors, dim)?;
        ensure!(
            vectors.iter().all(|v| v.is_finite()),
            "the vectors to add contain NaN or infinite values"
        );
        let nearest = flat_search(vectors, &self.centroids, dim, 1);
        for (vector, centroid) in vectors.chunks_exact(dim).zip(nearest) {
            self.push(centroid.id as usize, self.len() as i64, vector)?;
        }
        Ok(())
    }
}

/// Lloyd's k-means over `points`, `k` centroids.
fn kmeans(points: &[f32], dim: usize, k: usize, random: &mut SplitMix64) -> Result<Vec<f32>> {
    let rows = points.len() / dim;
    if rows == k {
        return Ok(points.to_vec());
    }
    let mut centroids: Vec<f32> = random.permutation(rows)[..k]
        .iter()
        .flat_map(|&row| &points[row * dim..(row + 1) * dim])
        .copied()
        .collect();
    let mut sums = vec![0f64; k * dim];
    let mut sizes = vec![0f64; k];
    for _ in 0..ITERATIONS {
        let nearest = nearest_centroids(points, &centroids, dim)?;
        sums.fill(0.0);
        sizes.fill(0.0);
        for (point, &cluster) in points.chunks_exact(dim).zip(&nearest) {
            sizes[cluster] += 1.0;
            for (sum, value) in sums[cluster * dim..(cluster + 1) * dim]
                .iter_mut()
                .zip(point)
            {
                *sum += f64::from(*value);
            }
        }
        for ((centroid, sum), size) in centroids
            .chunks_exact_mut(dim)
            .zip(sums.chunks_exact(dim))
            .zip(&sizes)
        {
            if *size > 0.0 {
                for (value, sum) in centroid.iter_mut().zip(sum) {
                    *value = (sum / size) as f32;
                }
            }
        }
        split_empty_clusters(&mut centroids, &mut sizes, rows, dim, random);
    }
    Ok(centroids)
}

/// The nearest centroid of each point, by ‖c‖² − 2⟨x, c⟩ (‖x‖² does not change which is
/// nearest) through libtorch's matrix product, as faiss's k-means goes through BLAS: training
/// runs 25 such passes over up to 256 points per centroid, hundreds of times the work of a
/// search, where our exact distance kernel would take tens of minutes on large sets.
pub(super) fn nearest_centroids(
    points: &[f32],
    centroids: &[f32],
    dim: usize,
) -> Result<Vec<usize>> {
    let _no_grad = tch::no_grad_guard();
    let k = centroids.len() / dim;
    let centroids = Tensor::from_slice(centroids).view([k as i64, dim as i64]);
    let norms = centroids.square().sum_dim_intlist(1, false, Kind::Float);
    let transposed = centroids.tr();
    // Chunks keep the distance matrix near 64 MB.
    let rows_per_chunk = ((1 << 24) / k).max(1);
    let mut nearest = Vec::with_capacity(points.len() / dim);
    for chunk in points.chunks(rows_per_chunk * dim) {
        let products = Tensor::from_slice(chunk)
            .view([-1, dim as i64])
            .matmul(&transposed);
        let labels = (&norms - products * 2.0).argmin(1, false);
        let labels = Vec::<i64>::try_from(&labels).context("reading the k-means assignment")?;
        nearest.extend(labels.into_iter().map(|label| label as usize));
    }
    Ok(nearest)
}

/// faiss's `split_clusters`: an empty cluster takes over half of a cluster drawn with probability
/// proportional to its size, the two centroids nudged apart symmetrically.
fn split_empty_clusters(
    centroids: &mut [f32],
    sizes: &mut [f64],
    rows: usize,
    dim: usize,
    random: &mut SplitMix64,
) {
    let k = sizes.len();
    // rows > k here, so some cluster holds two points or more and the draw ends.
    let spare = (rows - k) as f64;
    for empty in 0..k {
        if sizes[empty] != 0.0 {
            continue;
        }
        let mut donor = 0;
        while random.unit() >= (sizes[donor] - 1.0) / spare {
            donor = (donor + 1) % k;
        }
        let (donor_values, empty_values) = if donor < empty {
            let (head, tail) = centroids.split_at_mut(empty * dim);
            (&mut head[donor * dim..(donor + 1) * dim], &mut tail[..dim])
        } else {
            let (head, tail) = centroids.split_at_mut(donor * dim);
            (&mut tail[..dim], &mut head[empty * dim..(empty + 1) * dim])
        };
        for (j, (from, to)) in donor_values
            .iter_mut()
            .zip(empty_values.iter_mut())
            .enumerate()
        {
            let nudge = if j % 2 == 0 {
                SPLIT_PERTURBATION
            } else {
                -SPLIT_PERTURBATION
            };
            *to = *from * (1.0 + nudge);
            *from *= 1.0 - nudge;
        }
        sizes[empty] = sizes[donor] / 2.0;
        sizes[donor] -= sizes[empty];
    }
}

/// A small seeded generator (SplitMix64): reproducible training without a dependency.
pub(super) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(super) fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next()) * bound as u128) >> 64) as usize
    }

    pub(super) fn permutation(&mut self, length: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..length).collect();
        for i in (1..length).rev() {
            order.swap(i, self.below(i + 1));
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clusters` well separated blobs of `per_cluster` points in `dim` dimensions.
    fn blobs(clusters: usize, per_cluster: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut random = SplitMix64::new(seed);
        let mut points = Vec::new();
        for cluster in 0..clusters {
            for _ in 0..per_cluster {
                points.extend((0..dim).map(|j| {
                    let centre = if j % clusters == cluster { 20.0 } else { 0.0 };
                    centre + random.unit() as f32
                }));
            }
        }
        points
    }

    #[test]
    fn trained_index_finds_every_stored_vector_as_its_own_nearest() {
        let dim = 8;
        let points = blobs(4, 60, dim, 3);
        let mut index = IvfFlatIndex::train(&points, dim, 4, 7).unwrap();
        assert_eq!((index.nlist(), index.len(), index.nprobe()), (4, 0, 1));
        index.add(&points, dim).unwrap();
        assert_eq!(index.len(), 240);
        let (distances, ids) = index.search(&points, dim, 3, 1).unwrap();
        for (row, (found, distance)) in ids.chunks(3).zip(distances.chunks(3)).enumerate() {
            assert_eq!(found[0], row as i64);
            assert_eq!(distance[0], 0.0);
        }
        let (_, exact) = index.search_exact(&points, dim, 3).unwrap();
        assert_eq!(
            exact, ids,
            "with separated blobs one probe sees the true neighbours"
        );
        for cluster in 0..4 {
            let members: std::collections::HashSet<_> = (0..60)
                .map(|i| index.positions[&((cluster * 60 + i) as i64)].0)
                .collect();
            assert_eq!(members.len(), 1, "blob {cluster} lands in one list");
        }
    }

    #[test]
    fn training_is_reproducible_and_depends_on_the_seed() {
        let points = blobs(3, 50, 6, 11);
        let centroids = |seed| IvfFlatIndex::train(&points, 6, 5, seed).unwrap().centroids;
        assert_eq!(centroids(1), centroids(1));
        assert_ne!(centroids(1), centroids(2));
    }

    #[test]
    fn empty_clusters_are_split_from_a_populated_one() {
        // Two distinct points repeated: with 3 centroids one cluster is bound to start empty or
        // become empty, and every centroid must end up finite and distinct.
        let mut points = Vec::new();
        for i in 0..40 {
            points.extend_from_slice(if i % 2 == 0 { &[1.0, 1.0] } else { &[5.0, 5.0] });
        }
        let index = IvfFlatIndex::train(&points, 2, 3, 5).unwrap();
        let centroids: Vec<&[f32]> = index.centroids.chunks(2).collect();
        assert!(index.centroids.iter().all(|v| v.is_finite()));
        assert!(
            centroids[0] != centroids[1]
                && centroids[1] != centroids[2]
                && centroids[0] != centroids[2]
        );
    }

    #[test]
    fn large_training_sets_are_sampled_and_still_find_the_clusters() {
        let points = blobs(2, 300, 4, 9);
        let index = IvfFlatIndex::train(&points, 4, 2, 1).unwrap();
        let mut centres: Vec<f32> = index.centroids.chunks(4).map(|c| c[0]).collect();
        centres.sort_by(f32::total_cmp);
        assert!(
            (centres[0] - 0.5).abs() < 0.1 && (centres[1] - 20.5).abs() < 0.1,
            "{centres:?}"
        );
    }

    #[test]
    fn refuses_too_few_points_and_bad_values() {
        assert!(IvfFlatIndex::train(&[0.0; 8], 4, 3, 0).is_err());
        assert!(IvfFlatIndex::train(&[0.0, f32::NAN, 1.0, 2.0], 2, 1, 0).is_err());
        let mut index = IvfFlatIndex::train(&[0.0, 1.0, 2.0, 3.0], 2, 2, 0).unwrap();
        let error = index.add(&[0.0; 6], 3).unwrap_err().to_string();
        assert!(error.contains("3"), "{error}");
        let (distances, ids) = index.search(&[0.0, 0.0], 2, 1, 1).unwrap();
        assert_eq!(
            (distances, ids),
            (vec![f32::MAX], vec![-1]),
            "an empty index finds nothing"
        );
    }

    #[test]
    fn permutations_hold_every_index_once() {
        let mut order = SplitMix64::new(4).permutation(100);
        order.sort_unstable();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }
}
