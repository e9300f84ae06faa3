//! Representation tests: sparse and dense agree, sparse edits keep Redis's canonical
//! form, corruption is reported.

use super::*;
use sparse::Op;

fn ops(s: &[u8]) -> Vec<Op> {
    sparse::ops(s).collect()
}

#[test]
fn empty_hll_bytes() {
    let s = new_sparse();
    assert_eq!(&s[..], b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff");
    assert!(is_valid(&s));
    assert_eq!(cached(&s), Some(0));
    assert_eq!(count(&s), Ok(0));
}

#[test]
fn validity_checks() {
    assert!(!is_valid(b"HYLL"));
    assert!(!is_valid(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0\x7f\xff"));
    assert!(!is_valid(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0\x7f\xff"));
    // A dense header on a sparse-sized string.
    assert!(!is_valid(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0\x7f\xff"));
    let mut d = new_sparse();
    to_dense(&mut d).unwrap();
    assert_eq!(d.len(), DENSE_SIZE);
    assert!(is_valid(&d));
}

#[test]
fn sparse_and_dense_agree() {
    let mut s = new_sparse();
    let mut d = new_sparse();
    to_dense(&mut d).unwrap();
    for i in 0..2000u32 {
        let e = format!("element:{i}");
        let a = add(&mut s, e.as_bytes(), 1 << 20).unwrap();
        let b = add(&mut d, e.as_bytes(), 1 << 20).unwrap();
        assert_eq!(a, b, "element {i}");
        if i % 97 == 0 {
            assert_eq!(count(&s), count(&d));
        }
    }
    // Registers the same, register by register.
    let mut sd = s.clone();
    to_dense(&mut sd).unwrap();
    assert_eq!(sd[HDR..], d[HDR..]);
    let covered: usize = ops(&s)
        .iter()
        .map(|o| match *o {
            Op::Zero(n) | Op::XZero(n) | Op::Val(_, n) => n,
        })
        .sum();
    assert_eq!(covered, REGISTERS);
}

#[test]
fn sparse_stays_canonical() {
    // No two adjacent VAL opcodes that could have been merged within the scanned
    // window, and each zero run uses ZERO up to 64 registers.
    let mut s = new_sparse();
    for index in [0usize, 1, 2, 3, 5, 4, 64, 65, 16383, 16382, 200] {
        raise(&mut s, index, 3, 1 << 20).unwrap();
    }
    assert_eq!(
        ops(&s),
        vec![
            Op::Val(3, 4),
            Op::Val(3, 2),
            Op::Zero(58),
            Op::Val(3, 2),
            Op::XZero(134),
            Op::Val(3, 1),
            Op::XZero(16181),
            Op::Val(3, 2),
        ]
    );
    assert_eq!(cached(&s), None);
}

#[test]
fn promotion_by_value_and_size() {
    let mut s = new_sparse();
    assert!(raise(&mut s, 10, 33, 3000).unwrap());
    assert!(is_dense(&s));
    assert_eq!(dense::get(&s[HDR..], 10), 33);

    let mut s = new_sparse();
    let mut i = 0;
    while !is_dense(&s) {
        raise(&mut s, i * 3, 1, 40).unwrap();
        assert!(s.len() <= 40 || is_dense(&s));
        i += 1;
    }
    assert_eq!(dense::get(&s[HDR..], (i - 1) * 3), 1);
}

#[test]
fn corrupt_sparse() {
    // Runs covering fewer than 16384 registers.
    let mut s = new_sparse();
    s.truncate(HDR);
    s.push(0x7f);
    s.push(0x00);
    assert_eq!(count(&s), Err(Corrupt));
    assert_eq!(Registers::default().merge(&s), Err(Corrupt));
    assert_eq!(to_dense(&mut s.clone()), Err(Corrupt));
    // Setting past the covered registers fails; inside them works.
    assert_eq!(raise(&mut s.clone(), 16200, 1, 3000), Err(Corrupt));
    assert_eq!(raise(&mut s, 100, 1, 3000), Ok(true));
}

#[test]
fn union_counts() {
    let mut a = new_sparse();
    let mut b = new_sparse();
    for i in 0..500u32 {
        add(&mut a, &i.to_le_bytes(), 3000).unwrap();
        add(&mut b, &(i + 250).to_le_bytes(), 3000).unwrap();
    }
    let mut r = Registers::default();
    r.merge(&a).unwrap();
    r.merge(&b).unwrap();
    let n = r.count();
    assert!((700..800).contains(&n), "{n}");
}
