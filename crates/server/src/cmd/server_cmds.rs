//! Server commands: DBSIZE, FLUSHDB/FLUSHALL, SWAPDB, TIME, CONFIG, SHUTDOWN.

use super::args::{self, is, DB_OUT_OF_RANGE, SYNTAX_ERR};
use super::{Ctx, Handler};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
    ("swapdb", swapdb),
    ("time", time),
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|resetstat", config_resetstat),
    ("shutdown", shutdown),
];

fn dbsize(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let n = ctx.db().len();
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

/// Free removed tables here, or on a background thread for ASYNC.
fn dispose(tables: Vec<engine::keyspace::Cleared>, background: bool) {
    if background {
        std::thread::spawn(move || drop(tables));
    } else {
        drop(tables);
    }
}

fn flushdb(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(background) = flush_mode(ctx, argv) else {
        return;
    };
    let tables = ctx.db().clear();
    dispose(vec![tables], background);
    ctx.out.ok();
}

fn flushall(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(background) = flush_mode(ctx, argv) else {
        return;
    };
    let tables = ctx.srv.keyspace.dbs().iter().map(|db| db.clear()).collect();
    dispose(tables, background);
    ctx.out.ok();
}

fn swapdb(ctx: &mut Ctx, argv: &[&[u8]]) {
    let parse = |a: &[u8]| args::int(a).map_err(|_| "ERR invalid first DB index");
    let a = match parse(argv[1]) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(e),
    };
    let b = match args::int(argv[2]) {
        Ok(b) => b,
        Err(_) => return ctx.out.error("ERR invalid second DB index"),
    };
    let n = ctx.srv.keyspace.len() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return ctx.out.error(DB_OUT_OF_RANGE);
    }
    ctx.srv.keyspace.swap(a as usize, b as usize);
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

fn config_get(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    for pat in &argv[2..] {
        for (k, v) in ctx.srv.config.matching(pat) {
            if !pairs.iter().any(|(n, _)| *n == k) {
                pairs.push((k, v));
            }
        }
    }
    ctx.out.map(pairs.len());
    for (k, v) in pairs {
        ctx.out.bulk(k.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}

fn config_set(ctx: &mut Ctx, argv: &[&[u8]]) {
    if !argv.len().is_multiple_of(2) {
        return ctx
            .out
            .error("ERR wrong number of arguments for 'config|set' command");
    }
    // Check everything first: CONFIG SET is all or nothing.
    let mut changes = Vec::new();
    for pair in argv[2..].chunks(2) {
        let name = args::text(pair[0]);
        let Some(def) = crate::config::find_option(&name) else {
            return ctx.out.error(&format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            ));
        };
        if !def.mutable {
            return ctx.out.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
            ));
        }
        let value = args::text(pair[1]);
        let words: Vec<String> = match def.kind {
            crate::config::Kind::List => value.split_whitespace().map(String::from).collect(),
            _ => vec![value],
        };
        if let Err(e) = crate::config::normalize(def, &words) {
            return ctx.out.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
            ));
        }
        changes.push((def.name, words));
    }
    for (name, words) in changes {
        // Checked above, so this cannot fail.
        let _ = ctx.srv.config.set(name, &words);
    }
    ctx.out.ok();
}

fn config_resetstat(ctx: &mut Ctx, _argv: &[&[u8]]) {
    crate::stats::reset_stats(ctx.srv);
    ctx.out.ok();
}

fn shutdown(ctx: &mut Ctx, argv: &[&[u8]]) {
    for a in &argv[1..] {
        if !["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|w| is(a, w))
        {
            return ctx.out.error(SYNTAX_ERR);
        }
    }
    if argv[1..].iter().any(|a| is(a, "abort")) {
        return ctx.out.error("ERR No shutdown in progress.");
    }
    ctx.srv.shutting_down.store(true, Relaxed);
    ctx.client.close_after_reply = true;
}
