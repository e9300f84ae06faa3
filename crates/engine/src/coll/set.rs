//! The set type: an intset while every member is an integer and there are at most
//! `set-max-intset-entries`, a hash table otherwise (Redis 7.0 has no listpack sets; the
//! conversion is one way, as in Redis).
//!
//! The hash table ([`Table`]) keeps its members densely in a vector (short members inline,
//! no allocation) and indexes them with a table of 4-byte positions: a random member is one
//! random position (SPOP/SRANDMEMBER are O(1) per pick), a removal moves the last member
//! into the freed position, and SSCAN walks positions downwards so every member present for
//! the whole iteration is returned at least once (see [`Table::scan`]).

use super::intset::Intset;
use super::Limits;
use crate::value::parse_strict_i64;
use hashbrown::HashTable;
use rand::Rng;

/// The most members a hash-table set holds (positions are 4 bytes).
const MAX_MEMBERS: usize = u32::MAX as usize;

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

#[inline]
fn hash(b: &[u8]) -> u64 {
    crate::shard::hash_key(b)
}

/// The hash-table encoding: members by position, an index of positions by hash.
#[derive(Clone, Default)]
pub struct Table {
    members: Vec<Member>,
    index: HashTable<u32>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.members.iter()).finish()
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.len() == other.len() && self.members.iter().all(|m| other.contains(m.as_bytes()))
    }
}

impl Table {
    pub fn with_capacity(n: usize) -> Table {
        Table {
            members: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn find(&self, b: &[u8]) -> Option<usize> {
        let members = &self.members;
        self.index
            .find(hash(b), |&i| members[i as usize].as_bytes() == b)
            .map(|&i| i as usize)
    }

    pub fn contains(&self, b: &[u8]) -> bool {
        self.find(b).is_some()
    }

    /// Room for `n` members in all without growing.
    pub fn reserve(&mut self, n: usize) {
        let add = n.saturating_sub(self.members.len());
        self.members.reserve(add);
        let members = &self.members;
        self.index
            .reserve(add, |&i| hash(members[i as usize].as_bytes()));
    }

    /// Add a member; false if it was there (or, never in practice, if the table already
    /// holds the most members its 4-byte positions can name).
    pub fn insert(&mut self, b: &[u8]) -> bool {
        if self.members.len() >= MAX_MEMBERS {
            return false;
        }
        let members = &self.members;
        let h = hash(b);
        if self
            .index
            .find(h, |&i| members[i as usize].as_bytes() == b)
            .is_some()
        {
            return false;
        }
        self.push_new(h, Member::new(b));
        true
    }

    /// Add a member known to be absent.
    fn push_new(&mut self, h: u64, m: Member) {
        let pos = self.members.len() as u32;
        self.members.push(m);
        let members = &self.members;
        self.index
            .insert_unique(h, pos, |&i| hash(members[i as usize].as_bytes()));
    }

    /// Remove a member; false if it was not there.
    pub fn remove(&mut self, b: &[u8]) -> bool {
        let members = &self.members;
        match self
            .index
            .find_entry(hash(b), |&i| members[i as usize].as_bytes() == b)
        {
            Ok(slot) => {
                let pos = *slot.get() as usize;
                slot.remove();
                self.take_at(pos);
                true
            }
            Err(_) => false,
        }
    }

    /// Remove the member at `pos` whose index entry is already gone: the last member moves
    /// into its place.
    fn take_at(&mut self, pos: usize) -> Member {
        let last = self.members.len() - 1;
        if pos != last {
            let moved = hash(self.members[last].as_bytes());
            if let Some(p) = self.index.find_mut(moved, |&i| i as usize == last) {
                *p = pos as u32;
            }
        }
        let m = self.members.swap_remove(pos);
        if self.members.len() < self.members.capacity() / 4 {
            self.members.shrink_to(self.members.len() * 2);
            let members = &self.members;
            self.index
                .shrink_to(members.len(), |&i| hash(members[i as usize].as_bytes()));
        }
        m
    }

    /// Remove and return the member at `pos`.
    pub fn remove_at(&mut self, pos: usize) -> Member {
        let h = hash(self.members[pos].as_bytes());
        if let Ok(slot) = self.index.find_entry(h, |&i| i as usize == pos) {
            slot.remove();
        }
        self.take_at(pos)
    }

    /// The member at position `pos` (0..len).
    pub fn at(&self, pos: usize) -> &[u8] {
        self.members[pos].as_bytes()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.members.iter().map(Member::as_bytes)
    }

    /// One SSCAN step: cursor 0 starts, positions below `cursor` remain otherwise; visits
    /// about `count` members downwards and returns the next cursor (0 when done). A removal
    /// only ever moves the last member down, so members not yet visited stay below the
    /// cursor: every member present throughout is returned at least once.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8])) -> u64 {
        let len = self.members.len() as u64;
        let mut top = if cursor == 0 { len } else { cursor.min(len) };
        let mut n = 0;
        while top > 0 && n < count.max(1) {
            top -= 1;
            visit(self.members[top as usize].as_bytes());
            n += 1;
        }
        top
    }

    /// Bytes held beyond the table itself: the member array and the index, and the
    /// members' own buffers estimated from the first `samples` members.
    fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        mem::vec::<Member>(self.members.capacity())
            + mem::hashbrown::<u32>(self.index.capacity())
            + mem::sampled(
                self.members.iter().map(Member::heap_bytes),
                self.members.len(),
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
                let h = hash(m.as_bytes());
                t.push_new(h, m);
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
    use std::collections::BTreeSet;

    #[test]
    fn member_is_compact() {
        assert_eq!(std::mem::size_of::<Member>(), 24);
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
