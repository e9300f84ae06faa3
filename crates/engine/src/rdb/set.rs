//! RDB encoding of sets: `RDB_TYPE_SET_INTSET` (the intset's bytes as one string) or
//! `RDB_TYPE_SET` (member strings).

use super::{write_len, write_string, RdbError, Reader, TYPE_SET, TYPE_SET_INTSET};
use crate::coll::Set;
use crate::value::Value;

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
            for m in t {
                write_string(out, m, compress);
            }
        }
    }
}

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
