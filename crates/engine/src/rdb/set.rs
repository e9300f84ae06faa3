//! RDB encoding of sets: `RDB_TYPE_SET_INTSET` (the intset's bytes as one string) or
//! `RDB_TYPE_SET` (member strings). Redis 7.0 has no listpack sets (type 20 is unknown).

use super::{write_len, write_string, RdbError, RdbString, Reader, TYPE_SET, TYPE_SET_INTSET};
use crate::coll::set::{fmt_int, Table};
use crate::coll::{Intset, Set};
use crate::value::{parse_strict_i64, Value};

pub(super) fn object_type(s: &Set) -> u8 {
    match s {
        Set::Intset(_) => TYPE_SET_INTSET,
        Set::Table(_) => TYPE_SET,
    }
}

pub(super) fn write(out: &mut Vec<u8>, s: &Set, compress: bool) {
    match s {
        Set::Intset(is) => write_string(out, is.as_bytes(), compress),
        Set::Table(t) => {
            write_len(out, t.len() as u64);
            for m in t.iter() {
                write_string(out, m, compress);
            }
        }
    }
}

/// rdbLoadObject for sets: an intset blob (checked: width, length, strictly ascending, not
/// empty) converted to a hash table past `set-max-intset-entries`, or member strings
/// (duplicates and empty sets refused) loaded as an intset when they are all integers and
/// their count is within the limit, as Redis does.
pub(super) fn read(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let max = r.limits().set_max_intset_entries;
    let set = match t {
        TYPE_SET_INTSET => {
            let blob = match r.read_string()? {
                RdbString::Bytes(b) => b.into_owned(),
                RdbString::Int(_) => return Err(RdbError::Corrupt),
            };
            let is = Intset::from_bytes(blob).ok_or(RdbError::Corrupt)?;
            let mut s = Set::Intset(is);
            if s.len() as u64 > max {
                s.convert_to_table();
            }
            s
        }
        TYPE_SET => {
            let len = r.read_len()?;
            if len == 0 {
                return Err(RdbError::Corrupt);
            }
            // Every member takes at least one byte: never trust a claimed length further.
            let cap = len.min(r.remaining() as u64) as usize;
            let mut s = if len > max.min(1 << 30) {
                Set::Table(Box::new(Table::with_capacity(cap)))
            } else {
                Set::Intset(Intset::new())
            };
            let mut buf = [0u8; 20];
            for _ in 0..len {
                let m = r.read_string()?;
                let bytes: &[u8] = match &m {
                    RdbString::Int(n) => fmt_int(*n, &mut buf),
                    RdbString::Bytes(b) => b,
                };
                let added = match &mut s {
                    Set::Intset(is) => match parse_strict_i64(bytes) {
                        Some(n) => is.insert(n),
                        None => {
                            s.convert_to_table();
                            insert_table(&mut s, bytes)
                        }
                    },
                    Set::Table(_) => insert_table(&mut s, bytes),
                };
                if !added {
                    return Err(RdbError::Corrupt);
                }
            }
            s
        }
        other => return Err(RdbError::UnsupportedType(other)),
    };
    Ok(Value::Set(Box::new(set)))
}

fn insert_table(s: &mut Set, m: &[u8]) -> bool {
    match s {
        Set::Table(t) => t.insert(m),
        Set::Intset(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{dump_payload, load_payload_with, RdbError};
    use crate::coll::{Limits, Set};
    use crate::value::{Value, ValueRef};
    use rand::{Rng, SeedableRng};

    fn set_of(members: &[&[u8]], limits: &Limits) -> Set {
        let mut s = Set::for_first(members[0]);
        for m in members {
            s.insert(m, limits);
        }
        s
    }

    fn sorted(s: &Set) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = s.iter().map(|e| e.to_vec()).collect();
        v.sort();
        v
    }

    fn load(p: &[u8], limits: &Limits) -> Result<Set, RdbError> {
        match load_payload_with(p, limits)? {
            Value::Set(s) => Ok(*s),
            _ => Err(RdbError::Corrupt),
        }
    }

    #[test]
    fn round_trips_and_converts_by_limit() {
        let l = Limits::default();
        let small = Limits {
            set_max_intset_entries: 2,
            ..Limits::default()
        };
        let ints = set_of(&[b"1", b"-70000", b"3"], &l);
        let strs = set_of(&[b"a", b"b", b"x".repeat(50).as_slice()], &l);
        let mut table_ints = set_of(&[b"a", b"1", b"2"], &l);
        table_ints.remove(b"a");
        for (s, under_small) in [
            (&ints, "hashtable"),
            (&strs, "hashtable"),
            (&table_ints, "intset"),
        ] {
            let p = dump_payload(ValueRef::Set(s), true);
            let back = load(&p, &l).expect("loads");
            assert_eq!(sorted(&back), sorted(s));
            let is_strs = sorted(s) == sorted(&strs);
            assert_eq!(
                back.encoding(),
                if is_strs { "hashtable" } else { "intset" }
            );
            assert_eq!(load(&p, &small).expect("loads").encoding(), under_small);
        }
    }

    #[test]
    fn hostile_set_payloads_never_panic() {
        let l = Limits::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let many: Vec<Vec<u8>> = (0..300)
            .map(|i| format!("{}", i * 1000).into_bytes())
            .collect();
        let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let sources = [
            set_of(&refs, &l),
            set_of(&[b"a", b"bb", b"1", b"hello hello hello hello"], &l),
        ];
        for s in &sources {
            let good = dump_payload(ValueRef::Set(s), false);
            for _ in 0..5000 {
                let mut p = good.clone();
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..p.len());
                    p[i] = rng.gen();
                }
                p.truncate(rng.gen_range(0..=p.len()));
                if let Ok(s) = load(&p, &l) {
                    assert_eq!(s.iter().count(), s.len());
                    assert!(!s.is_empty());
                }
            }
        }
    }
}
