//! The large hash encoding: a [`Dict`] (chained, a power of two of buckets, rehashed
//! incrementally as Redis's dict) of packed field/value pairs, so that HSCAN can walk it
//! with Redis's reverse-binary cursor (a field present for the whole iteration is returned
//! at least once whatever resizing happens), and a random field is one random index away.
//!
//! Memory per field: one allocation holding the field and its value
//! (`[varint field length][field][value]`), a 24-byte slot (the allocation, its hash and
//! the next slot of its chain) and a 4-byte bucket head.

use super::dict::{hash_key, Dict, Keyed};

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

/// A field and its value, packed by [`pack`]: found by its field.
#[derive(Clone)]
struct Packed(Box<[u8]>);

impl Keyed for Packed {
    #[inline]
    fn key(&self) -> &[u8] {
        unpack(&self.0).0
    }
}

#[derive(Clone, Default)]
pub struct HashTable {
    dict: Dict<Packed>,
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
        HashTable::default()
    }

    pub fn with_capacity(n: usize) -> HashTable {
        HashTable {
            dict: Dict::with_capacity(n),
        }
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
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    pub fn is_rehashing(&self) -> bool {
        self.dict.is_rehashing()
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.dict
            .find(field, hash_key(field))
            .map(|i| unpack(&self.dict.get(i).0).1)
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.dict.find(field, hash_key(field)).is_some()
    }

    /// Set `field` to `value`; true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let hash = hash_key(field);
        if let Some(i) = self.dict.find(field, hash) {
            let data = &mut self.dict.get_mut(i).0;
            let start = data.len() - unpack(data).1.len();
            if data.len() - start == value.len() {
                data[start..].copy_from_slice(value);
            } else {
                *data = pack(field, value);
            }
            return false;
        }
        self.dict.insert_new(Packed(pack(field, value)), hash);
        true
    }

    /// Add a field known to be absent (building from a listpack or an RDB payload).
    pub fn insert_unique(&mut self, field: &[u8], value: &[u8]) {
        self.dict
            .insert_new(Packed(pack(field, value)), hash_key(field));
    }

    /// Remove `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.dict.find(field, hash_key(field)) {
            Some(i) => {
                self.dict.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// Every (field, value), in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.dict.iter().map(|p| unpack(&p.0))
    }

    /// The (field, value) at slot `i` (`i < len`): slots are dense, so a uniformly random
    /// index is a uniformly random field.
    pub fn at(&self, i: usize) -> (&[u8], &[u8]) {
        unpack(&self.dict.get(i).0)
    }

    /// One step of HSCAN's reverse-binary cursor ([`Dict::scan_bucket`]).
    pub fn scan_bucket(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        self.dict.scan_bucket(cursor, |p| {
            let (f, v) = unpack(&p.0);
            visit(f, v)
        })
    }

    /// Bytes held beyond the table itself: the bucket arrays and slot chunks, and the
    /// slots' field-and-value buffers estimated from the first `samples` of them.
    pub fn footprint(&self, samples: usize) -> usize {
        use crate::mem;
        self.dict.allocated()
            + mem::sampled(
                self.dict.iter().map(|p| mem::vec::<u8>(p.0.len())),
                self.len(),
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
        let n = 1024 * 3 + 17;
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
    }
}
