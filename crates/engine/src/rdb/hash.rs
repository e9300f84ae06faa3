//! RDB encoding of hashes: `RDB_TYPE_HASH_LISTPACK` (the listpack's bytes as one string)
//! or `RDB_TYPE_HASH` (field/value string pairs).

use super::{write_len, write_string, RdbError, Reader, TYPE_HASH, TYPE_HASH_LISTPACK};
use crate::coll::Hash;
use crate::value::Value;

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

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
