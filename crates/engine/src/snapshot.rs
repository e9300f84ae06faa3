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
//! The unit written out is smaller than a shard: a shard's keys fall into [`UNITS`] units
//! by bits of their hash, and a write of one key writes out only that key's unit (a
//! whole-shard change, SWAPDB or the expiry cycle, writes out every unit left). With 1,024
//! shards of 10,000 keys, a writer's copy is about 150 keys, not 10,000: a steady stream
//! of writes on random keys no longer makes the writers serialize the dataset themselves.
//!
//! A writer never serializes more than the units it is about to modify; chunks made by
//! writers wait in a queue the saver drains as it goes. A flush (FLUSHDB) does not
//! serialize at all: it hands the removed tables of shards not taken yet to the snapshot,
//! whose saver writes them out and frees them.

use crate::entry::Entry;
use crate::keyspace::Keyspace;
use crate::rdb::file::{write_entry, SaveOptions};
use crate::shard::{hash_key, Shard};
use hashbrown::HashTable;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Copy-on-write units per shard.
pub const UNITS: u32 = 64;
/// Where a key's unit comes from in its hash: bits the shard index (from bit 40) and the
/// table (its low bits for the slot, the top seven for the tag) do not use.
const UNIT_SHIFT: u32 = 24;
/// Every unit of a shard.
const ALL: u64 = u64::MAX;

/// The unit of a key with hash `h`, as a bit.
fn unit_bit(h: u64) -> u64 {
    1 << ((h >> UNIT_SHIFT) & u64::from(UNITS - 1))
}

/// One shard's key records.
pub struct Chunk {
    pub db: usize,
    pub records: Vec<u8>,
    pub keys: usize,
}

/// A snapshot in progress. See the module documentation.
pub struct Snapshot {
    per_db: usize,
    /// The units of shard `db * per_db + index` written out (a bit each).
    taken: Box<[AtomicU64]>,
    aborted: AtomicBool,
    opts: SaveOptions,
    /// Chunks written out by writers, waiting for the saver.
    ready: Mutex<Vec<Chunk>>,
    /// Whole shard contents a flush removed before the saver took them, with the units
    /// still to write out: the saver writes them out (and frees them).
    handed: Mutex<Vec<(usize, u64, HashTable<Entry>)>>,
    /// Keys written out so far.
    keys_done: AtomicU64,
    /// Shards written out by writers (copy-on-write) rather than by the saver, and their
    /// bytes.
    cow_shards: AtomicU64,
    cow_bytes: AtomicU64,
}

impl Snapshot {
    fn new(databases: usize, per_db: usize, opts: SaveOptions) -> Snapshot {
        Snapshot {
            per_db,
            taken: (0..databases * per_db).map(|_| AtomicU64::new(0)).collect(),
            aborted: AtomicBool::new(false),
            opts,
            ready: Mutex::new(Vec::new()),
            handed: Mutex::new(Vec::new()),
            keys_done: AtomicU64::new(0),
            cow_shards: AtomicU64::new(0),
            cow_bytes: AtomicU64::new(0),
        }
    }

    /// Write out what is left of shard `(db, index)` (nothing if all of it was written
    /// out, or the snapshot was abandoned). `shard` is its content, with its lock held by
    /// the caller.
    pub fn take(&self, db: usize, index: usize, shard: &Shard) -> Option<Chunk> {
        self.take_units(db, index, shard, ALL)
    }

    /// Write out the units `want` of shard `(db, index)` not written out yet.
    fn take_units(&self, db: usize, index: usize, shard: &Shard, want: u64) -> Option<Chunk> {
        let units = self.claim(db, index, want);
        if units == 0 {
            return None;
        }
        Some(self.chunk(db, shard.iter(), units))
    }

    /// Mark units `want` of shard `(db, index)` taken; returns those that were not (none
    /// if the snapshot was abandoned). The caller holds the shard's lock.
    fn claim(&self, db: usize, index: usize, want: u64) -> u64 {
        let flag = &self.taken[db * self.per_db + index];
        // Changed only under the shard's lock, which the caller holds.
        let before = flag.load(Ordering::Relaxed);
        let units = want & !before;
        if units == 0 || self.aborted.load(Ordering::Relaxed) {
            return 0;
        }
        flag.store(before | units, Ordering::Relaxed);
        units
    }

    /// The records of the entries in `units`.
    fn chunk<'e>(&self, db: usize, entries: impl Iterator<Item = &'e Entry>, units: u64) -> Chunk {
        let mut records = Vec::new();
        let mut keys = 0;
        for e in entries {
            if units != ALL && unit_bit(hash_key(e.key())) & units == 0 {
                continue;
            }
            write_entry(&mut records, e, self.opts);
            keys += 1;
        }
        self.keys_done.fetch_add(keys as u64, Ordering::Relaxed);
        Chunk { db, records, keys }
    }

    /// The chunks writers have made since the last call (shard contents a flush handed
    /// over are written out here, on the saver's thread, and freed).
    pub fn drain(&self) -> Vec<Chunk> {
        let mut out = std::mem::take(&mut *self.ready.lock());
        let handed = std::mem::take(&mut *self.handed.lock());
        for (db, units, table) in handed {
            out.push(self.chunk(db, table.iter(), units));
        }
        out
    }

    /// Give the snapshot up: nothing more is written out (FLUSHALL, SHUTDOWN).
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
        self.ready.lock().clear();
        self.handed.lock().clear();
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// Does it save access times (IDLE or FREQ), which a read's touch changes?
    fn saves_access(&self) -> bool {
        self.opts.access != crate::rdb::file::Access::None
    }

    /// Keys written out so far.
    pub fn keys_done(&self) -> u64 {
        self.keys_done.load(Ordering::Relaxed)
    }

    /// Units (or what was left of whole shards) written out by writers before their
    /// modification.
    pub fn cow_shards(&self) -> u64 {
        self.cow_shards.load(Ordering::Relaxed)
    }

    /// Bytes of the records of those shards.
    pub fn cow_bytes(&self) -> u64 {
        self.cow_bytes.load(Ordering::Relaxed)
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
    pub fn begin_snapshot(&self, opts: SaveOptions) -> Option<Arc<Snapshot>> {
        self.begin_snapshot_at(opts, || {})
    }

    /// [`Keyspace::begin_snapshot`], running `at_cut` at the snapshot's instant, with
    /// every shard held: nothing it observes of the writes (the AOF's propagation stream)
    /// can fall on the wrong side of the cut.
    pub fn begin_snapshot_at(
        &self,
        opts: SaveOptions,
        at_cut: impl FnOnce(),
    ) -> Option<Arc<Snapshot>> {
        let mut cur = self.snapshot.current.write();
        if cur.is_some() {
            return None;
        }
        let per_db = self.db(0).shard_count();
        let snap = Arc::new(Snapshot::new(self.len(), per_db, opts));
        *cur = Some(snap.clone());
        // Released before the shards are taken: a writer holding a shard may be reading
        // the slot (it saw the previous snapshot's flag).
        drop(cur);
        // The cut must not fall inside a command: one holding several shards (MSET, EXEC,
        // a script) could have modified some of them before the snapshot was installed
        // and the rest after, which would write the rest out as they were before the
        // command and the first ones after it. So the snapshot is installed with every
        // shard held, taken in (db, shard) order like any whole-keyspace plan (lockers of
        // several shards never wait while holding one, so this cannot deadlock): no
        // command is part-way through.
        let mut held = Vec::with_capacity(self.len() * per_db);
        for d in 0..self.len() {
            held.extend(self.db(d).shards.iter().map(|m| m.lock()));
        }
        // Writers check this after taking a shard's lock; the saver takes a shard's lock
        // only after this store, so a write it does not see was made before it began.
        self.snapshot.on.store(true, Ordering::SeqCst);
        at_cut();
        drop(held);
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

    /// Is a snapshot installed? (One atomic load.)
    #[inline]
    pub(crate) fn snapshot_on(&self) -> bool {
        self.snapshot.on.load(Ordering::Acquire)
    }

    /// Does the snapshot in progress save access times?
    pub(crate) fn snapshot_saves_access(&self) -> bool {
        self.snapshot().is_some_and(|s| s.saves_access())
    }

    /// Called with shard `(db, index)` locked, before it is modified: write it out to the
    /// snapshot in progress if that has not happened yet. One atomic load otherwise.
    #[inline]
    pub(crate) fn copy_on_write(&self, db: usize, index: usize, shard: &Shard) {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return;
        }
        self.copy_on_write_slow(db, index, shard, ALL);
    }

    /// Shard `(db, index)`'s whole content, just removed from it with its lock held (a
    /// flush): a snapshot that has not taken the shard keeps it to write out later;
    /// otherwise it is handed back.
    pub(crate) fn hand_to_snapshot(
        &self,
        db: usize,
        index: usize,
        table: HashTable<Entry>,
    ) -> Option<HashTable<Entry>> {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return Some(table);
        }
        let cur = self.snapshot.current.read();
        let Some(snap) = cur.as_ref() else {
            return Some(table);
        };
        match snap.claim(db, index, ALL) {
            0 => Some(table),
            units => {
                snap.handed.lock().push((db, units, table));
                None
            }
        }
    }

    /// Called with shard `(db, index)` locked, before the key with hash `h` is modified
    /// (inserted, changed or deleted): write out that key's unit if it has not been.
    #[inline]
    pub(crate) fn copy_on_write_key(&self, db: usize, index: usize, shard: &Shard, h: u64) {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return;
        }
        self.copy_on_write_slow(db, index, shard, unit_bit(h));
    }

    #[cold]
    fn copy_on_write_slow(&self, db: usize, index: usize, shard: &Shard, units: u64) {
        let cur = self.snapshot.current.read();
        let Some(snap) = cur.as_ref() else {
            return;
        };
        if let Some(chunk) = snap.take_units(db, index, shard, units) {
            snap.cow_shards.fetch_add(1, Ordering::Relaxed);
            snap.cow_bytes
                .fetch_add(chunk.records.len() as u64, Ordering::Relaxed);
            snap.ready.lock().push(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{Changes, Event};
    use crate::keyspace::Keyspace;
    use crate::locked::Plan;
    use crate::rdb::file::{load, LoadOptions};
    use crate::rdb::file::{AuxValue, FileWriter};
    use crate::value::{StrRef, Value};
    use crate::NO_EXPIRE;

    fn set(ks: &Keyspace, key: &str, v: &str) {
        let mut changes = Changes::default();
        let mut keys = ks.lock_key(0, key.as_bytes(), &mut changes);
        keys.insert(
            key.as_bytes(),
            StrRef::encode(v.as_bytes()),
            NO_EXPIRE,
            Event::generic("set"),
        );
    }

    /// Everything a snapshot wrote out, as (key, value) pairs.
    fn contents(chunks: Vec<super::Chunk>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut fw = FileWriter::new(Vec::new(), true, 2, &[("x", AuxValue::Int(1))]).unwrap();
        for c in chunks {
            fw.chunk(c.db, (0, 0), &c.records).unwrap();
        }
        let buf = fw.finish().unwrap();
        let opts = LoadOptions {
            databases: 2,
            checksum: true,
            now_ms: 0,
            limits: Default::default(),
        };
        let mut out = Vec::new();
        load(
            &buf,
            &opts,
            |_| {},
            |k| {
                let Value::Str(s) = k.value else { panic!() };
                out.push((k.key.to_vec(), s.view().to_bytes().to_vec()));
                true
            },
        )
        .map_err(|f| f.error)
        .unwrap();
        out.sort();
        out
    }

    #[test]
    fn reads_leave_shards_to_the_saver_unless_they_change_them() {
        let ks = Keyspace::new(1, 8);
        for i in 0..100 {
            set(&ks, &format!("k{i}"), "v");
        }
        let mut changes = Changes::default();
        let mut keys = ks.lock_key(0, b"gone", &mut changes);
        keys.insert(b"gone", StrRef::encode(b"x"), 1, Event::generic("set"));
        drop(keys);
        let opts = |access| crate::rdb::file::SaveOptions {
            compress: true,
            access,
        };
        let snap = ks
            .begin_snapshot(opts(crate::rdb::file::Access::None))
            .unwrap();
        for i in 0..100 {
            let key = format!("k{i}");
            let mut keys = ks.lock_key(0, key.as_bytes(), &mut changes);
            assert!(keys.get(key.as_bytes()).is_some());
        }
        assert_eq!(snap.cow_shards(), 0);
        // Reading an expired key deletes it: its shard is written out first.
        let mut keys = ks.lock_key(0, b"gone", &mut changes);
        assert!(keys.get(b"gone").is_none());
        drop(keys);
        assert_eq!(snap.cow_shards(), 1);
        ks.end_snapshot();
        // A snapshot that saves access times: a touching read writes the shard out.
        let snap = ks
            .begin_snapshot(opts(crate::rdb::file::Access::Idle))
            .unwrap();
        let mut keys = ks.lock_key(0, b"k1", &mut changes);
        assert!(keys.get(b"k1").is_some());
        drop(keys);
        assert_eq!(snap.cow_shards(), 1);
        ks.end_snapshot();
    }

    #[test]
    fn writes_after_the_snapshot_are_not_in_it() {
        let ks = Keyspace::new(2, 8);
        for i in 0..100 {
            set(&ks, &format!("k{i}"), "old");
        }
        let opts = crate::rdb::file::SaveOptions {
            compress: true,
            access: crate::rdb::file::Access::None,
        };
        let snap = ks.begin_snapshot(opts).unwrap();
        assert!(ks.begin_snapshot(opts).is_none());
        // Writers modify keys of shards not taken yet: each is written out first.
        for i in 0..50 {
            set(&ks, &format!("k{i}"), "new");
        }
        set(&ks, "added", "new");
        // A flush hands its tables over instead of serializing them.
        let mut changes = Changes::default();
        let mut plan = Plan::new();
        plan.whole_db(1);
        drop(ks.lock(&mut plan, 1, &mut changes).flush_db(1));
        let mut chunks = Vec::new();
        for db in 0..2 {
            for i in 0..ks.db(db).shard_count() {
                chunks.extend(snap.drain());
                let shard = ks.db(db).read_shard(i);
                chunks.extend(snap.take(db, i, &shard));
            }
        }
        chunks.extend(snap.drain());
        ks.end_snapshot();
        assert!(snap.cow_shards() > 0);
        let got = contents(chunks);
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(|(_, v)| v == b"old"));
        assert!(ks.snapshot().is_none());
    }
}
