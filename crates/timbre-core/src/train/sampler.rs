//! RVC's `DistributedBucketSampler` (rvc_next 0.2.16 `engine/train/dataset.py`) and the
//! file-list shuffle before it (`filelist.py`), with the generators they draw from reproduced,
//! so an epoch's batches are the reference's for the same seed, epoch and rank: the file list
//! is shuffled by Python's `random.Random(seed)`, and each epoch's batches by a torch CPU
//! generator seeded with the epoch number, the same on every rank of a data-parallel run.

/// The sampler's bucket boundaries (`loop.py`): an item of estimated length `l` falls in the
/// bucket `b` with `BOUNDARIES[b] < l <= BOUNDARIES[b + 1]`; the others are left out.
pub const BOUNDARIES: [u64; 9] = [100, 200, 300, 400, 500, 600, 700, 800, 900];

/// The reference's estimate of an item's length from its gt wav's size in bytes, as
/// `TextAudioLoader._filter` computes it (`size // (3 * hop)`, whatever the sample format).
pub fn estimated_length(file_size: u64, hop_length: i64) -> u64 {
    file_size / (3 * hop_length.unsigned_abs())
}

/// The bucket an estimated length falls in; None outside (100, 900], where the sampler leaves
/// the item out.
pub fn bucket_of(length: u64) -> Option<usize> {
    BOUNDARIES
        .windows(2)
        .position(|pair| pair[0] < length && length <= pair[1])
}

/// `filelist.py`'s `random.Random(seed).shuffle(lines)`.
pub fn shuffle_file_list<T>(lines: &mut [T], seed: u64) {
    let mut rng = Mt19937::python(seed);
    for i in (1..lines.len()).rev() {
        let j = rng.python_below(i as u64 + 1);
        lines.swap(i, j as usize);
    }
}

/// One rank's share of an epoch: `rank` of `replicas` data-parallel processes (0 of 1 alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This process's rank, from 0.
    pub rank: usize,
    /// The processes training together.
    pub replicas: usize,
}

impl Shard {
    /// One process training alone.
    pub const ALONE: Shard = Shard {
        rank: 0,
        replicas: 1,
    };
}

/// `DistributedBucketSampler.__iter__` with shuffling, for `set_epoch(epoch)`: this shard's
/// batches of indices into `lengths` (the items in file-list order). Every rank gets as many
/// batches, and step k's batches of all ranks together are the combined batch of that step.
pub fn bucket_batches(
    lengths: &[u64],
    batch_size: usize,
    epoch: u64,
    shard: Shard,
) -> Vec<Vec<usize>> {
    assert!(batch_size > 0, "a batch holds at least one item");
    assert!(shard.rank < shard.replicas, "rank {shard:?} out of range");
    let mut buckets = vec![Vec::new(); BOUNDARIES.len() - 1];
    for (index, &length) in lengths.iter().enumerate() {
        if let Some(bucket) = bucket_of(length) {
            buckets[bucket].push(index);
        }
    }
    buckets.retain(|bucket| !bucket.is_empty());

    let mut rng = Mt19937::torch(epoch);
    let orders: Vec<Vec<usize>> = buckets
        .iter()
        .map(|bucket| rng.torch_randperm(bucket.len()))
        .collect();
    let total_batch = batch_size * shard.replicas;
    let mut batches = Vec::new();
    for (bucket, order) in buckets.iter().zip(&orders) {
        // Each bucket is filled up to a whole number of combined batches by repeating its
        // order; rank r takes every `replicas`-th item from the r-th.
        let padding = (total_batch - bucket.len() % total_batch) % total_batch;
        let ids: Vec<usize> = order
            .iter()
            .cycle()
            .take(bucket.len() + padding)
            .skip(shard.rank)
            .step_by(shard.replicas)
            .map(|&i| bucket[i])
            .collect();
        batches.extend(ids.chunks(batch_size).map(<[usize]>::to_vec));
    }
    let order = rng.torch_randperm(batches.len());
    order.into_iter().map(|i| batches[i].clone()).collect()
}

const STATE: usize = 624;
const SHIFT: usize = 397;

/// MT19937, the generator behind both torch's CPU generator and Python's `random`.
struct Mt19937 {
    state: [u32; STATE],
    next: usize,
}

impl Mt19937 {
    fn seeded(seed: u32) -> Self {
        let mut state = [0u32; STATE];
        state[0] = seed;
        for i in 1..STATE {
            let previous = state[i - 1];
            state[i] = 1812433253u32
                .wrapping_mul(previous ^ (previous >> 30))
                .wrapping_add(i as u32);
        }
        Self { state, next: STATE }
    }

    /// `torch.Generator().manual_seed(seed)`: the low 32 bits seed it.
    fn torch(seed: u64) -> Self {
        Self::seeded(seed as u32)
    }

    /// `random.Random(seed)` for a non-negative integer: `init_by_array` of its 32-bit words.
    fn python(seed: u64) -> Self {
        let key: Vec<u32> = if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        let mut rng = Self::seeded(19650218);
        let state = &mut rng.state;
        let (mut i, mut j) = (1, 0);
        for _ in 0..STATE.max(key.len()) {
            let previous = state[i - 1];
            state[i] = (state[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1664525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= STATE {
                state[0] = state[STATE - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..STATE - 1 {
            let previous = state[i - 1];
            state[i] = (state[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1566083941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= STATE {
                state[0] = state[STATE - 1];
                i = 1;
            }
        }
        state[0] = 0x8000_0000;
        rng
    }

    fn next_u32(&mut self) -> u32 {
        if self.next >= STATE {
            for k in 0..STATE {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % STATE] & 0x7fff_ffff);
                let mix = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.state[k] = self.state[(k + SHIFT) % STATE] ^ (y >> 1) ^ mix;
            }
            self.next = 0;
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `torch.randperm(n, generator=g)` on the CPU (its path for n below 2^32 / 20).
    fn torch_randperm(&mut self, n: usize) -> Vec<usize> {
        let mut permutation: Vec<usize> = (0..n).collect();
        for i in 0..n.saturating_sub(1) {
            let z = self.next_u32() as usize % (n - i);
            permutation.swap(i, i + z);
        }
        permutation
    }

    /// Python's `_randbelow_with_getrandbits(n)` for n below 2^32.
    fn python_below(&mut self, n: u64) -> u64 {
        let bits = 64 - n.leading_zeros();
        loop {
            let r = u64::from(self.next_u32() >> (32 - bits));
            if r < n {
                return r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_boundaries() {
        assert_eq!(bucket_of(100), None);
        assert_eq!(bucket_of(101), Some(0));
        assert_eq!(bucket_of(200), Some(0));
        assert_eq!(bucket_of(201), Some(1));
        assert_eq!(bucket_of(900), Some(7));
        assert_eq!(bucket_of(901), None);
    }

    // Printed by torch 2.11 (`torch.randperm(n, generator=torch.Generator().manual_seed(s))`)
    // and CPython 3.11 (`random.Random(s).shuffle(list(range(n)))`).
    const TORCH_RANDPERM_SEED_1_N_8: [usize; 8] = [5, 4, 2, 6, 7, 3, 1, 0];
    const PYTHON_SHUFFLE_SEED_42_N_10: [usize; 10] = [7, 3, 2, 8, 5, 6, 9, 4, 0, 1];
    const PYTHON_SHUFFLE_SEED_2_40_PLUS_3_N_10: [usize; 10] = [8, 5, 6, 7, 9, 2, 4, 1, 0, 3];

    #[test]
    fn generators_match_torch_and_python() {
        let mut torch = Mt19937::torch(1);
        assert_eq!(torch.torch_randperm(8), TORCH_RANDPERM_SEED_1_N_8);
        let mut list: Vec<usize> = (0..10).collect();
        shuffle_file_list(&mut list, 42);
        assert_eq!(list, PYTHON_SHUFFLE_SEED_42_N_10);
        let mut list: Vec<usize> = (0..10).collect();
        shuffle_file_list(&mut list, (1 << 40) + 3);
        assert_eq!(list, PYTHON_SHUFFLE_SEED_2_40_PLUS_3_N_10);
    }

    #[test]
    fn every_bucketed_item_appears_and_batches_fill_up() {
        let lengths = [150, 160, 170, 450, 50, 460, 470, 480, 490, 2000];
        let batches = bucket_batches(&lengths, 2, 3, Shard::ALONE);
        assert!(batches.iter().all(|batch| batch.len() == 2));
        let mut seen: Vec<usize> = batches.concat();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, [0, 1, 2, 3, 5, 6, 7, 8]);
        // 3 short items fill 2 batches, 5 long ones 3: never mixed.
        assert_eq!(batches.len(), 5);
        for batch in &batches {
            assert_eq!(bucket_of(lengths[batch[0]]), bucket_of(lengths[batch[1]]));
        }
    }

    #[test]
    fn ranks_share_each_epoch_without_overlap() {
        let lengths: Vec<u64> = (0..23).map(|i| 150 + 40 * (i % 9)).collect();
        let shard = |rank| Shard { rank, replicas: 2 };
        let (first, second) = (
            bucket_batches(&lengths, 3, 5, shard(0)),
            bucket_batches(&lengths, 3, 5, shard(1)),
        );
        assert_eq!(first.len(), second.len());
        let combined = bucket_batches(&lengths, 6, 5, Shard::ALONE);
        assert_eq!(first.len(), combined.len());
        for (a, b) in first.iter().zip(&second) {
            assert_eq!(a.len(), 3);
            assert_eq!(bucket_of(lengths[a[0]]), bucket_of(lengths[b[0]]));
        }
        // Over an epoch the ranks see every item, as the one process does at the combined size.
        let mut seen: Vec<usize> = first.concat().into_iter().chain(second.concat()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, (0..23).collect::<Vec<_>>());
    }
}
