//! Databases and the keyspace.

use crate::shard::{Entry, Shard};
use crate::shard_lock::{ShardFigures, ShardGuard, ShardLock};
use crate::ttl_map::{TtlBit, TtlMap};

/// Bits of the hash that pick the shard (the table uses the low bits, hashbrown's tag the
/// top seven, so the shard takes bits from the middle to keep them independent).
const SHARD_SHIFT: u32 = 40;

/// The contents a flush removed from a database, to be dropped where the caller likes.
pub type Cleared = Vec<hashbrown::HashTable<Entry>>;

/// One database: a power-of-two array of shards.
pub struct Db {
    pub(crate) shards: Box<[ShardLock]>,
    /// Which shards hold keys with a TTL, read without their locks.
    ttl_map: TtlMap,
    mask: u64,
}

impl Db {
    pub fn new(shards: usize) -> Db {
        let n = shards.next_power_of_two().clamp(1, 1 << 16);
        Db {
            shards: (0..n).map(|_| ShardLock::new(Shard::default())).collect(),
            ttl_map: TtlMap::new(n),
            mask: (n - 1) as u64,
        }
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    pub fn shard_index(&self, h: u64) -> usize {
        ((h >> SHARD_SHIFT) & self.mask) as usize
    }

    /// Does shard `i` hold keys with a TTL? (A glance for the expiry cycle, which skips
    /// shards without any, without taking their locks; the answer may be stale as soon as
    /// it is given.)
    pub fn shard_has_expires(&self, i: usize) -> bool {
        self.ttl_map.has(i)
    }

    /// Does any shard hold keys with a TTL? (As stale as [`Db::shard_has_expires`].)
    pub fn has_expires(&self) -> bool {
        self.ttl_map.any()
    }

    /// Shard `i`'s bit, for a change to the shard (held by its caller) that may flip it.
    #[inline]
    pub(crate) fn ttl_bit(&self, i: usize) -> TtlBit<'_> {
        TtlBit::new(&self.ttl_map, i)
    }

    /// Room for `keys` more keys, spread evenly over the shards (RESIZEDB when loading a
    /// file, as Redis's dictExpand): the tables do not grow, rehashing every key, while
    /// they fill. Locks each shard in turn: not for a caller holding shards.
    pub fn reserve(&self, keys: u64) {
        let per_shard = (keys / self.shards.len() as u64) as usize;
        if per_shard == 0 {
            return;
        }
        // A shard gets a little more than its share (counts vary by about their root).
        let room = per_shard + per_shard / 16 + 8;
        for s in self.shards.iter() {
            s.lock().reserve(room);
        }
    }

    /// Lock shard `i` for reading it whole (a save); not for modifying it, which goes
    /// through `Locked`.
    pub fn read_shard(&self, i: usize) -> ShardGuard<'_> {
        self.shards[i].lock()
    }

    /// Shard `i`'s counts as its last lock holder left them, without waiting for it.
    pub fn shard_figures(&self, i: usize) -> ShardFigures {
        self.shards[i].figures()
    }

    /// Shard `i` if nobody holds it now.
    pub fn try_read_shard(&self, i: usize) -> Option<ShardGuard<'_>> {
        self.shards[i].try_lock()
    }
}

/// All databases.
pub struct Keyspace {
    dbs: Box<[Db]>,
    /// The snapshot in progress (see [`crate::snapshot`]).
    pub(crate) snapshot: crate::snapshot::Slot,
    /// Shard lock acquisitions that had to wait, and how long (see [`crate::lockstat`]).
    pub lock_waits: crate::lockstat::LockWaits,
}

impl Keyspace {
    pub fn new(databases: usize, shards_per_db: usize) -> Keyspace {
        Keyspace {
            dbs: (0..databases.max(1))
                .map(|_| Db::new(shards_per_db))
                .collect(),
            snapshot: Default::default(),
            lock_waits: Default::default(),
        }
    }

    pub fn db(&self, i: usize) -> &Db {
        &self.dbs[i]
    }

    pub fn len(&self) -> usize {
        self.dbs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dbs.is_empty()
    }

    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }
}
