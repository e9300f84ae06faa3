//! BCAST mode: the prefix table (prefix -> clients, Redis's PrefixTable) and the batches
//! of changed keys waiting to be broadcast.
//!
//! Redis gathers the keys changed in one event-loop iteration and, before sleeping,
//! sends each prefix's clients one message with that prefix's keys (in byte order). Here
//! each thread gathers the keys its commands change; a worker sends its batch once it
//! has run the commands of one read from a connection, before their replies are
//! written (so a client that has the writer's reply can count on the invalidation being
//! queued first); any other thread (the background pool, the cron's expiry cycle) sends
//! at once.

use super::deliver;
use crate::clients::{flag, ClientInfo};
use crate::server::Server;
use parking_lot::RwLock;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

type Clients = HashMap<u64, Arc<ClientInfo>>;

#[derive(Default)]
pub struct Prefixes {
    /// Prefixes in the table (INFO tracking_total_prefixes); 0 skips everything.
    count: AtomicUsize,
    map: RwLock<BTreeMap<Box<[u8]>, Clients>>,
}

impl Prefixes {
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Relaxed) != 0
    }

    pub fn len(&self) -> usize {
        self.count.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Register `c` for `prefix` (nothing if it was already).
    pub fn add(&self, c: &Arc<ClientInfo>, prefix: &[u8]) {
        let mut map = self.map.write();
        let clients = map.entry(prefix.into()).or_default();
        if clients.insert(c.id, c.clone()).is_none() {
            c.tracking.add_prefix(prefix);
        }
        self.count.store(map.len(), Relaxed);
    }

    /// `c` leaves every prefix it had; prefixes left without clients go.
    pub fn remove_client(&self, c: &ClientInfo) {
        let mut map = self.map.write();
        for p in c.tracking.take_prefixes() {
            if let Some(clients) = map.get_mut(&p) {
                clients.remove(&c.id);
                if clients.is_empty() {
                    map.remove(&p);
                }
            }
        }
        self.count.store(map.len(), Relaxed);
    }
}

thread_local! {
    /// Keys changed by this thread's commands and not yet broadcast, with the client
    /// that changed each (0: none), for NOLOOP.
    static PENDING: RefCell<Vec<(Box<[u8]>, u64)>> = const { RefCell::new(Vec::new()) };
    /// Set while a worker runs the commands of one read: the batch is sent after them.
    static BATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Note a changed key for broadcasting.
pub fn note(key: &[u8], writer: u64) {
    PENDING.with(|p| p.borrow_mut().push((key.into(), writer)));
}

/// Is this thread gathering a batch to send later?
pub fn batching() -> bool {
    BATCHING.with(|b| b.get())
}

/// Worker hook: gather the keys changed by the commands run until [`end_batch`].
pub fn begin_batch() {
    BATCHING.with(|b| b.set(true));
}

/// Worker hook: the commands of one read have run; send what they changed, before
/// their replies are written.
pub fn end_batch(srv: &Server) {
    BATCHING.with(|b| b.set(false));
    if PENDING.with(|p| !p.borrow().is_empty()) {
        flush(srv);
    }
}

/// Send every prefix's clients the keys changed under it (Redis's
/// trackingBroadcastInvalidationMessages).
pub fn flush(srv: &Server) {
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    let map = srv.tracking.prefixes.map.read();
    for (prefix, clients) in map.iter() {
        // Byte order, each key once with the client that changed it last.
        let mut keys: BTreeMap<&[u8], u64> = BTreeMap::new();
        for (k, w) in &pending {
            if k.starts_with(prefix) {
                keys.insert(k, *w);
            }
        }
        if keys.is_empty() {
            continue;
        }
        let all: Vec<&[u8]> = keys.keys().copied().collect();
        let common = deliver::Message::keys(&all);
        for c in clients.values() {
            if c.has(flag::TRACKING_NOLOOP) {
                let own: Vec<&[u8]> = keys
                    .iter()
                    .filter(|(_, &w)| w != c.id)
                    .map(|(k, _)| *k)
                    .collect();
                if !own.is_empty() {
                    deliver::send(c, &deliver::Message::keys(&own));
                }
            } else {
                deliver::send(c, &common);
            }
        }
    }
    drop(map);
    // Keep the buffer's capacity for the next batch.
    let mut pending = pending;
    pending.clear();
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_empty() {
            *p = pending;
        }
    });
}
