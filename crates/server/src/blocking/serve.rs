//! Noting keys made ready, and serving their waiters once the command that made them
//! ready has finished.

use super::registry::{Kind, Op, Waiter};
use crate::cmd::{lists, streams, zsets};
use crate::dispatch::effects;
use crate::propagate::{encode, Op as PropOp};
use crate::server::Server;
use engine::{Changes, DbChange, Event, Locked, Plan};
use std::cell::RefCell;

thread_local! {
    /// Keys created by this thread's current command that have waiters: (db, key).
    static READY: RefCell<Vec<(usize, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
}

/// Called with the changes' locks held: remember each created key that has waiters
/// (while a client waits on a stream, each changed key that has waiters: new entries,
/// a group destroyed, the stream deleted or overwritten all concern them).
pub fn note_changes(srv: &Server, changes: &Changes) {
    if !srv.blocking.active() {
        return;
    }
    let streams = srv.blocking.streams_active();
    for c in changes.items() {
        if c.event != Event::NEW && !(streams && c.event.modifies()) {
            continue;
        }
        let (db, key) = (c.db as usize, changes.key(c));
        if srv.blocking.has_waiters(db, key) {
            note(db, key);
        }
    }
    // SWAPDB brings another database's keys under the waiters of both (Redis's
    // scanDatabaseForReadyKeys): every waited key of either is tried.
    for d in &changes.db_changes {
        let dbs = match *d {
            DbChange::Swapped(a, b) => [Some(a), Some(b)],
            // Stream waiters learn that their keys are gone.
            DbChange::Flushed(db) if streams => [Some(db), None],
            DbChange::Flushed(_) => [None, None],
        };
        for db in dbs.into_iter().flatten() {
            for key in srv.blocking.keys_in_db(db) {
                note(db, &key);
            }
        }
    }
}

fn note(db: usize, key: &[u8]) {
    READY.with(|r| {
        let mut r = r.borrow_mut();
        if !r.iter().any(|(d, k)| *d == db && k == key) {
            r.push((db, key.to_vec()));
        }
    });
}

/// Serve the waiters of every key noted ready by this thread (call with no lock held).
#[inline]
pub fn serve_ready(srv: &Server, worker: usize) {
    // Keys are only noted while someone is blocked; a key noted just before the last
    // waiter left is served (as a no-op) by the next command that runs here.
    if srv.blocking.active() {
        serve_noted(srv, worker);
    }
}

fn serve_noted(srv: &Server, worker: usize) {
    loop {
        let next = READY.with(|r| {
            let mut r = r.borrow_mut();
            (!r.is_empty()).then(|| r.remove(0))
        });
        let Some((db, key)) = next else {
            return;
        };
        // As around a handler: a bug while serving must not take the worker down (its
        // waiters stay registered and time out or are served by the next push).
        let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            while serve_one(srv, worker, db, &key) {}
        }));
        if served.is_err() {
            crate::log::warning("internal error serving blocked clients (this is a Skein bug)");
        }
    }
}

/// Serve the first waiter of `key`, under its locks. Returns whether to try the next one.
fn serve_one(srv: &Server, worker: usize, db: usize, key: &[u8]) -> bool {
    // Under the key's lock: which kind of waiter it can serve now, and the first such.
    let mut changes = Changes::default();
    let mut keys = lock(srv, db, &[key], &mut changes);
    let kind = match keys.peek(key).map(|e| e.value().type_name()) {
        Some("list") => Some(Kind::List),
        Some("zset") => Some(Kind::ZSet),
        _ => None,
    };
    if srv.blocking.streams_active() {
        // Stream waiters read without consuming (each may be served), and learn of a
        // deleted stream or group: all of them are tried, each under the key's lock.
        finish_locked(srv, worker, keys, Vec::new());
        serve_stream_waiters(srv, worker, db, key);
        changes.clear();
        keys = lock(srv, db, &[key], &mut changes);
    }
    let Some(w) = kind.and_then(|kind| srv.blocking.first_waiting(db, key, kind)) else {
        finish_locked(srv, worker, keys, Vec::new());
        return false;
    };
    if let Op::ListMove { dst, .. } = &w.op {
        if dst.as_slice() != key {
            // BLMOVE also needs its destination's shard: take both, in order (what was
            // seen may change meanwhile; serving looks again).
            finish_locked(srv, worker, keys, Vec::new());
            changes.clear();
            keys = lock(srv, db, &[key, dst], &mut changes);
        }
    }
    let limits = srv.config.hot.coll_limits();
    let mut ops = Vec::new();
    let mut served = false;
    let mut key_left = true;
    let finished = w.finish_with(|| {
        let reply = serve_locked(&mut keys, &w, key, &limits, &mut ops, &mut key_left)?;
        served = true;
        Some(reply)
    });
    finish_locked(srv, worker, keys, ops);
    if finished {
        srv.blocking.forget(&w);
        w.info.mailbox.notify(w.info.token);
    }
    // Go on while the key still holds data (a waiter that was finished meanwhile by a
    // timeout is skipped by the next look).
    (served && key_left) || (!finished && !w.is_waiting())
}

/// Try every stream waiter of `key` in the order they blocked.
fn serve_stream_waiters(srv: &Server, worker: usize, db: usize, key: &[u8]) {
    for w in srv.blocking.all_waiting(db, key, Kind::Stream) {
        let Op::Stream(wait) = &w.op else { continue };
        let mut changes = Changes::default();
        let mut keys = lock(srv, db, &[key], &mut changes);
        let mut ops = Vec::new();
        let finished = w.finish_with(|| {
            let mut out = w.reply_buf();
            streams::serve_waiter(&mut keys, &w.keys, wait, key, &mut out, &mut ops)
                .then_some(out.out)
        });
        finish_locked(srv, worker, keys, ops);
        if finished {
            srv.blocking.forget(&w);
            w.info.mailbox.notify(w.info.token);
        }
    }
}

/// Lock `keys` of `db` for serving (events kept as the consumers want them).
fn lock<'s>(srv: &'s Server, db: usize, keys: &[&[u8]], changes: &'s mut Changes) -> Locked<'s> {
    let mut plan = Plan::new();
    for k in keys {
        plan.key(&srv.keyspace, db, k);
    }
    let locked = srv.keyspace.lock(&mut plan, db, changes);
    effects::prepare(srv, locked.changes);
    locked
}

/// Feed what was done under `keys` to the consumers (propagated as `ops`), then unlock.
fn finish_locked(srv: &Server, worker: usize, keys: Locked<'_>, ops: Vec<PropOp>) {
    let changes = &*keys.changes;
    let mut all = Vec::new();
    if srv.propagation.active() {
        effects::expired_ops(srv, changes, &mut all);
        // (A pop's form comes with its change; a served XREADGROUP's XCLAIMs may come
        // without one, as in Redis.)
        all.extend(ops);
    }
    effects::consume(srv, worker, changes, all);
    keys.release();
}

/// Serve `w` from `key` (its locks held): its reply, or None if there was nothing to
/// take (a list BLMOVE creates takes `limits`). Pushes the propagated form to `ops`; `key_left` tells whether `key` still
/// exists afterwards.
fn serve_locked(
    keys: &mut Locked<'_>,
    w: &Waiter,
    key: &[u8],
    limits: &engine::coll::Limits,
    ops: &mut Vec<PropOp>,
    key_left: &mut bool,
) -> Option<Vec<u8>> {
    let mut out = w.reply_buf();
    let db = w.db;
    match &w.op {
        Op::ListPop { left, count } => {
            let n = count.unwrap_or(1);
            let elems = lists::pop_elements(keys, key, *left, n).ok()??;
            let name: &[u8] = if *left { b"LPOP" } else { b"RPOP" };
            match count {
                None => {
                    ops.push((db, encode(&[name, key])));
                    out.array(2);
                    out.bulk(key);
                    out.bulk(&elems[0]);
                }
                Some(_) => {
                    let got = elems.len().to_string();
                    ops.push((db, encode(&[name, key, got.as_bytes()])));
                    out.array(2);
                    out.bulk(key);
                    out.array(elems.len());
                    for e in &elems {
                        out.bulk(e);
                    }
                }
            }
        }
        Op::ListMove {
            dst,
            from_left,
            to_left,
            rpoplpush,
        } => {
            // A destination of another type: the waiter gets the error, nothing moves.
            if keys
                .peek(dst)
                .is_some_and(|e| e.value().type_name() != "list")
            {
                out.error(crate::cmd::args::WRONGTYPE);
                return Some(out.out);
            }
            let elem = lists::move_element(keys, key, dst, *from_left, *to_left, limits).ok()??;
            let side = |l: bool| -> &'static [u8] {
                if l {
                    b"LEFT"
                } else {
                    b"RIGHT"
                }
            };
            if *rpoplpush {
                ops.push((db, encode(&[b"RPOPLPUSH", key, dst])));
            } else {
                ops.push((
                    db,
                    encode(&[b"LMOVE", key, dst, side(*from_left), side(*to_left)]),
                ));
            }
            out.bulk(&elem);
        }
        Op::Stream(_) => return None,
        Op::ZPop { max, count } => {
            let n = count.unwrap_or(1);
            let popped = zsets::pop_members(keys, key, *max, n).ok()??;
            let name: &[u8] = if *max { b"ZPOPMAX" } else { b"ZPOPMIN" };
            match count {
                None => {
                    ops.push((db, encode(&[name, key])));
                    out.array(3);
                    out.bulk(key);
                    out.bulk(&popped[0].0);
                    zsets::reply_score(&mut out, popped[0].1);
                }
                Some(_) => {
                    let got = popped.len().to_string();
                    ops.push((db, encode(&[name, key, got.as_bytes()])));
                    reply_key_and_pairs(&mut out, key, &popped);
                }
            }
        }
    }
    *key_left = keys.peek(key).is_some();
    Some(out.out)
}

/// BZMPOP/ZMPOP's reply: [key, [[member, score], ...]].
pub fn reply_key_and_pairs(out: &mut resp::ReplyBuf, key: &[u8], pairs: &[(Vec<u8>, f64)]) {
    out.array(2);
    out.bulk(key);
    zsets::reply_nested(out, pairs);
}
