//! The eviction loop (Redis's performEvictions past its checks): pick the best key for
//! the policy, delete it as a change event (`evicted` notification, WATCH, propagated as
//! DEL or UNLINK), measure what that freed, until enough is freed, nothing is left to
//! evict, or the time `maxmemory-eviction-tenacity` allows is spent.
//!
//! It runs on the thread that needs the room (a worker before its command, or the cron
//! thread continuing a cycle that ran out of time) with no lock held, and takes one shard
//! lock at a time: no global lock. Each thread has its own eviction pool.

use super::{Outcome, Policy};
use crate::dispatch::effects;
use crate::propagate::encode;
use crate::server::Server;
use engine::evict::{Candidate, Pool, Score};
use engine::{Changes, Event, Plan};
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// evictionTimeLimitUs: how long one call may evict, by `maxmemory-eviction-tenacity`
/// (0-10: linear up to 500 µs; then 15% more per step; 100: no limit).
pub fn time_limit(tenacity: i64) -> Option<Duration> {
    let t = tenacity.clamp(0, 100);
    let us = match t {
        0..=10 => 50 * t as u64,
        11..=99 => (500.0 * 1.15f64.powi(t as i32 - 10)) as u64,
        _ => return None,
    };
    Some(Duration::from_micros(us))
}

/// Free at least `to_free` bytes under `policy`. `writer` is the calling worker (or the
/// stats slot of the other threads).
pub fn run(srv: &Server, policy: Policy, to_free: u64, writer: usize) -> Outcome {
    let hot = &srv.config.hot;
    let limit = time_limit(hot.maxmemory_tenacity.load(Relaxed));
    let samples = hot.maxmemory_samples.load(Relaxed).max(1) as usize;
    let lazy = hot.lazyfree_lazy_eviction.load(Relaxed) != 0;
    let start = Instant::now();
    let over_time = || limit.is_some_and(|l| start.elapsed() > l);
    let mut freed: i64 = 0;
    let mut keys_freed = 0u64;
    let mut changes = Changes::default();
    let mut outcome = Outcome::Ok;
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        while freed < to_free as i64 {
            let before = crate::memory::used_memory() as i64;
            match evict_next(srv, policy, samples, lazy, &mut pool, &mut changes, writer) {
                None => {
                    outcome = Outcome::Fail;
                    break;
                }
                Some(false) => {}
                Some(true) => {
                    keys_freed += 1;
                    srv.stats
                        .workers
                        .get(writer)
                        .unwrap_or(&srv.stats.global)
                        .evicted_keys
                        .fetch_add(1, Relaxed);
                }
            }
            freed += before - crate::memory::used_memory() as i64;
            if keys_freed.is_multiple_of(16) {
                // Values freed in the background do not show in `freed`: look at the
                // figure itself from time to time.
                if (lazy || crate::lazyfree::pending() > 0) && super::to_free(srv) == 0 {
                    break;
                }
                if over_time() {
                    // The cron thread goes on with it (Redis's eviction time proc).
                    outcome = Outcome::Running;
                    break;
                }
            }
        }
    });
    if outcome == Outcome::Fail {
        // Out of keys: memory may still be on its way back from the background thread.
        while crate::lazyfree::pending() > 0 && !over_time() {
            if super::to_free(srv) == 0 {
                return Outcome::Ok;
            }
            std::thread::sleep(Duration::from_micros(
                limit.map_or(1000, |l| l.as_micros().min(1000) as u64),
            ));
        }
    }
    outcome
}

/// Evict the next key the policy picks. None: nothing left to evict; Some(false): the
/// pick was gone (or expired) when its shard was locked.
fn evict_next(
    srv: &Server,
    policy: Policy,
    samples: usize,
    lazy: bool,
    pool: &mut Pool,
    changes: &mut Changes,
    writer: usize,
) -> Option<bool> {
    let ks = &srv.keyspace;
    let volatile = policy.is_volatile();
    let score = match policy {
        Policy::AllkeysRandom | Policy::VolatileRandom => {
            let c = pool.random(ks, volatile)?;
            return Some(delete(srv, &c, volatile, lazy, changes, writer));
        }
        Policy::AllkeysLfu | Policy::VolatileLfu => Score::Lfu,
        Policy::VolatileTtl => Score::Ttl,
        _ => Score::Lru,
    };
    loop {
        if !pool.populate(ks, score, volatile, samples) {
            return None;
        }
        // Best first; a candidate deleted meanwhile is a ghost: try the next.
        while let Some(c) = pool.pop() {
            if delete(srv, &c, volatile, lazy, changes, writer) {
                return Some(true);
            }
        }
    }
}

/// Delete one candidate as a change event: `evicted` (keyspace notification, WATCH,
/// client-side caching), propagated as DEL (UNLINK with `lazyfree-lazy-eviction`). A candidate of a
/// volatile policy that lost its TTL meanwhile is left alone. The value is freed after
/// its shard is released, big ones in the background.
fn delete(
    srv: &Server,
    c: &Candidate,
    volatile: bool,
    lazy: bool,
    changes: &mut Changes,
    writer: usize,
) -> bool {
    let mut plan = Plan::new();
    plan.key(&srv.keyspace, c.db, &c.key);
    let mut keys = srv.keyspace.lock(&mut plan, c.db, changes);
    effects::prepare(srv, keys.changes);
    if volatile
        && keys
            .peek_in(c.db, &c.key)
            .is_none_or(|e| e.expire_at() == engine::NO_EXPIRE)
    {
        return false;
    }
    let removed = keys.remove_in(c.db, &c.key, Event::EVICTED);
    let mut ops = Vec::new();
    if srv.propagation.active() {
        effects::expired_ops(srv, keys.changes, &mut ops);
        if removed.is_some() {
            let del: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
            ops.push((c.db, encode(&[del, &c.key])));
        }
    }
    effects::consume(srv, writer, keys.changes, ops);
    keys.release();
    changes.clear();
    match removed {
        Some(e) => {
            crate::lazyfree::free(e);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_limits() {
        assert_eq!(time_limit(0), Some(Duration::ZERO));
        assert_eq!(time_limit(10), Some(Duration::from_micros(500)));
        assert_eq!(time_limit(11), Some(Duration::from_micros(575)));
        assert!(time_limit(99).unwrap() > Duration::from_secs(100));
        assert_eq!(time_limit(100), None);
    }
}
