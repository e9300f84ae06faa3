//! The hash type: a listpack of field/value pairs while small, a hash table beyond
//! `hash-max-listpack-entries` fields or a field or value longer than
//! `hash-max-listpack-value` (one way, as in Redis: a table never goes back).

use super::hash_table::HashTable;
use super::listpack::{Item, Listpack};
use super::Limits;

/// Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack is converted before it could grow past it.
const LISTPACK_MAX_SAFETY_SIZE: usize = 1 << 30;

#[derive(Clone, Debug, PartialEq)]
pub enum Hash {
    Listpack(Listpack),
    /// Boxed: a key holding a small hash pays only for the listpack's size here.
    Table(Box<HashTable>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Listpack::new())
    }
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    pub fn len(&self) -> usize {
        match self {
            Hash::Listpack(lp) => lp.len() / 2,
            Hash::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `OBJECT ENCODING` name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Listpack(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    /// Position of `field`'s value in the listpack.
    fn lp_value_pos(lp: &Listpack, field: &[u8]) -> Option<usize> {
        let at = lp.find(lp.first(), field, 1)?;
        lp.next(at)
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<Item<'_>> {
        match self {
            Hash::Listpack(lp) => Self::lp_value_pos(lp, field).map(|v| lp.get(v)),
            Hash::Table(t) => t.get(field).map(Item::Str),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        match self {
            Hash::Listpack(lp) => lp.find(lp.first(), field, 1).is_some(),
            Hash::Table(t) => t.contains(field),
        }
    }

    /// Redis's hashTypeTryConversion, before a write with these argument lengths: a
    /// listpack becomes a table if one is longer than `hash-max-listpack-value` or the
    /// listpack could grow past its safety size.
    pub fn prepare_for(&mut self, lens: impl IntoIterator<Item = usize>, limits: &Limits) {
        let Hash::Listpack(lp) = self else { return };
        let mut sum = 0usize;
        for n in lens {
            if n as u64 > limits.hash_max_listpack_value {
                return self.convert();
            }
            sum += n;
        }
        if lp.bytes_len() + sum > LISTPACK_MAX_SAFETY_SIZE {
            self.convert();
        }
    }

    /// Redis's hashTypeSet: set `field` to `value` (converting first if either is too long
    /// for a listpack, and after if the listpack now has too many fields); true if the
    /// field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let Hash::Listpack(_) = self {
            let max = limits.hash_max_listpack_value;
            if field.len() as u64 > max || value.len() as u64 > max {
                self.convert();
            }
        }
        match self {
            Hash::Listpack(lp) => {
                let new = match Self::lp_value_pos(lp, field) {
                    Some(v) => {
                        lp.replace(v, value);
                        false
                    }
                    None => {
                        lp.push_back(field);
                        lp.push_back(value);
                        true
                    }
                };
                if (lp.len() / 2) as u64 > limits.hash_max_listpack_entries {
                    self.convert();
                }
                new
            }
            Hash::Table(t) => t.insert(field, value),
        }
    }

    /// Remove `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Listpack(lp) => match lp.find(lp.first(), field, 1) {
                Some(at) => {
                    lp.delete_range(at, 2);
                    true
                }
                None => false,
            },
            Hash::Table(t) => t.remove(field),
        }
    }

    /// Convert a listpack to a table (Redis's hashTypeConvert to OBJ_ENCODING_HT).
    pub fn convert(&mut self) {
        if let Hash::Listpack(lp) = self {
            *self = Hash::Table(Box::new(HashTable::from_listpack(lp)));
        }
    }

    /// Every (field, value) in the encoding's order.
    pub fn iter(&self) -> Pairs<'_> {
        match self {
            Hash::Listpack(lp) => Pairs::Listpack(lp.iter()),
            Hash::Table(t) => Pairs::Table(Box::new(t.iter())),
        }
    }

    /// Visit every (field, value) in the encoding's order.
    pub fn for_each(&self, mut f: impl FnMut(Item<'_>, Item<'_>)) {
        self.iter().for_each(|(k, v)| f(k, v));
    }

    /// The (field, value) pair at index `i` (`i < len`): O(1) for a table, O(i) for a
    /// listpack.
    pub fn pair_at(&self, i: usize) -> (Item<'_>, Item<'_>) {
        match self {
            Hash::Listpack(lp) => {
                let at = lp.seek(2 * i as i64).expect("index in range");
                let v = lp.next(at).expect("a value follows its field");
                (lp.get(at), lp.get(v))
            }
            Hash::Table(t) => {
                let (k, v) = t.at(i);
                (Item::Str(k), Item::Str(v))
            }
        }
    }

    /// The pairs at these indices (each `< len`), in the order given, one pass over a
    /// listpack.
    pub fn pairs_at(&self, idx: &[usize]) -> Vec<(Item<'_>, Item<'_>)> {
        match self {
            Hash::Listpack(_) => {
                let pairs: Vec<_> = self.iter().collect();
                idx.iter().map(|&i| pairs[i]).collect()
            }
            Hash::Table(_) => idx.iter().map(|&i| self.pair_at(i)).collect(),
        }
    }

    /// Bytes held by the value (MEMORY USAGE): fields and values allocated one by one
    /// are estimated from the first `samples` of them.
    pub fn footprint(&self, samples: usize) -> usize {
        match self {
            Hash::Listpack(lp) => lp.allocated(),
            Hash::Table(t) => crate::mem::boxed::<HashTable>() + t.footprint(samples),
        }
    }
}

/// Iterator over a hash's (field, value) pairs.
pub enum Pairs<'a> {
    Listpack(super::listpack::Iter<'a>),
    Table(Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a>),
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (Item<'a>, Item<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Pairs::Listpack(it) => Some((it.next()?, it.next()?)),
            Pairs::Table(it) => it.next().map(|(k, v)| (Item::Str(k), Item::Str(v))),
        }
    }
}

/// Redis's default limits but for the hash thresholds (tests).
#[cfg(test)]
pub(crate) fn test_limits(entries: u64, value: u64) -> Limits {
    Limits {
        hash_max_listpack_entries: entries,
        hash_max_listpack_value: value,
        ..Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    use super::test_limits as limits;

    fn contents(h: &Hash) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut m = BTreeMap::new();
        h.for_each(|k, v| {
            m.insert(k.to_vec(), v.to_vec());
        });
        m
    }

    #[test]
    fn small_in_a_key() {
        assert_eq!(std::mem::size_of::<Hash>(), 24);
    }

    #[test]
    fn converts_at_redis_points() {
        let l = limits(4, 8);
        let mut h = Hash::new();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", &l);
        }
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f0", b"12345678", &l);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f4", b"v", &l);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = Hash::new();
        h.set(b"f", b"123456789", &l);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = Hash::new();
        h.prepare_for([1, 9], &l);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, Vec<u8>),
        Del(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..40, prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..12),
                (-300i64..300).prop_map(|n| n.to_string().into_bytes()),
            ]).prop_map(|(f, v)| Op::Set(f, v)),
            1 => (0u8..40).prop_map(Op::Del),
        ]
    }

    proptest! {
        #[test]
        fn model(ops in proptest::collection::vec(op(), 1..200)) {
            let l = limits(16, 10);
            let mut h = Hash::new();
            let mut m: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut was_table = false;
            for op in ops {
                match op {
                    Op::Set(f, v) => {
                        let f = format!("f{f}").into_bytes();
                        prop_assert_eq!(h.set(&f, &v, &l), m.insert(f.clone(), v.clone()).is_none());
                    }
                    Op::Del(f) => {
                        let f = format!("f{f}").into_bytes();
                        prop_assert_eq!(h.remove(&f), m.remove(&f).is_some());
                    }
                }
                prop_assert_eq!(h.len(), m.len());
                let over = m.len() > 16 || m.values().any(|v| v.len() > 10);
                if over { prop_assert_eq!(h.encoding(), "hashtable"); }
                if was_table { prop_assert_eq!(h.encoding(), "hashtable"); }
                was_table = h.encoding() == "hashtable";
                if !was_table {
                    prop_assert!(!over);
                }
                for (k, v) in &m {
                    prop_assert_eq!(h.get(k).map(|i| i.to_vec()), Some(v.clone()));
                }
                prop_assert_eq!(contents(&h), m.clone());
            }
        }
    }
}
