//! RDB encoding of lists: Redis 7.0 writes `RDB_TYPE_LIST_QUICKLIST_2`, one listpack per
//! quicklist node.

use super::{write_len, write_string, RdbError, Reader, TYPE_LIST_QUICKLIST_2};
use crate::coll::List;
use crate::value::Value;

/// quicklist node containers (`QUICKLIST_NODE_CONTAINER_*`).
#[allow(dead_code)] // read by the loader (plain nodes hold one element over 1 GiB)
pub(super) const CONTAINER_PLAIN: u64 = 1;
pub(super) const CONTAINER_PACKED: u64 = 2;

pub(super) fn object_type(_: &List) -> u8 {
    TYPE_LIST_QUICKLIST_2
}

pub(super) fn write(out: &mut Vec<u8>, l: &List, compress: bool) {
    write_len(out, l.nodes().len() as u64);
    for node in l.nodes() {
        write_len(out, CONTAINER_PACKED);
        write_string(out, node.as_bytes(), compress);
    }
}

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
