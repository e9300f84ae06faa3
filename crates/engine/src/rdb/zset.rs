//! RDB encoding of sorted sets: `RDB_TYPE_ZSET_LISTPACK` (the listpack's bytes as one
//! string) or `RDB_TYPE_ZSET_2` (member strings with binary double scores, written from
//! the highest score to the lowest as Redis writes them).

use super::{write_len, write_string, RdbError, Reader, TYPE_ZSET_2, TYPE_ZSET_LISTPACK};
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

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
