//! How SORT orders its elements (sort.c's sortCompare) and Redis's partial quicksort for
//! SORT ... BY ... LIMIT (pqsort.c), ported step for step: which of several equal elements
//! ends up where is part of the reply, so the algorithm has to be Redis's own. Without a
//! LIMIT (or BY), Redis calls glibc's qsort, a merge sort: stable, like `sort_by`.

use super::score::c_str;
use std::cmp::Ordering;

/// The comparison a SORT call uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// By weight; equal weights by the elements' bytes.
    Numeric,
    /// ALPHA: the elements (BY: the looked-up values, absent ones first, equal ones left
    /// as they are) compared as C strings with `strcoll` (Skein: the C/C.UTF-8 locale's
    /// byte order), or whole and byte by byte when the result is stored.
    Alpha { by: bool, store: bool },
}

/// One element to sort: its bytes (a range of the elements' buffer), and its numeric
/// weight or its ALPHA BY value (a range of the values' buffer).
#[derive(Clone, Copy, Debug)]
pub struct Item {
    pub elem: (usize, usize),
    pub score: f64,
    pub by: Option<(usize, usize)>,
    /// The element is an integer and `score` is already its weight.
    pub int: bool,
}

/// The bytes of a range of a buffer.
#[inline]
pub fn bytes(buf: &[u8], (at, len): (usize, usize)) -> &[u8] {
    &buf[at..at + len]
}

impl Compare {
    /// sortCompare (before DESC turns it round).
    pub fn cmp(self, elems: &[u8], vals: &[u8], a: &Item, b: &Item) -> Ordering {
        match self {
            Compare::Numeric => {
                if a.score > b.score {
                    Ordering::Greater
                } else if a.score < b.score {
                    Ordering::Less
                } else {
                    bytes(elems, a.elem).cmp(bytes(elems, b.elem))
                }
            }
            Compare::Alpha { by: true, store } => match (a.by, b.by) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => text_cmp(bytes(vals, x), bytes(vals, y), store),
            },
            Compare::Alpha { by: false, store } => {
                text_cmp(bytes(elems, a.elem), bytes(elems, b.elem), store)
            }
        }
    }
}

/// compareStringObjects (whole, binary) or strcoll (C strings).
fn text_cmp(a: &[u8], b: &[u8], binary: bool) -> Ordering {
    if binary {
        a.cmp(b)
    } else {
        c_str(a).cmp(c_str(b))
    }
}

/// Redis's pqsort: sort `v` enough that positions `lrange..=rrange` (rrange may be
/// lrange - 1: an empty range) hold what a full sort puts there.
pub fn pqsort<T>(v: &mut [T], lrange: i64, rrange: i64, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    partial(v, 0, v.len(), lrange, rrange, cmp)
}

/// Is the region `[l, l + n)` entirely before or entirely after the wanted range?
fn outside(l: usize, n: usize, lrange: i64, rrange: i64) -> bool {
    let (l, r) = (l as i64, (l + n) as i64);
    (lrange < l && rrange < l) || (lrange >= r && rrange >= r)
}

fn med3<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

/// Swap the `n` elements from `a` with the `n` from `b`, pair by pair.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// _pqsort over `v[a..a + n]` (Bentley & McIlroy's quicksort, recursing only into the
/// parts that overlap the wanted range).
fn partial<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    lrange: i64,
    rrange: i64,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]).is_gt() {
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
                let c = cmp(&v[pb], &v[a]);
                if c.is_gt() {
                    break;
                }
                if c.is_eq() {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c.is_lt() {
                    break;
                }
                if c.is_eq() {
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
        if r > 1 && !outside(a, r, lrange, rrange) {
            partial(v, a, r, lrange, rrange, cmp);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if outside(a, n, lrange, rrange) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pqsort;

    /// A small deterministic generator (no dependency for a test).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn the_wanted_range_is_sorted() {
        let mut seed = 7;
        for n in [0usize, 1, 2, 6, 7, 8, 40, 41, 100, 500] {
            for _ in 0..20 {
                let v: Vec<u64> = (0..n).map(|_| lcg(&mut seed) % 50).collect();
                let mut sorted = v.clone();
                sorted.sort();
                let l = if n == 0 {
                    0
                } else {
                    (lcg(&mut seed) as usize) % n
                };
                let r = if n == 0 {
                    -1
                } else {
                    (l + lcg(&mut seed) as usize % (n - l)) as i64
                };
                let mut w = v.clone();
                pqsort(&mut w, l as i64, r, &mut |a, b| a.cmp(b));
                if n > 0 {
                    assert_eq!(&w[l..=r as usize], &sorted[l..=r as usize]);
                }
                let mut all = v.clone();
                all.sort();
                assert_eq!(all, sorted);
            }
        }
    }
}
