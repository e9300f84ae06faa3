//! Stream commands (Redis 7.0's t_stream.c) on the command seam of [`super::coll`]: the
//! entries live in [`engine::coll::Stream`] (Redis's node layout, so DUMP payloads are
//! Redis's); events, the dirty counter and propagated forms follow Redis.
//!
//! [`add`] has XADD, XTRIM and their trimming options; [`range`] XRANGE, XREVRANGE,
//! XLEN, XDEL and XSETID; [`read`] XREAD and XREADGROUP; [`groups`] XGROUP and XACK;
//! [`pending`] XPENDING, XCLAIM and XAUTOCLAIM; [`info`] XINFO.

mod add;
mod groups;
mod info;
mod pending;
mod range;
mod read;

pub use read::{serve_waiter, Wait};

use super::{coll, Handler};
use engine::coll::listpack::Item;
use engine::coll::stream::{EntryRef, StreamId};
use engine::coll::Stream;
use engine::locked::EntryMut;
use engine::{Event, Locked};
use resp::ReplyBuf;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("xadd", add::xadd),
    ("xtrim", add::xtrim),
    ("xrange", range::xrange),
    ("xrevrange", range::xrevrange),
    ("xlen", range::xlen),
    ("xdel", range::xdel),
    ("xsetid", range::xsetid),
    ("xread", read::xread),
    ("xreadgroup", read::xreadgroup),
    ("xgroup|create", groups::xgroup),
    ("xgroup|setid", groups::xgroup),
    ("xgroup|destroy", groups::xgroup),
    ("xgroup|createconsumer", groups::xgroup),
    ("xgroup|delconsumer", groups::xgroup),
    ("xgroup|help", groups::xgroup),
    ("xack", groups::xack),
    ("xpending", pending::xpending),
    ("xclaim", pending::xclaim),
    ("xautoclaim", pending::xautoclaim),
    ("xinfo|stream", info::xinfo),
    ("xinfo|groups", info::xinfo),
    ("xinfo|consumers", info::xinfo),
    ("xinfo|help", info::xinfo),
];

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn ev(name: &'static str) -> Event {
    Event::stream(name)
}

/// A consumer-group event (`xgroup-*`): Redis announces it without signalling the key, so
/// WATCH does not see it.
fn group_ev(name: &'static str) -> Event {
    Event::stream(name).unsignalled()
}

/// lookupKeyRead of a stream the command then changes without announcing it (XACK,
/// XREADGROUP, XCLAIM...): a hit or miss is counted; Ok(None) if absent.
pub fn read_for_update<'k>(
    keys: &'k mut Locked,
    key: &[u8],
) -> Result<Option<EntryMut<'k>>, &'static str> {
    if coll::read::<Stream>(keys, key)?.is_none() {
        return Ok(None);
    }
    coll::modify::<Stream>(keys, key, Event::NONE)
}

/// streamPropagateXCLAIM: the idempotent XCLAIM that gives a replica the pending entry
/// `id` as `nack` (consumer, delivery time, delivery count) and the group's `last_id`.
pub fn claim_command(
    key: &[u8],
    group: &[u8],
    id: &[u8],
    nack: (&[u8], i64, u64),
    last_id: StreamId,
) -> Vec<Vec<u8>> {
    let (consumer, time, count) = nack;
    let (time, count, last) = (time.to_string(), count.to_string(), last_id.to_string());
    [
        b"XCLAIM",
        key,
        group,
        consumer,
        b"0",
        id,
        b"TIME",
        time.as_bytes(),
        b"RETRYCOUNT",
        count.as_bytes(),
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last.as_bytes(),
    ]
    .iter()
    .map(|a| a.to_vec())
    .collect()
}

use super::args::{c_str, error_text};

/// The error of a missing key or group (XREADGROUP adds where).
pub fn no_group(key: &[u8], group: &[u8], suffix: &str) -> Vec<u8> {
    error_text(&[
        b"NOGROUP No such key '",
        c_str(key),
        b"' or consumer group '",
        c_str(group),
        b"'",
        suffix.as_bytes(),
    ])
}

/// The error of a missing group on an existing key (XINFO CONSUMERS, XGROUP).
pub fn no_such_group(group: &[u8], key: &[u8]) -> Vec<u8> {
    error_text(&[
        b"NOGROUP No such consumer group '",
        c_str(group),
        b"' for key name '",
        c_str(key),
        b"'",
    ])
}

/// streamParseStrictIDOrReply (`-` and `+` refused), missing sequence 0.
pub fn strict_id(arg: &[u8]) -> Result<StreamId, &'static str> {
    StreamId::parse(arg, 0, true).ok_or(INVALID_ID)
}

/// streamParseIntervalIDOrReply plus the exclusive-bound step of XRANGE/XPENDING/
/// XAUTOCLAIM: `(id` excludes `id`. `start` picks the missing sequence (0 or max) and the
/// direction of the step.
pub fn interval_id(arg: &[u8], start: bool) -> Result<StreamId, &'static str> {
    let missing = if start { 0 } else { u64::MAX };
    if arg.len() > 1 && arg[0] == b'(' {
        let id = StreamId::parse(&arg[1..], missing, true).ok_or(INVALID_ID)?;
        if start {
            id.incr().ok_or("ERR invalid start ID for the interval")
        } else {
            id.decr().ok_or("ERR invalid end ID for the interval")
        }
    } else {
        StreamId::parse(arg, missing, false).ok_or(INVALID_ID)
    }
}

/// An ID as a bulk string.
pub fn reply_id(out: &mut ReplyBuf, id: StreamId) {
    out.bulk(id.text().as_bytes());
}

fn reply_item(out: &mut ReplyBuf, i: Item<'_>) {
    match i {
        Item::Int(n) => out.bulk_int(n),
        Item::Str(s) => out.bulk(s),
    }
}

/// One entry: `[id, [field, value, ...]]`.
pub fn reply_entry(out: &mut ReplyBuf, e: &EntryRef<'_>) {
    out.array(2);
    reply_id(out, e.id);
    out.array(e.len() * 2);
    for (f, v) in e.fields() {
        reply_item(out, f);
        reply_item(out, v);
    }
}

/// A list of entries.
pub fn reply_entries(out: &mut ReplyBuf, entries: &[EntryRef<'_>]) {
    out.array(entries.len());
    for e in entries {
        reply_entry(out, e);
    }
}
