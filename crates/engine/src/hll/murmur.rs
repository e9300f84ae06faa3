//! MurmurHash64A (Redis's endian-neutral variant) and the element → (register, run)
//! mapping of hyperloglog.c's hllPatLen.

use super::{P, Q, REGISTERS};

/// Redis's seed for HyperLogLog element hashes.
const SEED: u64 = 0xadc8_3b19;

/// MurmurHash64A of `key` with `seed`, reading 8-byte blocks little-endian as Redis does
/// on every architecture.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for b in &mut blocks {
        let mut k = u64::from_le_bytes(b.try_into().expect("8-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `ele` hashes to and the length of its `000..1` run (1 to Q + 1).
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The sentinel bit makes the run end by bit Q at the latest.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_bounded() {
        for i in 0..10_000u32 {
            let (index, run) = pattern(&i.to_le_bytes());
            assert!(index < REGISTERS);
            assert!((1..=(Q as u8 + 1)).contains(&run));
        }
    }

    #[test]
    fn tail_lengths_differ() {
        // Every tail length takes its own path; equal prefixes must still hash apart.
        let data = b"abcdefghijklmnop";
        let hashes: Vec<u64> = (0..=16).map(|n| murmur64a(&data[..n], SEED)).collect();
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
