//! A shard's lock, and the shard's figures (key count, TTL count, table capacities)
//! published beside it, so that DBSIZE, INFO keyspace and INFO memory read them without
//! waiting for a shard a long command holds (a heavy command on the offload pool, a
//! script): a worker that waited there would stall every other connection it serves.
//!
//! Every guard publishes the figures when it is dropped, so they are those of the last
//! time the shard was unlocked: a reader holding no lock sees each shard as of its last
//! completed critical section, never part of one.

use crate::shard::Shard;
use parking_lot::{Mutex, MutexGuard};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Relaxed, Release},
};
use std::time::Duration;

/// One shard and its published figures.
#[derive(Default)]
pub struct ShardLock {
    shard: Mutex<Shard>,
    figures: Figures,
}

/// 16 bytes a shard (16,384 shards in all by default: 256 KB). A shard's counts stay far
/// below `u32::MAX` (a shard is 1/1024th of a database); a larger one reads as the most.
#[derive(Default)]
struct Figures {
    keys: AtomicU32,
    expires: AtomicU32,
    table_capacity: AtomicU32,
    expires_capacity: AtomicU32,
}

/// What [`ShardLock::figures`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardFigures {
    /// Keys in the shard (expired ones not yet removed included, as DBSIZE counts them).
    pub keys: usize,
    /// Keys with a TTL.
    pub expires: usize,
    /// Slots of the key table.
    pub table_capacity: usize,
    /// Slots of the TTL index.
    pub expires_capacity: usize,
}

impl Figures {
    #[inline]
    fn publish(&self, s: &Shard) {
        set(&self.keys, s.len());
        set(&self.expires, s.expires_len());
        set(&self.table_capacity, s.table_capacity());
        set(&self.expires_capacity, s.expires_capacity());
    }
}

/// Store `v` unless it is there already (a guard that changed nothing writes nothing, so
/// readers' cache lines stay shared).
#[inline]
fn set(a: &AtomicU32, v: usize) {
    let v = u32::try_from(v).unwrap_or(u32::MAX);
    if a.load(Relaxed) != v {
        a.store(v, Release);
    }
}

impl ShardLock {
    pub fn new(shard: Shard) -> ShardLock {
        ShardLock {
            shard: Mutex::new(shard),
            figures: Figures::default(),
        }
    }

    #[inline]
    pub fn lock(&self) -> ShardGuard<'_> {
        self.wrap(self.shard.lock())
    }

    #[inline]
    pub fn try_lock(&self) -> Option<ShardGuard<'_>> {
        self.shard.try_lock().map(|g| self.wrap(g))
    }

    #[inline]
    pub fn try_lock_for(&self, d: Duration) -> Option<ShardGuard<'_>> {
        self.shard.try_lock_for(d).map(|g| self.wrap(g))
    }

    /// Lock, counting the wait in `waits` if the shard is held by someone else.
    #[inline]
    pub fn lock_counted(&self, waits: &crate::lockstat::LockWaits) -> ShardGuard<'_> {
        self.wrap(waits.lock(&self.shard))
    }

    /// The figures as the shard's last guard left them, without taking the lock.
    pub fn figures(&self) -> ShardFigures {
        let f = &self.figures;
        ShardFigures {
            keys: f.keys.load(Acquire) as usize,
            expires: f.expires.load(Acquire) as usize,
            table_capacity: f.table_capacity.load(Acquire) as usize,
            expires_capacity: f.expires_capacity.load(Acquire) as usize,
        }
    }

    #[inline]
    fn wrap<'a>(&'a self, guard: MutexGuard<'a, Shard>) -> ShardGuard<'a> {
        ShardGuard {
            guard,
            figures: &self.figures,
        }
    }
}

/// A held shard; dropping it publishes the shard's figures.
pub struct ShardGuard<'a> {
    guard: MutexGuard<'a, Shard>,
    figures: &'a Figures,
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;
    #[inline]
    fn deref(&self) -> &Shard {
        &self.guard
    }
}

impl DerefMut for ShardGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.guard
    }
}

impl Drop for ShardGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.figures.publish(&self.guard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_the_last_guard() {
        let l = ShardLock::new(Shard::default());
        assert_eq!(l.figures(), ShardFigures::default());
        {
            let mut g = l.lock();
            g.insert(
                crate::hash_key(b"k"),
                b"k",
                crate::StrRef::encode(b"v"),
                crate::NO_EXPIRE,
                crate::ttl_map::TtlBit::NONE,
            );
            // Not yet published while held.
            assert_eq!(l.figures().keys, 0);
        }
        let f = l.figures();
        assert_eq!(f.keys, 1);
        assert_eq!(f.expires, 0);
        assert!(f.table_capacity >= 1);
        drop(l.try_lock().expect("free"));
        assert_eq!(l.figures(), f);
    }
}
