//! The sparse representation: after the header, a run-length sequence of opcodes
//! covering the 16384 registers in order (hyperloglog.c's format, byte for byte):
//!
//! - ZERO  `00xxxxxx`: 1 to 64 registers set to 0;
//! - XZERO `01xxxxxx yyyyyyyy`: 1 to 16384 registers set to 0 (14-bit length - 1);
//! - VAL   `1vvvvvxx`: 1 to 4 registers set to the value 1 to 32.
//!
//! Like Redis, the code reads the byte past the end of the string as a zero (the sds
//! terminator) where a truncated XZERO reaches it.

use super::{dense, Corrupt, HDR, REGISTERS};
use smallvec::SmallVec;

const XZERO_BIT: u8 = 0x40;
const VAL_BIT: u8 = 0x80;
pub const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
pub const XZERO_MAX_LEN: usize = 16384;

/// One decoded opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

impl Op {
    /// Registers covered.
    fn span(self) -> usize {
        match self {
            Op::Zero(n) | Op::XZero(n) | Op::Val(_, n) => n,
        }
    }

    /// Bytes taken.
    fn len(self) -> usize {
        match self {
            Op::XZero(_) => 2,
            _ => 1,
        }
    }
}

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == XZERO_BIT
}

fn is_val(b: u8) -> bool {
    b & VAL_BIT != 0
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    usize::from(b & 3) + 1
}

fn val_byte(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len as u8 - 1)) | VAL_BIT
}

/// The opcode at `p` of `s` (`p < s.len()`).
fn op_at(s: &[u8], p: usize) -> Op {
    let b = s[p];
    if is_zero(b) {
        Op::Zero(usize::from(b & 0x3f) + 1)
    } else if is_xzero(b) {
        let lo = s.get(p + 1).copied().unwrap_or(0);
        Op::XZero((usize::from(b & 0x3f) << 8 | usize::from(lo)) + 1)
    } else {
        Op::Val(val_value(b), val_len(b))
    }
}

/// Append the encoding of a zero run of `len` registers (ZERO up to 64, else XZERO).
fn push_zeros(seq: &mut impl Extend<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        seq.extend([(l >> 8) as u8 | XZERO_BIT, (l & 0xff) as u8]);
    } else {
        seq.extend([(len - 1) as u8]);
    }
}

/// The opcodes of the sparse HLL `s` (header included), in order.
pub fn ops(s: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut p = HDR;
    std::iter::from_fn(move || {
        if p >= s.len() {
            return None;
        }
        let op = op_at(s, p);
        p += op.len();
        Some(op)
    })
}

/// The empty HLL's opcodes: XZERO runs covering every register.
pub fn empty_ops(out: &mut Vec<u8>) {
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(XZERO_MAX_LEN);
        push_zeros(out, n);
        left -= n;
    }
}

/// hllSparseRegHisto: add the registers to `h`; Err if they do not cover exactly 16384.
pub fn histogram(s: &[u8], h: &mut [u32; 64]) -> Result<(), Corrupt> {
    let mut idx = 0usize;
    for op in ops(s) {
        match op {
            Op::Zero(n) | Op::XZero(n) => h[0] = h[0].wrapping_add(n as u32),
            Op::Val(v, n) => h[usize::from(v)] = h[usize::from(v)].wrapping_add(n as u32),
        }
        idx += op.span();
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Walk the registers of `s` as hllMerge and hllSparseToDense do: `f(index, value)` for
/// each register of a VAL run. Err as soon as a run passes the last register (the
/// reference build carries the fix of CVE-2025-32023, which fails there instead of
/// stopping), or unless the runs cover exactly 16384 registers.
fn each_val(s: &[u8], mut f: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let mut idx = 0usize;
    for op in ops(s) {
        let n = op.span();
        if idx + n > REGISTERS {
            return Err(Corrupt);
        }
        if let Op::Val(v, _) = op {
            for i in idx..idx + n {
                f(i, v);
            }
        }
        idx += n;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// max[i] = MAX(max[i], register i).
pub fn merge_into(s: &[u8], max: &mut [u8; REGISTERS]) -> Result<(), Corrupt> {
    each_val(s, |i, v| {
        if v > max[i] {
            max[i] = v;
        }
    })
}

/// hllSparseToDense: the dense string with the same header (cached cardinality
/// included) and registers.
pub fn to_dense(s: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut d = vec![0u8; super::DENSE_SIZE];
    d[..HDR].copy_from_slice(&s[..HDR]);
    d[4] = super::DENSE;
    let regs = &mut d[HDR..];
    each_val(s, |i, v| dense::set(regs, i, v))?;
    Ok(d)
}

/// What [`set`] did.
pub enum SetResult {
    /// The register already held `count` or more.
    Unchanged,
    Updated,
    /// The change needs the dense representation (a value above 32, or the string would
    /// pass `hll-sparse-max-bytes`): the caller converts and sets the register there.
    Promote,
}

/// hllSparseSet: raise register `index` to `count` (at most 32) in place, splitting the
/// opcode that covers it and merging equal neighbours as Redis does, so the bytes match.
pub fn set(s: &mut Vec<u8>, index: usize, count: u8, max_bytes: u64) -> Result<SetResult, Corrupt> {
    if count > VAL_MAX_VALUE {
        return Ok(SetResult::Promote);
    }
    // Step 1: find the opcode covering `index`.
    let mut end = s.len();
    let (mut p, mut first, mut span) = (HDR, 0usize, 0usize);
    let mut prev = None;
    let mut found = None;
    while p < end {
        let op = op_at(s, p);
        span = op.span();
        if index < first + span {
            found = Some(op);
            break;
        }
        prev = Some(p);
        p += op.len();
        first += span;
    }
    let Some(op) = found.filter(|_| span != 0) else {
        return Err(Corrupt);
    };
    let next = (p + op.len() < end).then_some(p + op.len());

    // Step 2: the trivial updates in place, else the sequence replacing the opcode.
    let simple = match op {
        Op::Val(old, _) if old >= count => return Ok(SetResult::Unchanged),
        Op::Val(_, 1) | Op::Zero(1) => true,
        _ => false,
    };
    if simple {
        s[p] = val_byte(count, 1);
    } else {
        let last = first + span - 1;
        // At most XZERO VAL XZERO: 5 bytes, on the stack.
        let mut seq = SmallVec::<[u8; 5]>::new();
        match op {
            Op::Val(cur, _) => {
                if index != first {
                    seq.push(val_byte(cur, index - first));
                }
                seq.push(val_byte(count, 1));
                if index != last {
                    seq.push(val_byte(cur, last - index));
                }
            }
            Op::Zero(_) | Op::XZero(_) => {
                if index != first {
                    push_zeros(&mut seq, index - first);
                }
                seq.push(val_byte(count, 1));
                if index != last {
                    push_zeros(&mut seq, last - index);
                }
            }
        }
        // Step 3: put the sequence in place of the opcode.
        let old_len = op.len();
        if seq.len() > old_len && (s.len() + seq.len() - old_len) as u64 > max_bytes {
            return Ok(SetResult::Promote);
        }
        let new_len = s.len() + seq.len() - old_len;
        if let Some(next) = next {
            s.splice(p..next, seq.iter().copied());
        } else {
            // The opcode was the last one (possibly an XZERO cut short by the end of the
            // string): the sequence ends the string.
            s.truncate(p);
            s.extend_from_slice(&seq);
            s.truncate(new_len);
        }
        end = s.len();
    }

    // Step 4: merge adjacent VAL opcodes of equal value, scanning up to 5 opcodes from
    // the one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(s[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(s[p + 1]));
            let len = val_len(b) + val_len(s[p + 1]);
            if v1 == v2 && len <= VAL_MAX_LEN {
                s[p + 1] = val_byte(v1, len);
                s.remove(p);
                end -= 1;
                continue;
            }
        }
        p += 1;
    }
    super::invalidate_cache(s);
    Ok(SetResult::Updated)
}

/// PFDEBUG DECODE's text: `z:N`, `Z:N` and `v:VALUE,N` separated by spaces.
pub fn decode(s: &[u8]) -> String {
    let words: Vec<String> = ops(s)
        .map(|op| match op {
            Op::Zero(n) => format!("z:{n}"),
            Op::XZero(n) => format!("Z:{n}"),
            Op::Val(v, n) => format!("v:{v},{n}"),
        })
        .collect();
    words.join(" ")
}
