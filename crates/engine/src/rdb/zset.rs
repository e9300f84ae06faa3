//! RDB encoding of sorted sets: `RDB_TYPE_ZSET_LISTPACK` (the listpack's bytes as one
//! string) or `RDB_TYPE_ZSET_2` (member strings with binary double scores).

use super::{write_string, RdbError, Reader, TYPE_ZSET_LISTPACK};
use crate::coll::ZSet;
use crate::value::Value;

pub(super) fn object_type(z: &ZSet) -> u8 {
    match z {
        ZSet::Listpack(_) => TYPE_ZSET_LISTPACK,
    }
}

pub(super) fn write(out: &mut Vec<u8>, z: &ZSet, compress: bool) {
    match z {
        ZSet::Listpack(lp) => write_string(out, lp.as_bytes(), compress),
    }
}

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
