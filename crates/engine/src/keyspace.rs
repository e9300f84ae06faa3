//! Databases and the keyspace.

use crate::shard::{hash_key, Entry, Shard};
use parking_lot::{Mutex, MutexGuard};

/// Bits of the hash that pick the shard (the table uses the low bits, hashbrown's tag the
/// top seven, so the shard takes bits from the middle to keep them independent).
const SHARD_SHIFT: u32 = 40;

/// The contents a flush removed from a database, to be dropped where the caller likes.
pub type Cleared = Vec<hashbrown::HashTable<Entry>>;

/// One database: a power-of-two array of shards.
pub struct Db {
    shards: Box<[Mutex<Shard>]>,
    mask: u64,
}

impl Db {
    pub fn new(shards: usize) -> Db {
        let n = shards.next_power_of_two().clamp(1, 1 << 16);
        Db {
            shards: (0..n).map(|_| Mutex::new(Shard::default())).collect(),
            mask: (n - 1) as u64,
        }
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    pub fn shard_index(&self, h: u64) -> usize {
        ((h >> SHARD_SHIFT) & self.mask) as usize
    }

    /// Lock the shard of `key`; returns the guard and the key's hash.
    pub fn lock(&self, key: &[u8]) -> (MutexGuard<'_, Shard>, u64) {
        let h = hash_key(key);
        (self.shards[self.shard_index(h)].lock(), h)
    }

    pub fn lock_shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock()
    }

    /// Lock the shards of all `keys`, in ascending shard order (so two multi-key commands
    /// can never deadlock).
    pub fn lock_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> MultiGuard<'_> {
        let mut idx: Vec<usize> = keys
            .iter()
            .map(|k| self.shard_index(hash_key(k.as_ref())))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        MultiGuard {
            db: self,
            guards: idx
                .into_iter()
                .map(|i| (i, self.shards[i].lock()))
                .collect(),
        }
    }

    /// Number of keys (expired-but-not-yet-collected keys included, as in Redis).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn expires_len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().expires_len()).sum()
    }

    /// Remove every key; returns the removed tables so the caller can free them where it
    /// likes (FLUSHDB ASYNC frees them on another thread).
    pub fn clear(&self) -> Cleared {
        self.shards.iter().map(|s| s.lock().take_all()).collect()
    }

    /// Swap the contents of two databases, atomically for every observer: all shards of
    /// both are locked (lower database first) before anything moves.
    pub fn swap_contents(a: &Db, b: &Db, a_first: bool) {
        let (first, second) = if a_first { (a, b) } else { (b, a) };
        let mut g1: Vec<_> = first.shards.iter().map(|s| s.lock()).collect();
        let mut g2: Vec<_> = second.shards.iter().map(|s| s.lock()).collect();
        for (x, y) in g1.iter_mut().zip(g2.iter_mut()) {
            x.swap(y);
        }
    }

    /// One SCAN step. The cursor is `shard << 48 | position`, where keys of a shard are
    /// visited in the order of the low 48 bits of their hash: a key that stays in the
    /// database for the whole iteration is returned (its hash never changes), whatever
    /// resizing happens meanwhile. Returns the next cursor (0 when done).
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&Entry)) -> u64 {
        const POS_BITS: u32 = 48;
        const POS_MASK: u64 = (1 << POS_BITS) - 1;
        let mut shard = (cursor >> POS_BITS) as usize;
        let mut pos = cursor & POS_MASK;
        let mut returned = 0usize;
        let count = count.max(1);
        while shard < self.shards.len() {
            let guard = self.shards[shard].lock();
            let mut cands: Vec<(u64, &Entry)> = guard
                .iter()
                .map(|e| (hash_key(e.key()) & POS_MASK, e))
                .filter(|(p, _)| *p >= pos)
                .collect();
            let want = count - returned;
            if cands.len() > want {
                cands.sort_unstable_by_key(|(p, _)| *p);
                // Never split keys sharing a position across two calls.
                let cut_pos = cands[want - 1].0;
                let end = cands.partition_point(|(p, _)| *p <= cut_pos);
                for (_, e) in &cands[..end] {
                    visit(e);
                }
                if cut_pos == POS_MASK {
                    shard += 1;
                    pos = 0;
                } else {
                    pos = cut_pos + 1;
                }
                break;
            }
            for (_, e) in &cands {
                visit(e);
            }
            returned += cands.len();
            drop(cands);
            drop(guard);
            shard += 1;
            pos = 0;
            if returned >= count {
                break;
            }
        }
        if shard >= self.shards.len() {
            0
        } else {
            ((shard as u64) << POS_BITS) | pos
        }
    }
}

/// The shards of a multi-key command, all locked.
pub struct MultiGuard<'a> {
    db: &'a Db,
    guards: Vec<(usize, MutexGuard<'a, Shard>)>,
}

impl MultiGuard<'_> {
    /// The locked shard holding `key`, and the key's hash.
    ///
    /// Panics if `key` was not among the keys passed to [`Db::lock_many`]; callers always
    /// lock the keys they touch.
    pub fn shard(&mut self, key: &[u8]) -> (&mut Shard, u64) {
        let h = hash_key(key);
        let i = self.db.shard_index(h);
        let pos = self
            .guards
            .binary_search_by_key(&i, |(j, _)| *j)
            .expect("key's shard is locked");
        (&mut self.guards[pos].1, h)
    }
}

/// All databases.
pub struct Keyspace {
    dbs: Box<[Db]>,
}

impl Keyspace {
    pub fn new(databases: usize, shards_per_db: usize) -> Keyspace {
        Keyspace {
            dbs: (0..databases.max(1))
                .map(|_| Db::new(shards_per_db))
                .collect(),
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

    /// SWAPDB.
    pub fn swap(&self, a: usize, b: usize) {
        if a != b {
            Db::swap_contents(&self.dbs[a], &self.dbs[b], a < b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::NO_EXPIRE;
    use crate::value::StrRef;
    use std::collections::HashSet;

    fn put(db: &Db, k: &[u8]) {
        let (mut s, h) = db.lock(k);
        s.insert(h, k, StrRef::encode(b"v"), NO_EXPIRE);
    }

    #[test]
    fn scan_visits_every_key_once() {
        let db = Db::new(8);
        for i in 0..1000 {
            put(&db, format!("k{i}").as_bytes());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = db.scan(cursor, 10, |e| {
                assert!(seen.insert(e.key().to_vec()), "duplicate");
            });
            // Keys added during the iteration do not disturb it.
            put(&db, format!("new{cursor}").as_bytes());
            if cursor == 0 {
                break;
            }
        }
        for i in 0..1000 {
            assert!(seen.contains(format!("k{i}").as_bytes()));
        }
    }

    #[test]
    fn multi_lock_is_ordered_and_finds_keys() {
        let db = Db::new(16);
        let keys = [b"a".as_ref(), b"b", b"c", b"a"];
        let mut g = db.lock_many(&keys);
        for k in keys {
            let (s, h) = g.shard(k);
            s.insert(h, k, StrRef::encode(b"1"), NO_EXPIRE);
        }
        drop(g);
        assert_eq!(db.len(), 3);
    }
}
