//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP.

use super::super::args::{self, is, NO_SUCH_KEY};
use super::super::help::{reply_help, subcommand_syntax_error};
use super::super::{coll, Ctx};
use super::{reply_entries, reply_entry, reply_id};
use engine::coll::stream::{Group, Meta, StreamId, ENTRIES_READ_INVALID};
use engine::coll::Stream;
use resp::ReplyBuf;

const HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

/// xinfoCommand: every XINFO subcommand.
pub fn xinfo(ctx: &mut Ctx, argv: &[&[u8]]) {
    let sub = argv[1];
    if is(sub, "help") {
        if argv.len() != 2 {
            return subcommand_syntax_error(ctx, argv);
        }
        return reply_help(ctx, argv[0], HELP);
    }
    if argv.len() < 3 {
        return subcommand_syntax_error(ctx, argv);
    }
    let key = argv[2];
    let now = ctx.keys.now();
    let s = match coll::read::<Stream>(ctx.keys, key) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.error(NO_SUCH_KEY),
        Ok(Some(s)) => s,
    };
    if is(sub, "consumers") && argv.len() == 4 {
        let Some(g) = s.group(argv[3]) else {
            return ctx.out.error_bytes(&super::no_such_group(argv[3], key));
        };
        ctx.out.array(g.consumers.len());
        for (name, c) in &g.consumers {
            ctx.out.map(3);
            ctx.out.bulk(b"name");
            ctx.out.bulk(name);
            int_field(ctx.out, b"pending", c.pel.len() as i64);
            int_field(ctx.out, b"idle", now.wrapping_sub(c.seen_time).max(0));
        }
    } else if is(sub, "groups") && argv.len() == 3 {
        let meta = s.meta();
        ctx.out.array(s.groups().len());
        for (name, g) in s.groups() {
            ctx.out.map(6);
            ctx.out.bulk(b"name");
            ctx.out.bulk(name);
            int_field(ctx.out, b"consumers", g.consumers.len() as i64);
            int_field(ctx.out, b"pending", g.pel.len() as i64);
            id_field(ctx.out, b"last-delivered-id", g.last_id);
            reply_read_and_lag(ctx.out, &meta, g);
        }
    } else if is(sub, "stream") {
        let full = match stream_options(&argv[3..]) {
            Ok(full) => full,
            Err(Some(e)) => return ctx.out.error(e),
            Err(None) => return subcommand_syntax_error(ctx, argv),
        };
        stream_info(ctx.out, s, full);
    } else {
        subcommand_syntax_error(ctx, argv);
    }
}

/// `[FULL [COUNT count]]`: None, or FULL's count (0: all; negative: 10). Err(None) is a
/// subcommand syntax error.
fn stream_options(opts: &[&[u8]]) -> Result<Option<usize>, Option<&'static str>> {
    match opts {
        [] => Ok(None),
        [full] if is(full, "full") => Ok(Some(10)),
        [full, count, n] if is(full, "full") && is(count, "count") => {
            let n = args::int(n).map_err(Some)?;
            Ok(Some(if n < 0 { 10 } else { n as usize }))
        }
        _ => Err(None),
    }
}

/// A map field with an integer value.
fn int_field(out: &mut ReplyBuf, name: &[u8], v: i64) {
    out.bulk(name);
    out.int(v);
}

/// A map field with an ID value.
fn id_field(out: &mut ReplyBuf, name: &[u8], id: StreamId) {
    out.bulk(name);
    reply_id(out, id);
}

/// `entries-read` and `lag` of a group.
fn reply_read_and_lag(out: &mut ReplyBuf, meta: &Meta, g: &Group) {
    out.bulk(b"entries-read");
    if g.entries_read != ENTRIES_READ_INVALID {
        out.int(g.entries_read);
    } else {
        out.null();
    }
    out.bulk(b"lag");
    match meta.lag(g) {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

fn stream_info(out: &mut ReplyBuf, s: &Stream, full: Option<usize>) {
    out.map(if full.is_some() { 9 } else { 10 });
    int_field(out, b"length", s.len() as i64);
    int_field(out, b"radix-tree-keys", s.node_count() as i64);
    int_field(out, b"radix-tree-nodes", s.rax_nodes() as i64);
    id_field(out, b"last-generated-id", s.last_id());
    id_field(out, b"max-deleted-entry-id", s.max_deleted_id());
    int_field(out, b"entries-added", s.entries_added() as i64);
    id_field(out, b"recorded-first-entry-id", s.first_id());
    let Some(count) = full else {
        int_field(out, b"groups", s.groups().len() as i64);
        for (name, rev) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            out.bulk(name);
            match s.range(StreamId::MIN, StreamId::MAX, rev, 1).first() {
                Some(e) => reply_entry(out, e),
                None => out.null(),
            }
        }
        return;
    };
    let limit = if count == 0 { usize::MAX } else { count };
    out.bulk(b"entries");
    reply_entries(out, &s.range(StreamId::MIN, StreamId::MAX, false, count));
    out.bulk(b"groups");
    out.array(s.groups().len());
    let meta = s.meta();
    for (name, g) in s.groups() {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        id_field(out, b"last-delivered-id", g.last_id);
        reply_read_and_lag(out, &meta, g);
        int_field(out, b"pel-count", g.pel.len() as i64);
        out.bulk(b"pending");
        out.array(g.pel.len().min(limit));
        for (id, n) in g.pel.iter().take(limit) {
            out.array(4);
            reply_id(out, *id);
            out.bulk(&n.consumer);
            out.int(n.delivery_time);
            out.int(n.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cname);
            int_field(out, b"seen-time", c.seen_time);
            int_field(out, b"pel-count", c.pel.len() as i64);
            out.bulk(b"pending");
            out.array(c.pel.len().min(limit));
            for id in c.pel.iter().take(limit) {
                let n = g.pel.get(id);
                out.array(3);
                reply_id(out, *id);
                out.int(n.map_or(0, |n| n.delivery_time));
                out.int(n.map_or(0, |n| n.delivery_count as i64));
            }
        }
    }
}
