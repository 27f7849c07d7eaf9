//! The search machinery shared by queries and `add`: the squared L2 distance computed
//! the way faiss computes it, a k-best list with faiss's tie rules, and the loops that run blocks
//! of queries over stored vectors on every core.

/// faiss's AVX-512 `fvec_L2sqr` keeps one 16-lane accumulator of fused multiply-adds and sums
/// the lanes as a halving tree (`_mm512_reduce_add_ps`). Doing the same on every CPU reproduces
/// its distances bit for bit (checked on the parity fixtures), where a sequential or 8-lane sum
/// differs by an ulp or two: at distances near 1500 that already exceeds a 1e-4 tolerance.
const LANES: usize = 16;

#[inline(always)]
fn l2_squared_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut a_blocks = a.chunks_exact(LANES);
    let mut b_blocks = b.chunks_exact(LANES);
    for (x, y) in a_blocks.by_ref().zip(b_blocks.by_ref()) {
        for lane in 0..LANES {
            let diff = x[lane] - y[lane];
            acc[lane] = diff.mul_add(diff, acc[lane]);
        }
    }
    // A tail shorter than a block lands in the first lanes, as faiss's masked loads put it.
    for (lane, (x, y)) in a_blocks
        .remainder()
        .iter()
        .zip(b_blocks.remainder())
        .enumerate()
    {
        let diff = x - y;
        acc[lane] = diff.mul_add(diff, acc[lane]);
    }
    let mut width = LANES / 2;
    while width > 0 {
        for lane in 0..width {
            acc[lane] += acc[lane + width];
        }
        width /= 2;
    }
    acc[0]
}

#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Squared L2 distance between two vectors of the same length.
pub(super) fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { fma::l2_squared_group([a], b)[0] };
    }
    // Elsewhere `mul_add` is still one rounding (in hardware on aarch64, libm's fmaf on an old
    // x86), so the result is the same, only computed more slowly.
    l2_squared_lanes(a, b)
}

/// The squared L2 distances from `vector` to each query of `queries` (row-major, `dim` values).
pub(super) fn l2_squared_to_each(
    queries: &[f32],
    dim: usize,
    vector: &[f32],
    distances: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU has AVX2 and FMA.
        unsafe { fma::l2_squared_to_each(queries, dim, vector, distances) };
        return;
    }
    for (query, distance) in queries.chunks_exact(dim).zip(distances) {
        *distance = l2_squared_lanes(query, vector);
    }
}

/// The same arithmetic as `l2_squared_lanes` in AVX2 registers: lanes 0–7 and 8–15 of the
/// 16-lane accumulator in two registers, several queries per stored vector so that each load of
/// it serves several independent chains of multiply-adds.
#[cfg(target_arch = "x86_64")]
mod fma {
    use std::arch::x86_64::{
        __m256, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehdup_ps, _mm_movehl_ps,
        _mm256_add_ps, _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps,
        _mm256_loadu_ps, _mm256_setzero_ps, _mm256_sub_ps,
    };

    use super::LANES;

    /// Queries per group: 4 × 2 accumulators and the stored vector's 2 registers fit the 16.
    const GROUP: usize = 4;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn load(values: &[f32]) -> __m256 {
        let values = &values[..8];
        // SAFETY: `values` holds the 8 floats read.
        unsafe { _mm256_loadu_ps(values.as_ptr()) }
    }

    /// Lanes l + l+8, then + l+4, + l+2, + l+1: the halving tree of `_mm512_reduce_add_ps`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn reduce(low: __m256, high: __m256) -> f32 {
        let eight = _mm256_add_ps(low, high);
        let four = _mm_add_ps(
            _mm256_castps256_ps128(eight),
            _mm256_extractf128_ps::<1>(eight),
        );
        let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn l2_squared_group<const N: usize>(
        queries: [&[f32]; N],
        vector: &[f32],
    ) -> [f32; N] {
        let mut low = [_mm256_setzero_ps(); N];
        let mut high = [_mm256_setzero_ps(); N];
        let whole = vector.len() / LANES * LANES;
        for at in (0..whole).step_by(LANES) {
            let vector_low = load(&vector[at..]);
            let vector_high = load(&vector[at + 8..]);
            for q in 0..N {
                let diff_low = _mm256_sub_ps(load(&queries[q][at..]), vector_low);
                let diff_high = _mm256_sub_ps(load(&queries[q][at + 8..]), vector_high);
                low[q] = _mm256_fmadd_ps(diff_low, diff_low, low[q]);
                high[q] = _mm256_fmadd_ps(diff_high, diff_high, high[q]);
            }
        }
        if whole < vector.len() {
            // Zero padding adds exact zeros, as faiss's masked loads do.
            let mut padded_vector = [0f32; LANES];
            padded_vector[..vector.len() - whole].copy_from_slice(&vector[whole..]);
            for q in 0..N {
                let mut padded_query = [0f32; LANES];
                padded_query[..vector.len() - whole].copy_from_slice(&queries[q][whole..]);
                let diff_low = _mm256_sub_ps(load(&padded_query), load(&padded_vector));
                let diff_high = _mm256_sub_ps(load(&padded_query[8..]), load(&padded_vector[8..]));
                low[q] = _mm256_fmadd_ps(diff_low, diff_low, low[q]);
                high[q] = _mm256_fmadd_ps(diff_high, diff_high, high[q]);
            }
        }
        let mut distances = [0f32; N];
        for q in 0..N {
            distances[q] = reduce(low[q], high[q]);
        }
        distances
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn l2_squared_to_each(
        queries: &[f32],
        dim: usize,
        vector: &[f32],
        distances: &mut [f32],
    ) {
        let mut groups = queries.chunks_exact(GROUP * dim);
        let mut outputs = distances.chunks_exact_mut(GROUP);
        for (group, out) in groups.by_ref().zip(outputs.by_ref()) {
            let (first, rest) = group.split_at(dim);
            let (second, rest) = rest.split_at(dim);
            let (third, fourth) = rest.split_at(dim);
            out.copy_from_slice(&l2_squared_group([first, second, third, fourth], vector));
        }
        for (query, out) in groups
            .remainder()
            .chunks_exact(dim)
            .zip(outputs.into_remainder())
        {
            *out = l2_squared_group([query], vector)[0];
        }
    }
}

/// One neighbour found: its distance, its id, and where its vector is stored (`list`, `row`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Hit {
    pub distance: f32,
    pub id: i64,
    pub list: u32,
    pub row: u32,
}

impl Hit {
    /// What faiss reports when fewer than k vectors were scanned: id -1 at distance `f32::MAX`.
    pub const MISSING: Hit = Hit {
        distance: f32::MAX,
        id: -1,
        list: u32::MAX,
        row: u32::MAX,
    };

    pub fn is_found(&self) -> bool {
        self.id >= 0
    }
}

/// The k best hits so far, sorted by (distance, id) ascending like faiss's reordered max-heap.
pub(super) struct TopK {
    hits: Vec<Hit>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        Self {
            hits: vec![Hit::MISSING; k],
        }
    }

    pub fn reset(&mut self) {
        self.hits.fill(Hit::MISSING);
    }

    pub fn hits(&self) -> &[Hit] {
        &self.hits
    }

    /// faiss's rule: a candidate enters only when strictly closer than the current worst, so
    /// among equal distances the one scanned first stays.
    #[inline]
    pub fn offer(&mut self, candidate: Hit) {
        let k = self.hits.len();
        // NaN distances compare false and never enter.
        if candidate.distance < self.hits[k - 1].distance {
            self.insert(candidate);
        }
    }

    /// Like scanning in id order with `offer`, whatever the scan order: ties go to the smaller
    /// id (a flat index stores its vectors by id).
    #[inline]
    pub fn offer_by_id(&mut self, candidate: Hit) {
        let worst = self.hits[self.hits.len() - 1];
        if candidate.distance < worst.distance
            || (candidate.distance == worst.distance && candidate.id < worst.id)
        {
            self.insert(candidate);
        }
    }

    fn insert(&mut self, candidate: Hit) {
        let mut slot = self.hits.len() - 1;
        while slot > 0 {
            let before = self.hits[slot - 1];
            if before.distance < candidate.distance
                || (before.distance == candidate.distance && before.id < candidate.id)
            {
                break;
            }
            self.hits[slot] = before;
            slot -= 1;
        }
        self.hits[slot] = candidate;
    }
}

/// Queries go through the stored vectors in blocks of this many, so that each stored vector is
/// read from memory once per block while the block's queries stay in cache.
pub(super) const QUERY_BLOCK: usize = 16;

/// Offers every row of `rows` (stored in `list`, with ids `id_of(row)`) to the top-k of each
/// query of a block, stored vector by stored vector.
pub(super) fn scan_block(
    block: &[f32],
    dim: usize,
    rows: &[f32],
    list: u32,
    id_of: impl Fn(usize) -> i64,
    tops: &mut [TopK],
    ties_by_id: bool,
) {
    let mut distances = [0f32; QUERY_BLOCK];
    let distances = &mut distances[..tops.len()];
    for (row, vector) in rows.chunks_exact(dim).enumerate() {
        l2_squared_to_each(block, dim, vector, distances);
        for (top, &distance) in tops.iter_mut().zip(distances.iter()) {
            let hit = Hit {
                distance,
                id: id_of(row),
                list,
                row: row as u32,
            };
            if ties_by_id {
                top.offer_by_id(hit);
            } else {
                top.offer(hit);
            }
        }
    }
}

/// The nearest rows of `base` for each query (ids are row numbers), `k` per query, on every core.
pub(super) fn flat_search(queries: &[f32], base: &[f32], dim: usize, k: usize) -> Vec<Hit> {
    let mut out = vec![Hit::MISSING; queries.len() / dim * k];
    for_each_query_chunk(queries, dim, k, &mut out, |queries, out| {
        search_blocks(queries, dim, k, out, |block, tops| {
            scan_block(block, dim, base, 0, |row| row as i64, tops, false)
        });
    });
    out
}

/// Runs `scan` on blocks of consecutive queries, each query with a fresh top-k, into `out`.
pub(super) fn search_blocks(
    queries: &[f32],
    dim: usize,
    k: usize,
    out: &mut [Hit],
    scan: impl Fn(&[f32], &mut [TopK]),
) {
    let mut tops: Vec<TopK> = (0..QUERY_BLOCK).map(|_| TopK::new(k)).collect();
    for (block, out) in queries
        .chunks(QUERY_BLOCK * dim)
        .zip(out.chunks_mut(QUERY_BLOCK * k))
    {
        let tops = &mut tops[..block.len() / dim];
        tops.iter_mut().for_each(TopK::reset);
        scan(block, tops);
        for (top, out) in tops.iter().zip(out.chunks_mut(k)) {
            out.copy_from_slice(top.hits());
        }
    }
}

/// Splits the queries (row-major, `dim` values each, with `per_query` outputs each) over the
/// available cores in runs of whole blocks; `work` gets a run of queries and its outputs.
pub(super) fn for_each_query_chunk<T, F>(
    queries: &[f32],
    dim: usize,
    per_query: usize,
    out: &mut [T],
    work: F,
) where
    T: Send,
    F: Fn(&[f32], &mut [T]) + Sync,
{
    let blocks = (queries.len() / dim).div_ceil(QUERY_BLOCK);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(blocks)
        .max(1);
    if threads == 1 {
        work(queries, out);
        return;
    }
    let queries_per_thread = blocks.div_ceil(threads) * QUERY_BLOCK;
    std::thread::scope(|scope| {
        for (queries, out) in queries
            .chunks(queries_per_thread * dim)
            .zip(out.chunks_mut(queries_per_thread * per_query))
        {
            let work = &work;
            scope.spawn(move || work(queries, out));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
            .sum()
    }

    #[test]
    fn distance_matches_a_double_precision_sum_for_any_length() {
        for dim in [1, 3, 15, 16, 17, 40, 256, 768] {
            let a: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
            let b: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.11).cos()).collect();
            let ours = f64::from(l2_squared(&a, &b));
            let reference = reference_l2(&a, &b);
            assert!(
                (ours - reference).abs() <= reference * 1e-6,
                "dim {dim}: {ours} vs {reference}"
            );
        }
    }

    #[test]
    fn every_code_path_gives_the_same_bits() {
        for dim in [5, 16, 40, 768] {
            let queries: Vec<f32> = (0..7 * dim)
                .map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0)
                .collect();
            let vector: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.3).sin() * 20.0).collect();
            let mut each = vec![0f32; 7];
            l2_squared_to_each(&queries, dim, &vector, &mut each);
            for (query, distance) in queries.chunks(dim).zip(each) {
                let portable = l2_squared_lanes(query, &vector);
                assert_eq!(
                    l2_squared(query, &vector).to_bits(),
                    portable.to_bits(),
                    "dim {dim}"
                );
                assert_eq!(distance.to_bits(), portable.to_bits(), "dim {dim}");
            }
        }
    }

    #[test]
    fn lanes_are_summed_as_a_halving_tree() {
        // Squares 1, 1 in lanes 0, 1 and 2^24 in lane 8. The tree adds lane 8 to lane 0 first,
        // where 2^24 + 1 rounds back to 2^24, and again for lane 1: 2^24. A sequential or
        // pairwise sum adds 1 + 1 first and keeps the 2: 2^24 + 2.
        let mut a = [0f32; 16];
        a[0] = 1.0;
        a[1] = 1.0;
        a[8] = 4096.0;
        assert_eq!(l2_squared(&a, &[0f32; 16]), 16_777_216.0);
    }

    #[test]
    fn top_k_keeps_the_closest_sorted_and_the_first_of_equal_distances() {
        let mut top = TopK::new(3);
        for (id, distance) in [(5, 4.0), (2, 1.0), (9, 3.0), (7, 1.0), (1, 3.0), (3, 0.5)] {
            top.offer(Hit {
                distance,
                id,
                list: 0,
                row: 0,
            });
        }
        let ids: Vec<i64> = top.hits().iter().map(|h| h.id).collect();
        assert_eq!(ids, [3, 2, 7]);

        let mut by_id = TopK::new(2);
        for id in [8, 6, 4] {
            by_id.offer_by_id(Hit {
                distance: 1.0,
                id,
                list: 0,
                row: 0,
            });
        }
        assert_eq!(
            by_id.hits().iter().map(|h| h.id).collect::<Vec<_>>(),
            [4, 6]
        );
    }

    #[test]
    fn top_k_reports_missing_hits_as_faiss_does() {
        let mut top = TopK::new(3);
        top.offer(Hit {
            distance: 2.0,
            id: 4,
            list: 0,
            row: 0,
        });
        assert_eq!(top.hits()[0].id, 4);
        assert_eq!(top.hits()[1], Hit::MISSING);
        assert_eq!(top.hits()[2].distance, f32::MAX);
    }

    #[test]
    fn flat_search_over_threads_equals_a_sequential_scan() {
        let dim = 5;
        let base: Vec<f32> = (0..40 * dim)
            .map(|i| ((i * 7919) % 101) as f32 / 10.0)
            .collect();
        let queries: Vec<f32> = (0..37 * dim)
            .map(|i| ((i * 104_729) % 97) as f32 / 9.0)
            .collect();
        let hits = flat_search(&queries, &base, dim, 4);
        for (q, found) in queries.chunks(dim).zip(hits.chunks(4)) {
            let mut all: Vec<(f32, i64)> = base
                .chunks(dim)
                .enumerate()
                .map(|(i, v)| (l2_squared(q, v), i as i64))
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let expected: Vec<i64> = all[..4].iter().map(|h| h.1).collect();
            assert_eq!(found.iter().map(|h| h.id).collect::<Vec<_>>(), expected);
        }
    }
}
