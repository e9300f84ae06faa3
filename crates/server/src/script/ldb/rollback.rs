//! SCRIPT DEBUG YES without a fork. Redis runs a forked session in a child process, so
//! the script's writes vanish with it and the parent's clients never see them. Skein's
//! equivalent, on the session thread:
//! - before each write command of the script, the entries its keys hold (or their
//!   absence) are copied into an undo log, once per key;
//! - the effects of the script's commands are not applied: nothing is propagated to
//!   replicas or the AOF, no keyspace notification, WATCH invalidation, client-side
//!   caching invalidation or blocked-client service happens (`dispatch::effects::apply`
//!   asks [`suppressed`]);
//! - when the script ends, still holding its keys' shards, every logged key gets its
//!   entry back (value, TTL, access field), so no client ever sees a write of the
//!   session;
//! - commands whose effects reach past their own keys (FLUSHDB, FLUSHALL, SWAPDB, MOVE,
//!   COPY ... DB, PUBLISH) are refused in such a session.

use super::session;
use crate::cmd::table::CommandDef;
use crate::cmd::Ctx;
use engine::{Entry, Event};
use std::collections::HashSet;

/// The keys a forked session's script wrote, with what they held before.
#[derive(Default)]
pub struct UndoLog {
    seen: HashSet<(usize, Vec<u8>)>,
    saved: Vec<(usize, Vec<u8>, Option<Entry>)>,
}

/// Are the effects of the command running here held back (a command of the script of a
/// forked session; the other commands of a debugged EXEC take effect, as in Redis's
/// parent)?
#[inline]
pub fn suppressed() -> bool {
    session::active()
        && crate::script::state::in_script()
        && session::with(|s| s.undo.is_some()).unwrap_or(false)
}

/// Why `cmd` cannot run in a forked session, if it cannot.
#[inline]
pub fn refused(cmd: &CommandDef, argv: &[&[u8]]) -> Option<&'static [u8]> {
    if !suppressed() {
        return None;
    }
    let beyond_keys = match cmd.fullname.as_str() {
        "flushdb" | "flushall" | "swapdb" | "move" | "publish" | "spublish" => true,
        "copy" => argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"db")),
        _ => false,
    };
    beyond_keys.then_some(
        b"This command is not allowed in a SCRIPT DEBUG YES session (its changes could not be rolled back): use SCRIPT DEBUG SYNC" as &[u8],
    )
}

/// Before a write command of the script runs in database `db`: log its keys' entries.
#[inline]
pub fn before(ctx: &mut Ctx, cmd: &CommandDef, argv: &[&[u8]], db: usize) {
    if cmd.flags.write && session::active() {
        log_keys(ctx, cmd, argv, db);
    }
}

fn log_keys(ctx: &mut Ctx, cmd: &CommandDef, argv: &[&[u8]], db: usize) {
    let Some(mut log) = session::with(|s| s.undo.take()).flatten() else {
        return;
    };
    crate::dispatch::plan::each_spec_key(cmd, argv, |key| {
        if log.seen.insert((db, key.to_vec())) {
            let copy = ctx
                .keys
                .peek_in(db, key)
                .map(|e| Entry::new(key, e.value(), e.expire_at(), e.lru()));
            log.saved.push((db, key.to_vec(), copy));
        }
    });
    session::with(|s| s.undo = Some(log));
}

/// The script ended (its shards still held): put every logged key back as it was.
#[inline]
pub fn restore(ctx: &mut Ctx) {
    if session::active() {
        put_back(ctx);
    }
}

fn put_back(ctx: &mut Ctx) {
    let Some(log) = session::with(|s| s.undo.as_mut().map(std::mem::take)).flatten() else {
        return;
    };
    for (db, key, before) in log.saved.into_iter().rev() {
        drop(ctx.keys.remove_in(db, &key, Event::NONE));
        if let Some(entry) = before {
            ctx.keys.insert_entry_in(db, &key, entry, Event::NONE);
        }
    }
    // What putting back recorded is no one's to see either.
    ctx.keys.changes.clear();
}
