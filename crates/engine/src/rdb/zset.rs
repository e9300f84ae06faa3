//! RDB encoding of sorted sets: `RDB_TYPE_ZSET_LISTPACK` (the listpack's bytes as one
//! string) or `RDB_TYPE_ZSET_2` (member strings with binary double scores, written from
//! the highest score to the lowest as Redis writes them). Reading also takes the older
//! `RDB_TYPE_ZSET_ZIPLIST` (converted to a listpack) and `RDB_TYPE_ZSET` (scores as
//! strings). Everything is validated: NaN scores, duplicate members, odd or empty
//! listpacks are refused; the result is converted under the reader's limits as Redis's
//! loader converts it.

use super::ziplist::ziplist_items;
use super::{
    check_pairs, write_len, write_string, RdbError, Reader, TYPE_ZSET, TYPE_ZSET_2,
    TYPE_ZSET_LISTPACK, TYPE_ZSET_ZIPLIST,
};
use crate::coll::listpack::{Item, Listpack};
use crate::coll::zset::{parse_stored_score, SkipList};
use crate::coll::ZSet;
use crate::value::Value;

pub(super) fn object_type(z: &ZSet) -> u8 {
    match z {
        ZSet::Listpack(_) => TYPE_ZSET_LISTPACK,
        ZSet::Skiplist(_) => TYPE_ZSET_2,
    }
}

pub(super) fn write(out: &mut Vec<u8>, z: &ZSet, compress: bool) {
    match z {
        ZSet::Listpack(lp) => write_string(out, lp.as_bytes(), compress),
        ZSet::Skiplist(sl) => {
            write_len(out, sl.len() as u64);
            for (m, s) in sl.iter_rev() {
                write_string(out, m, compress);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
}

pub(super) fn read(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let limits = *r.limits();
    let z = match t {
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.read_len()?;
            if n == 0 {
                return Err(RdbError::Corrupt);
            }
            let mut sl = SkipList::new();
            for _ in 0..n {
                let m = r.read_string()?.into_bytes().into_owned();
                let score = if t == TYPE_ZSET_2 {
                    let b = r.read_bytes(8)?;
                    f64::from_le_bytes(b.try_into().map_err(|_| RdbError::Corrupt)?)
                } else {
                    read_old_double(r)?
                };
                if score.is_nan() || sl.score(&m).is_some() {
                    return Err(RdbError::Corrupt);
                }
                sl.insert(m.into_boxed_slice(), score);
            }
            let mut z = ZSet::Skiplist(Box::new(sl));
            z.shrink_if_fits(&limits);
            z
        }
        TYPE_ZSET_LISTPACK => {
            let blob = r.read_string()?.into_bytes().into_owned();
            let lp = Listpack::from_bytes(blob).ok_or(RdbError::Corrupt)?;
            check_pairs(lp.iter(), score_ok)?;
            if !in_order(lp.iter()) {
                return Err(RdbError::Corrupt);
            }
            ZSet::Listpack(lp)
        }
        TYPE_ZSET_ZIPLIST => {
            let blob = r.read_string()?.into_bytes().into_owned();
            let items = ziplist_items(&blob).ok_or(RdbError::Corrupt)?;
            check_pairs(items.iter().copied(), score_ok)?;
            if !in_order(items.iter().copied()) {
                return Err(RdbError::Corrupt);
            }
            let mut lp = Listpack::new();
            for i in items {
                match i {
                    Item::Int(n) => lp.insert_int(lp.end(), n),
                    Item::Str(s) => lp.insert(lp.end(), s),
                };
            }
            ZSet::Listpack(lp)
        }
        other => return Err(RdbError::UnsupportedType(other)),
    };
    let mut z = z;
    if let ZSet::Listpack(_) = z {
        if z.len() as u64 > limits.zset_max_listpack_entries {
            z.convert_to_skiplist();
        }
    }
    Ok(Value::ZSet(Box::new(z)))
}

/// A stored score (the second of each member/score pair) that parses as a number.
fn score_ok(it: Item<'_>) -> bool {
    match it {
        Item::Int(_) => true,
        Item::Str(s) => parse_stored_score(s).is_some(),
    }
}

/// Member/score pairs in the order Redis keeps them (score, then member bytes), as every
/// listpack or ziplist Redis writes is. Redis 7.0's loader does not check it, even
/// sanitizing, and then serves such a set inconsistently (ZCOUNT, ZRANGEBYSCORE and ZRANK
/// search it as if sorted, ZADD inserts out of place); Skein refuses it.
fn in_order<'a>(mut items: impl Iterator<Item = Item<'a>>) -> bool {
    let mut prev: Option<(f64, Vec<u8>)> = None;
    while let (Some(m), Some(s)) = (items.next(), items.next()) {
        let score = match s {
            Item::Int(n) => n as f64,
            Item::Str(b) => match parse_stored_score(b) {
                Some(v) => v,
                None => return false,
            },
        };
        let m = m.to_vec();
        if let Some((ps, pm)) = &prev {
            if score < *ps || (score == *ps && m <= *pm) {
                return false;
            }
        }
        prev = Some((score, m));
    }
    true
}

/// rdbLoadDoubleValue: a length byte (253 NaN, 254 +inf, 255 -inf) then that many bytes
/// of text.
fn read_old_double(r: &mut Reader<'_>) -> Result<f64, RdbError> {
    match r.read_u8()? {
        255 => Ok(f64::NEG_INFINITY),
        254 => Ok(f64::INFINITY),
        253 => Ok(f64::NAN),
        n => parse_stored_score(r.read_bytes(u64::from(n))?).ok_or(RdbError::Corrupt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::Limits;
    use crate::rdb::{dump_payload, load_payload_with};
    use crate::value::ValueRef;

    fn roundtrip(z: &ZSet, l: &Limits) -> ZSet {
        let p = dump_payload(ValueRef::ZSet(z), false);
        match load_payload_with(&p, l).expect("loads") {
            Value::ZSet(z) => *z,
            _ => panic!("not a zset"),
        }
    }

    #[test]
    fn both_encodings_round_trip() {
        let l = Limits::default();
        let mut z = ZSet::new();
        for i in 0..10 {
            z.set(format!("m{i}").as_bytes(), f64::from(i) / 3.0, &l);
        }
        assert_eq!(roundtrip(&z, &l), z);
        for i in 10..200 {
            z.set(format!("m{i}").as_bytes(), f64::from(i) / 3.0, &l);
        }
        assert_eq!(z.encoding(), "skiplist");
        let back = roundtrip(&z, &l);
        assert_eq!(back.encoding(), "skiplist");
        assert_eq!(back.to_pairs(), z.to_pairs());
        // Loaded under larger limits, a ZSET_2 comes back as a listpack.
        let big = Limits {
            zset_max_listpack_entries: 1000,
            ..l
        };
        let back = roundtrip(&z, &big);
        assert_eq!(back.encoding(), "listpack");
        assert_eq!(back.to_pairs(), z.to_pairs());
    }

    #[test]
    fn listpacks_out_of_order_are_refused() {
        let l = Limits::default();
        let load = |pairs: &[(&[u8], &[u8])]| {
            let mut lp = Listpack::new();
            for (m, s) in pairs {
                lp.push_back(m);
                lp.push_back(s);
            }
            let p = dump_payload(ValueRef::ZSet(&ZSet::Listpack(lp)), false);
            load_payload_with(&p, &l).is_ok()
        };
        assert!(load(&[
            (b"b", b"1"),
            (b"a", b"2"),
            (b"c", b"2"),
            (b"d", b"inf")
        ]));
        assert!(load(&[(b"b", b"-0"), (b"c", b"0")]));
        // Scores falling, and members of one score out of byte order.
        assert!(!load(&[(b"a", b"1"), (b"b", b"796"), (b"c", b"-144")]));
        assert!(!load(&[(b"b", b"2"), (b"a", b"2")]));
        assert!(!load(&[(b"ab", b"2"), (b"a", b"2")]));
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let l = Limits::default();
        let mut z = ZSet::new();
        for i in 0..5 {
            z.set(format!("m{i}").as_bytes(), f64::from(i) + 0.5, &l);
        }
        for t in [
            TYPE_ZSET,
            TYPE_ZSET_2,
            TYPE_ZSET_ZIPLIST,
            TYPE_ZSET_LISTPACK,
        ] {
            let mut p = dump_payload(ValueRef::ZSet(&z), false);
            p[0] = t;
            for i in 1..p.len() {
                for v in [0u8, 1, 0x7F, 0xFE, 0xFF] {
                    let mut q = p.clone();
                    q[i] = v;
                    let _ = load_payload_with(&q, &l);
                    let _ = load_payload_with(&q[..i], &l);
                }
            }
        }
    }
}
