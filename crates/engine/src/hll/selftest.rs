//! PFSELFTEST (pfselftestCommand): the dense register accessors against a plain array,
//! then 10,000,000 elements added to a dense and a sparse HLL at once, checking at each
//! power of ten that the sparse one is still sparse while small, that both estimate the
//! same, and that the error stays within six standard errors.

use super::{add, count, dense, is_dense, new_sparse, DENSE_SIZE, HDR, REGISTERS, REGISTER_MAX};
use rand::Rng;

const CYCLES: usize = 1000;
const ELEMENTS: u64 = 10_000_000;

/// Ok, or the TESTFAILED error text Redis would reply.
pub fn run(rng: &mut impl Rng, max_sparse: u64) -> Result<(), String> {
    let mut bits = vec![0u8; DENSE_SIZE];
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..CYCLES {
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = rng.gen::<u8>() & REGISTER_MAX;
            *b = r;
            dense::set(&mut bits[HDR..], i, r);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let v = dense::get(&bits[HDR..], i);
            if v != b {
                return Err(format!("TESTFAILED Register {i} should be {b} but is {v}"));
            }
        }
    }

    // The dense HLL: a header with the dense encoding around zeroed registers.
    bits.fill(0);
    bits[..4].copy_from_slice(b"HYLL");
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    let seed: u64 = rng.gen();
    for j in 1..=ELEMENTS {
        let ele = (j ^ seed).to_le_bytes();
        let (index, run) = super::pattern(&ele);
        dense::raise(&mut bits[HDR..], index, run);
        // The sparse HLL is created here and valid: it cannot be found corrupt.
        let _ = add(&mut sparse, &ele, max_sparse);
        if j != checkpoint {
            continue;
        }
        if j < max_sparse / 2 && is_dense(&sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let dense_count = count(&bits).unwrap_or(0);
        if count(&sparse) != Ok(dense_count) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(dense_count);
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}
