//! Shard lock contention: how many acquisitions found their shard held by another thread
//! and how long they waited for it, in total.
//!
//! Only the contended path pays: an acquisition that gets its shard at the first
//! `try_lock` touches nothing here; one that has to wait reads the clock before and after
//! its wait and adds to two shared counters (it is slow already).

use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// The keyspace's lock-wait counters (one set for every database and shard).
#[derive(Default)]
pub struct LockWaits {
    waits: AtomicU64,
    wait_ns: AtomicU64,
}

/// What [`LockWaits::get`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockWaitTotals {
    /// Acquisitions that found their shard busy and waited.
    pub waits: u64,
    /// Time spent waiting in those, nanoseconds.
    pub wait_ns: u64,
}

impl LockWaits {
    /// Count one wait that began at `since` and has just ended (the shard was taken, or
    /// the wait was given up).
    pub fn record(&self, since: Instant) {
        self.waits.fetch_add(1, Relaxed);
        self.wait_ns
            .fetch_add(since.elapsed().as_nanos() as u64, Relaxed);
    }

    pub fn get(&self) -> LockWaitTotals {
        LockWaitTotals {
            waits: self.waits.load(Relaxed),
            wait_ns: self.wait_ns.load(Relaxed),
        }
    }

    /// Lock `m`, counting the wait if it is held by someone else.
    #[inline]
    pub fn lock<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        if let Some(g) = m.try_lock() {
            return g;
        }
        self.wait(m)
    }

    #[cold]
    #[inline(never)]
    fn wait<'a, T>(&self, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
        let since = Instant::now();
        let g = m.lock();
        self.record(since);
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waits_count() {
        let w = LockWaits::default();
        let m = Mutex::new(0);
        drop(w.lock(&m));
        assert_eq!(w.get(), LockWaitTotals::default());
        // A second thread asks while this one holds the lock; retried, since the other
        // thread may (rarely) not get to run before the lock is released.
        for attempt in 1..=50 {
            let held = m.lock();
            std::thread::scope(|s| {
                s.spawn(|| *w.lock(&m) += 1);
                std::thread::sleep(std::time::Duration::from_millis(2));
                drop(held);
            });
            assert_eq!(*m.lock(), attempt);
            if w.get().waits > 0 {
                break;
            }
        }
        let t = w.get();
        assert_eq!(t.waits, 1);
        assert!(t.wait_ns > 0);
    }
}
