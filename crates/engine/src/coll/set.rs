//! The set type: an intset while every member is an integer and there are at most
//! `set-max-intset-entries`, a hash table otherwise (Redis 7.0 has no listpack sets; the
//! conversion is one way, as in Redis).
//!
//! The hash table ([`Table`]) is a [`Dict`] of members (short members inline, no
//! allocation): chained, rehashed a few buckets per write as Redis's dict is (growing or
//! shrinking a big set is no pause), its members dense in a chunked array (growing never
//! copies them). A random member is one random position (SPOP/SRANDMEMBER are O(1) per
//! pick), a removal moves the last member into the freed position, and SSCAN walks
//! positions downwards so every member present for the whole iteration is returned at
//! least once (see [`Table::scan`]).

use super::dict::{hash_key, Dict, Keyed, MAX_ENTRIES};
use super::intset::Intset;
use super::Limits;
use crate::value::parse_strict_i64;
use rand::Rng;

/// Longest member stored without an allocation.
const INLINE: usize = 22;

/// One member of a hash-table set: inline when short (integers always are), else boxed.
#[derive(Clone)]
pub enum Member {
    Inline { len: u8, data: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Member {
    pub fn new(b: &[u8]) -> Member {
        if b.len() <= INLINE {
            let mut data = [0u8; INLINE];
            data[..b.len()].copy_from_slice(b);
            Member::Inline {
                len: b.len() as u8,
                data,
            }
        } else {
            Member::Heap(b.into())
        }
    }

    fn from_int(n: i64) -> Member {
        let mut buf = itoa_buf();
        Member::new(fmt_int(n, &mut buf))
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Member::Inline { len, data } => &data[..usize::from(*len)],
            Member::Heap(b) => b,
        }
    }

    /// Heap bytes held beyond the member's slot.
    fn heap_bytes(&self) -> usize {
        match self {
            Member::Inline { .. } => 0,
            Member::Heap(b) => crate::mem::vec::<u8>(b.len()),
        }
    }
}

impl Keyed for Member {
    #[inline]
    fn key(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

/// An integer's decimal text in `buf` (what Redis replies for an intset member).
pub fn fmt_int(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut u = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// The hash-table encoding: members by position, chained from their hash's bucket.
#[derive(Clone, Default)]
pub struct Table {
    dict: Dict<Member>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.dict.iter()).finish()
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains(m))
    }
}

impl Table {
    pub fn with_capacity(n: usize) -> Table {
        Table {
            dict: Dict::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    pub fn contains(&self, b: &[u8]) -> bool {
        self.dict.find(b, hash_key(b)).is_some()
    }

    /// Room for `n` members in all without growing (at once: for a set about to be
    /// filled to a known size).
    pub fn reserve(&mut self, n: usize) {
        self.dict.reserve(n);
    }

    /// Add a member; false if it was there (or, never in practice, if the table already
    /// holds the most members its 4-byte positions can name).
    pub fn insert(&mut self, b: &[u8]) -> bool {
        if self.dict.len() >= MAX_ENTRIES {
            return false;
        }
        let h = hash_key(b);
        if self.dict.find(b, h).is_some() {
            return false;
        }
        self.dict.insert_new(Member::new(b), h);
        true
    }

    /// Remove a member; false if it was not there.
    pub fn remove(&mut self, b: &[u8]) -> bool {
        match self.dict.find(b, hash_key(b)) {
            Some(pos) => {
                self.dict.remove_at(pos);
                true
            }
            None => false,
        }
    }

    /// Remove and return the member at `pos`: the last member moves into its place.
    pub fn remove_at(&mut self, pos: usize) -> Member {
        self.dict.remove_at(pos)
    }

    /// The member at position `pos` (0..len).
    pub fn at(&self, pos: usize) -> &[u8] {
        self.dict.get(pos).as_bytes()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.dict.iter().map(Member::as_bytes)
    }

    /// One SSCAN step: cursor 0 starts, positions below `cursor` remain otherwise; visits
    /// about `count` members downwards and returns the next cursor (0 when done). A removal
    /// only ever moves the last member down, and neither growing nor shrinking the table
    /// moves members, so members not yet visited stay below the cursor: every member
    /// present throughout is returned at least once.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8])) -> u64 {
        let len = self.len() as u64;
        let mut top = if cursor == 0 { len } else { cursor.min(len) };
        let mut n = 0;
        while top > 0 && n < count.max(1) {
            top -= 1;
            visit(self.at(top as usize));
            n += 1;
        }
        top
    }

    /// Bytes held beyond the table itself: the buckets and the member chunks, and the
    /// members' own buffers estimated from the first `samples` members.
    fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        self.dict.allocated()
            + mem::sampled(
                self.dict.iter().map(Member::heap_bytes),
                self.len(),
                samples,
            )
    }
}

/// A member as a set holds it: an intset's integer or a table's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl<'a> Elem<'a> {
    /// The member's bytes (an integer's text written into `buf`).
    pub fn as_bytes<'b>(&self, buf: &'b mut [u8; 20]) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Elem::Int(n) => fmt_int(n, buf),
            Elem::Bytes(b) => b,
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Int(n) => {
                let mut buf = itoa_buf();
                fmt_int(n, &mut buf).to_vec()
            }
            Elem::Bytes(b) => b.to_vec(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Set {
    Intset(Intset),
    /// Boxed, so that a set (and the entry's heap value holding it) stays small.
    Table(Box<Table>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Intset(Intset::new())
    }
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// setTypeCreate: an intset if the first member is an integer, else a hash table.
    pub fn for_first(member: &[u8]) -> Set {
        if parse_strict_i64(member).is_some() {
            Set::Intset(Intset::new())
        } else {
            Set::Table(Box::default())
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Set::Intset(s) => s.len(),
            Set::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Intset(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    pub fn contains(&self, b: &[u8]) -> bool {
        match self {
            Set::Intset(s) => parse_strict_i64(b).is_some_and(|n| s.contains(n)),
            Set::Table(t) => t.contains(b),
        }
    }

    /// Convert to the hash-table encoding (setTypeConvert).
    pub fn convert_to_table(&mut self) {
        if let Set::Intset(s) = self {
            let mut t = Table::with_capacity(s.len());
            for n in s.iter() {
                let m = Member::from_int(n);
                let h = hash_key(m.as_bytes());
                t.dict.insert_new(m, h);
            }
            *self = Set::Table(Box::new(t));
        }
    }

    /// setTypeAdd: add a member, converting to a hash table when it is not an integer or the
    /// intset grows past `set-max-intset-entries`; false if it was there.
    pub fn insert(&mut self, b: &[u8], limits: &Limits) -> bool {
        if let Set::Intset(s) = self {
            if let Some(n) = parse_strict_i64(b) {
                if !s.insert(n) {
                    return false;
                }
                if s.len() as u64 > limits.set_max_intset_entries {
                    self.convert_to_table();
                }
                return true;
            }
            self.convert_to_table();
        }
        match self {
            Set::Table(t) => t.insert(b),
            Set::Intset(_) => false,
        }
    }

    /// Room for `n` members in all without growing, when a hash table (an intset is
    /// left as it is: it stays small).
    pub fn reserve(&mut self, n: usize) {
        if let Set::Table(t) = self {
            t.reserve(n);
        }
    }

    /// Remove a member; false if it was not there.
    pub fn remove(&mut self, b: &[u8]) -> bool {
        match self {
            Set::Intset(s) => parse_strict_i64(b).is_some_and(|n| s.remove(n)),
            Set::Table(t) => t.remove(b),
        }
    }

    /// The member at position `i` (0..len; ascending for an intset).
    pub fn at(&self, i: usize) -> Elem<'_> {
        match self {
            Set::Intset(s) => Elem::Int(s.get(i)),
            Set::Table(t) => Elem::Bytes(t.at(i)),
        }
    }

    /// A random member (None if empty).
    pub fn random(&self, rng: &mut impl Rng) -> Option<Elem<'_>> {
        if self.is_empty() {
            return None;
        }
        Some(self.at(rng.gen_range(0..self.len())))
    }

    /// Remove and return a random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let i = rng.gen_range(0..self.len());
        Some(match self {
            Set::Intset(s) => {
                let n = s.get(i);
                s.remove(n);
                Elem::Int(n).to_vec()
            }
            Set::Table(t) => t.remove_at(i).as_bytes().to_vec(),
        })
    }

    /// Every member (ascending for an intset, position order for a table).
    pub fn iter(&self) -> impl Iterator<Item = Elem<'_>> + '_ {
        (0..self.len()).map(move |i| self.at(i))
    }

    /// Whether every member is an integer and there are few enough for an intset.
    pub fn fits_intset(&self, limits: &Limits) -> bool {
        match self {
            Set::Intset(s) => s.len() as u64 <= limits.set_max_intset_entries,
            Set::Table(t) => {
                t.len() as u64 <= limits.set_max_intset_entries
                    && t.iter().all(|m| parse_strict_i64(m).is_some())
            }
        }
    }

    /// Bytes held by the encoding (MEMORY USAGE): members allocated one by one are
    /// estimated from the first `samples` of them.
    pub fn footprint(&self, samples: usize) -> usize {
        match self {
            Set::Intset(s) => s.allocated(),
            Set::Table(t) => crate::mem::boxed::<Table>() + t.footprint(samples),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;
    use std::collections::BTreeSet;

    #[test]
    fn member_is_compact() {
        assert_eq!(std::mem::size_of::<Member>(), 24);
        // A table's header fits jemalloc's 64-byte class (its box, one per set).
        assert_eq!(std::mem::size_of::<Table>(), 64);
        assert_eq!(Member::new(b"abc").as_bytes(), b"abc");
        let long = vec![b'x'; 100];
        assert_eq!(Member::new(&long).as_bytes(), &long[..]);
        let mut b = itoa_buf();
        assert_eq!(fmt_int(i64::MIN, &mut b), b"-9223372036854775808");
        assert_eq!(fmt_int(0, &mut b), b"0");
    }

    #[test]
    fn encoding_switch() {
        let l = Limits {
            set_max_intset_entries: 3,
            ..Limits::default()
        };
        let mut s = Set::for_first(b"1");
        for m in [b"1", b"2", b"3"] {
            assert!(s.insert(m, &l));
        }
        assert_eq!(s.encoding(), "intset");
        assert!(!s.insert(b"3", &l));
        assert!(s.insert(b"4", &l));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"4") && s.contains(b"1") && !s.contains(b"01"));
        let mut t = Set::for_first(b"1");
        t.insert(b"1", &l);
        t.insert(b"01", &l);
        assert_eq!(t.encoding(), "hashtable");
        assert_eq!(Set::for_first(b"a").encoding(), "hashtable");
    }

    #[test]
    fn scan_survives_removals() {
        let mut t = Table::default();
        for i in 0..1000 {
            t.insert(format!("m{i}").as_bytes());
        }
        let keep: BTreeSet<Vec<u8>> = (0..1000)
            .filter(|i| i % 3 == 0)
            .map(|i| format!("m{i}").into_bytes())
            .collect();
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = t.scan(cursor, 10, |m| {
                seen.insert(m.to_vec());
            });
            // remove some members not kept, add others
            for i in 0..5 {
                let k = (round * 5 + i) * 7 % 1000;
                if k % 3 != 0 {
                    t.remove(format!("m{k}").as_bytes());
                }
                t.insert(format!("n{round}-{i}").as_bytes());
            }
            round += 1;
            if cursor == 0 {
                break;
            }
        }
        assert!(keep.iter().all(|k| seen.contains(k)));
    }

    /// SSCAN across growth and shrink migrations: a stable core plus extras added,
    /// removed by name and popped at random between steps; every member present for the
    /// whole scan is returned, and the cursor stays usable throughout.
    #[test]
    fn scan_complete_across_migrations() {
        use rand::SeedableRng;
        let mut migrating_steps = 0;
        for seed in 0..20u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut t = Table::default();
            let stable = 200 + rng.gen_range(0..2000);
            for i in 0..stable {
                t.insert(format!("s{i}").as_bytes());
            }
            let mut extras: Vec<Vec<u8>> = Vec::new();
            let mut popped = BTreeSet::new();
            let mut next_extra = 0;
            let mut seen = BTreeSet::new();
            let mut cursor = 0;
            loop {
                cursor = t.scan(cursor, rng.gen_range(1..40), |m| {
                    seen.insert(m.to_vec());
                });
                migrating_steps += t.dict.is_rehashing() as usize;
                match rng.gen_range(0..5) {
                    0 | 1 => {
                        for _ in 0..rng.gen_range(0..600) {
                            let m = format!("e{next_extra}").into_bytes();
                            next_extra += 1;
                            assert!(t.insert(&m));
                            extras.push(m);
                        }
                    }
                    2 | 3 => {
                        for _ in 0..rng.gen_range(0..600) {
                            match extras.pop() {
                                Some(m) => assert!(t.remove(&m)),
                                None => break,
                            }
                        }
                    }
                    _ => {
                        if !t.is_empty() {
                            let m = t.remove_at(rng.gen_range(0..t.len()));
                            let m = m.as_bytes().to_vec();
                            if let Some(i) = extras.iter().position(|e| *e == m) {
                                extras.swap_remove(i);
                            } else {
                                popped.insert(m);
                            }
                        }
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
            for i in 0..stable {
                let m = format!("s{i}").into_bytes();
                assert!(
                    popped.contains(&m) || seen.contains(&m),
                    "seed {seed}: s{i}"
                );
            }
            assert_eq!(t.len(), stable - popped.len() + extras.len());
        }
        assert!(migrating_steps > 50, "{migrating_steps}");
    }

    #[derive(Debug, Clone)]
    enum Batch {
        Add(u32, u32),
        Rem(u32, u32),
        Pop(u64, u32),
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// Batches of adds, removals and random pops against a std HashSet, big enough
        /// to cross several growth and shrink boundaries (and to land inside migrations).
        #[test]
        fn table_model_through_resizes(batches in prop::collection::vec(
            prop_oneof![
                (0u32..6000, 0u32..3000).prop_map(|(a, n)| Batch::Add(a, n)),
                (0u32..6000, 0u32..3000).prop_map(|(a, n)| Batch::Rem(a, n)),
                (any::<u64>(), 0u32..1500).prop_map(|(s, n)| Batch::Pop(s, n)),
            ], 1..12)) {
            use rand::SeedableRng;
            use std::collections::HashSet;
            let mut t = Table::default();
            let mut m: HashSet<Vec<u8>> = HashSet::new();
            let name = |i: u32| if i.is_multiple_of(2) {
                format!("{i}").into_bytes()
            } else {
                format!("member-long-enough-for-the-heap-{i}").into_bytes()
            };
            for b in batches {
                match b {
                    Batch::Add(a, n) => for i in a..a + n {
                        prop_assert_eq!(t.insert(&name(i)), m.insert(name(i)));
                    },
                    Batch::Rem(a, n) => for i in a..a + n {
                        prop_assert_eq!(t.remove(&name(i)), m.remove(&name(i)));
                    },
                    Batch::Pop(seed, n) => {
                        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                        for _ in 0..n.min(t.len() as u32) {
                            let got = t.remove_at(rng.gen_range(0..t.len()));
                            prop_assert!(m.remove(got.as_bytes()));
                        }
                    }
                }
                prop_assert_eq!(t.len(), m.len());
                for b in &m {
                    prop_assert!(t.contains(b));
                }
                let all: HashSet<Vec<u8>> = t.iter().map(|b| b.to_vec()).collect();
                prop_assert_eq!(&all, &m);
                prop_assert!(!t.contains(b"absent"));
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(i64, bool),
        Rem(i64, bool),
        Pop(u64),
    }

    fn member(n: i64, text: bool) -> Vec<u8> {
        if text {
            format!("s{n}").into_bytes()
        } else {
            n.to_string().into_bytes()
        }
    }

    proptest! {
        #[test]
        fn model(ops in prop::collection::vec(
            prop_oneof![
                (-40i64..40, prop::bool::weighted(0.1)).prop_map(|(n, t)| Op::Add(n, t)),
                (-40i64..40, prop::bool::weighted(0.1)).prop_map(|(n, t)| Op::Rem(n, t)),
                any::<u64>().prop_map(Op::Pop),
            ], 0..300), limit in 0u64..20) {
            use rand::SeedableRng;
            let l = Limits { set_max_intset_entries: limit, ..Limits::default() };
            let mut s = Set::new();
            let mut m = BTreeSet::new();
            let mut was_table = false;
            for op in ops {
                match op {
                    Op::Add(n, t) => {
                        let b = member(n, t);
                        prop_assert_eq!(s.insert(&b, &l), m.insert(b));
                    }
                    Op::Rem(n, t) => {
                        let b = member(n, t);
                        prop_assert_eq!(s.remove(&b), m.remove(&b));
                    }
                    Op::Pop(seed) => {
                        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                        let p = s.pop_random(&mut rng);
                        match p {
                            Some(b) => prop_assert!(m.remove(&b)),
                            None => prop_assert!(m.is_empty()),
                        }
                    }
                }
                prop_assert_eq!(s.len(), m.len());
                let all: BTreeSet<Vec<u8>> = s.iter().map(|e| e.to_vec()).collect();
                prop_assert_eq!(&all, &m);
                for b in &m {
                    prop_assert!(s.contains(b));
                }
                if was_table {
                    prop_assert_eq!(s.encoding(), "hashtable");
                }
                was_table = s.encoding() == "hashtable";
                if s.encoding() == "intset" {
                    prop_assert!(s.len() as u64 <= limit);
                }
            }
        }
    }
}
