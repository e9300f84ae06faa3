//! Server commands: DBSIZE, FLUSHDB/FLUSHALL, SWAPDB, TIME, SHUTDOWN.

use super::args::{self, is, DB_OUT_OF_RANGE, SYNTAX_ERR};
use super::{Ctx, Handler};
use crate::persist::shutdown;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
    ("swapdb", swapdb),
    ("time", time),
    ("shutdown", shutdown),
];

fn dbsize(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let db = ctx.keys.db();
    let n = ctx.keys.len_in(db);
    ctx.out.int(n as i64);
}

/// Parse FLUSHDB/FLUSHALL's optional SYNC|ASYNC. Returns Some(async) or None on error.
fn flush_mode(ctx: &mut Ctx, argv: &[&[u8]]) -> Option<bool> {
    match argv.len() {
        1 => Some(ctx.srv.config.get_bool("lazyfree-lazy-user-flush")),
        2 if is(argv[1], "async") => Some(true),
        2 if is(argv[1], "sync") => Some(false),
        _ => {
            ctx.out.error(SYNTAX_ERR);
            None
        }
    }
}

/// Free removed tables here, or on the lazyfree thread for ASYNC.
fn dispose(tables: Vec<engine::keyspace::Cleared>, background: bool) {
    if background {
        crate::lazyfree::free_tables(tables);
    } else {
        drop(tables);
    }
}

fn flushdb(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(background) = flush_mode(ctx, argv) else {
        return;
    };
    let db = ctx.keys.db();
    let tables = ctx.keys.flush_db(db);
    dispose(vec![tables], background);
    // Propagated even when the database was already empty.
    ctx.propagate.force = true;
    ctx.out.ok();
}

fn flushall(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(background) = flush_mode(ctx, argv) else {
        return;
    };
    let srv = ctx.srv;
    // flushAllDataAndResetRDB: a running BGSAVE is dropped, and with `save` rules the
    // (now empty) dataset is saved at once.
    if srv.persist.bgsave_in_progress() {
        crate::persist::save::kill_bgsave(srv);
    }
    let n = srv.keyspace.len();
    let tables = (0..n).map(|db| ctx.keys.flush_db(db)).collect();
    dispose(tables, background);
    if !crate::persist::rules::parse(&srv.config.get("save")).is_empty() {
        let pending = ctx.keys.changes.dirty();
        let _ = crate::persist::save::save_held(srv, ctx.keys, pending);
    }
    ctx.propagate.force = true;
    ctx.out.ok();
}

fn swapdb(ctx: &mut Ctx, argv: &[&[u8]]) {
    // getIntFromObjectOrReply with its own message: any non-int (or non-C-int) argument.
    let a = match args::c_int(argv[1]) {
        Ok(a) => i64::from(a),
        Err(_) => return ctx.out.error("ERR invalid first DB index"),
    };
    let b = match args::c_int(argv[2]) {
        Ok(b) => i64::from(b),
        Err(_) => return ctx.out.error("ERR invalid second DB index"),
    };
    let n = ctx.srv.keyspace.len() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return ctx.out.error(DB_OUT_OF_RANGE);
    }
    ctx.keys.swap_dbs(a as usize, b as usize);
    ctx.keys.add_dirty(1);
    ctx.out.ok();
}

fn time(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk(now.as_secs().to_string().as_bytes());
    ctx.out.bulk(now.subsec_micros().to_string().as_bytes());
}

fn shutdown(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut flags = shutdown::Flags::default();
    let mut abort = false;
    let mut any = false;
    for a in &argv[1..] {
        if is(a, "nosave") {
            flags.nosave = true;
        } else if is(a, "save") {
            flags.save = true;
        } else if is(a, "now") {
            flags.now = true;
        } else if is(a, "force") {
            flags.force = true;
        } else if is(a, "abort") {
            abort = true;
            continue;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        any = true;
    }
    if (abort && any) || (flags.save && flags.nosave) {
        return ctx.out.error(SYNTAX_ERR);
    }
    if abort {
        return ctx.out.error("ERR No shutdown in progress.");
    }
    // Every shard is held (the command's lock rule): nothing changes after the save.
    if !shutdown::finish(ctx.srv, ctx.keys, flags) {
        return ctx.out.error("ERR Errors trying to SHUTDOWN. Check logs.");
    }
    crate::supervise::stopping();
    ctx.srv.shutting_down.store(true, Relaxed);
    // A script still running (busy) stops at its next check.
    ctx.srv.scripts.busy.shutdown.store(true, Relaxed);
    ctx.client.close_after_reply = true;
}
