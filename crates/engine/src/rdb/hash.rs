//! RDB encoding of hashes: `RDB_TYPE_HASH_LISTPACK` (the listpack's bytes as one string)
//! or `RDB_TYPE_HASH` (field/value string pairs); reading also takes the older
//! `RDB_TYPE_HASH_ZIPLIST` and `RDB_TYPE_HASH_ZIPMAP`, converted to a listpack as Redis
//! 7.0 converts them. Everything is validated: duplicates, odd counts and empty hashes
//! are refused.

use super::ziplist::{self, ziplist_items};
use super::RdbString;
use super::{
    check_pairs, write_len, write_string, RdbError, Reader, TYPE_HASH, TYPE_HASH_LISTPACK,
    TYPE_HASH_ZIPLIST, TYPE_HASH_ZIPMAP,
};
use crate::coll::hash_table::HashTable;
use crate::coll::listpack::{Item, Listpack};
use crate::coll::{Hash, Limits};
use crate::value::Value;
use std::collections::HashSet;

pub(super) fn object_type(h: &Hash) -> u8 {
    match h {
        Hash::Listpack(_) => TYPE_HASH_LISTPACK,
        Hash::Table(_) => TYPE_HASH,
    }
}

pub(super) fn write(out: &mut Vec<u8>, h: &Hash, compress: bool) {
    match h {
        Hash::Listpack(lp) => write_string(out, lp.as_bytes(), compress),
        Hash::Table(t) => {
            write_len(out, t.len() as u64);
            for (f, v) in t.iter() {
                write_string(out, f, compress);
                write_string(out, v, compress);
            }
        }
    }
}

pub(super) fn read(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let limits = *r.limits();
    let h = match t {
        TYPE_HASH => read_pairs(r, &limits)?,
        TYPE_HASH_LISTPACK => {
            let lp = Listpack::from_bytes(read_blob(r)?).ok_or(RdbError::Corrupt)?;
            check_pairs(lp.iter(), |_| true)?;
            over_entries(lp, &limits)
        }
        TYPE_HASH_ZIPLIST => {
            let blob = read_blob(r)?;
            let items = ziplist_items(&blob).ok_or(RdbError::Corrupt)?;
            check_pairs(items.iter().copied(), |_| true)?;
            let mut lp = Listpack::new();
            for i in items {
                match i {
                    Item::Int(n) => lp.insert_int(lp.end(), n),
                    Item::Str(s) => lp.insert(lp.end(), s),
                };
            }
            over_entries(lp, &limits)
        }
        TYPE_HASH_ZIPMAP => {
            let blob = read_blob(r)?;
            let pairs = ziplist::zipmap_pairs(&blob).ok_or(RdbError::Corrupt)?;
            let mut seen = HashSet::with_capacity(pairs.len());
            let mut lp = Listpack::new();
            let mut maxlen = 0;
            for (f, v) in pairs {
                if !seen.insert(f) {
                    return Err(RdbError::Corrupt);
                }
                maxlen = maxlen.max(f.len()).max(v.len());
                lp.push_back(f);
                lp.push_back(v);
            }
            let mut h = Hash::Listpack(lp);
            if h.len() as u64 > limits.hash_max_listpack_entries
                || maxlen as u64 > limits.hash_max_listpack_value
            {
                h.convert();
            }
            h
        }
        other => return Err(RdbError::UnsupportedType(other)),
    };
    Ok(Value::Hash(Box::new(h)))
}

/// A loaded listpack hash, a table if it has more fields than allowed (field and value
/// lengths are not checked on load, as in Redis).
fn over_entries(lp: Listpack, limits: &Limits) -> Hash {
    let mut h = Hash::Listpack(lp);
    if h.len() as u64 > limits.hash_max_listpack_entries {
        h.convert();
    }
    h
}

/// A string holding an encoded collection, as bytes.
fn read_blob(r: &mut Reader<'_>) -> Result<Vec<u8>, RdbError> {
    match r.read_string()? {
        RdbString::Bytes(b) => Ok(b.into_owned()),
        RdbString::Int(_) => Err(RdbError::Corrupt),
    }
}

/// `RDB_TYPE_HASH`: a count, then field/value strings. A listpack while within the limits
/// (a table from the start when the count is over them, or from the first pair too long),
/// as Redis's loader builds it.
fn read_pairs(r: &mut Reader<'_>, limits: &Limits) -> Result<Hash, RdbError> {
    let len = r.read_len()?;
    if len == 0 {
        return Err(RdbError::Corrupt);
    }
    let mut left = len;
    let mut t = if len > limits.hash_max_listpack_entries {
        // Each pair takes at least two bytes: never reserve more than the input could hold.
        let cap = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .min(r.remaining() / 2);
        HashTable::with_capacity(cap)
    } else {
        let mut lp = Listpack::new();
        let mut seen = HashSet::new();
        loop {
            if left == 0 {
                return Ok(Hash::Listpack(lp));
            }
            left -= 1;
            let f = r.read_string()?.into_bytes();
            let v = r.read_string()?.into_bytes();
            if !seen.insert(f.to_vec()) {
                return Err(RdbError::Corrupt);
            }
            if f.len() as u64 > limits.hash_max_listpack_value
                || v.len() as u64 > limits.hash_max_listpack_value
            {
                let mut t = HashTable::from_listpack(&lp);
                t.insert_unique(&f, &v);
                break t;
            }
            lp.push_back(&f);
            lp.push_back(&v);
        }
    };
    for _ in 0..left {
        let f = r.read_string()?.into_bytes();
        let v = r.read_string()?.into_bytes();
        if !t.insert(&f, &v) {
            return Err(RdbError::Corrupt);
        }
    }
    Ok(Hash::Table(Box::new(t)))
}

#[cfg(test)]
mod tests {
    use super::super::{dump_payload, load_payload_with};
    use super::*;
    use rand::{Rng, SeedableRng};

    use crate::coll::hash::test_limits as limits;

    fn hash_of(pairs: &[(&[u8], &[u8])], l: &Limits) -> Hash {
        let mut h = Hash::new();
        for (f, v) in pairs {
            h.set(f, v, l);
        }
        h
    }

    #[test]
    fn round_trips_and_converts_on_load() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
            .map(|i| {
                (
                    format!("f{i}").into_bytes(),
                    format!("{}", i * 1000).into_bytes(),
                )
            })
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
        for (build, load, want) in [
            (limits(512, 64), limits(512, 64), "listpack"),
            (limits(512, 64), limits(10, 64), "hashtable"),
            (limits(5, 64), limits(512, 64), "listpack"),
            (limits(5, 64), limits(10, 64), "hashtable"),
        ] {
            let h = hash_of(&refs, &build);
            let p = dump_payload(Value::Hash(Box::new(h.clone())).view(), true);
            let Value::Hash(back) = load_payload_with(&p, &load).unwrap() else {
                panic!("not a hash")
            };
            assert_eq!(back.encoding(), want);
            let mut a: Vec<_> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            let mut b: Vec<_> = back.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn hostile_hash_payloads_never_panic() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let l = limits(512, 64);
        let small = hash_of(&[(b"a", b"1"), (b"bb", b"-300"), (b"c", b"hello")], &l);
        let big = hash_of(&[(b"a", b"1"), (b"long", &[b'x'; 70])], &l);
        // A ziplist and a zipmap payload, as older Redis versions wrote them.
        let zl = [
            13u8, 24, 24, 0, 0, 0, 19, 0, 0, 0, 4, 0, 0, 1, b'a', 3, 0xf2, 2, 2, b'b', b'b', 4,
            0xc0, 0xd4, 0xfe, 0xff, 10, 0,
        ];
        let zm = [9u8, 7, 1, 1, b'f', 1, 0, b'v', 0xff, 10, 0];
        let mut goods = vec![
            dump_payload(Value::Hash(Box::new(small)).view(), false),
            dump_payload(Value::Hash(Box::new(big)).view(), false),
        ];
        goods.push(zl.to_vec());
        goods.push(zm.to_vec());
        assert!(load_payload_with(&zl, &l).is_ok());
        assert!(load_payload_with(&zm, &l).is_ok());
        for good in &goods {
            for _ in 0..5000 {
                let mut p = good.clone();
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..p.len());
                    p[i] = rng.gen();
                }
                p.truncate(rng.gen_range(0..=p.len()));
                for lim in [l, limits(1, 1), limits(0, 0)] {
                    if let Ok(Value::Hash(h)) = load_payload_with(&p, &lim) {
                        assert!(!h.is_empty());
                        assert_eq!(h.iter().count(), h.len());
                    }
                }
            }
        }
    }
}
