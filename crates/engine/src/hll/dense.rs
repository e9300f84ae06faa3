//! The dense representation: 16384 registers of 6 bits packed little-endian-first into
//! 12288 bytes after the header (register `i` starts at bit `6 * i`, counting from the
//! least significant bit of each byte).

use super::{REGISTERS, REGISTER_MAX};

/// Register `i` of the packed `regs` (the 12288 bytes after the header).
#[inline]
pub fn get(regs: &[u8], i: usize) -> u8 {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let b0 = u32::from(regs[byte]);
    // The byte past the last register is Redis's sds terminator: zero.
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u32::from(REGISTER_MAX)) as u8
}

/// Set register `i` of `regs` to `val` (at most 63).
#[inline]
pub fn set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let v = u32::from(val);
    let max = u32::from(REGISTER_MAX);
    regs[byte] = ((u32::from(regs[byte]) & !(max << fb)) | (v << fb)) as u8;
    // Registers starting at bit 0 or 2 of a byte end inside it.
    if fb > 2 {
        let fb8 = 8 - fb;
        regs[byte + 1] = ((u32::from(regs[byte + 1]) & !(max >> fb8)) | (v >> fb8)) as u8;
    }
}

/// hllDenseSet: raise register `i` to `count`; true if it was lower.
#[inline]
pub fn raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > get(regs, i) {
        set(regs, i, count);
        true
    } else {
        false
    }
}

/// Call `f` with every register in order, 4 registers (3 bytes) at a time.
#[inline]
fn each(regs: &[u8], mut f: impl FnMut(usize, u8)) {
    for (g, c) in regs.chunks_exact(3).enumerate() {
        let w = u32::from(c[0]) | u32::from(c[1]) << 8 | u32::from(c[2]) << 16;
        let i = g * 4;
        f(i, (w & 63) as u8);
        f(i + 1, ((w >> 6) & 63) as u8);
        f(i + 2, ((w >> 12) & 63) as u8);
        f(i + 3, ((w >> 18) & 63) as u8);
    }
}

/// Add the registers' values to the histogram `h`.
pub fn histogram(regs: &[u8], h: &mut [u32; 64]) {
    each(regs, |_, v| h[v as usize] += 1);
}

/// max[i] = MAX(max[i], register i).
pub fn merge_into(regs: &[u8], max: &mut [u8; REGISTERS]) {
    each(regs, |i, v| {
        if v > max[i] {
            max[i] = v;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hll::DENSE_SIZE;
    use crate::hll::HDR;

    #[test]
    fn set_get_do_not_touch_neighbours() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        let mut want = vec![0u8; REGISTERS];
        let mut x = 12345u32;
        for round in 0..3 {
            for (i, w) in want.iter_mut().enumerate() {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345 + round);
                let v = ((x >> 16) & 63) as u8;
                *w = v;
                set(&mut regs, i, v);
            }
            for (i, w) in want.iter().enumerate() {
                assert_eq!(get(&regs, i), *w, "register {i}");
            }
            let mut max = [0u8; REGISTERS];
            merge_into(&regs, &mut max);
            assert_eq!(&max[..], &want[..]);
        }
    }
}
