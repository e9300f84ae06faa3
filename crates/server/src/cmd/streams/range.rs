//! XRANGE, XREVRANGE, XLEN, XDEL and XSETID.

use super::super::args::{self, is, NO_SUCH_KEY, SYNTAX_ERR};
use super::super::{coll, Ctx};
use super::{ev, interval_id, reply_entries, strict_id};
use engine::coll::stream::StreamId;
use engine::coll::Stream;

pub fn xrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    range(ctx, argv, false);
}

pub fn xrevrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    range(ctx, argv, true);
}

/// xrangeGenericCommand.
fn range(ctx: &mut Ctx, argv: &[&[u8]], rev: bool) {
    let (start_arg, end_arg) = if rev {
        (argv[3], argv[2])
    } else {
        (argv[2], argv[3])
    };
    let start = match interval_id(start_arg, true) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let end = match interval_id(end_arg, false) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < argv.len() {
        if is(argv[j], "count") && j + 1 < argv.len() {
            count = match args::int(argv[j + 1]) {
                Ok(n) => n.max(0),
                Err(e) => return ctx.out.error(e),
            };
            j += 2;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
    }
    let s = match coll::read::<Stream>(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.array(0),
        Ok(Some(s)) => s,
    };
    if count == 0 {
        return ctx.out.null_array();
    }
    let entries = s.range(start, end, rev, count.max(0) as usize);
    reply_entries(ctx.out, &entries);
}

pub fn xlen(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Stream>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(s) => ctx.out.int(s.map_or(0, |s| s.len() as i64)),
    }
}

pub fn xdel(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let mut e = match coll::modify::<Stream>(ctx.keys, key, ev("xdel")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(e)) => e,
    };
    let ids: Result<Vec<StreamId>, _> = argv[2..].iter().map(|a| strict_id(a)).collect();
    let ids = match ids {
        Ok(ids) => ids,
        Err(err) => return ctx.out.error(err),
    };
    let deleted = coll::get_mut::<Stream>(&mut e).delete(&ids);
    if deleted > 0 {
        e.mark_changed();
    }
    drop(e);
    if deleted > 1 {
        ctx.keys.add_dirty(deleted - 1);
    }
    ctx.out.int(deleted as i64);
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id].
pub fn xsetid(ctx: &mut Ctx, argv: &[&[u8]]) {
    let id = match strict_id(argv[2]) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < argv.len() {
        let more = i + 1 < argv.len();
        if is(argv[i], "entriesadded") && more {
            match args::int(argv[i + 1]) {
                Err(e) => return ctx.out.error(e),
                Ok(n) if n < 0 => return ctx.out.error("ERR entries_added must be positive"),
                Ok(n) => entries_added = Some(n as u64),
            }
        } else if is(argv[i], "maxdeletedid") && more {
            max_deleted = match strict_id(argv[i + 1]) {
                Err(e) => return ctx.out.error(e),
                Ok(m) if id < m => {
                    return ctx.out.error(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    )
                }
                Ok(m) => m,
            };
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        i += 2;
    }
    let mut e = match coll::modify::<Stream>(ctx.keys, argv[1], ev("xsetid")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.error(NO_SUCH_KEY),
        Ok(Some(e)) => e,
    };
    let s = coll::get_mut::<Stream>(&mut e);
    if !s.is_empty() {
        if s.edge_id(false).is_some_and(|top| id < top) {
            return ctx.out.error(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added.is_some_and(|n| s.len() > n) {
            return ctx.out.error(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    let max_deleted = (!max_deleted.is_zero()).then_some(max_deleted);
    s.set_last_id(id, entries_added, max_deleted);
    e.mark_changed();
    ctx.out.ok();
}
