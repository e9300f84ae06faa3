//! The large hash encoding: a chained hash table whose buckets are a power of two, as in
//! Redis's dict, so that HSCAN can walk it with Redis's reverse-binary cursor (a field
//! present for the whole iteration is returned at least once whatever resizing happens),
//! and whose fields live in one dense array (a random field is one random index away).
//!
//! Memory per field: one allocation holding the field and its value
//! (`[varint field length][field][value]`), a 24-byte slot (the allocation, its hash and
//! the next slot of its chain) and a 4-byte bucket head.

use super::chunked::Chunked;
use std::hash::BuildHasher;

/// A link (a bucket head or a slot's `next`): slot index + 1, so that the empty link is 0
/// and a new bucket array is zeroed memory (no pass over it to fill).
const NIL: u32 = 0;

fn link(slot: usize) -> u32 {
    slot as u32 + 1
}

fn slot_of(link: u32) -> usize {
    link as usize - 1
}
const MIN_BUCKETS: usize = 4;

fn hash_field(field: &[u8]) -> u32 {
    static STATE: std::sync::OnceLock<foldhash::fast::FixedState> = std::sync::OnceLock::new();
    let h = STATE
        .get_or_init(|| foldhash::fast::FixedState::with_seed(rand::random()))
        .hash_one(field);
    (h ^ (h >> 32)) as u32
}

/// A field and its value in one allocation.
fn pack(field: &[u8], value: &[u8]) -> Box<[u8]> {
    let mut buf = Vec::with_capacity(5 + field.len() + value.len());
    let mut n = field.len();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            buf.push(b);
            break;
        }
        buf.push(b | 0x80);
    }
    buf.extend_from_slice(field);
    buf.extend_from_slice(value);
    buf.into_boxed_slice()
}

/// (field, value) of a packed allocation.
fn unpack(data: &[u8]) -> (&[u8], &[u8]) {
    let mut n = 0usize;
    let mut i = 0;
    loop {
        let b = data[i];
        n |= ((b & 0x7f) as usize) << (7 * i);
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
    }
    data[i..].split_at(n)
}

#[derive(Clone)]
struct Slot {
    data: Box<[u8]>,
    hash: u32,
    next: u32,
}

/// The dense slot array, in chunks of 1,024 slots: growing never copies the slots already
/// there (no pause, no doubling slack beyond one chunk).
type Slots = Chunked<Slot, 10>;

/// Buckets moved per write while rehashing, and empty buckets looked at (as Redis's
/// dictRehash(d, 1) with its `empty_visits`, times four: a rehash always ends before
/// the table needs the next one).
const REHASH_BUCKETS: usize = 4;
const REHASH_EMPTY_VISITS: usize = 40;

#[derive(Clone)]
pub struct HashTable {
    /// Head link of each bucket (NIL = empty); the length is a power of two. New
    /// fields go here.
    buckets: Vec<u32>,
    /// While rehashing: the previous buckets, moved into `buckets` a few per write (as
    /// Redis's dict does, so a resize of a big table is no pause); empty otherwise.
    old: Vec<u32>,
    /// Old buckets before this one have been moved.
    moved: usize,
    slots: Slots,
}

impl Default for HashTable {
    fn default() -> Self {
        HashTable::new()
    }
}

impl std::fmt::Debug for HashTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            }))
            .finish()
    }
}

impl PartialEq for HashTable {
    /// Same fields with the same values, in any order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

/// In the chain starting at `heads[b]`, make the link that points at `from` point at
/// `to`; false if `from` is not in that chain.
fn relink_chain(heads: &mut [u32], slots: &mut Slots, b: usize, from: u32, to: u32) -> bool {
    if heads[b] == from {
        heads[b] = to;
        return true;
    }
    let mut at = heads[b];
    while at != NIL {
        let s = &mut slots[slot_of(at)];
        if s.next == from {
            s.next = to;
            return true;
        }
        at = s.next;
    }
    false
}

impl HashTable {
    pub fn new() -> HashTable {
        HashTable {
            buckets: vec![NIL; MIN_BUCKETS],
            old: Vec::new(),
            moved: 0,
            slots: Slots::default(),
        }
    }

    pub fn with_capacity(n: usize) -> HashTable {
        let mut t = HashTable::new();
        t.buckets = vec![NIL; n.next_power_of_two().max(MIN_BUCKETS)];
        t
    }

    /// The pairs of a listpack of field/value pairs (its fields distinct).
    pub fn from_listpack(lp: &super::listpack::Listpack) -> HashTable {
        let mut t = HashTable::with_capacity(lp.len() / 2);
        let mut it = lp.iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            t.insert_unique(&f.to_vec(), &v.to_vec());
        }
        t
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn is_rehashing(&self) -> bool {
        !self.old.is_empty()
    }

    /// Slot index of `field`, if present (in the old buckets or the new).
    fn find(&self, field: &[u8], hash: u32) -> Option<usize> {
        let new = self.buckets[hash as usize & (self.buckets.len() - 1)];
        let old = match self.old.len() {
            0 => NIL,
            n => self.old[hash as usize & (n - 1)],
        };
        for head in [old, new] {
            let mut at = head;
            while at != NIL {
                let s = &self.slots[slot_of(at)];
                if s.hash == hash && unpack(&s.data).0 == field {
                    return Some(slot_of(at));
                }
                at = s.next;
            }
        }
        None
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.find(field, hash_field(field))
            .map(|i| unpack(&self.slots[i].data).1)
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.find(field, hash_field(field)).is_some()
    }

    /// Set `field` to `value`; true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let hash = hash_field(field);
        if let Some(i) = self.find(field, hash) {
            let data = &mut self.slots[i].data;
            let start = data.len() - unpack(data).1.len();
            if data.len() - start == value.len() {
                data[start..].copy_from_slice(value);
            } else {
                *data = pack(field, value);
            }
            return false;
        }
        self.insert_new(pack(field, value), hash);
        true
    }

    /// Add a field known to be absent (building from a listpack or an RDB payload).
    pub fn insert_unique(&mut self, field: &[u8], value: &[u8]) {
        self.insert_new(pack(field, value), hash_field(field));
    }

    fn insert_new(&mut self, data: Box<[u8]>, hash: u32) {
        let idx = self.slots.len();
        assert!(idx < u32::MAX as usize - 1, "hash table full");
        self.rehash_step();
        if idx >= self.buckets.len() {
            self.start_rehash(self.buckets.len() * 2);
        }
        let b = hash as usize & (self.buckets.len() - 1);
        self.slots.push(Slot {
            data,
            hash,
            next: self.buckets[b],
        });
        self.buckets[b] = link(idx);
    }

    /// Remove `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let hash = hash_field(field);
        let Some(i) = self.find(field, hash) else {
            return false;
        };
        let next = self.slots[i].next;
        self.relink(hash, link(i), next);
        let last = self.slots.len() - 1;
        if i != last {
            // The last slot moves into `i`: repoint the link that named it.
            let h = self.slots[last].hash;
            self.relink(h, link(last), link(i));
        }
        self.slots.swap_remove(i);
        self.rehash_step();
        let n = self.slots.len();
        if self.buckets.len() > MIN_BUCKETS && n * 8 < self.buckets.len() {
            self.start_rehash((n * 2).next_power_of_two().max(MIN_BUCKETS));
        }
        true
    }

    /// Make the link to slot `from` (of hash `hash`) point at `to`, in whichever table
    /// holds it.
    fn relink(&mut self, hash: u32, from: u32, to: u32) {
        if !self.old.is_empty() {
            let b = hash as usize & (self.old.len() - 1);
            if relink_chain(&mut self.old, &mut self.slots, b, from, to) {
                return;
            }
        }
        let b = hash as usize & (self.buckets.len() - 1);
        let found = relink_chain(&mut self.buckets, &mut self.slots, b, from, to);
        assert!(found, "slot not in its bucket's chain");
    }

    /// Begin moving every field to `n` buckets (finishing a rehash under way first).
    fn start_rehash(&mut self, n: usize) {
        while self.is_rehashing() {
            self.rehash_step();
        }
        if n == self.buckets.len() {
            return;
        }
        self.old = std::mem::replace(&mut self.buckets, vec![NIL; n]);
        self.moved = 0;
    }

    /// Move a few old buckets into the new ones.
    fn rehash_step(&mut self) {
        if self.old.is_empty() {
            return;
        }
        let mask = self.buckets.len() - 1;
        let (mut done, mut empty) = (0, 0);
        while done < REHASH_BUCKETS && self.moved < self.old.len() {
            let mut at = std::mem::replace(&mut self.old[self.moved], NIL);
            self.moved += 1;
            if at == NIL {
                empty += 1;
                if empty >= REHASH_EMPTY_VISITS {
                    break;
                }
                continue;
            }
            while at != NIL {
                let s = &mut self.slots[slot_of(at)];
                let next = s.next;
                let b = s.hash as usize & mask;
                s.next = self.buckets[b];
                self.buckets[b] = at;
                at = next;
            }
            done += 1;
        }
        if self.moved == self.old.len() {
            self.old = Vec::new();
            self.moved = 0;
        }
    }

    /// Every (field, value), in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.slots.iter().map(|s| unpack(&s.data))
    }

    /// The (field, value) at slot `i` (`i < len`): slots are dense, so a uniformly random
    /// index is a uniformly random field.
    pub fn at(&self, i: usize) -> (&[u8], &[u8]) {
        unpack(&self.slots[i].data)
    }

    fn visit_chain(&self, mut at: u32, visit: &mut impl FnMut(&[u8], &[u8])) {
        while at != NIL {
            let s = &self.slots[slot_of(at)];
            let (f, v) = unpack(&s.data);
            visit(f, v);
            at = s.next;
        }
    }

    /// One step of a reverse-binary cursor scan (Redis's dictScan): visits every field in
    /// the bucket `cursor` designates (while rehashing: in the smaller table's bucket and
    /// in every bucket of the larger table that it expands to), and returns the next
    /// cursor (0 when the walk is done).
    pub fn scan_bucket(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        let rev_incr =
            |v: u64, mask: u64| (v | !mask).reverse_bits().wrapping_add(1).reverse_bits();
        if self.old.is_empty() {
            let m0 = (self.buckets.len() - 1) as u64;
            self.visit_chain(self.buckets[(cursor & m0) as usize], &mut visit);
            return rev_incr(cursor, m0);
        }
        let (small, large) = if self.old.len() < self.buckets.len() {
            (&self.old, &self.buckets)
        } else {
            (&self.buckets, &self.old)
        };
        let m0 = (small.len() - 1) as u64;
        let m1 = (large.len() - 1) as u64;
        let mut v = cursor;
        self.visit_chain(small[(v & m0) as usize], &mut visit);
        loop {
            self.visit_chain(large[(v & m1) as usize], &mut visit);
            v = rev_incr(v, m1);
            if v & (m0 ^ m1) == 0 {
                break;
            }
        }
        v
    }

    /// Bytes held beyond the table itself: the bucket arrays and slot chunks, and the
    /// slots' field-and-value buffers estimated from the first `samples` of them.
    pub fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        mem::vec::<u32>(self.buckets.capacity())
            + mem::vec::<u32>(self.old.capacity())
            + self.slots.allocated()
            + mem::sampled(
                self.slots.iter().map(|s| mem::vec::<u8>(s.data.len())),
                self.slots.len(),
                samples,
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn pack_roundtrip() {
        for n in [0usize, 1, 127, 128, 300, 20000] {
            let f = vec![b'x'; n];
            let d = pack(&f, b"val");
            assert_eq!(unpack(&d), (&f[..], &b"val"[..]));
        }
    }

    #[test]
    fn insert_remove_model() {
        let mut t = HashTable::new();
        let mut m = BTreeMap::new();
        let mut seed = 12345u64;
        for _ in 0..20000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = format!("f{}", (seed >> 33) % 700).into_bytes();
            let v = format!("v{}", seed >> 50).into_bytes();
            if (seed >> 20).is_multiple_of(3) {
                assert_eq!(t.remove(&k), m.remove(&k).is_some());
            } else {
                assert_eq!(t.insert(&k, &v), m.insert(k.clone(), v).is_none());
            }
            assert_eq!(t.len(), m.len());
        }
        for (k, v) in &m {
            assert_eq!(t.get(k), Some(&v[..]));
        }
        let all: BTreeMap<Vec<u8>, Vec<u8>> =
            t.iter().map(|(a, b)| (a.to_vec(), b.to_vec())).collect();
        assert_eq!(all, m);
    }

    #[test]
    fn scan_survives_resizes() {
        let mut t = HashTable::new();
        for i in 0..1000 {
            t.insert(format!("k{i}").as_bytes(), b"v");
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = t.scan_bucket(cursor, |f, _| {
                seen.insert(f.to_vec());
            });
            step += 1;
            // Grow, then shrink, in the middle of the walk.
            if step == 100 {
                for i in 1000..5000 {
                    t.insert(format!("k{i}").as_bytes(), b"v");
                }
            }
            if step == 600 {
                for i in 1000..5000 {
                    t.remove(format!("k{i}").as_bytes());
                }
                for i in 500..1000 {
                    t.remove(format!("k{i}").as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("k{i}").as_bytes()), "k{i} missed");
        }
    }

    #[test]
    fn scan_guarantee_while_rehashing() {
        let mut rehashing_seen = 0;
        for seed in 1..30u64 {
            let mut rng = seed;
            let mut next = move || {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                rng >> 33
            };
            let mut t = HashTable::new();
            let stable = 50 + (seed as usize * 37) % 400;
            for i in 0..stable {
                t.insert(format!("s{i}").as_bytes(), b"v");
            }
            let mut extra = 0usize;
            let mut seen = BTreeSet::new();
            let mut cursor = 0;
            loop {
                cursor = t.scan_bucket(cursor, |f, _| {
                    seen.insert(f.to_vec());
                });
                rehashing_seen += t.is_rehashing() as usize;
                match next() % 4 {
                    0 if extra < 3000 => {
                        for _ in 0..next() % 300 {
                            t.insert(format!("e{extra}").as_bytes(), b"x");
                            extra += 1;
                        }
                    }
                    1 => {
                        for _ in 0..next() % 300 {
                            if extra == 0 {
                                break;
                            }
                            extra -= 1;
                            assert!(t.remove(format!("e{extra}").as_bytes()));
                        }
                    }
                    _ => {}
                }
                if cursor == 0 {
                    break;
                }
            }
            for i in 0..stable {
                assert!(
                    seen.contains(format!("s{i}").as_bytes()),
                    "seed {seed}: s{i}"
                );
                assert_eq!(t.get(format!("s{i}").as_bytes()), Some(&b"v"[..]));
            }
            assert_eq!(t.len(), stable + extra);
        }
        assert!(rehashing_seen > 100);
    }

    #[test]
    fn chunked_slots_cross_chunks() {
        let mut t = HashTable::new();
        let n = Slots::CHUNK * 3 + 17;
        for i in 0..n {
            t.insert(format!("k{i}").as_bytes(), format!("{i}").as_bytes());
        }
        for i in (0..n).step_by(3) {
            assert!(t.remove(format!("k{i}").as_bytes()));
        }
        for i in 0..n {
            let want = (i % 3 != 0).then(|| format!("{i}").into_bytes());
            assert_eq!(t.get(format!("k{i}").as_bytes()).map(|v| v.to_vec()), want);
        }
        assert_eq!(t.iter().count(), t.len());
        for i in 0..n {
            t.remove(format!("k{i}").as_bytes());
        }
        assert!(t.is_empty());
        assert!(t.slots.is_empty());
    }
}
