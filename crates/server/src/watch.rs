//! WATCH as versions: a table of counters indexed by (database, key hash), bumped by every
//! change event of a key, plus one epoch per database bumped by FLUSHDB, FLUSHALL and
//! SWAPDB. A client's WATCH remembers the version (and epoch) it saw; EXEC, holding the
//! watched keys' shards, aborts if any moved. Two keys sharing a slot can make an EXEC
//! abort that Redis would run (never the reverse); the table is large enough that this is
//! rare.
//!
//! Writers bump versions only while some client watches something (one relaxed load
//! otherwise). That is safe because WATCH counts itself in before it reads a version under
//! the key's shard lock, and writers bump under the same lock.

use engine::{hash_key, Changes, DbChange};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

const SLOTS: usize = 1 << 16;

pub struct Watches {
    watchers: AtomicUsize,
    versions: Box<[AtomicU64]>,
    epochs: Box<[AtomicU64]>,
}

/// What a WATCH saw of one key.
#[derive(Clone, Debug)]
pub struct Watched {
    pub db: usize,
    pub key: Vec<u8>,
    pub version: u64,
    pub epoch: u64,
    /// The key existed (and was not past its TTL) when watched.
    pub existed: bool,
    /// Its expiry then (EXEC fails once it has passed, deleted or not).
    pub expire_at: i64,
}

fn slot(db: usize, key: &[u8]) -> usize {
    let h = hash_key(key) ^ (db as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h as usize) & (SLOTS - 1)
}

impl Watches {
    pub fn new(databases: usize) -> Watches {
        Watches {
            watchers: AtomicUsize::new(0),
            versions: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            epochs: (0..databases.max(1)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// A client starts watching (before reading any version).
    pub fn enter(&self) {
        self.watchers.fetch_add(1, SeqCst);
    }

    /// A client stops watching (UNWATCH, EXEC, DISCARD, disconnect).
    pub fn leave(&self) {
        let _ = self
            .watchers
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1));
    }

    pub fn active(&self) -> bool {
        self.watchers.load(Relaxed) > 0
    }

    /// The key's version and its database's epoch (read under the key's shard lock).
    pub fn version(&self, db: usize, key: &[u8]) -> (u64, u64) {
        (
            self.versions[slot(db, key)].load(SeqCst),
            self.epochs[db].load(SeqCst),
        )
    }

    /// Bump the versions of every key `changes` modified, and the epochs of databases
    /// flushed or swapped. Called with the changed keys' shards held.
    pub fn touch(&self, changes: &Changes) {
        if !self.active() {
            return;
        }
        for c in changes.items() {
            // A key deleted because its TTL passed is no change for WATCH: EXEC compares
            // the watched expiry with the clock instead (a key already expired at WATCH
            // and deleted since is logically unchanged, as in Redis).
            if c.event.signals() && c.event != engine::Event::EXPIRED {
                self.versions[slot(c.db as usize, changes.key(c))].fetch_add(1, SeqCst);
            }
        }
        for d in &changes.db_changes {
            match *d {
                DbChange::Flushed(db) => {
                    self.epochs[db].fetch_add(1, SeqCst);
                }
                DbChange::Swapped(a, b) => {
                    self.epochs[a].fetch_add(1, SeqCst);
                    self.epochs[b].fetch_add(1, SeqCst);
                }
            }
        }
    }
}
