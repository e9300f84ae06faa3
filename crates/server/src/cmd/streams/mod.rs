//! Stream commands (Redis 7.0's t_stream.c) on the command seam of [`super::coll`]: the
//! entries live in [`engine::coll::Stream`] (Redis's node layout, so DUMP payloads are
//! Redis's); events, the dirty counter and propagated forms follow Redis.
//!
//! [`add`] has XADD, XTRIM and their trimming options; [`range`] XRANGE, XREVRANGE,
//! XLEN, XDEL and XSETID; [`read`] XREAD.

mod add;
mod range;
mod read;

use super::Handler;
use engine::coll::listpack::Item;
use engine::coll::stream::{EntryRef, StreamId};
use engine::Event;
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
];

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn ev(name: &'static str) -> Event {
    Event::stream(name)
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
    out.bulk(id.to_string().as_bytes());
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
