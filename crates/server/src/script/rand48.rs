//! Redis's `math.random` generator (rand.c: the 48-bit linear congruential generator of
//! lrand48), one sequence for the whole server as in Redis 7.0 (not reseeded per script).

use parking_lot::Mutex;

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// `X0 X1 X2` of rand.c: 0x1234ABCD330E.
const INITIAL: u64 = 0x1234_ABCD_330E;

static STATE: Mutex<u64> = Mutex::new(INITIAL);

/// redisLrand48: the next value, 0 ..= 2^31 - 1.
pub fn next() -> i32 {
    let mut x = STATE.lock();
    *x = (A.wrapping_mul(*x).wrapping_add(C)) & MASK;
    (*x >> 17) as i32
}

/// redisSrand48.
pub fn seed(seed: i32) {
    let s = seed as u32 as u64;
    *STATE.lock() = (s << 16) | 0x330E;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C generator, step by step as rand.c computes it, for comparison.
    fn reference(x: &mut [u32; 3]) -> i32 {
        let (a, c) = ([0xE66Du32, 0xDEEC, 0x5], 0xBu32);
        let v = (x[2] as u64) << 32 | (x[1] as u64) << 16 | x[0] as u64;
        let a64 = (a[2] as u64) << 32 | (a[1] as u64) << 16 | a[0] as u64;
        let n = (a64.wrapping_mul(v).wrapping_add(c as u64)) & MASK;
        x[0] = (n & 0xFFFF) as u32;
        x[1] = ((n >> 16) & 0xFFFF) as u32;
        x[2] = ((n >> 32) & 0xFFFF) as u32;
        (((x[2] as i32) << 15) as i64 + (x[1] >> 1) as i64) as i32
    }

    #[test]
    fn matches_the_c_generator() {
        seed(0x1234_5678);
        let mut x = [0x330E, 0x5678, 0x1234];
        for _ in 0..1000 {
            assert_eq!(next(), reference(&mut x));
        }
    }
}
