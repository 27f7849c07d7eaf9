//! The index RVC trains beside each model (`infer-web.py` `train_index`): the training
//! features shuffled, reduced to 10 000 k-means centres when there are more than 200 000 of
//! them (scikit-learn's `MiniBatchKMeans` with `init="random"`), then an `IVF<n>,Flat` index of
//! `rvc_list_count` lists trained on them, nprobe 1, and every one of them added.

use anyhow::{Result, ensure};

use super::kmeans::{SplitMix64, nearest_centroids};
use super::{IvfFlatIndex, rvc_list_count};

/// Above this many rows RVC indexes k-means centres instead of the rows themselves.
const REDUCE_ABOVE: usize = 200_000;
const REDUCED_CENTRES: usize = 10_000;
/// Rows per mini-batch step (scikit-learn's is 256 per CPU).
const MINI_BATCH: usize = 4096;
/// At least this many steps, and at least one pass over the rows. scikit-learn stops on its own
/// convergence test, which in practice ends within a few hundred steps.
const MIN_STEPS: usize = 200;

impl IvfFlatIndex {
    /// RVC's index over `vectors` (row-major, `dim` values each), from `seed`.
    pub fn train_rvc(vectors: &[f32], dim: usize, seed: u64) -> Result<Self> {
        ensure!(
            dim > 0 && vectors.len().is_multiple_of(dim) && !vectors.is_empty(),
            "{} feature values do not form vectors of dimension {dim}",
            vectors.len()
        );
        let rows = vectors.len() / dim;
        let mut random = SplitMix64::new(seed);
        let shuffled: Vec<f32> = random
            .permutation(rows)
            .iter()
            .flat_map(|&row| &vectors[row * dim..(row + 1) * dim])
            .copied()
            .collect();
        let kept = if rows > REDUCE_ABOVE {
            let steps = rows.div_ceil(MINI_BATCH).max(MIN_STEPS);
            let reduction = MiniBatch {
                centres: REDUCED_CENTRES,
                batch: MINI_BATCH,
                steps,
            };
            reduction.run(&shuffled, dim, &mut random)?
        } else {
            shuffled
        };
        let mut index = Self::train(&kept, dim, rvc_list_count(kept.len() / dim), seed)?;
        index.add(&kept, dim)?;
        Ok(index)
    }
}

/// Sculley's mini-batch k-means as scikit-learn runs it: centres drawn among the points, then
/// each step assigns a batch of points (taken in turn from the shuffled points) to the nearest
/// centres and moves each centre to the running mean of every point it was given.
struct MiniBatch {
    centres: usize,
    batch: usize,
    steps: usize,
}

impl MiniBatch {
    fn run(&self, points: &[f32], dim: usize, random: &mut SplitMix64) -> Result<Vec<f32>> {
        let rows = points.len() / dim;
        ensure!(
            rows >= self.centres,
            "k-means needs at least {} vectors, not {rows}",
            self.centres
        );
        let mut centres: Vec<f32> = random.permutation(rows)[..self.centres]
            .iter()
            .flat_map(|&row| &points[row * dim..(row + 1) * dim])
            .copied()
            .collect();
        let mut counts = vec![0u64; self.centres];
        for step in 0..self.steps {
            let start = (step * self.batch) % rows;
            let end = (start + self.batch).min(rows);
            let chunk = &points[start * dim..end * dim];
            let nearest = nearest_centroids(chunk, &centres, dim)?;
            for (point, &centre) in chunk.chunks_exact(dim).zip(&nearest) {
                counts[centre] += 1;
                let rate = 1.0 / counts[centre] as f32;
                for (value, x) in centres[centre * dim..(centre + 1) * dim]
                    .iter_mut()
                    .zip(point)
                {
                    *value += rate * (x - *value);
                }
            }
        }
        Ok(centres)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points around `count` corners of a cube: coordinate j is 10 when bit j of the point's
    /// cluster is set, plus a small wobble.
    fn clusters(count: usize, per_cluster: usize, dim: usize) -> Vec<f32> {
        let mut points = Vec::new();
        for cluster in 0..count {
            for i in 0..per_cluster {
                points.extend((0..dim).map(|j| {
                    let corner = if cluster >> j & 1 == 1 { 10.0 } else { 0.0 };
                    corner + ((i * 37 + j * 11) % 10) as f32 * 0.02
                }));
            }
        }
        points
    }

    #[test]
    fn a_small_set_is_indexed_whole_with_rvcs_list_count() {
        let dim = 4;
        let points = clusters(8, 100, dim);
        let index = IvfFlatIndex::train_rvc(&points, dim, 3).unwrap();
        assert_eq!(index.len(), 800);
        assert_eq!(index.nlist(), rvc_list_count(800));
        assert_eq!(index.nprobe(), 1);
        let (distances, _) = index.search(&points[..dim], dim, 1, 1).unwrap();
        assert_eq!(distances[0], 0.0, "every row is stored");
        assert!(IvfFlatIndex::train_rvc(&[], dim, 3).is_err());
    }

    #[test]
    fn the_mini_batch_reduction_finds_the_clusters() {
        let dim = 3;
        let points = clusters(8, 200, dim);
        let reduction = MiniBatch {
            centres: 8,
            batch: 64,
            steps: 100,
        };
        let mut random = SplitMix64::new(1);
        let shuffled: Vec<f32> = random
            .permutation(1600)
            .iter()
            .flat_map(|&row| &points[row * dim..(row + 1) * dim])
            .copied()
            .collect();
        let centres = reduction.run(&shuffled, dim, &mut random).unwrap();
        // The clusters' variance is 75 (25 per coordinate); k-means from random starts may
        // leave two clusters to one centre (a local minimum) but not much worse.
        let mean_squared = |centres: &[f32]| {
            let nearest = nearest_centroids(&points, centres, dim).unwrap();
            let total: f32 = points
                .chunks(dim)
                .zip(nearest)
                .map(|(p, c)| {
                    let centre = &centres[c * dim..(c + 1) * dim];
                    p.iter()
                        .zip(centre)
                        .map(|(a, b)| (a - b).powi(2))
                        .sum::<f32>()
                })
                .sum();
            total / 1600.0
        };
        let error = mean_squared(&centres);
        assert!(error < 15.0, "mean squared distance {error}");
        assert!(
            error < mean_squared(&shuffled[..8 * dim]),
            "no better than its random start"
        );
    }
}
