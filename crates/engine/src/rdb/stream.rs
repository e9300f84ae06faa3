//! Streams in RDB (RDB_TYPE_STREAM_LISTPACKS_2, what Redis 7.0 writes): the nodes as
//! (master ID, listpack) string pairs, the stream's counters, then the consumer groups.

use super::{write_len, write_string, RdbError, Reader, TYPE_STREAM_LISTPACKS_2};
use crate::coll::listpack::Listpack;
use crate::coll::stream::{node, Group, Nack, StreamId};
use crate::coll::Stream;
use crate::value::Value;
use std::collections::BTreeMap;

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

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(r.read_len()?, r.read_len()?))
}

fn read_raw_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::from_be_bytes(&r.read_array()?))
}

fn read_ms(r: &mut Reader<'_>) -> Result<i64, RdbError> {
    Ok(i64::from_le_bytes(r.read_array()?))
}

/// The highest live entry ID, when every live entry's ID is at or after its node's key
/// and above the one before it across the nodes in key order, as Redis writes them and as
/// lookups by ID (XDEL, XRANGE's seek, where XADD appends) rely on; Err if not. Deleted
/// entries are left out: after XSETID below a deleted top entry, Redis appends after it.
/// Redis 7.0 loads a payload without checking this, even sanitizing.
fn highest_id_in_order(nodes: &BTreeMap<StreamId, Listpack>) -> Result<Option<StreamId>, RdbError> {
    let mut prev: Option<StreamId> = None;
    for (key, lp) in nodes {
        let m = node::master(lp);
        let mut entry = node::first_entry(lp, *key, &m);
        while let Some(e) = entry {
            if !e.deleted() {
                if e.id < *key || prev.is_some_and(|p| e.id <= p) {
                    return Err(RdbError::Corrupt);
                }
                prev = Some(e.id);
            }
            entry = node::next_entry(lp, *key, &m, &e);
        }
    }
    Ok(prev)
}

/// rdbLoadObject for RDB_TYPE_STREAM_LISTPACKS(_2), validating every node as Redis's deep
/// sanitization does, and the consumer groups' pending entries against their owners.
pub fn read(r: &mut Reader<'_>, t: u8) -> Result<Value, RdbError> {
    let v2 = t == TYPE_STREAM_LISTPACKS_2;
    let mut nodes = BTreeMap::new();
    for _ in 0..r.read_len()? {
        let key = r.read_string()?.into_bytes();
        let key: &[u8; 16] = key.as_ref().try_into().map_err(|_| RdbError::Corrupt)?;
        let key = StreamId::from_be_bytes(key);
        let lp = Listpack::from_bytes(r.read_string()?.into_bytes().into_owned())
            .filter(node::validate)
            .ok_or(RdbError::Corrupt)?;
        if nodes.insert(key, lp).is_some() {
            return Err(RdbError::Corrupt);
        }
    }
    let highest = highest_id_in_order(&nodes)?;
    let length = r.read_len()?;
    let last_id = read_id(r)?;
    if highest.is_some_and(|h| h > last_id) {
        // XADD would then append IDs below live entries.
        return Err(RdbError::Corrupt);
    }
    let counters = if v2 {
        Some((read_id(r)?, read_id(r)?, r.read_len()?))
    } else {
        None
    };
    let mut s = Stream::from_parts(nodes, length, last_id, counters).ok_or(RdbError::Corrupt)?;
    let meta = s.meta();
    for _ in 0..r.read_len()? {
        let name = r.read_string()?.into_bytes().into_owned();
        let last = read_id(r)?;
        let entries_read = if v2 {
            r.read_len()? as i64
        } else {
            meta.estimate_distance(last)
        };
        if s.group(&name).is_some() {
            return Err(RdbError::Corrupt);
        }
        let mut g = Group::new(last, entries_read);
        // The group's PEL: owners come with the consumers that follow.
        let mut pel: BTreeMap<StreamId, (i64, u64)> = BTreeMap::new();
        for _ in 0..r.read_len()? {
            let id = read_raw_id(r)?;
            let time = read_ms(r)?;
            let count = r.read_len()?;
            if pel.insert(id, (time, count)).is_some() {
                return Err(RdbError::Corrupt);
            }
        }
        for _ in 0..r.read_len()? {
            let cname = r.read_string()?.into_bytes();
            let seen = read_ms(r)?;
            if !g.create_consumer(&cname, seen) {
                return Err(RdbError::Corrupt);
            }
            let owner = g.consumer_name(&cname).ok_or(RdbError::Corrupt)?;
            for _ in 0..r.read_len()? {
                let id = read_raw_id(r)?;
                // Each pending entry has exactly one owner.
                let (time, count) = pel.remove(&id).ok_or(RdbError::Corrupt)?;
                g.pel.insert(
                    id,
                    Nack {
                        delivery_time: time,
                        delivery_count: count,
                        consumer: owner.clone(),
                    },
                );
                g.assign(id, &owner);
            }
        }
        if !pel.is_empty() {
            // A pending entry without a consumer (Redis's deep check refuses it too).
            return Err(RdbError::Corrupt);
        }
        s.put_group(name, g);
    }
    Ok(Value::Stream(Box::new(s)))
}
