//! HyperLogLog values in Redis 7.0's format, byte for byte (hyperloglog.c): a string
//! starting with a 16-byte header (`HYLL`, the encoding, three zero bytes, the cached
//! cardinality as 8 little-endian bytes whose top bit marks it stale) followed by either
//! the sparse opcodes ([`sparse`]) or 16384 dense 6-bit registers ([`dense`]).
//!
//! The functions work on the string's bytes as the server stores them, so `GET` of an
//! HLL, DUMP/RESTORE and SET of bytes written by Redis all see Redis's representation.

pub mod dense;
mod estimate;
mod murmur;
pub mod selftest;
pub mod sparse;

pub use murmur::{murmur64a, pattern};

/// Bits of the hash used to pick the register.
pub const P: u32 = 14;
/// Bits left for the run of zeros.
pub const Q: usize = 64 - P as usize;
pub const REGISTERS: usize = 1 << P;
pub const REGISTER_MAX: u8 = 63;
/// Header bytes.
pub const HDR: usize = 16;
/// Length of a dense HLL string.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * 6).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;

/// The representation was found inconsistent (Redis's `INVALIDOBJ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// isHLLObjectOrReply's checks on the bytes: long enough for the header, the magic, a
/// known encoding, and the exact length of a dense one.
pub fn is_valid(s: &[u8]) -> bool {
    s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

/// Is the (valid) HLL `s` dense?
pub fn is_dense(s: &[u8]) -> bool {
    s[4] == DENSE
}

/// A new, empty HLL (sparse, cached cardinality 0), as createHLLObject makes it.
pub fn new_sparse() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.resize(HDR, 0);
    sparse::empty_ops(&mut s);
    s
}

/// The cached cardinality, if valid.
pub fn cached(s: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(s[8..HDR].try_into().expect("8 bytes"));
    (card >> 63 == 0).then_some(card)
}

/// Store `card` as the cached cardinality.
pub fn set_cache(s: &mut [u8], card: u64) {
    s[8..HDR].copy_from_slice(&card.to_le_bytes());
}

/// Mark the cached cardinality stale.
pub fn invalidate_cache(s: &mut [u8]) {
    s[HDR - 1] |= 0x80;
}

/// hllSparseToDense in place: Ok(true) if `s` was sparse and is now dense.
pub fn to_dense(s: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if is_dense(s) {
        return Ok(false);
    }
    *s = sparse::to_dense(s)?;
    Ok(true)
}

/// hllDenseSet / hllSparseSet: raise register `index` to `count`, promoting a sparse HLL
/// to dense where Redis does (`max_sparse` is `hll-sparse-max-bytes`). Ok(true) if the
/// register changed (the cached cardinality is then stale for a sparse HLL; a dense
/// caller invalidates it).
pub fn raise(s: &mut Vec<u8>, index: usize, count: u8, max_sparse: u64) -> Result<bool, Corrupt> {
    if is_dense(s) {
        return Ok(dense::raise(&mut s[HDR..], index, count));
    }
    match sparse::set(s, index, count, max_sparse)? {
        sparse::SetResult::Unchanged => Ok(false),
        sparse::SetResult::Updated => Ok(true),
        sparse::SetResult::Promote => {
            to_dense(s)?;
            // A promotion always raises the register (Redis asserts it).
            Ok(dense::raise(&mut s[HDR..], index, count))
        }
    }
}

/// hllAdd: add `ele`; Ok(true) if a register changed.
pub fn add(s: &mut Vec<u8>, ele: &[u8], max_sparse: u64) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    raise(s, index, count, max_sparse)
}

/// hllCount of one (valid) HLL: Err for a sparse one whose runs do not cover exactly
/// the 16384 registers.
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut h = [0u32; 64];
    if is_dense(s) {
        dense::histogram(&s[HDR..], &mut h);
    } else {
        sparse::histogram(s, &mut h)?;
    }
    Ok(estimate::cardinality(&h))
}

/// One byte per register: the union of several HLLs (PFCOUNT of several keys, PFMERGE).
pub struct Registers(Box<[u8; REGISTERS]>);

impl Default for Registers {
    fn default() -> Self {
        Registers(Box::new([0u8; REGISTERS]))
    }
}

impl Registers {
    /// hllMerge: take the maximum with the registers of the (valid) HLL `s`.
    pub fn merge(&mut self, s: &[u8]) -> Result<(), Corrupt> {
        if is_dense(s) {
            dense::merge_into(&s[HDR..], &mut self.0);
            Ok(())
        } else {
            sparse::merge_into(s, &mut self.0)
        }
    }

    /// The estimated cardinality of the union.
    pub fn count(&self) -> u64 {
        let mut h = [0u32; 64];
        // Eight registers at a time: runs of zero registers are common.
        for chunk in self.0.chunks_exact(8) {
            if u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) == 0 {
                h[0] += 8;
            } else {
                for &v in chunk {
                    h[usize::from(v)] += 1;
                }
            }
        }
        estimate::cardinality(&h)
    }

    /// The non-zero registers, in order: (index, value).
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u8)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0)
            .map(|(i, &v)| (i, v))
    }
}

/// Every register of a dense HLL (PFDEBUG GETREG).
pub fn dense_registers(s: &[u8]) -> impl Iterator<Item = u8> + '_ {
    (0..REGISTERS).map(|i| dense::get(&s[HDR..], i))
}

#[cfg(test)]
mod tests;
