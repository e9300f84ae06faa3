//! A point-in-time copy of the whole keyspace taken shard by shard, without fork:
//! copy-on-write at shard granularity.
//!
//! While a [`Snapshot`] is installed in the [`Keyspace`], every shard is written out
//! (serialized into RDB key records, a [`Chunk`]) exactly once: either by the saver, which
//! walks the shards in order, or, first, by whoever is about to modify a shard the saver
//! has not reached yet ([`Keyspace::copy_on_write`], called by `Locked` with the shard's
//! lock held, before the modification). Each shard is therefore captured as it was when
//! the snapshot was installed, and the chunks together are one consistent cut: a write is
//! in the snapshot exactly when it was made before the snapshot was installed.
//!
//! A writer never serializes more than the one shard it is about to modify; chunks made
//! by writers wait in a queue the saver drains as it goes.

use crate::keyspace::Keyspace;
use crate::rdb::file::write_shard;
use crate::shard::Shard;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// One shard's key records.
pub struct Chunk {
    pub db: usize,
    pub records: Vec<u8>,
    pub keys: usize,
}

/// A snapshot in progress. See the module documentation.
pub struct Snapshot {
    per_db: usize,
    /// Whether shard `db * per_db + index` has been written out.
    taken: Box<[AtomicBool]>,
    aborted: AtomicBool,
    compress: bool,
    /// Chunks written out by writers, waiting for the saver.
    ready: Mutex<Vec<Chunk>>,
    /// Keys written out so far.
    keys_done: AtomicU64,
    /// Shards written out by writers (copy-on-write) rather than by the saver.
    cow_shards: AtomicU64,
}

impl Snapshot {
    fn new(databases: usize, per_db: usize, compress: bool) -> Snapshot {
        Snapshot {
            per_db,
            taken: (0..databases * per_db)
                .map(|_| AtomicBool::new(false))
                .collect(),
            aborted: AtomicBool::new(false),
            compress,
            ready: Mutex::new(Vec::new()),
            keys_done: AtomicU64::new(0),
            cow_shards: AtomicU64::new(0),
        }
    }

    /// Write out shard `(db, index)` unless already done (or the snapshot was abandoned).
    /// `shard` is its content, with its lock held by the caller.
    pub fn take(&self, db: usize, index: usize, shard: &Shard) -> Option<Chunk> {
        let flag = &self.taken[db * self.per_db + index];
        // Set only under the shard's lock, which the caller holds.
        if flag.load(Ordering::Relaxed) || self.aborted.load(Ordering::Relaxed) {
            return None;
        }
        flag.store(true, Ordering::Relaxed);
        let mut records = Vec::new();
        let keys = write_shard(&mut records, shard, self.compress);
        self.keys_done.fetch_add(keys as u64, Ordering::Relaxed);
        Some(Chunk { db, records, keys })
    }

    /// The chunks writers have made since the last call.
    pub fn drain(&self) -> Vec<Chunk> {
        std::mem::take(&mut *self.ready.lock())
    }

    /// Give the snapshot up: nothing more is written out (FLUSHALL, SHUTDOWN).
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
        self.ready.lock().clear();
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// Keys written out so far.
    pub fn keys_done(&self) -> u64 {
        self.keys_done.load(Ordering::Relaxed)
    }

    /// Shards written out by writers before their modification.
    pub fn cow_shards(&self) -> u64 {
        self.cow_shards.load(Ordering::Relaxed)
    }
}

/// The keyspace's snapshot slot.
#[derive(Default)]
pub(crate) struct Slot {
    /// Fast check on the write path: is a snapshot installed?
    on: AtomicBool,
    current: parking_lot::RwLock<Option<Arc<Snapshot>>>,
}

impl Keyspace {
    /// Install a snapshot of every database (none if one is in progress). From now on each
    /// shard is written out before its first modification.
    pub fn begin_snapshot(&self, compress: bool) -> Option<Arc<Snapshot>> {
        let mut cur = self.snapshot.current.write();
        if cur.is_some() {
            return None;
        }
        let per_db = self.db(0).shard_count();
        let snap = Arc::new(Snapshot::new(self.len(), per_db, compress));
        *cur = Some(snap.clone());
        // Writers check this after taking a shard's lock; the saver takes a shard's lock
        // only after this store, so a write it does not see was made before it began.
        self.snapshot.on.store(true, Ordering::SeqCst);
        Some(snap)
    }

    /// Remove the installed snapshot (finished or abandoned).
    pub fn end_snapshot(&self) {
        self.snapshot.on.store(false, Ordering::SeqCst);
        *self.snapshot.current.write() = None;
    }

    /// The snapshot in progress, if any.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return None;
        }
        self.snapshot.current.read().clone()
    }

    /// Called with shard `(db, index)` locked, before it is modified: write it out to the
    /// snapshot in progress if that has not happened yet. One atomic load otherwise.
    #[inline]
    pub(crate) fn copy_on_write(&self, db: usize, index: usize, shard: &Shard) {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return;
        }
        self.copy_on_write_slow(db, index, shard);
    }

    #[cold]
    fn copy_on_write_slow(&self, db: usize, index: usize, shard: &Shard) {
        let cur = self.snapshot.current.read();
        let Some(snap) = cur.as_ref() else {
            return;
        };
        if let Some(chunk) = snap.take(db, index, shard) {
            snap.cow_shards.fetch_add(1, Ordering::Relaxed);
            snap.ready.lock().push(chunk);
        }
    }
}
