//! The tracking table: key -> ids of the clients that may cache it (Redis's
//! TrackingTable). Keys are global, not per database, as in Redis. 64 shards picked by
//! the key's hash, each a short mutex taken with the key's keyspace shard held (never
//! the other way round).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const SHARDS: usize = 64;

type Ids = Vec<u64>;
type Shard = Mutex<HashMap<Box<[u8]>, Ids>>;

pub struct Table {
    hasher: foldhash::fast::RandomState,
    shards: Box<[Shard]>,
    /// Keys in the table (INFO tracking_total_keys).
    keys: AtomicU64,
    /// Ids across all keys (INFO tracking_total_items).
    items: AtomicU64,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            hasher: Default::default(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            keys: AtomicU64::new(0),
            items: AtomicU64::new(0),
        }
    }
}

impl Table {
    fn shard(&self, key: &[u8]) -> &Shard {
        let h = self.hasher.hash_one(key);
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    pub fn keys(&self) -> u64 {
        self.keys.load(Relaxed)
    }

    pub fn items(&self) -> u64 {
        self.items.load(Relaxed)
    }

    /// Note that client `id` may cache `key`.
    pub fn remember(&self, key: &[u8], id: u64) {
        let mut s = self.shard(key).lock();
        let ids = match s.get_mut(key) {
            Some(ids) => ids,
            None => {
                self.keys.fetch_add(1, Relaxed);
                s.entry(key.into()).or_default()
            }
        };
        if let Err(at) = ids.binary_search(&id) {
            ids.insert(at, id);
            self.items.fetch_add(1, Relaxed);
        }
    }

    /// Take `key`'s entry out of the table.
    pub fn take(&self, key: &[u8]) -> Option<Ids> {
        let ids = self.shard(key).lock().remove(key)?;
        self.forget(&ids);
        Some(ids)
    }

    fn forget(&self, ids: &Ids) {
        self.keys.fetch_sub(1, Relaxed);
        self.items.fetch_sub(ids.len() as u64, Relaxed);
    }

    /// Take a random entry out of the table (for `tracking-table-max-keys`).
    pub fn take_random(&self) -> Option<(Box<[u8]>, Ids)> {
        let start = rand::random::<usize>() % SHARDS;
        for i in 0..SHARDS {
            let mut s = self.shards[(start + i) % SHARDS].lock();
            if s.is_empty() {
                continue;
            }
            let n = rand::random::<usize>() % s.len();
            let key = s.keys().nth(n)?.clone();
            let ids = s.remove(&key)?;
            drop(s);
            self.forget(&ids);
            return Some((key, ids));
        }
        None
    }

    /// Empty the table (FLUSHDB / FLUSHALL).
    pub fn clear(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            let (k, i) = s
                .values()
                .fold((0u64, 0u64), |(k, i), ids| (k + 1, i + ids.len() as u64));
            s.clear();
            self.keys.fetch_sub(k, Relaxed);
            self.items.fetch_sub(i, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keys_and_items() {
        let t = Table::default();
        t.remember(b"a", 1);
        t.remember(b"a", 2);
        t.remember(b"a", 1);
        t.remember(b"b", 1);
        assert_eq!((t.keys(), t.items()), (2, 3));
        assert_eq!(t.take(b"a"), Some(vec![1, 2]));
        assert_eq!((t.keys(), t.items()), (1, 1));
        assert!(t.take(b"a").is_none());
        assert!(t.take_random().is_some());
        assert_eq!((t.keys(), t.items()), (0, 0));
        t.remember(b"c", 3);
        t.clear();
        assert_eq!((t.keys(), t.items()), (0, 0));
    }
}
