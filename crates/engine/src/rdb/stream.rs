//! Streams in RDB (RDB_TYPE_STREAM_LISTPACKS_2, what Redis 7.0 writes): the nodes as
//! (master ID, listpack) string pairs, the stream's counters, then the consumer groups.

use super::{write_len, write_string, TYPE_STREAM_LISTPACKS_2};
use crate::coll::Stream;

pub fn object_type(_: &Stream) -> u8 {
    TYPE_STREAM_LISTPACKS_2
}

/// rdbSaveObject for a stream.
pub fn write(out: &mut Vec<u8>, s: &Stream, compress: bool) {
    write_len(out, s.node_count() as u64);
    for (key, lp) in s.nodes() {
        write_string(out, &key.to_be_bytes(), compress);
        write_string(out, lp.as_bytes(), compress);
    }
    write_len(out, s.len());
    for id in [s.last_id(), s.first_id(), s.max_deleted_id()] {
        write_len(out, id.ms);
        write_len(out, id.seq);
    }
    write_len(out, s.entries_added());
    write_len(out, s.groups().len() as u64);
    for (name, g) in s.groups() {
        write_string(out, name, compress);
        write_len(out, g.last_id.ms);
        write_len(out, g.last_id.seq);
        write_len(out, g.entries_read as u64);
        // The group's PEL, with delivery times and counts (rdbSaveStreamPEL).
        write_len(out, g.pel.len() as u64);
        for (id, n) in &g.pel {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&n.delivery_time.to_le_bytes());
            write_len(out, n.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            write_string(out, cname, compress);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            write_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}
