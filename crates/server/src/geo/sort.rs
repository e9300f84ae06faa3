//! glibc 2.36's `qsort`, which Redis's geo searches sort with when they return every
//! result: a top-down merge sort, ported step by step rather than replaced by `sort_by`
//! because a comparison of distances is not a total order once a distance is NaN (nearly
//! antipodal points), and then only the same steps give the same order (and Rust's sorts
//! may panic). Comparators answer like C's: negative, zero or positive. (COUNT uses
//! Redis's pqsort: `cmd::sort::order::pqsort`.)

/// glibc's qsort (msort_with_tmp): split in halves (the first one the smaller), sort
/// each, merge taking from the first half while `cmp(first, second) <= 0`.
pub fn qsort<T: Clone>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    qsort(&mut v[..n1], cmp);
    qsort(&mut v[n1..], cmp);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) <= 0 {
            merged.push(v[i].clone());
            i += 1;
        } else {
            merged.push(v[j].clone());
            j += 1;
        }
    }
    merged.extend_from_slice(&v[i..n1]);
    let filled = merged.len();
    v[..filled].clone_from_slice(&merged);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_key(a: &(i32, u32), b: &(i32, u32)) -> i32 {
        if a.0 > b.0 {
            1
        } else if a.0 == b.0 {
            0
        } else {
            -1
        }
    }

    #[test]
    fn qsort_is_stable() {
        let mut v: Vec<(i32, u32)> = (0..100).map(|i| ((i * 7 % 5) as i32, i)).collect();
        qsort(&mut v, &by_key);
        let mut w: Vec<(i32, u32)> = (0..100).map(|i| ((i * 7 % 5) as i32, i)).collect();
        w.sort_by_key(|p| p.0);
        assert_eq!(v, w);
    }
}
