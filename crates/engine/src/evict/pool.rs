//! Choosing keys to evict, as Redis's evict.c does: an eviction pool of the best
//! [`POOL_SIZE`] candidates seen so far (by idle time, inverted LFU counter or nearness of
//! the TTL), refilled by sampling `maxmemory-samples` keys per database (from a random
//! shard on, one shard at a time); or one random key for the random policies.
//!
//! A database is looked at through a few random shards first; when they are all empty
//! it is skipped for a while, and only when every database looks empty are they walked
//! shard by shard (so a nearly empty keyspace is still found, and 16 empty databases cost
//! little). A database much sparser than the others (most shards empty) is therefore
//! sampled less often than Redis would. The random policies walk a database whose probes
//! missed (so a sparse one has its turn, as in Redis) and skip one that walk found empty
//! for a while: a database that gets keys meanwhile waits that long for its turn.
//!
//! Sampling locks one shard at a time and never two, so it runs beside commands on every
//! worker without a global lock. A pool belongs to its caller (one per evicting thread);
//! a candidate is only a (database, key) pair: the caller deletes it through
//! [`crate::Locked`], where a candidate deleted or rewritten meanwhile is simply not found
//! (a "ghost" in Redis's words) or evicted with its newer access time.

use super::access;
use crate::entry::Entry;
use crate::keyspace::Keyspace;
use crate::shard::Shard;
use rand::Rng;

/// Candidates kept between calls (EVPOOL_SIZE).
pub const POOL_SIZE: usize = 16;

/// Rounds a database found empty is skipped for.
const QUIET_ROUNDS: u16 = 256;

/// What makes a key a better candidate (higher first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// Idle time in milliseconds (estimateObjectIdleTime).
    Lru,
    /// 255 minus the decayed LFU counter.
    Lfu,
    /// The sooner the TTL, the better.
    Ttl,
}

impl Score {
    fn of(self, e: &Entry) -> u64 {
        match self {
            Score::Lru => u64::from(access::idle_seconds(e.lru())) * 1000,
            Score::Lfu => 255 - u64::from(access::lfu_counter(e.lru())),
            Score::Ttl => u64::MAX - e.expire_at() as u64,
        }
    }
}

/// A key chosen for eviction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub db: usize,
    pub key: Vec<u8>,
    score: u64,
}

/// The eviction pool: candidates in ascending score order (the best last), plus what the
/// sampler learned about empty databases.
#[derive(Default)]
pub struct Pool {
    slots: Vec<Candidate>,
    /// Per database: rounds left before sampling it again (it was found empty).
    quiet: Vec<u16>,
    /// Where the random policies look first (Redis's `next_db`).
    next_db: usize,
}

/// Random shards of a database tried before it counts as empty for a while.
const PROBES: usize = 8;

/// A shard of `db` holding a key (with a TTL, for `volatile`): one of `tries` random
/// shards, or with `tries` None the first from a random one on (a full walk, when the
/// whole keyspace looked empty); None when none was found.
fn nonempty_shard(ks: &Keyspace, db: usize, volatile: bool, tries: Option<usize>) -> Option<usize> {
    let shards = &ks.db(db).shards;
    let n = shards.len();
    let mut rng = rand::thread_rng();
    // The shards' published counts: no waiting on a shard a long command holds.
    let has = |i: usize| {
        let f = shards[i].figures();
        if volatile {
            f.expires > 0
        } else {
            f.keys > 0
        }
    };
    match tries {
        Some(t) => (0..t).map(|_| rng.gen_range(0..n)).find(|&i| has(i)),
        None => {
            let start = rng.gen_range(0..n);
            (0..n).map(|i| (start + i) % n).find(|&i| has(i))
        }
    }
}

impl Pool {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// evictionPoolPopulate for every database: sample up to `samples` keys (with a TTL,
    /// for `volatile`) from a shard of each and keep the best. Returns false when no
    /// database has a key to sample.
    pub fn populate(
        &mut self,
        ks: &Keyspace,
        score: Score,
        volatile: bool,
        samples: usize,
    ) -> bool {
        self.quiet.resize(ks.len(), 0);
        // Everything looking empty, look again at every database, shard by shard, before
        // saying there is nothing to evict.
        self.populate_round(ks, score, volatile, samples, Some(PROBES))
            || self.populate_round(ks, score, volatile, samples, None)
    }

    fn populate_round(
        &mut self,
        ks: &Keyspace,
        score: Score,
        volatile: bool,
        samples: usize,
        tries: Option<usize>,
    ) -> bool {
        let mut any = false;
        for db in 0..ks.len() {
            if tries.is_some() && self.quiet[db] > 0 {
                self.quiet[db] -= 1;
                continue;
            }
            let Some(i) = nonempty_shard(ks, db, volatile, tries) else {
                self.quiet[db] = QUIET_ROUNDS;
                continue;
            };
            self.quiet[db] = 0;
            any = true;
            self.populate_db(ks, db, i, score, volatile, samples);
        }
        any
    }

    /// Sample up to `samples` keys of `db`, shard after shard from shard `start` on (so a
    /// sparse database gives as many samples as a dense one, as dictGetSomeKeys does).
    fn populate_db(
        &mut self,
        ks: &Keyspace,
        db: usize,
        start: usize,
        score: Score,
        volatile: bool,
        samples: usize,
    ) {
        let shards = &ks.db(db).shards;
        let n = shards.len();
        let mut got = 0;
        let mut busy = None;
        for i in 0..n {
            if got >= samples {
                break;
            }
            // A shard another command holds is passed over, not waited for, unless no
            // other shard had a key to offer (then the first busy one is waited for).
            let at = (start + i) % n;
            let Some(shard) = shards[at].try_lock() else {
                busy.get_or_insert(at);
                continue;
            };
            shard.sample(samples - got, volatile, |e| {
                got += 1;
                self.insert(db, e, score.of(e));
            });
        }
        if let (0, Some(at)) = (got, busy) {
            shards[at].lock().sample(samples, volatile, |e| {
                self.insert(db, e, score.of(e));
            });
        }
    }

    /// Keep `e` if it beats the worst candidate (or there is room); a key already in the
    /// pool has its score refreshed.
    fn insert(&mut self, db: usize, e: &Entry, score: u64) {
        if let Some(at) = self
            .slots
            .iter()
            .position(|c| c.db == db && c.key == e.key())
        {
            self.slots.remove(at);
        } else if self.slots.len() == POOL_SIZE && score <= self.slots[0].score {
            return;
        }
        if self.slots.len() == POOL_SIZE {
            self.slots.remove(0);
        }
        let at = self.slots.partition_point(|c| c.score < score);
        self.slots.insert(
            at,
            Candidate {
                db,
                key: e.key().to_vec(),
                score,
            },
        );
    }

    /// Take the best candidate.
    pub fn pop(&mut self) -> Option<Candidate> {
        self.slots.pop()
    }

    /// A random key (with a TTL, for `volatile`), trying the databases in turn from the
    /// one after the last pick (the random policies). A database found empty is skipped
    /// for [`QUIET_ROUNDS`] picks (else each pick would walk every shard of the 15 empty
    /// databases of a default configuration); when all look empty, each is looked at again,
    /// so None means every database was seen empty.
    pub fn random(&mut self, ks: &Keyspace, volatile: bool) -> Option<Candidate> {
        let n = ks.len();
        self.quiet.resize(n, 0);
        for _ in 0..n {
            self.next_db = (self.next_db + 1) % n;
            let db = self.next_db;
            if self.quiet[db] > 0 {
                self.quiet[db] -= 1;
                continue;
            }
            if let Some(c) = random_in(ks, db, volatile) {
                return Some(c);
            }
            self.quiet[db] = QUIET_ROUNDS;
        }
        let found = (1..=n)
            .map(|i| (self.next_db + i) % n)
            .find_map(|db| random_in(ks, db, volatile));
        if let Some(c) = &found {
            self.quiet[c.db] = 0;
            self.next_db = c.db;
        }
        found
    }
}

/// A random key of `db` (with a TTL, for `volatile`); None when it has none.
fn random_in(ks: &Keyspace, db: usize, volatile: bool) -> Option<Candidate> {
    let found = nonempty_shard(ks, db, volatile, Some(PROBES));
    let i = found.or_else(|| nonempty_shard(ks, db, volatile, None))?;
    let picked = ks.db(db).shards[i]
        .try_lock()
        .and_then(|shard| random_key_of(&shard, db, volatile));
    // The shard is held by another command, or its count, read without its lock, went
    // stale (another thread evicting beside this one emptied it). Neither is a reason to
    // call a database full of keys empty (an -OOM where Redis evicts): look at every
    // shard under its lock, busy ones last.
    picked.or_else(|| random_key_walk(ks, db, volatile))
}

/// A random key of the first shard of `db` found holding one under its lock, from a random
/// shard on; shards other commands hold are waited for last, only if no other had a key.
fn random_key_walk(ks: &Keyspace, db: usize, volatile: bool) -> Option<Candidate> {
    let shards = &ks.db(db).shards;
    let n = shards.len();
    let start = rand::thread_rng().gen_range(0..n);
    let mut busy = Vec::new();
    for j in (0..n).map(|i| (start + i) % n) {
        match shards[j].try_lock() {
            Some(shard) => {
                if let Some(c) = random_key_of(&shard, db, volatile) {
                    return Some(c);
                }
            }
            None => busy.push(j),
        }
    }
    busy.into_iter()
        .find_map(|j| random_key_of(&shards[j].lock(), db, volatile))
}

/// A random key of `shard` (of database `db`; with a TTL, for `volatile`), if it holds one.
fn random_key_of(shard: &Shard, db: usize, volatile: bool) -> Option<Candidate> {
    let mut found = None;
    shard.sample(1, volatile, |e| {
        found = Some(Candidate {
            db,
            key: e.key().to_vec(),
            score: 0,
        })
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::NO_EXPIRE;
    use crate::locked::Plan;
    use crate::value::StrRef;
    use crate::{Changes, Event};

    fn put(ks: &Keyspace, db: usize, key: &[u8], expire: i64, field: u32) {
        let mut changes = Changes::default();
        let mut plan = Plan::new();
        plan.key(ks, db, key);
        let mut l = ks.lock(&mut plan, db, &mut changes);
        let mut e = Entry::new(key, StrRef::encode(b"v"), expire, 0);
        e.set_lru(field);
        l.insert_entry_in(db, key, e, Event::NONE);
    }

    #[test]
    fn pool_keeps_the_best_candidates() {
        // One shard per database: with more, db 1's single key hides from the 8 random
        // probes of a round about 1 time in 10 (3/4 ^ 8 with 4 shards), and the database
        // then sits out the next QUIET_ROUNDS rounds, as a nearly empty one should.
        let ks = Keyspace::new(2, 1);
        let clock = crate::clock::lru_clock();
        // Keys idle for i seconds; db 1 holds the oldest.
        for i in 0..40u32 {
            put(&ks, 0, format!("k{i}").as_bytes(), NO_EXPIRE, clock - i);
        }
        put(&ks, 1, b"oldest", NO_EXPIRE, clock - 1000);
        let mut pool = Pool::default();
        for _ in 0..50 {
            assert!(pool.populate(&ks, Score::Lru, false, 5));
        }
        assert_eq!(pool.len(), POOL_SIZE);
        let best = pool.pop().unwrap();
        assert_eq!((best.db, best.key.as_slice()), (1, &b"oldest"[..]));
        // The rest come out oldest first, each once.
        let mut last = u64::MAX;
        let mut seen = std::collections::HashSet::new();
        while let Some(c) = pool.pop() {
            assert!(c.score <= last);
            last = c.score;
            assert!(seen.insert(c.key));
        }
    }

    fn remove(ks: &Keyspace, db: usize, key: &[u8]) {
        let mut changes = Changes::default();
        let mut plan = Plan::new();
        plan.key(ks, db, key);
        ks.lock(&mut plan, db, &mut changes)
            .remove_in(db, key, Event::EVICTED);
    }

    /// While other threads add and remove keys (as workers evicting side by side do), a
    /// random pick never reports an empty keyspace while a key stays in it. It did when the
    /// shard found holding a key was emptied before it was locked again to pick one (an
    /// -OOM under allkeys-random with most of the keyspace still there).
    #[test]
    fn random_pick_survives_keys_vanishing_under_it() {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let ks = Keyspace::new(1, 64);
        put(&ks, 0, b"stays", NO_EXPIRE, 0);
        let stop = AtomicBool::new(false);
        let misses = std::thread::scope(|scope| {
            for t in 0..2 {
                let (ks, stop) = (&ks, &stop);
                scope.spawn(move || {
                    let mut i = 0u32;
                    while !stop.load(Relaxed) {
                        let key = format!("flicker:{t}:{}", i % 256);
                        put(ks, 0, key.as_bytes(), NO_EXPIRE, 0);
                        remove(ks, 0, key.as_bytes());
                        i = i.wrapping_add(1);
                    }
                });
            }
            let mut pool = Pool::default();
            let misses = (0..20_000)
                .filter(|_| pool.random(&ks, false).is_none())
                .count();
            stop.store(true, Relaxed);
            misses
        });
        assert_eq!(misses, 0);
    }

    #[test]
    fn random_skips_empty_databases_yet_finds_every_key() {
        let ks = Keyspace::new(16, 64);
        let mut pool = Pool::default();
        // Every database seen empty, and skipped from now on...
        assert!(pool.random(&ks, false).is_none());
        // ...but still looked at before answering None: a lone key is found, and its
        // database takes its turns again.
        put(&ks, 3, b"lone", NO_EXPIRE, 0);
        for _ in 0..20 {
            let c = pool.random(&ks, false).unwrap();
            assert_eq!((c.db, c.key.as_slice()), (3, &b"lone"[..]));
        }
        assert_eq!(pool.quiet[3], 0);
        assert!(pool
            .quiet
            .iter()
            .enumerate()
            .all(|(db, &q)| db == 3 || q > 0));
    }

    #[test]
    fn volatile_sampling_sees_only_keys_with_a_ttl() {
        let ks = Keyspace::new(1, 8);
        for i in 0..100u32 {
            let ttl = if i.is_multiple_of(10) {
                1_000_000 + i64::from(i)
            } else {
                NO_EXPIRE
            };
            put(&ks, 0, format!("k{i}").as_bytes(), ttl, 0);
        }
        let mut pool = Pool::default();
        for _ in 0..100 {
            pool.populate(&ks, Score::Ttl, true, 5);
        }
        // Nearest TTL first.
        assert_eq!(pool.pop().unwrap().key, b"k0");
        assert_eq!(pool.pop().unwrap().key, b"k10");
        let mut all = Vec::new();
        for _ in 0..50 {
            all.extend(pool.random(&ks, true).map(|c| c.key));
        }
        assert!(all.iter().all(|k| {
            let n: usize = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            n.is_multiple_of(10)
        }));
        // Nothing to sample.
        let empty = Keyspace::new(3, 4);
        assert!(!pool.populate(&empty, Score::Lru, false, 5));
        assert!(pool.random(&empty, false).is_none());
    }
}
