//! The waiters, by key and by client.

use crate::clients::ClientInfo;
use parking_lot::Mutex;
use resp::{Proto, ReplyBuf};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// Stripes of the by-key map (a stripe is chosen by the key's hash).
const STRIPES: usize = 64;

/// What a waiter does when served.
#[derive(Clone, Debug)]
pub enum Op {
    /// BLPOP/BRPOP (`count` None) and BLMPOP (`count` Some).
    ListPop { left: bool, count: Option<usize> },
    /// BLMOVE and BRPOPLPUSH.
    ListMove {
        dst: Vec<u8>,
        from_left: bool,
        to_left: bool,
        rpoplpush: bool,
    },
    /// BZPOPMIN/BZPOPMAX (`count` None) and BZMPOP (`count` Some).
    ZPop { max: bool, count: Option<usize> },
    /// XREAD / XREADGROUP with BLOCK.
    Stream(Box<crate::cmd::streams::Wait>),
}

/// The type of key a waiter waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    List,
    ZSet,
    Stream,
}

impl Op {
    pub fn kind(&self) -> Kind {
        match self {
            Op::ListPop { .. } | Op::ListMove { .. } => Kind::List,
            Op::ZPop { .. } => Kind::ZSet,
            Op::Stream(_) => Kind::Stream,
        }
    }

    /// The reply when the wait ends without data (timeout, CLIENT UNBLOCK TIMEOUT): a
    /// null array whatever the command, as Redis's replyToBlockedClientTimedOut.
    pub fn null_reply(&self, out: &mut ReplyBuf) {
        out.null_array();
    }
}

enum State {
    Waiting,
    /// Finished: the reply (taken by the client's connection).
    Done(Vec<u8>),
    Taken,
}

/// One blocked client.
pub struct Waiter {
    pub client_id: u64,
    pub db: usize,
    /// The keys it waits on, in the command's order.
    pub keys: Vec<Vec<u8>>,
    pub op: Op,
    /// Absolute deadline in ms (0 = none).
    pub deadline_ms: i64,
    pub info: Arc<ClientInfo>,
    state: Mutex<State>,
    /// Its connection closes once the reply is written (unblocked because this server
    /// turned replica).
    pub close_after_reply: std::sync::atomic::AtomicBool,
}

impl Waiter {
    pub fn new(
        info: Arc<ClientInfo>,
        db: usize,
        keys: Vec<Vec<u8>>,
        op: Op,
        deadline_ms: i64,
    ) -> Waiter {
        Waiter {
            client_id: info.id,
            db,
            keys,
            op,
            deadline_ms,
            info,
            state: Mutex::new(State::Waiting),
            close_after_reply: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A reply buffer in the client's protocol.
    pub fn reply_buf(&self) -> ReplyBuf {
        let proto = if self.info.resp.load(std::sync::atomic::Ordering::Relaxed) == 3 {
            Proto::Resp3
        } else {
            Proto::Resp2
        };
        ReplyBuf::new(proto)
    }

    /// Run `serve` if the waiter is still waiting; it returns the reply to finish the
    /// waiter with, or None to leave it waiting. Returns whether it was finished here.
    pub fn finish_with(&self, serve: impl FnOnce() -> Option<Vec<u8>>) -> bool {
        let mut st = self.state.lock();
        if !matches!(*st, State::Waiting) {
            return false;
        }
        match serve() {
            Some(reply) => {
                *st = State::Done(reply);
                true
            }
            None => false,
        }
    }

    pub fn is_waiting(&self) -> bool {
        matches!(*self.state.lock(), State::Waiting)
    }

    /// The client's side: the reply, once finished (taken once).
    pub fn take_reply(&self) -> Option<Vec<u8>> {
        let mut st = self.state.lock();
        match std::mem::replace(&mut *st, State::Taken) {
            State::Done(r) => Some(r),
            other => {
                *st = other;
                None
            }
        }
    }
}

type ByKey = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

/// Every blocked client.
pub struct Blocking {
    stripes: Box<[Mutex<ByKey>]>,
    by_client: Mutex<HashMap<u64, Arc<Waiter>>>,
    blocked: AtomicUsize,
    /// How many of them wait on streams (their keys are served on any change, not only
    /// on creation).
    streams: AtomicUsize,
}

impl Default for Blocking {
    fn default() -> Self {
        Blocking {
            stripes: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
            by_client: Mutex::new(HashMap::new()),
            blocked: AtomicUsize::new(0),
            streams: AtomicUsize::new(0),
        }
    }
}

fn stripe_of(key: &[u8]) -> usize {
    (engine::hash_key(key) as usize) % STRIPES
}

impl Blocking {
    /// Is any client blocked? (Read with the command's locks held: see the module doc.)
    pub fn active(&self) -> bool {
        self.blocked.load(SeqCst) > 0
    }

    /// Clients blocked now (INFO `blocked_clients`).
    pub fn count(&self) -> usize {
        self.blocked.load(SeqCst)
    }

    /// Does any client wait on a stream? (Read with the command's locks held.)
    pub fn streams_active(&self) -> bool {
        self.streams.load(SeqCst) > 0
    }

    /// Register a waiter on each of its keys. The caller holds the shards of all of them.
    pub fn register(&self, w: &Arc<Waiter>) {
        self.blocked.fetch_add(1, SeqCst);
        if w.op.kind() == Kind::Stream {
            self.streams.fetch_add(1, SeqCst);
        }
        self.by_client.lock().insert(w.client_id, w.clone());
        for key in &w.keys {
            let mut s = self.stripes[stripe_of(key)].lock();
            let q = s.entry((w.db, key.clone())).or_default();
            if !q.iter().any(|x| Arc::ptr_eq(x, w)) {
                q.push_back(w.clone());
            }
        }
    }

    /// Does anyone wait on `key` of `db`?
    pub fn has_waiters(&self, db: usize, key: &[u8]) -> bool {
        self.stripes[stripe_of(key)]
            .lock()
            .contains_key(&(db, key.to_vec()))
    }

    /// Every key of `db` someone waits on.
    pub fn keys_in_db(&self, db: usize) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        for s in self.stripes.iter() {
            keys.extend(
                s.lock()
                    .keys()
                    .filter(|(d, _)| *d == db)
                    .map(|(_, k)| k.clone()),
            );
        }
        keys
    }

    /// The first waiter on `key` still waiting for a key of `kind` (finished ones met on
    /// the way are dropped from the queue).
    pub fn first_waiting(&self, db: usize, key: &[u8], kind: Kind) -> Option<Arc<Waiter>> {
        let mut s = self.stripes[stripe_of(key)].lock();
        let k = (db, key.to_vec());
        let q = s.get_mut(&k)?;
        q.retain(|w| w.is_waiting());
        let found = q.iter().find(|w| w.op.kind() == kind).cloned();
        if q.is_empty() {
            s.remove(&k);
        }
        found
    }

    /// Every waiter on `key` still waiting for a key of `kind`, first blocked first.
    pub fn all_waiting(&self, db: usize, key: &[u8], kind: Kind) -> Vec<Arc<Waiter>> {
        let s = self.stripes[stripe_of(key)].lock();
        s.get(&(db, key.to_vec())).map_or(Vec::new(), |q| {
            q.iter()
                .filter(|w| w.op.kind() == kind && w.is_waiting())
                .cloned()
                .collect()
        })
    }

    /// Take a finished waiter out of the registry (once: later calls do nothing).
    pub fn forget(&self, w: &Arc<Waiter>) {
        let removed = {
            let mut by = self.by_client.lock();
            match by.get(&w.client_id) {
                Some(x) if Arc::ptr_eq(x, w) => by.remove(&w.client_id).is_some(),
                _ => false,
            }
        };
        if !removed {
            return;
        }
        self.blocked.fetch_sub(1, SeqCst);
        if w.op.kind() == Kind::Stream {
            self.streams.fetch_sub(1, SeqCst);
        }
        for key in &w.keys {
            let mut s = self.stripes[stripe_of(key)].lock();
            let k = (w.db, key.clone());
            if let Some(q) = s.get_mut(&k) {
                q.retain(|x| !Arc::ptr_eq(x, w));
                if q.is_empty() {
                    s.remove(&k);
                }
            }
        }
    }

    /// Finish `w` with `reply` unless someone else finished it first; then take it out
    /// and wake its connection. Returns whether this call finished it.
    pub fn finish(&self, w: &Arc<Waiter>, reply: Vec<u8>) -> bool {
        let done = w.finish_with(|| Some(reply));
        if done {
            self.forget(w);
            w.info.mailbox.notify(w.info.token);
        }
        done
    }

    /// CLIENT UNBLOCK: finish client `id`'s wait with the timeout reply, or with an
    /// -UNBLOCKED error. False if that client is not blocked.
    pub fn unblock(&self, id: u64, error: bool) -> bool {
        let Some(w) = self.by_client.lock().get(&id).cloned() else {
            return false;
        };
        let mut out = w.reply_buf();
        if error {
            out.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
        } else {
            w.op.null_reply(&mut out);
        }
        self.finish(&w, out.out)
    }

    /// This server turned replica (REPLICAOF, FAILOVER): every blocked client gets Redis's
    /// -UNBLOCKED error and its connection closes once that is written
    /// (disconnectAllBlockedClients). Returns how many.
    pub fn unblock_all_for_replica(&self) -> usize {
        let all: Vec<Arc<Waiter>> = self.by_client.lock().values().cloned().collect();
        let mut n = 0;
        for w in &all {
            let mut out = w.reply_buf();
            out.error(
                "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
            );
            let done = w.finish_with(|| {
                w.close_after_reply.store(true, SeqCst);
                Some(out.out)
            });
            if done {
                self.forget(w);
                w.info.mailbox.notify(w.info.token);
                n += 1;
            }
        }
        n
    }

    /// The client's deadline passed: finish with the timeout reply (if still waiting).
    pub fn time_out(&self, w: &Arc<Waiter>) -> bool {
        let mut out = w.reply_buf();
        w.op.null_reply(&mut out);
        self.finish(w, out.out)
    }

    /// The client disconnected (or reset): drop its wait without a reply.
    pub fn cancel(&self, w: &Arc<Waiter>) {
        w.finish_with(|| Some(Vec::new()));
        self.forget(w);
    }
}
