//! The large hash encoding: a chained hash table whose buckets are a power of two, as in
//! Redis's dict, so that HSCAN can walk it with Redis's reverse-binary cursor (a field
//! present for the whole iteration is returned at least once whatever resizing happens),
//! and whose fields live in one dense array (a random field is one random index away).
//!
//! Memory per field: one allocation holding the field and its value
//! (`[varint field length][field][value]`), a 24-byte slot (the allocation, its hash and
//! the next slot of its chain) and a 4-byte bucket head.

use std::hash::BuildHasher;

const NIL: u32 = u32::MAX;
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

#[derive(Clone)]
pub struct HashTable {
    /// Head slot index of each bucket (NIL = empty); the length is a power of two.
    buckets: Vec<u32>,
    slots: Vec<Slot>,
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

impl HashTable {
    pub fn new() -> HashTable {
        HashTable {
            buckets: vec![NIL; MIN_BUCKETS],
            slots: Vec::new(),
        }
    }

    pub fn with_capacity(n: usize) -> HashTable {
        let mut t = HashTable::new();
        t.slots.reserve_exact(n);
        t.rehash(n.next_power_of_two().max(MIN_BUCKETS));
        t
    }

    /// The pairs of a listpack of field/value pairs.
    pub fn from_listpack(lp: &super::listpack::Listpack) -> HashTable {
        let mut t = HashTable::with_capacity(lp.len() / 2);
        let mut it = lp.iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            t.insert(&f.to_vec(), &v.to_vec());
        }
        t
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Number of buckets (a power of two).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    /// Slot index of `field`, if present.
    fn find(&self, field: &[u8], hash: u32) -> Option<usize> {
        let mut at = self.buckets[hash as usize & self.mask()];
        while at != NIL {
            let s = &self.slots[at as usize];
            if s.hash == hash && unpack(&s.data).0 == field {
                return Some(at as usize);
            }
            at = s.next;
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
        assert!(idx < NIL as usize, "hash table full");
        if idx >= self.buckets.len() {
            self.rehash(self.buckets.len() * 2);
        }
        let b = hash as usize & self.mask();
        self.slots.push(Slot {
            data,
            hash,
            next: self.buckets[b],
        });
        self.buckets[b] = idx as u32;
    }

    /// Remove `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let hash = hash_field(field);
        let Some(i) = self.find(field, hash) else {
            return false;
        };
        self.unlink(i);
        let last = self.slots.len() - 1;
        if i != last {
            // The last slot moves into `i`: repoint the link that named it.
            let h = self.slots[last].hash as usize & self.mask();
            self.relink(h, last as u32, i as u32);
        }
        self.slots.swap_remove(i);
        if self.slots.capacity() > 64 && self.slots.len() * 4 < self.slots.capacity() {
            self.slots.shrink_to(self.slots.len() * 2);
        }
        if self.buckets.len() > MIN_BUCKETS && self.slots.len() * 8 < self.buckets.len() {
            let n = (self.slots.len() * 2).next_power_of_two().max(MIN_BUCKETS);
            self.rehash(n);
        }
        true
    }

    /// Take slot `i` out of its chain.
    fn unlink(&mut self, i: usize) {
        let b = self.slots[i].hash as usize & self.mask();
        let next = self.slots[i].next;
        self.relink(b, i as u32, next);
    }

    /// In bucket `b`'s chain, make the link that points at `from` point at `to`.
    fn relink(&mut self, b: usize, from: u32, to: u32) {
        if self.buckets[b] == from {
            self.buckets[b] = to;
            return;
        }
        let mut at = self.buckets[b];
        while at != NIL {
            let s = &mut self.slots[at as usize];
            if s.next == from {
                s.next = to;
                return;
            }
            at = s.next;
        }
        unreachable!("slot not in its bucket's chain");
    }

    fn rehash(&mut self, n: usize) {
        self.buckets.clear();
        self.buckets.resize(n, NIL);
        self.buckets.shrink_to_fit();
        let mask = n - 1;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let b = s.hash as usize & mask;
            s.next = self.buckets[b];
            self.buckets[b] = i as u32;
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

    /// One step of a reverse-binary cursor scan (Redis's dictScan): visits every field of
    /// the bucket `cursor` designates (and, the table being as it is, nothing else), and
    /// returns the next cursor (0 when the walk is done).
    pub fn scan_bucket(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        let mask = self.mask() as u64;
        let mut at = self.buckets[(cursor & mask) as usize];
        while at != NIL {
            let s = &self.slots[at as usize];
            let (f, v) = unpack(&s.data);
            visit(f, v);
            at = s.next;
        }
        // Increment the reversed cursor over the bits of the mask.
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Bytes held (the allocations' sizes, approximately).
    pub fn allocated(&self) -> usize {
        self.buckets.capacity() * 4
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.slots.iter().map(|s| s.data.len()).sum::<usize>()
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
}
