//! The cardinality estimate from a register histogram (hllCount: Otmar Ertl's improved
//! estimator, "New cardinality estimation algorithms for HyperLogLog sketches",
//! arXiv:1702.01284), computed in the same order as Redis so results are identical.

use super::{Q, REGISTERS};

/// 0.5 / ln(2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        // Redis writes pow(1 - x, 2), which C compilers emit as this product.
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// The estimated cardinality for a histogram of register values (index = value).
pub fn cardinality(h: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(h[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(h[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(h[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_zero() {
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32;
        assert_eq!(cardinality(&h), 0);
    }

    #[test]
    fn one_register_set_is_one() {
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32 - 1;
        h[1] = 1;
        assert_eq!(cardinality(&h), 1);
    }
}
