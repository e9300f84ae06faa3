//! SAVE, BGSAVE [SCHEDULE], LASTSAVE (the files themselves: `crate::persist`).

use super::args::{is, SYNTAX_ERR};
use super::{Ctx, Handler};
use crate::persist::save;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("save", save_cmd),
    ("bgsave", bgsave),
    ("lastsave", lastsave),
    ("bgrewriteaof", bgrewriteaof),
];

const IN_PROGRESS: &str = "ERR Background save already in progress";

/// SAVE: every shard is held (the command's lock rule), so the file is the dataset as of
/// now and nothing changes while it is written.
fn save_cmd(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let p = &ctx.srv.persist;
    if p.bgsave_in_progress() {
        return ctx.out.error(IN_PROGRESS);
    }
    p.saves.fetch_add(1, Relaxed);
    match save::save_held(ctx.srv, ctx.keys, 0) {
        Ok(()) => ctx.out.ok(),
        Err(_) => ctx.out.error("ERR"),
    }
}

fn bgsave(ctx: &mut Ctx, argv: &[&[u8]]) {
    // SCHEDULE matters only when another save-like job runs (Redis: an AOF rewrite);
    // Skein has none, so it starts at once either way.
    match argv.len() {
        1 => {}
        2 if is(argv[1], "schedule") => {}
        _ => return ctx.out.error(SYNTAX_ERR),
    }
    let p = &ctx.srv.persist;
    if p.bgsave_in_progress() || ctx.srv.repl.syncing() {
        return ctx.out.error(IN_PROGRESS);
    }
    if ctx.exec_ops.is_some() {
        // Inside EXEC Redis cannot fork: it schedules the save (with or without SCHEDULE).
        p.scheduled.store(true, Relaxed);
        return ctx.out.simple("Background saving scheduled");
    }
    match save::start_bgsave(ctx.srv) {
        Ok(()) => ctx.out.simple("Background saving started"),
        Err(_) => ctx.out.error("ERR"),
    }
}

fn lastsave(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(ctx.srv.persist.lastsave.load(Relaxed));
}

/// BGREWRITEAOF: a new base from a point-in-time snapshot, written on a thread of its own
/// (no fork); scheduled while a BGSAVE runs or inside a transaction.
fn bgrewriteaof(ctx: &mut Ctx, _argv: &[&[u8]]) {
    use crate::persist::aof::rewrite;
    let rw = &ctx.srv.persist.aof.rw;
    if rw.in_progress() {
        return ctx
            .out
            .error("ERR Background append only file rewriting already in progress");
    }
    let schedule = |ctx: &mut Ctx| {
        rw.scheduled.store(true, Relaxed);
        rw.consecutive_failures.store(0, Relaxed);
        ctx.out
            .simple("Background append only file rewriting scheduled");
    };
    if ctx.exec_ops.is_some() || ctx.srv.persist.bgsave_in_progress() {
        return schedule(ctx);
    }
    match rewrite::start(ctx.srv) {
        Ok(()) => ctx
            .out
            .simple("Background append only file rewriting started"),
        Err(rewrite::NotStarted::Busy) => schedule(ctx),
        Err(rewrite::NotStarted::Failed) => ctx.out.error(
            "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.",
        ),
    }
}
