//! A point-in-time copy of the whole keyspace taken shard by shard, without fork:
//! copy-on-write at key granularity.
//!
//! While a [`Snapshot`] is installed in the [`Keyspace`], every key that existed when it
//! was installed (the cut) is written out (serialized into an RDB key record) exactly once,
//! as it was at the cut, by one of:
//!
//! - the saver, which walks the shards in order and takes each ([`Snapshot::take`]):
//!   with the shard's lock held, it serializes the shard's keys into a [`Chunk`], skipping
//!   the keys writers have already dealt with;
//! - a writer about to modify key K (insert, change, delete, expiry) of a shard the saver
//!   has not taken yet ([`Keyspace::copy_on_write_key`], called by `Locked` with the
//!   shard's lock held, before the modification): unless K is already recorded for that
//!   shard, it serializes K's current value (if K exists: it is then unchanged since the
//!   cut, as every change passed here first) and records K, whether it existed or not, so
//!   neither it nor the saver writes K out again. A write therefore costs one key's
//!   serialization and a set insert, never a walk of the shard;
//!
//! SWAPDB moves whole shards between two databases: the snapshot's sides of those shards
//! move with them ([`Keyspace::snapshot_swap_dbs`]), each still naming the database its
//! keys were in at the cut, so nothing is written out then and the saver, which walks the
//! shards again once after a swap, writes each side out under its database at the cut.
//!
//! Every change reaches the shard through one of these first, so each key is captured as
//! it was at the cut and the chunks together are one consistent cut: a write is in the
//! snapshot exactly when it was made before the snapshot was installed; a key created
//! after the cut is recorded (and skipped by the saver), never saved.
//!
//! Memory beyond the dataset: the records writers made, queued until the saver drains
//! them (before each shard it takes), and the recorded keys of the shards not taken yet,
//! freed as each shard is taken. A flush (FLUSHDB) does not serialize at all: it hands the
//! removed tables of shards not taken yet (with their recorded keys) to the snapshot,
//! whose saver writes them out and frees them.

use crate::entry::Entry;
use crate::keyspace::Keyspace;
use crate::rdb::file::{write_entry, SaveOptions};
use crate::shard::{hash_key, Shard};
use hashbrown::hash_table::Entry as TableEntry;
use hashbrown::HashTable;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Keys of one shard dealt with by writers before the saver took it.
type Handled = HashTable<Box<[u8]>>;

/// One shard's side of a snapshot. Read and changed only with the shard's own lock held,
/// so its mutex is never contended.
struct ShardCut {
    /// The database these keys were in at the cut (SWAPDB moves a side with its shard).
    db: usize,
    /// What was left of the shard has been written out (by the saver, or handed over by
    /// a flush).
    taken: bool,
    /// Keys written out by writers (or absent at the cut) while the shard was not taken.
    handled: Handled,
}

impl ShardCut {
    /// Record `key` (hash `h`) as handled; false if it was already.
    fn record(&mut self, h: u64, key: &[u8]) -> bool {
        match self.handled.entry(h, |k| **k == *key, |k| hash_key(k)) {
            TableEntry::Occupied(_) => false,
            TableEntry::Vacant(v) => {
                v.insert(key.into());
                true
            }
        }
    }
}

/// Key records of one database.
pub struct Chunk {
    pub db: usize,
    pub records: Vec<u8>,
    pub keys: usize,
}

/// A snapshot in progress. See the module documentation.
pub struct Snapshot {
    per_db: usize,
    /// Shard `db * per_db + index`'s side.
    cuts: Box<[Mutex<ShardCut>]>,
    /// Sides not taken yet. A SWAPDB can move a side not taken to a shard the saver has
    /// passed: the saver walks the shards again until this is 0.
    untaken: AtomicUsize,
    aborted: AtomicBool,
    opts: SaveOptions,
    /// Records written out by writers, waiting for the saver.
    ready: Mutex<Vec<Chunk>>,
    /// Whole shard contents a flush removed before the saver took them, with the keys
    /// to skip: the saver writes them out (and frees them).
    handed: Mutex<Vec<(usize, HashTable<Entry>, Handled)>>,
    /// Keys written out so far.
    keys_done: AtomicU64,
    /// Copy-on-write writes (a key, or what was left of a shard) made by writers rather
    /// than by the saver, and their bytes.
    cow_writes: AtomicU64,
    cow_bytes: AtomicU64,
}

impl Snapshot {
    fn new(databases: usize, per_db: usize, opts: SaveOptions) -> Snapshot {
        Snapshot {
            per_db,
            cuts: (0..databases * per_db)
                .map(|i| {
                    Mutex::new(ShardCut {
                        db: i / per_db,
                        taken: false,
                        handled: Handled::default(),
                    })
                })
                .collect(),
            untaken: AtomicUsize::new(databases * per_db),
            aborted: AtomicBool::new(false),
            opts,
            ready: Mutex::new(Vec::new()),
            handed: Mutex::new(Vec::new()),
            keys_done: AtomicU64::new(0),
            cow_writes: AtomicU64::new(0),
            cow_bytes: AtomicU64::new(0),
        }
    }

    /// Shard `(db, index)`'s side; the caller holds the shard's lock.
    fn cut(&self, db: usize, index: usize) -> MutexGuard<'_, ShardCut> {
        self.cuts[db * self.per_db + index].lock()
    }

    /// Write out what is left of shard `(db, index)` (nothing if it was taken already, or
    /// the snapshot was abandoned). `shard` is its content, with its lock held by the
    /// caller.
    pub fn take(&self, db: usize, index: usize, shard: &Shard) -> Option<Chunk> {
        let (at_cut, skip) = self.claim(db, index)?;
        Some(self.chunk(at_cut, shard.iter(), &skip))
    }

    /// Mark shard `(db, index)` taken and return the database its keys were in at the cut
    /// and its handled keys (freed from the snapshot), or `None` if it was taken already
    /// or the snapshot was abandoned.
    fn claim(&self, db: usize, index: usize) -> Option<(usize, Handled)> {
        let mut cut = self.cut(db, index);
        if cut.taken || self.is_aborted() {
            return None;
        }
        cut.taken = true;
        self.untaken.fetch_sub(1, Ordering::Relaxed);
        Some((cut.db, std::mem::take(&mut cut.handled)))
    }

    /// Databases `a` and `b` swapped their shards (SWAPDB, every shard held): their sides
    /// swap with them.
    fn swap_dbs(&self, a: usize, b: usize) {
        for i in 0..self.per_db {
            let mut x = self.cut(a, i);
            let mut y = self.cut(b, i);
            std::mem::swap(&mut *x, &mut *y);
        }
    }

    /// Has every shard's side been taken? (After a walk of every shard, not always: a
    /// SWAPDB may have moved a side not taken to a shard the walk had passed.)
    pub fn all_taken(&self) -> bool {
        self.untaken.load(Ordering::Relaxed) == 0
    }

    /// The records of `entries` but those in `skip`.
    fn chunk<'e>(
        &self,
        db: usize,
        entries: impl Iterator<Item = &'e Entry>,
        skip: &Handled,
    ) -> Chunk {
        let mut records = Vec::new();
        let mut keys = 0;
        for e in entries {
            let key = e.key();
            if !skip.is_empty() && skip.find(hash_key(key), |k| **k == *key).is_some() {
                continue;
            }
            write_entry(&mut records, e, self.opts);
            keys += 1;
        }
        self.keys_done.fetch_add(keys as u64, Ordering::Relaxed);
        Chunk { db, records, keys }
    }

    /// Key `key` (hash `h`) of shard `(db, index)` is about to change; `now` is its entry
    /// (if it exists). Unless the shard is taken or the key recorded, write out `now` (the
    /// key as it was at the cut) and record the key. The caller holds the shard's lock.
    fn write_out_key(&self, db: usize, index: usize, h: u64, key: &[u8], now: Option<&Entry>) {
        let at_cut = {
            let mut cut = self.cut(db, index);
            if cut.taken || self.is_aborted() || !cut.record(h, key) {
                return;
            }
            cut.db
        };
        let Some(e) = now else {
            return;
        };
        let mut records = Vec::new();
        write_entry(&mut records, e, self.opts);
        self.keys_done.fetch_add(1, Ordering::Relaxed);
        self.queue(Chunk {
            db: at_cut,
            records,
            keys: 1,
        });
    }

    /// Queue records a writer made for the saver (appended to the last chunk when it is of
    /// the same database).
    fn queue(&self, chunk: Chunk) {
        self.cow_writes.fetch_add(1, Ordering::Relaxed);
        self.cow_bytes
            .fetch_add(chunk.records.len() as u64, Ordering::Relaxed);
        let mut ready = self.ready.lock();
        match ready.last_mut() {
            Some(last) if last.db == chunk.db => {
                last.records.extend_from_slice(&chunk.records);
                last.keys += chunk.keys;
            }
            _ => ready.push(chunk),
        }
    }

    /// The chunks writers have made since the last call (shard contents a flush handed
    /// over are written out here, on the saver's thread, and freed).
    pub fn drain(&self) -> Vec<Chunk> {
        let mut out = std::mem::take(&mut *self.ready.lock());
        let handed = std::mem::take(&mut *self.handed.lock());
        for (db, table, skip) in handed {
            out.push(self.chunk(db, table.iter(), &skip));
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

    /// Copy-on-write writes made by writers before their modification, a key each.
    pub fn cow_writes(&self) -> u64 {
        self.cow_writes.load(Ordering::Relaxed)
    }

    /// Bytes of the records of those writes.
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

    /// Called by SWAPDB with every shard held, as databases `a` and `b` swap their
    /// shards: the snapshot in progress swaps its sides of them too.
    pub(crate) fn snapshot_swap_dbs(&self, a: usize, b: usize) {
        if let Some(snap) = self.snapshot() {
            snap.swap_dbs(a, b);
        }
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
        let Some(snap) = self.snapshot() else {
            return Some(table);
        };
        match snap.claim(db, index) {
            None => Some(table),
            Some((at_cut, skip)) => {
                snap.handed.lock().push((at_cut, table, skip));
                None
            }
        }
    }

    /// Called with shard `(db, index)` locked, before key `key` (hash `h`) is modified
    /// (inserted, changed or deleted): write out its value at the snapshot's cut if that
    /// has not happened yet. One atomic load when no snapshot runs.
    #[inline]
    pub(crate) fn copy_on_write_key(
        &self,
        db: usize,
        index: usize,
        shard: &Shard,
        h: u64,
        key: &[u8],
    ) {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return;
        }
        self.copy_on_write_key_slow(db, index, h, key, shard.peek(h, key));
    }

    /// Called with shard `(db, index)` locked, right after `removed` (hash `h`) was taken
    /// out of it without [`Keyspace::copy_on_write_key`] first (an expired key deleted by
    /// the expiry cycle, SCAN or RANDOMKEY): write it out if that has not happened yet.
    #[inline]
    pub(crate) fn copy_on_write_removed(&self, db: usize, index: usize, h: u64, removed: &Entry) {
        if !self.snapshot.on.load(Ordering::Acquire) {
            return;
        }
        self.copy_on_write_key_slow(db, index, h, removed.key(), Some(removed));
    }

    #[cold]
    fn copy_on_write_key_slow(
        &self,
        db: usize,
        index: usize,
        h: u64,
        key: &[u8],
        now: Option<&Entry>,
    ) {
        if let Some(snap) = self.snapshot.current.read().as_ref() {
            snap.write_out_key(db, index, h, key, now);
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
        set_ex(ks, key, v, NO_EXPIRE);
    }

    fn set_ex(ks: &Keyspace, key: &str, v: &str, expire_at: i64) {
        let mut changes = Changes::default();
        let mut keys = ks.lock_key(0, key.as_bytes(), &mut changes);
        keys.insert(
            key.as_bytes(),
            StrRef::encode(v.as_bytes()),
            expire_at,
            Event::generic("set"),
        );
    }

    fn del(ks: &Keyspace, key: &str) {
        let mut changes = Changes::default();
        let mut keys = ks.lock_key(0, key.as_bytes(), &mut changes);
        keys.remove(key.as_bytes(), Event::generic("del"));
    }

    fn expire(ks: &Keyspace, key: &str, at: i64) {
        let mut changes = Changes::default();
        let mut keys = ks.lock_key(0, key.as_bytes(), &mut changes);
        keys.set_expire(key.as_bytes(), at, Event::generic("expire"));
    }

    /// Everything a snapshot wrote out, as (key, value) pairs.
    fn contents(chunks: Vec<super::Chunk>) -> Vec<(Vec<u8>, Vec<u8>)> {
        contents_ttl(chunks)
            .into_iter()
            .map(|(k, v, _)| (k, v))
            .collect()
    }

    /// Everything a snapshot wrote out, as (key, value, expire_at).
    fn contents_ttl(chunks: Vec<super::Chunk>) -> Vec<(Vec<u8>, Vec<u8>, i64)> {
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
                out.push((k.key.to_vec(), s.view().to_bytes().to_vec(), k.expire_at));
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
        assert_eq!(snap.cow_writes(), 0);
        // Reading an expired key deletes it: its shard is written out first.
        let mut keys = ks.lock_key(0, b"gone", &mut changes);
        assert!(keys.get(b"gone").is_none());
        drop(keys);
        assert_eq!(snap.cow_writes(), 1);
        ks.end_snapshot();
        // A snapshot that saves access times: a touching read writes the shard out.
        let snap = ks
            .begin_snapshot(opts(crate::rdb::file::Access::Idle))
            .unwrap();
        let mut keys = ks.lock_key(0, b"k1", &mut changes);
        assert!(keys.get(b"k1").is_some());
        drop(keys);
        assert_eq!(snap.cow_writes(), 1);
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
        assert!(snap.cow_writes() > 0);
        let got = contents(chunks);
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(|(_, v)| v == b"old"));
        assert!(ks.snapshot().is_none());
    }

    /// The dataset at the cut: 200 keys `k{i}`, half with a TTL in 2096, and 20
    /// keys `e{i}` already past their TTL (1), which the load keeps (it runs at time 0).
    fn at_cut(ks: &Keyspace) -> Vec<(Vec<u8>, Vec<u8>, i64)> {
        let mut want = Vec::new();
        for i in 0..200 {
            let ttl = if i % 2 == 0 {
                4_000_000_000_000 + i
            } else {
                NO_EXPIRE
            };
            set_ex(ks, &format!("k{i}"), &format!("old{i}"), ttl);
            want.push((
                format!("k{i}").into_bytes(),
                format!("old{i}").into_bytes(),
                ttl,
            ));
        }
        for i in 0..20 {
            set_ex(ks, &format!("e{i}"), "dead", 1);
            want.push((format!("e{i}").into_bytes(), b"dead".to_vec(), 1));
        }
        want.sort();
        want
    }

    #[test]
    fn a_write_writes_out_its_key_only() {
        let ks = Keyspace::new(1, 4);
        at_cut(&ks);
        let snap = ks.begin_snapshot(opts()).unwrap();
        set(&ks, "k1", "new");
        assert_eq!((snap.cow_writes(), snap.keys_done()), (1, 1));
        // Again, or a key created after the cut: nothing more to write out.
        set(&ks, "k1", "newer");
        set(&ks, "fresh", "new");
        del(&ks, "fresh");
        assert_eq!((snap.cow_writes(), snap.keys_done()), (1, 1));
        ks.end_snapshot();
    }

    fn opts() -> crate::rdb::file::SaveOptions {
        crate::rdb::file::SaveOptions {
            compress: true,
            access: crate::rdb::file::Access::None,
        }
    }

    #[test]
    fn overwrites_deletes_and_creations_during_the_save_leave_the_cut() {
        let ks = Keyspace::new(1, 8);
        let want = at_cut(&ks);
        let snap = ks.begin_snapshot(opts()).unwrap();
        // Writers change keys of shards the saver has not taken, before it starts and
        // between the shards it takes.
        let mut round = 0;
        let mut write = |ks: &Keyspace| {
            let r = round;
            round += 1;
            for i in (r * 20..r * 20 + 20).map(|i| i % 200) {
                match i % 5 {
                    0 => set(ks, &format!("k{i}"), "new"),
                    1 => del(ks, &format!("k{i}")),
                    2 => {
                        del(ks, &format!("k{i}"));
                        set(ks, &format!("k{i}"), "again");
                    }
                    3 => expire(ks, &format!("k{i}"), 5),
                    _ => set(ks, &format!("n{r}-{i}"), "created"),
                }
            }
        };
        write(&ks);
        write(&ks);
        // The active expiry cycle deletes the keys past their TTL, one by one, and one
        // of them comes back.
        let mut changes = Changes::default();
        let mut plan = Plan::new();
        plan.whole_db(0);
        let mut locked = ks.lock(&mut plan, 0, &mut changes);
        for i in 0..ks.db(0).shard_count() {
            locked.expire_sample(0, i, 100);
        }
        drop(locked);
        set(&ks, "e0", "back");
        let mut chunks = Vec::new();
        for i in 0..ks.db(0).shard_count() {
            chunks.extend(snap.drain());
            let shard = ks.db(0).read_shard(i);
            chunks.extend(snap.take(0, i, &shard));
            drop(shard);
            write(&ks);
        }
        chunks.extend(snap.drain());
        ks.end_snapshot();
        // Every key of the cut exactly once, as it was; nothing created after it.
        assert_eq!(contents_ttl(chunks), want);
        assert_eq!(snap.keys_done(), want.len() as u64);
    }

    /// SWAPDB during a save, including swaps that move a side the saver has not taken to
    /// shards it has passed: every key is written out once, under the database it was
    /// in at the cut, and a write after a swap leaves the cut as it was.
    #[test]
    fn swaps_during_the_save_keep_each_key_in_its_database_at_the_cut() {
        let (dbs, per_db) = (3, 4);
        let ks = Keyspace::new(dbs, per_db);
        let mut want = Vec::new();
        for db in 0..dbs {
            for i in 0..60 {
                let (k, v) = (format!("k{i}"), format!("db{db}"));
                let mut changes = Changes::default();
                let mut keys = ks.lock_key(db, k.as_bytes(), &mut changes);
                keys.insert(
                    k.as_bytes(),
                    StrRef::encode(v.as_bytes()),
                    NO_EXPIRE,
                    Event::NONE,
                );
                want.push((db, k.into_bytes(), v.into_bytes()));
            }
        }
        want.sort();
        let swap = |a: usize, b: usize| {
            let mut changes = Changes::default();
            let mut plan = Plan::new();
            plan.all();
            let mut l = ks.lock(&mut plan, 0, &mut changes);
            l.swap_dbs(a, b);
        };
        let snap = ks.begin_snapshot(opts()).unwrap();
        let mut chunks = Vec::new();
        let mut passes = 0;
        loop {
            passes += 1;
            for db in 0..dbs {
                for i in 0..per_db {
                    chunks.extend(snap.drain());
                    chunks.extend(snap.take(db, i, &ks.db(db).read_shard(i)));
                    match (passes, db, i) {
                        // Behind the saver, db 0's taken sides go to db 2, db 2's not
                        // taken ones come to db 0, which the saver has passed.
                        (1, 1, 1) => swap(0, 2),
                        // Then a write to the old db 2's keys, now in db 0.
                        (1, 1, 2) => set(&ks, "k7", "new"),
                        (1, 2, 0) => swap(1, 2),
                        _ => {}
                    }
                }
            }
            if snap.all_taken() {
                break;
            }
        }
        chunks.extend(snap.drain());
        ks.end_snapshot();
        assert_eq!(passes, 2);
        let mut fw = FileWriter::new(Vec::new(), true, dbs, &[]).unwrap();
        for c in chunks {
            fw.chunk(c.db, (0, 0), &c.records).unwrap();
        }
        let buf = fw.finish().unwrap();
        let load_opts = LoadOptions {
            databases: dbs,
            checksum: true,
            now_ms: 0,
            limits: Default::default(),
        };
        let mut got = Vec::new();
        load(
            &buf,
            &load_opts,
            |_| {},
            |k| {
                let Value::Str(s) = k.value else { panic!() };
                got.push((k.db, k.key.to_vec(), s.view().to_bytes().to_vec()));
                true
            },
        )
        .map_err(|f| f.error)
        .unwrap();
        got.sort();
        assert_eq!(got, want);
    }
}
