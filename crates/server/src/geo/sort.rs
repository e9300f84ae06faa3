//! The two sorts Redis's geo searches use, reproduced so that points at equal distances
//! (several members at one position) come out in Redis's order: glibc 2.36's `qsort` (a
//! top-down merge sort, stable) when every result is returned, and Redis's `pqsort` (a
//! Bentley-McIlroy quicksort that only sorts the part holding the wanted ranks) for
//! COUNT. Comparators answer like C's: negative, zero or positive.

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

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Redis's pqsort: sorts `v` enough that ranks `lrange..=rrange` hold what a full sort
/// would put there, in the order Redis's implementation leaves them.
pub fn pqsort<T>(v: &mut [T], lrange: usize, rrange: usize, cmp: &impl Fn(&T, &T) -> i32) {
    pqsort_at(v, 0, v.len(), lrange, rrange, cmp);
}

/// _pqsort on v[a..a + n]; the wanted ranks are absolute.
fn pqsort_at<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    lrange: usize,
    rrange: usize,
    cmp: &impl Fn(&T, &T) -> i32,
) {
    // Does the part [a, a + n) hold any of the wanted ranks?
    let wanted =
        |a: usize, n: usize| !((lrange < a && rrange < a) || (lrange >= a + n && rrange >= a + n));
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[a]);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[a]);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && wanted(a, r) {
            pqsort_at(v, a, r, lrange, rrange, cmp);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if wanted(a, n) {
                continue;
            }
        }
        return;
    }
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

    #[test]
    fn pqsort_sorts_the_wanted_ranks() {
        let mut seed = 12345u64;
        for len in [1usize, 5, 7, 8, 40, 41, 100, 500] {
            for count in [1usize, 3, 10, 50] {
                let count = count.min(len);
                let mut v: Vec<(i32, u32)> = (0..len as u32)
                    .map(|i| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (((seed >> 33) % 20) as i32, i)
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort_by_key(|p| p.0);
                pqsort(&mut v, 0, count - 1, &by_key);
                let got: Vec<i32> = v[..count].iter().map(|p| p.0).collect();
                let want: Vec<i32> = sorted[..count].iter().map(|p| p.0).collect();
                assert_eq!(got, want, "len {len} count {count}");
            }
        }
    }
}
