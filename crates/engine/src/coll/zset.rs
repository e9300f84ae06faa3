//! The sorted-set type: a listpack of member/score pairs in score order while small, a
//! skiplist (ordered by score then member, with ranks) plus a member index beyond
//! `zset-max-listpack-entries` members or a member longer than `zset-max-listpack-value`.
//!
//! Ranks are 0-based in ascending order everywhere here; the commands turn reverse ranges
//! into ascending ranks.

use super::listpack::{Item, Listpack};
pub use super::zset_skiplist::SkipList;
use super::Limits;

#[derive(Clone, Debug, PartialEq)]
pub enum ZSet {
    Listpack(Listpack),
    Skiplist(Box<SkipList>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Listpack(Listpack::new())
    }
}

/// A score as Redis's zzlInsertAt writes it into a listpack: an integer when double2ll
/// takes it (|v| <= LLONG_MAX/2 and integral; -0 becomes 0), else d2string's `%.17g`
/// (`inf`, `-inf`).
pub fn score_text(v: f64, buf: &mut String) {
    use std::fmt::Write;
    buf.clear();
    let lim = (i64::MAX / 2) as f64;
    if v.is_infinite() {
        buf.push_str(if v > 0.0 { "inf" } else { "-inf" });
    } else if (-lim..=lim).contains(&v) && (v as i64) as f64 == v {
        let _ = write!(buf, "{}", v as i64);
    } else {
        let mut b = [0u8; 32];
        match g17_fast(v, &mut b) {
            Some(t) => buf.push_str(std::str::from_utf8(t).unwrap_or_default()),
            None => buf.push_str(&g17(v)),
        }
    }
}

/// `%.17g` of a finite, non-zero, normal double whose digits can be found exactly in
/// 128-bit arithmetic (roughly 1e-6 <= |v| < 2^75: scores as they usually are), as C's
/// printf writes it (round half to even on exact ties); None for the others, which go to
/// the general formatting. Much faster than the general exact formatting.
pub fn g17_fast(v: f64, out: &mut [u8; 32]) -> Option<&[u8]> {
    if !v.is_normal() {
        return None;
    }
    let bits = v.to_bits();
    let m = u128::from((bits & ((1u64 << 52) - 1)) | (1u64 << 52));
    let e = ((bits >> 52) & 0x7ff) as i32 - 1075; // |v| = m * 2^e
    let mut d = v.abs().log10().floor() as i32; // decimal exponent, maybe off by one
    let (q, x) = loop {
        // q = round(|v| * 10^(16 - d)), wanted with exactly 17 digits.
        let p = 16 - d;
        let (mut num, mut den) = (m, 1u128);
        if p >= 0 {
            num = num.checked_mul(10u128.checked_pow(p as u32)?)?;
        } else {
            den = 10u128.checked_pow((-p) as u32)?;
        }
        if e >= 0 {
            if num.leading_zeros() <= e as u32 {
                return None;
            }
            num <<= e;
        } else {
            if den.leading_zeros() <= (-e) as u32 {
                return None;
            }
            den <<= -e;
        }
        let (exact, r) = (num / den, num % den);
        // The exponent is the exact value's, before rounding: one just below a power of
        // ten (the double nearest 1e24, say) has its digits one place down, and rounds to
        // 17 nines and an 8 there, not to a 1 and zeros here.
        if exact >= 100_000_000_000_000_000 {
            d += 1; // the estimate was low
            continue;
        }
        if exact < 10_000_000_000_000_000 {
            d -= 1; // the estimate was high
            continue;
        }
        let mut q = exact;
        if 2 * r > den || (2 * r == den && q % 2 == 1) {
            q += 1;
        }
        if q == 100_000_000_000_000_000 {
            break (q / 10, d + 1); // rounding carried into an 18th digit: 10^17
        }
        break (q, d);
    };
    let mut digits = [0u8; 17];
    let mut t = q;
    for c in digits.iter_mut().rev() {
        *c = b'0' + (t % 10) as u8;
        t /= 10;
    }
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    if v < 0.0 {
        put(b'-');
    }
    let sig = 17 - digits.iter().rev().take_while(|&&c| c == b'0').count();
    if !(-4..17).contains(&x) {
        put(digits[0]);
        if sig > 1 {
            put(b'.');
            digits[1..sig].iter().for_each(|&c| put(c));
        }
        put(b'e');
        put(if x < 0 { b'-' } else { b'+' });
        let ax = x.unsigned_abs();
        if ax >= 100 {
            put(b'0' + (ax / 100) as u8);
        }
        put(b'0' + (ax / 10 % 10) as u8);
        put(b'0' + (ax % 10) as u8);
    } else if x >= 0 {
        let int = x as usize + 1;
        digits[..int].iter().for_each(|&c| put(c));
        if sig > int {
            put(b'.');
            digits[int..sig].iter().for_each(|&c| put(c));
        }
    } else {
        put(b'0');
        put(b'.');
        (0..(-x - 1)).for_each(|_| put(b'0'));
        digits[..sig].iter().for_each(|&c| put(c));
    }
    Some(&out[..n])
}

/// `%.17g` of a finite double.
fn g17(d: f64) -> String {
    let sci = format!("{:.16e}", d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mantissa), sign, exp.abs())
    } else {
        let decimals = (16 - exp).max(0) as usize;
        strip(&format!("{:.*}", decimals, d))
    }
}

/// A score stored in a listpack (validated when loaded: never NaN).
fn lp_score(it: Item<'_>) -> f64 {
    match it {
        Item::Int(n) => n as f64,
        Item::Str(s) => parse_stored_score(s).unwrap_or(0.0),
    }
}

/// Parse a score as stored in a listpack or an old RDB (strtod of the whole string); None
/// for garbage or NaN.
pub fn parse_stored_score(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?;
    let v = match t {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => {
            if t.is_empty()
                || !t
                    .bytes()
                    .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c))
            {
                return None;
            }
            t.parse::<f64>().ok()?
        }
    };
    (!v.is_nan()).then_some(v)
}

/// Call `f` with an item's bytes (integers formatted on the stack).
fn with_bytes<R>(it: Item<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
    match it {
        Item::Str(s) => f(s),
        Item::Int(n) => {
            let mut buf = [0u8; 24];
            let mut w = std::io::Cursor::new(&mut buf[..]);
            let _ = std::io::Write::write_fmt(&mut w, format_args!("{n}"));
            let len = w.position() as usize;
            f(&buf[..len])
        }
    }
}

/// Compare an item's bytes with `b` as memcmp-then-length (Redis's sdscmp order).
fn item_cmp(it: Item<'_>, b: &[u8]) -> std::cmp::Ordering {
    with_bytes(it, |a| a.cmp(b))
}

impl ZSet {
    pub fn new() -> ZSet {
        ZSet::default()
    }

    /// A new sorted set for a first member of `member_len` bytes (Redis's ZADD on a new
    /// key: a skiplist when the listpack could not hold it).
    pub fn for_first(member_len: usize, limits: &Limits) -> ZSet {
        if limits.zset_max_listpack_entries == 0
            || member_len as u64 > limits.zset_max_listpack_value
        {
            ZSet::Skiplist(Box::default())
        } else {
            ZSet::default()
        }
    }

    /// A sorted set of distinct members in any order, encoded as Redis encodes a *STORE
    /// destination: a listpack when within both limits, else a skiplist.
    pub fn from_pairs(mut pairs: Vec<(Vec<u8>, f64)>, limits: &Limits) -> ZSet {
        let maxlen = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        pairs.sort_by(|a, b| {
            a.1.partial_cmp(&b.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.cmp(&b.0))
        });
        if pairs.len() as u64 <= limits.zset_max_listpack_entries
            && maxlen as u64 <= limits.zset_max_listpack_value
        {
            let mut lp = Listpack::new();
            let mut t = String::new();
            for (m, s) in &pairs {
                lp.push_back(m);
                score_text(*s, &mut t);
                lp.push_back(t.as_bytes());
            }
            ZSet::Listpack(lp)
        } else {
            // In order: the list is built by appending, without a walk per member.
            let sl =
                SkipList::from_sorted(pairs.into_iter().map(|(m, s)| (m.into_boxed_slice(), s)));
            ZSet::Skiplist(Box::new(sl))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSet::Listpack(lp) => lp.len() / 2,
            ZSet::Skiplist(sl) => sl.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements whose room is allocated: `len`, or for a skiplist every node its arena
    /// holds (a set emptied by removals still holds its peak's nodes until dropped).
    pub fn allocated_elems(&self) -> usize {
        match self {
            ZSet::Listpack(_) => self.len(),
            ZSet::Skiplist(sl) => sl.allocated_nodes(),
        }
    }

    /// Bytes held by the encoding (MEMORY USAGE): members allocated one by one are
    /// estimated from the first `samples` of them.
    pub fn footprint(&self, samples: usize) -> usize {
        match self {
            ZSet::Listpack(lp) => lp.allocated(),
            ZSet::Skiplist(sl) => crate::mem::boxed::<SkipList>() + sl.footprint(samples),
        }
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Listpack(_) => "listpack",
            ZSet::Skiplist(_) => "skiplist",
        }
    }

    /// Position of a member's entry in a listpack.
    fn lp_find(lp: &Listpack, member: &[u8]) -> Option<usize> {
        lp.find(lp.first(), member, 1)
    }

    /// The member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Listpack(lp) => {
                let at = Self::lp_find(lp, member)?;
                Some(lp_score(lp.get(lp.next(at)?)))
            }
            ZSet::Skiplist(sl) => sl.score(member),
        }
    }

    /// Convert to a skiplist (one way).
    pub fn convert_to_skiplist(&mut self) {
        if let ZSet::Listpack(lp) = self {
            let mut sl = SkipList::new();
            let mut it = lp.iter();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                sl.insert(m.to_vec().into_boxed_slice(), lp_score(s));
            }
            *self = ZSet::Skiplist(Box::new(sl));
        }
    }

    /// Convert a skiplist back to a listpack when within the limits (Redis's
    /// zsetConvertToListpackIfNeeded, used after loading).
    pub fn shrink_if_fits(&mut self, limits: &Limits) {
        if let ZSet::Skiplist(sl) = self {
            let maxlen = sl.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            if sl.len() as u64 <= limits.zset_max_listpack_entries
                && maxlen as u64 <= limits.zset_max_listpack_value
            {
                let mut lp = Listpack::new();
                let mut t = String::new();
                for (m, s) in sl.iter() {
                    lp.push_back(m);
                    score_text(s, &mut t);
                    lp.push_back(t.as_bytes());
                }
                *self = ZSet::Listpack(lp);
            }
        }
    }

    /// Set a member's score, adding it if absent (converting to a skiplist first when the
    /// listpack would go over the limits, as zsetAdd). Returns true if it was added.
    pub fn set(&mut self, member: &[u8], score: f64, limits: &Limits) -> bool {
        match self.score(member) {
            Some(old) => {
                if old != score {
                    self.update(member, score);
                }
                false
            }
            None => {
                self.insert_new(member, score, limits);
                true
            }
        }
    }

    /// One lookup of `member`: `decide` gets its score (None if absent) and answers the
    /// score to give it (None: leave it as it is, or do not add it); an addition converts
    /// as [`ZSet::insert_new`] does.
    pub fn upsert(
        &mut self,
        member: &[u8],
        limits: &Limits,
        decide: impl FnOnce(Option<f64>) -> Option<f64>,
    ) {
        match self {
            ZSet::Listpack(lp) => match Self::lp_find(lp, member) {
                Some(at) => {
                    let cur = lp_score(lp.get(lp.next(at).expect("pair")));
                    if let Some(s) = decide(Some(cur)) {
                        if s != cur {
                            lp.delete_range(at, 2);
                            Self::lp_insert(lp, member, s);
                        }
                    }
                }
                None => {
                    if let Some(s) = decide(None) {
                        self.insert_new(member, s, limits);
                    }
                }
            },
            ZSet::Skiplist(sl) => sl.upsert(member, decide),
        }
    }

    /// Add a member known to be absent (converting to a skiplist first when the listpack
    /// would go over the limits, as zsetAdd).
    pub fn insert_new(&mut self, member: &[u8], score: f64, limits: &Limits) {
        if let ZSet::Listpack(lp) = self {
            if lp.len() / 2 < limits.zset_max_listpack_entries as usize
                && member.len() as u64 <= limits.zset_max_listpack_value
            {
                return Self::lp_insert(lp, member, score);
            }
            self.convert_to_skiplist();
        }
        if let ZSet::Skiplist(sl) = self {
            sl.insert(member.to_vec().into_boxed_slice(), score);
        }
    }

    /// Give a member known to be present a new score, keeping the order.
    pub fn update(&mut self, member: &[u8], score: f64) {
        match self {
            ZSet::Listpack(lp) => {
                if let Some(at) = Self::lp_find(lp, member) {
                    // zzlDelete + zzlInsert.
                    lp.delete_range(at, 2);
                    Self::lp_insert(lp, member, score);
                }
            }
            ZSet::Skiplist(sl) => sl.update(member, score),
        }
    }

    fn lp_insert(lp: &mut Listpack, member: &[u8], score: f64) {
        let mut at = lp.first();
        let mut pos = lp.end();
        while let Some(p) = at {
            let sp = lp.next(p).expect("pair");
            let s = lp_score(lp.get(sp));
            if s > score || (s == score && item_cmp(lp.get(p), member).is_gt()) {
                pos = p;
                break;
            }
            at = lp.next(sp);
        }
        let mut t = String::new();
        score_text(score, &mut t);
        let p = lp.insert(pos, member);
        let sp = lp.next(p).unwrap_or(lp.end());
        lp.insert(sp, t.as_bytes());
    }

    /// Remove a member; true if it was present.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZSet::Listpack(lp) => match Self::lp_find(lp, member) {
                Some(at) => {
                    lp.delete_range(at, 2);
                    true
                }
                None => false,
            },
            ZSet::Skiplist(sl) => sl.remove(member).is_some(),
        }
    }

    /// A member's 0-based ascending rank and score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        match self {
            ZSet::Listpack(lp) => {
                let mut it = lp.iter();
                let mut r = 0;
                while let (Some(m), Some(s)) = (it.next(), it.next()) {
                    if m.eq_bytes(member) {
                        return Some((r, lp_score(s)));
                    }
                    r += 1;
                }
                None
            }
            ZSet::Skiplist(sl) => sl.rank(member),
        }
    }

    /// How many elements (in order) satisfy `pred`, which must hold for a prefix.
    pub fn count_prefix(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Listpack(lp) => {
                let mut it = lp.iter();
                let mut r = 0;
                while let (Some(m), Some(s)) = (it.next(), it.next()) {
                    if !with_bytes(m, |b| pred(lp_score(s), b)) {
                        break;
                    }
                    r += 1;
                }
                r
            }
            ZSet::Skiplist(sl) => sl.count_prefix(pred),
        }
    }

    /// Visit elements from ascending rank `start`, forwards (or backwards when `rev`),
    /// while `f` returns true.
    pub fn walk(&self, start: usize, rev: bool, mut f: impl FnMut(&[u8], f64) -> bool) {
        match self {
            ZSet::Listpack(lp) => {
                let Some(mut at) = lp.seek(2 * start as i64) else {
                    return;
                };
                loop {
                    let sp = lp.next(at).expect("pair");
                    let s = lp_score(lp.get(sp));
                    if !with_bytes(lp.get(at), |b| f(b, s)) {
                        return;
                    }
                    let nx = if rev {
                        lp.prev(at).and_then(|p| lp.prev(p))
                    } else {
                        lp.next(sp)
                    };
                    match nx {
                        Some(n) => at = n,
                        None => return,
                    }
                }
            }
            ZSet::Skiplist(sl) => sl.walk(start, rev, f),
        }
    }

    /// The element at ascending rank `r` (< len), copied.
    pub fn get(&self, r: usize) -> (Vec<u8>, f64) {
        match self {
            ZSet::Listpack(_) => {
                let mut out = (Vec::new(), 0.0);
                self.walk(r, false, |m, s| {
                    out = (m.to_vec(), s);
                    false
                });
                out
            }
            ZSet::Skiplist(sl) => {
                let (m, s) = sl.get(r);
                (m.to_vec(), s)
            }
        }
    }

    /// Remove the elements at ascending ranks `start..=end` (within range); `f` sees
    /// each removed element in order.
    pub fn remove_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(&[u8], f64)) {
        match self {
            ZSet::Listpack(lp) => {
                let Some(at) = lp.seek(2 * start as i64) else {
                    return;
                };
                let mut p = Some(at);
                for _ in start..=end {
                    let Some(m) = p else { break };
                    let sp = lp.next(m).expect("pair");
                    let s = lp_score(lp.get(sp));
                    with_bytes(lp.get(m), |b| f(b, s));
                    p = lp.next(sp);
                }
                lp.delete_range(at, 2 * (end - start + 1));
            }
            ZSet::Skiplist(sl) => sl.remove_ranks(start, end, |m, s| f(&m, s)),
        }
    }

    /// Every element in ascending order, copied.
    pub fn to_pairs(&self) -> Vec<(Vec<u8>, f64)> {
        let mut v = Vec::with_capacity(self.len());
        self.walk(0, false, |m, s| {
            v.push((m.to_vec(), s));
            true
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn limits(entries: u64) -> Limits {
        Limits {
            zset_max_listpack_entries: entries,
            ..Limits::default()
        }
    }

    #[test]
    fn emptied_skiplist_still_counts_its_arena() {
        let mut z = ZSet::new();
        let lim = limits(4);
        for i in 0..1000 {
            z.insert_new(format!("m{i}").as_bytes(), i as f64, &lim);
        }
        assert_eq!(z.encoding(), "skiplist");
        z.remove_ranks(0, 999, |_, _| {});
        assert!(z.is_empty());
        assert!(z.allocated_elems() >= 1000, "{}", z.allocated_elems());
        let mut lp = ZSet::new();
        lp.insert_new(b"a", 1.0, &limits(128));
        assert_eq!(lp.allocated_elems(), 1);
    }

    #[test]
    fn score_texts_are_d2string() {
        let mut t = String::new();
        for (v, s) in [
            (1.0, "1"),
            (-0.0, "0"),
            (1e18, "1000000000000000000"),
            (5e18, "5e+18"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (f64::INFINITY, "inf"),
            (1e20, "1e+20"),
            (1.1, "1.1000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
        ] {
            score_text(v, &mut t);
            assert_eq!(t, s, "{v}");
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_g17_is_printf(bits in proptest::num::u64::ANY, small in -1e7f64..1e7, k in 0u32..4000) {
            let mut b = [0u8; 32];
            let step = f64::from(k) / 8.0 - 250.0;
            let ten = 10f64.powi((k % 40) as i32 - 8);
            for v in [f64::from_bits(bits), small, small / 1000.0, step, step * 1e-3, 0.1 * f64::from(k), 1.0 / f64::from(k + 1), ten, -ten] {
                if let Some(t) = g17_fast(v, &mut b) {
                    proptest::prop_assert_eq!(std::str::from_utf8(t).unwrap(), g17(v), "{:e}", v);
                }
            }
        }
    }

    #[test]
    fn fast_g17_cases() {
        let mut b = [0u8; 32];
        for (v, s) in [
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (1e-5, "1.0000000000000001e-05"),
            (123456.5, "123456.5"),
            (1e16 + 2.0, "10000000000000002"),
            (9.999999999999999e16, "99999999999999984"),
            (0.3, "0.29999999999999999"),
            (2.5e-3, "0.0025000000000000001"),
            // The double nearest 10^24 lies just below it: log10 says 24, the digits 23.
            (1e24, "9.9999999999999998e+23"),
            (999999999999999999999999.0, "9.9999999999999998e+23"),
        ] {
            assert_eq!(
                g17_fast(v, &mut b).map(|t| std::str::from_utf8(t).unwrap().to_string()),
                Some(s.to_string()),
                "{v}"
            );
            assert_eq!(g17(v), s);
        }
    }

    #[test]
    fn listpack_bytes_match_redis_order() {
        let mut z = ZSet::new();
        let l = Limits::default();
        z.set(b"b", 2.0, &l);
        z.set(b"a", 2.0, &l);
        z.set(b"c", 1.5, &l);
        let ZSet::Listpack(lp) = &z else { panic!() };
        let items: Vec<Vec<u8>> = lp.iter().map(|i| i.to_vec()).collect();
        assert_eq!(
            items,
            vec![
                b"c".to_vec(),
                b"1.5".to_vec(),
                b"a".to_vec(),
                b"2".to_vec(),
                b"b".to_vec(),
                b"2".to_vec()
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn model(ops in proptest::collection::vec((0u8..5, 0u8..30, -4i8..4), 1..200), lim in 0u64..12) {
            let l = limits(lim);
            let mut z = ZSet::new();
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for (op, m, s) in ops {
                let m = format!("{m}").into_bytes();
                let s = f64::from(s) / 2.0;
                match op {
                    0 => {
                        let added = z.set(&m, s, &l);
                        assert_eq!(added, model.insert(m, s).is_none());
                    }
                    1 => {
                        let mut seen = None;
                        z.upsert(&m, &l, |cur| {
                            seen = Some(cur);
                            Some(s)
                        });
                        assert_eq!(seen, Some(model.insert(m, s)));
                    }
                    2 => assert_eq!(z.remove(&m), model.remove(&m).is_some()),
                    3 => {
                        let n = z.count_prefix(|sc, _| sc < s);
                        assert_eq!(n, model.values().filter(|&&v| v < s).count());
                    }
                    _ => {
                        if !model.is_empty() {
                            let a = (m[0] as usize) % model.len();
                            let b = (a + 1).min(model.len() - 1);
                            let mut sorted: Vec<(Vec<u8>, f64)> = model.clone().into_iter().collect();
                            sorted.sort_by(|x, y| x.1.partial_cmp(&y.1).unwrap().then(x.0.cmp(&y.0)));
                            let mut got = Vec::new();
                            z.remove_ranks(a, b, |m, s| got.push((m.to_vec(), s)));
                            assert_eq!(&got[..], &sorted[a..=b]);
                            for (m, _) in got { model.remove(&m); }
                        }
                    }
                }
                if model.len() as u64 > lim { assert_eq!(z.encoding(), "skiplist"); }
                let mut sorted: Vec<(Vec<u8>, f64)> = model.clone().into_iter().collect();
                sorted.sort_by(|x, y| x.1.partial_cmp(&y.1).unwrap().then(x.0.cmp(&y.0)));
                assert_eq!(z.to_pairs(), sorted.clone());
                for (r, (m, s)) in sorted.iter().enumerate() {
                    assert_eq!(z.rank(m), Some((r, *s)));
                    assert_eq!(z.score(m), Some(*s));
                }
                let mut rev = Vec::new();
                if !sorted.is_empty() {
                    z.walk(sorted.len() - 1, true, |m, s| { rev.push((m.to_vec(), s)); true });
                }
                sorted.reverse();
                assert_eq!(rev, sorted);
            }
        }
    }
}
