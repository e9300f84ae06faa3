//! The consumers of change events, fed from one place while the command still holds its
//! locks: statistics (keyspace hits and misses, expired keys), the dirty counter, WATCH
//! versions, keyspace notifications, client-side caching, blocked clients, and the
//! propagation stream, each called directly from [`consume`].

use crate::cmd::Ctx;
use crate::propagate::{deletion, encode, Op};
use crate::server::Server;
use engine::{Changes, Event};
use std::sync::atomic::Ordering::Relaxed;

/// After a command's handler: feed what it recorded to every consumer, and clear it.
pub fn apply(ctx: &mut Ctx, argv: &[&[u8]]) {
    let srv = ctx.srv;
    let changes = &ctx.keys.changes;
    if changes.is_empty() && !ctx.propagate.force {
        if ctx.propagate.only_rewrites
            || !ctx.propagate.rewrite.is_empty()
            || !ctx.propagate.args.is_empty()
        {
            // Nothing changed: nothing to propagate (and nothing left for the next
            // command of a transaction).
            ctx.propagate = Default::default();
        }
        return;
    }
    if crate::script::ldb::rollback::suppressed() {
        // A SCRIPT DEBUG YES session: its writes are rolled back, seen by no one.
        ctx.keys.changes.clear();
        ctx.propagate = Default::default();
        return;
    }
    // The AOF's replaying client propagates nothing (Redis's fake client runs commands
    // without call()): DEBUG LOADAOF must not append the file to itself.
    let replaying = ctx.client.id == crate::persist::aof::load::AOF_CLIENT_ID;
    if !srv.propagation.active() || replaying {
        // Nothing reads the stream: no propagated forms to build.
        consume(srv, ctx.client.worker, changes, Vec::new());
    } else {
        let mut ops = Vec::new();
        expired_ops(srv, changes, &mut ops);
        // PUBLISH goes to the replicas only, and only while there are any.
        let wanted = !ctx.propagate.replicas_only || srv.propagation.feeds_replicas();
        if (changes.dirty() > 0 || ctx.propagate.force) && wanted {
            let mut db = ctx.keys.db();
            if ctx.propagate.replicas_only {
                db |= crate::propagate::REPLICAS_ONLY;
            }
            if ctx.propagate.rewrite.is_empty() {
                if !ctx.propagate.args.is_empty() {
                    let mut args = argv.to_vec();
                    for (i, v) in &ctx.propagate.args {
                        if let Some(a) = args.get_mut(*i) {
                            *a = v;
                        }
                    }
                    ops.push((db, encode(&args)));
                } else if !ctx.propagate.only_rewrites {
                    ops.push((db, encode(argv)));
                }
            } else {
                for args in &ctx.propagate.rewrite {
                    let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                    ops.push((db, encode(&args)));
                }
            }
        }
        if !ops.is_empty() {
            ctx.client.wrote = true;
        }
        match ctx.exec_ops.as_mut() {
            // Inside EXEC: the transaction propagates as one record when it ends.
            Some(acc) => {
                acc.extend(ops);
                consume(srv, ctx.client.worker, changes, Vec::new());
            }
            None => consume(srv, ctx.client.worker, changes, ops),
        }
    }
    ctx.keys.changes.clear();
    if ctx.propagate.force
        || ctx.propagate.only_rewrites
        || !ctx.propagate.rewrite.is_empty()
        || !ctx.propagate.args.is_empty()
    {
        ctx.propagate = Default::default();
    }
}

/// Decide, with a command's locks held, what its change events must record: every event
/// one by one while anything consumes them so ([`events_wanted`]), and the informational
/// `new`/`keymiss` events for keyspace notifications and (`new`) for blocked clients.
pub fn prepare(srv: &Server, changes: &mut Changes) {
    let mut informational = srv.config.hot.notify_flags.load(Relaxed) as u16;
    if srv.blocking.active() {
        informational |= engine::event::class::NEW;
    }
    changes.want_informational(informational);
    changes.keep_events(events_wanted(srv));
}

/// Does anything consume change events one by one right now (WATCH, notifications, the
/// propagation stream, blocked clients, client-side caching)? Asked with the command's locks held, so a WATCH that
/// counts itself in before reading a version under one of those locks is seen.
pub fn events_wanted(srv: &Server) -> bool {
    let notify = srv.config.hot.notify_flags.load(Relaxed) as u16;
    srv.watches.active()
        || notify & (engine::event::class::KEYSPACE | engine::event::class::KEYEVENT) != 0
        || srv.propagation.active()
        || srv.blocking.active()
        || srv.tracking.active()
}

/// DEL (or UNLINK, with `lazyfree-lazy-expire`) for each key recorded as expired.
pub fn expired_ops(srv: &Server, changes: &Changes, ops: &mut Vec<Op>) {
    if changes.expired() == 0 {
        return;
    }
    let del = deletion(srv, "lazyfree-lazy-expire");
    for c in changes.items() {
        if c.event == Event::EXPIRED {
            ops.push((c.db as usize, encode(&[del, changes.key(c)])));
        }
    }
}

/// Feed `changes` to the consumers; `ops` is their propagated form. `writer` is the
/// worker (or `srv.stats.workers.len()` for the other threads).
pub fn consume(srv: &Server, writer: usize, changes: &Changes, ops: Vec<Op>) {
    let st = srv.stats.workers.get(writer).unwrap_or(&srv.stats.global);
    if changes.hits > 0 {
        st.keyspace_hits.fetch_add(changes.hits, Relaxed);
    }
    if changes.misses > 0 {
        st.keyspace_misses.fetch_add(changes.misses, Relaxed);
    }
    if changes.recorded() == 0
        && changes.db_changes.is_empty()
        && changes.extra_dirty == 0
        && ops.is_empty()
    {
        return;
    }
    let expired = changes.expired();
    if expired > 0 {
        st.expired_keys.fetch_add(expired, Relaxed);
    }
    let dirty = changes.dirty();
    if dirty > 0 {
        // Only this thread writes its slot: a plain add, no locked instruction.
        st.dirty.store(st.dirty.load(Relaxed) + dirty, Relaxed);
    }
    srv.watches.touch(changes);
    crate::notify::publish(srv, changes);
    crate::tracking::note_changes(srv, changes);
    crate::blocking::note_changes(srv, changes);
    srv.propagation.push(writer, ops);
}
