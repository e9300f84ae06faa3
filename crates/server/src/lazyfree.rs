//! Freeing big values off the hot path: a value whose free would take long (Redis's
//! lazyfreeGetFreeEffort above LAZYFREE_THRESHOLD, 64 elements) is handed to one
//! background thread, started on first use, which drops it. INFO reports
//! `lazyfree_pending_objects` and `lazyfreed_objects` from here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Past this many elements a value is freed in the background (LAZYFREE_THRESHOLD).
pub const THRESHOLD: usize = 64;

/// Something to drop, and how many objects it counts for in INFO.
type Job = (Box<dyn Send>, u64);

static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
static PENDING: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

fn queue() -> Option<&'static Sender<Job>> {
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Job>();
            std::thread::Builder::new()
                .name("skein-lazyfree".into())
                .spawn(move || {
                    for (job, objects) in rx {
                        drop(job);
                        PENDING.fetch_sub(objects, Relaxed);
                        FREED.fetch_add(objects, Relaxed);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Redis's lazyfreeGetFreeEffort: about how many allocations freeing `v` takes.
pub fn free_effort(v: engine::ValueRef<'_>) -> usize {
    use engine::ValueRef;
    match v {
        ValueRef::Str(_) => 1,
        ValueRef::List(l) => l.len(),
        ValueRef::Hash(h) => h.len(),
        ValueRef::Set(s) => s.len(),
        // An emptied sorted set's arena still holds its peak's nodes.
        ValueRef::ZSet(z) => z.allocated_elems(),
        ValueRef::Stream(s) => s.len() as usize,
    }
}

/// Drop `entry` here if it is small, else on the background thread (dbAsyncDelete).
pub fn free(entry: engine::Entry) {
    free_if_big(entry, 1);
}

/// Drop `entry` here if it is small, else on the background thread, counted there as
/// `objects` lazily freed values.
fn free_if_big(entry: engine::Entry, objects: u64) {
    if free_effort(entry.value()) <= THRESHOLD {
        return drop(entry);
    }
    background(Box::new(entry), objects);
}

/// `lazyfree-lazy-expire` and `lazyfree-lazy-server-del`, kept here for [`release`] (set
/// from the configuration).
pub static LAZY_EXPIRE: AtomicBool = AtomicBool::new(false);
pub static LAZY_SERVER_DEL: AtomicBool = AtomicBool::new(false);

/// What the keyspace lets go of by itself (lazy expiry, an overwritten value): freed in
/// the background when its option says so and it is big, as Redis's dbAsyncDelete and
/// freeObjAsync do; otherwise by this thread, a big one after its shard is released.
pub fn release(entry: engine::Entry, why: engine::release::Why) {
    let lazy = match why {
        engine::release::Why::Expired => &LAZY_EXPIRE,
        engine::release::Why::Overwritten => &LAZY_SERVER_DEL,
    };
    if lazy.load(Relaxed) {
        free(entry);
    } else {
        free_here(entry);
    }
}

/// Free `entry` on this thread, as Redis frees a value inline; a big one once the
/// command's shards are released (`engine::release::defer`), so its shard is not held
/// while it is taken apart.
pub fn free_here(entry: engine::Entry) {
    if free_effort(entry.value()) > THRESHOLD {
        engine::release::defer(entry);
    } else {
        drop(entry);
    }
}

/// A collection its command emptied (then deleted): Redis freed its elements one by one
/// as they went, so what is left costs nothing there; here a sorted set's arena may still
/// hold its peak's nodes, which go to the background thread when many, uncounted in
/// `lazyfreed_objects` (Redis frees nothing lazily here), whatever the lazyfree options.
pub fn free_emptied(entry: engine::Entry) {
    free_if_big(entry, 0);
}

/// Drop the tables FLUSHDB/FLUSHALL ASYNC removed on the background thread, counted as
/// their keys (emptyDbAsync).
pub fn free_tables(tables: Vec<engine::keyspace::Cleared>) {
    let keys: usize = tables.iter().flatten().map(|t| t.len()).sum();
    if keys == 0 {
        return drop(tables);
    }
    background(Box::new(tables), keys as u64);
}

fn background(job: Box<dyn Send>, objects: u64) {
    let Some(q) = queue() else {
        return drop(job);
    };
    PENDING.fetch_add(objects, Relaxed);
    if let Err(e) = q.send((job, objects)) {
        PENDING.fetch_sub(objects, Relaxed);
        drop(e);
    }
}

/// Values handed over and not freed yet (lazyfree_pending_objects).
pub fn pending() -> u64 {
    PENDING.load(Relaxed)
}

/// Values freed in the background so far (lazyfreed_objects).
pub fn freed() -> u64 {
    FREED.load(Relaxed)
}
