//! RDB encoding of lists: Redis 7.0 writes `RDB_TYPE_LIST_QUICKLIST_2`, one listpack per
//! quicklist node (an LZF-compressed node as its LZF blob).

use super::{write_len, write_string, RdbError, Reader, TYPE_LIST_QUICKLIST_2};
use crate::coll::list::NodeRef;
use crate::coll::List;
use crate::value::Value;

/// quicklist node containers (`QUICKLIST_NODE_CONTAINER_*`).
#[allow(dead_code)] // read by the loader (plain nodes hold one element over 1 GiB)
pub(super) const CONTAINER_PLAIN: u64 = 1;
pub(super) const CONTAINER_PACKED: u64 = 2;
/// `RDB_ENCVAL << 6 | RDB_ENC_LZF`: an LZF blob follows.
const LZF_BLOB: u8 = 0xC3;

pub(super) fn object_type(_: &List) -> u8 {
    TYPE_LIST_QUICKLIST_2
}

pub(super) fn write(out: &mut Vec<u8>, l: &List, compress: bool) {
    write_len(out, l.node_count() as u64);
    for node in l.nodes() {
        write_len(out, CONTAINER_PACKED);
        match node {
            NodeRef::Packed(bytes) => write_string(out, bytes, compress),
            // rdbSaveLzfBlob: the node's own compressed bytes.
            NodeRef::Lzf(blob, sz) => {
                out.push(LZF_BLOB);
                write_len(out, blob.len() as u64);
                write_len(out, sz as u64);
                out.extend_from_slice(blob);
            }
        }
    }
}

pub(super) fn read(_: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    Err(RdbError::UnsupportedType(t))
}
