//! MULTI, EXEC, DISCARD, WATCH, UNWATCH with Redis 7.0's semantics.
//!
//! Commands after MULTI are queued by the dispatcher (`dispatch::execute`), which also
//! flags the transaction when one is refused (EXECABORT). EXEC's lock plan is the union of
//! its queued commands' plans (walks widened to the whole database, see
//! `dispatch::plan::plan_held`) plus the watched keys, all taken before it runs: no client
//! on any worker sees a state between two of its commands. The watched versions are
//! checked under those locks.

use super::{ClientState, Ctx, Handler};
use crate::dispatch;
use crate::server::Server;
use crate::watch::Watched;
use engine::NO_EXPIRE;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("multi", multi),
    ("exec", exec),
    ("discard", discard),
    ("watch", watch),
    ("unwatch", unwatch),
];

/// A transaction being queued.
#[derive(Default)]
pub struct MultiState {
    /// The queued commands' arguments (name first).
    pub queued: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queuing: EXEC will answer EXECABORT.
    pub aborted: bool,
    /// Bytes of the queued arguments plus a pointer per argument (Redis's
    /// mstate.argv_len_sums).
    pub argv_len_sums: usize,
}

/// Redis's sizeof(robj *), counted per queued argument.
const PTR: usize = 8;

impl ClientState {
    pub fn in_multi(&self) -> bool {
        self.multi.is_some()
    }

    /// Queue a command of the open transaction.
    pub fn queue(&mut self, argv: &[&[u8]]) {
        if let Some(m) = self.multi.as_mut() {
            m.queued.push(argv.iter().map(|a| a.to_vec()).collect());
            m.argv_len_sums += argv.iter().map(|a| a.len()).sum::<usize>() + PTR * argv.len();
            self.info.multi_len.store(m.queued.len() as u64, Relaxed);
            // CLIENT LIST's multi-mem (and its share of tot-mem), as Redis 7.0's
            // multiStateMemOverhead counts it: the queued commands' argument bytes plus a
            // pointer per argument (not watched keys nor the queue's slots, in 7.0).
            self.info.multi_mem.store(m.argv_len_sums as u64, Relaxed);
        }
    }

    /// A command was refused inside MULTI (Redis's flagTransaction).
    pub fn flag_transaction(&mut self) {
        if let Some(m) = self.multi.as_mut() {
            m.aborted = true;
        }
    }

    /// Leave MULTI and forget the watched keys (EXEC, DISCARD, RESET, disconnect).
    pub fn end_transaction(&mut self, srv: &Server) {
        if self.multi.take().is_some() {
            self.info
                .flags
                .fetch_and(!crate::clients::flag::MULTI, Relaxed);
            self.info.multi_len.store(0, Relaxed);
            self.info.multi_mem.store(0, Relaxed);
        }
        self.unwatch_all(srv);
    }

    pub fn unwatch_all(&mut self, srv: &Server) {
        if !self.watched.is_empty() {
            self.watched.clear();
            srv.watches.leave();
        }
    }
}

fn multi(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if ctx.client.in_multi() {
        return ctx.out.error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(MultiState::default());
    ctx.client
        .info
        .flags
        .fetch_or(crate::clients::flag::MULTI, Relaxed);
    ctx.out.ok();
}

fn discard(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if !ctx.client.in_multi() {
        return ctx.out.error("ERR DISCARD without MULTI");
    }
    ctx.client.end_transaction(ctx.srv);
    ctx.out.ok();
}

fn watch(ctx: &mut Ctx, argv: &[&[u8]]) {
    if ctx.client.in_multi() {
        return ctx.out.error("ERR WATCH inside MULTI is not allowed");
    }
    let db = ctx.client.db;
    for key in &argv[1..] {
        if ctx
            .client
            .watched
            .iter()
            .any(|w| w.db == db && w.key == *key)
        {
            continue;
        }
        if ctx.client.watched.is_empty() {
            // Counted in before any version is read (see crate::watch).
            ctx.srv.watches.enter();
        }
        let (version, epoch) = ctx.srv.watches.version(db, key);
        let now = ctx.keys.now();
        let (existed, expire_at) = match ctx.keys.peek(key) {
            Some(e) if !e.is_expired(now) => (true, e.expire_at()),
            _ => (false, NO_EXPIRE),
        };
        ctx.client.watched.push(Watched {
            db,
            key: key.to_vec(),
            version,
            epoch,
            existed,
            expire_at,
        });
    }
    ctx.out.ok();
}

fn unwatch(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.client.unwatch_all(ctx.srv);
    ctx.out.ok();
}

/// Has any watched key changed (or expired) since WATCH? Its shard is held.
fn watch_failed(ctx: &mut Ctx) -> bool {
    let now = ctx.keys.now();
    let watched = std::mem::take(&mut ctx.client.watched);
    let failed = watched.iter().any(|w| {
        let (version, epoch) = ctx.srv.watches.version(w.db, &w.key);
        if version != w.version {
            return true;
        }
        let live = ctx.keys.peek_in(w.db, &w.key).map(|e| !e.is_expired(now));
        if epoch != w.epoch && (w.existed || live == Some(true)) {
            return true;
        }
        // It existed with a TTL that has passed since (the key deleted or not yet).
        w.existed && w.expire_at != NO_EXPIRE && w.expire_at <= now
    });
    ctx.client.watched = watched;
    failed
}

fn exec(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let Some(state) = ctx.client.multi.take() else {
        return ctx.out.error("ERR EXEC without MULTI");
    };
    // Put it back so end_transaction clears flags and counters in one place.
    let queued = state.queued;
    ctx.client.multi = Some(MultiState::default());
    if state.aborted {
        ctx.client.end_transaction(ctx.srv);
        return ctx
            .out
            .error("EXECABORT Transaction discarded because of previous errors.");
    }
    if watch_failed(ctx) {
        ctx.client.end_transaction(ctx.srv);
        return ctx.out.null_array();
    }
    ctx.client.end_transaction(ctx.srv);
    ctx.out.array(queued.len());
    ctx.exec_ops = Some(Vec::new());
    for argv in &queued {
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
        ctx.keys.set_db(ctx.client.db);
        dispatch::call_queued(ctx, &args);
    }
    ctx.keys.set_db(ctx.client.db);
    // The transaction's writes enter the propagation stream as one record (wrapped in
    // MULTI/EXEC when there are several), while its locks are still held.
    if let Some(ops) = ctx.exec_ops.take() {
        ctx.srv.propagation.push(ctx.client.worker, ops);
    }
}
