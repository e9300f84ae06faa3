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
                Set::Table(Table::with_capacity(cap))
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
