//! XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP) and XACK.

use super::super::args::{self, is};
use super::super::help::{reply_help, subcommand_syntax_error};
use super::super::{coll, Ctx};
use super::{ev, group_ev, read_for_update, strict_id, INVALID_ID};
use engine::coll::stream::{StreamId, ENTRIES_READ_INVALID};
use engine::coll::Stream;

const HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

/// xgroupCommand: every XGROUP subcommand.
pub fn xgroup(ctx: &mut Ctx, argv: &[&[u8]]) {
    let sub = argv[1];
    if argv.len() == 2 && is(sub, "help") {
        return reply_help(ctx, argv[0], HELP);
    }
    if argv.len() < 4 {
        return subcommand_syntax_error(ctx, argv);
    }
    let (create, setid) = (is(sub, "create"), is(sub, "setid"));
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_INVALID;
    let mut i = 5;
    while i < argv.len() {
        if create && is(argv[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(argv[i], "entriesread") && i + 1 < argv.len() {
            entries_read = match args::int(argv[i + 1]) {
                Err(e) => return ctx.out.error(e),
                Ok(n) if n < 0 && n != ENTRIES_READ_INVALID => {
                    return ctx
                        .out
                        .error("ERR value for ENTRIESREAD must be positive or -1")
                }
                Ok(n) => n,
            };
            i += 2;
        } else {
            return subcommand_syntax_error(ctx, argv);
        }
    }
    let (key, group) = (argv[2], argv[3]);
    let existing = match coll::modify::<Stream>(ctx.keys, key, engine::Event::NONE) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Stream>(&mut e);
            let has_group = s.group(group).is_some();
            Some((s.last_id(), has_group))
        }
        Ok(None) => None,
    };
    if !mkstream {
        match existing {
            None => {
                return ctx.out.error(
                    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
                )
            }
            Some((_, false))
                if setid || is(sub, "createconsumer") || is(sub, "delconsumer") =>
            {
                return ctx.out.error_bytes(&super::no_such_group(group, key))
            }
            _ => {}
        }
    }
    let now = ctx.keys.now();
    if create && (5..=8).contains(&argv.len()) {
        let id = if argv[4] == b"$" {
            existing.map_or(StreamId::MIN, |(last, _)| last)
        } else {
            match strict_id(argv[4]) {
                Ok(id) => id,
                Err(e) => return ctx.out.error(e),
            }
        };
        let created = match existing {
            None => {
                let mut s = Stream::new();
                s.create_group(group, id, entries_read);
                // MKSTREAM: a new key is signalled as modified, as in Redis.
                coll::insert(ctx.keys, key, s, ev("xgroup-create"));
                true
            }
            Some(_) => with_stream(ctx, key, group_ev("xgroup-create"), |s| {
                s.create_group(group, id, entries_read)
            }),
        };
        if created {
            ctx.out.ok();
        } else {
            ctx.out
                .error("BUSYGROUP Consumer Group name already exists");
        }
    } else if setid && (argv.len() == 5 || argv.len() == 7) {
        let id = if argv[4] == b"$" {
            existing.map_or(StreamId::MIN, |(last, _)| last)
        } else {
            match StreamId::parse(argv[4], 0, false) {
                Some(id) => id,
                None => return ctx.out.error(INVALID_ID),
            }
        };
        with_stream(ctx, key, group_ev("xgroup-setid"), |s| {
            let Some(g) = s.group_mut(group) else {
                return false;
            };
            g.last_id = id;
            g.entries_read = entries_read;
            true
        });
        ctx.out.ok();
    } else if is(sub, "destroy") && argv.len() == 4 {
        let done = existing.is_some()
            && with_stream(ctx, key, group_ev("xgroup-destroy"), |s| {
                s.destroy_group(group)
            });
        ctx.out.int(i64::from(done));
    } else if is(sub, "createconsumer") && argv.len() == 5 {
        let created = with_stream(ctx, key, group_ev("xgroup-createconsumer"), |s| {
            s.group_mut(group)
                .is_some_and(|g| g.create_consumer(argv[4], now))
        });
        ctx.out.int(i64::from(created));
    } else if is(sub, "delconsumer") && argv.len() == 5 {
        let mut pending = 0;
        with_stream(ctx, key, group_ev("xgroup-delconsumer"), |s| {
            match s.group_mut(group).and_then(|g| g.delete_consumer(argv[4])) {
                Some(n) => {
                    pending = n;
                    true
                }
                None => false,
            }
        });
        ctx.out.int(pending as i64);
    } else {
        subcommand_syntax_error(ctx, argv);
    }
}

/// Change the stream at `key` (which exists) with `f`; `event` is recorded if `f` says
/// it changed something. Returns what `f` returned.
fn with_stream(
    ctx: &mut Ctx,
    key: &[u8],
    event: engine::Event,
    f: impl FnOnce(&mut Stream) -> bool,
) -> bool {
    match coll::modify::<Stream>(ctx.keys, key, event) {
        Ok(Some(mut e)) => {
            let changed = f(coll::get_mut::<Stream>(&mut e));
            if changed {
                e.mark_changed();
            }
            changed
        }
        _ => false,
    }
}

/// XACK key group id [id ...]
pub fn xack(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut e = match read_for_update(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(e)) => e,
    };
    let s = coll::get_mut::<Stream>(&mut e);
    let Some(g) = s.group_mut(argv[2]) else {
        drop(e);
        return ctx.out.int(0);
    };
    let mut ids = Vec::with_capacity(argv.len() - 3);
    for a in &argv[3..] {
        match strict_id(a) {
            Ok(id) => ids.push(id),
            Err(err) => {
                drop(e);
                return ctx.out.error(err);
            }
        }
    }
    let acked = ids.into_iter().filter(|id| g.ack(*id)).count() as u64;
    drop(e);
    ctx.keys.add_dirty(acked);
    ctx.out.int(acked as i64);
}
