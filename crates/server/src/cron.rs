//! The background cron thread: the active expiry cycle (unless DEBUG SET-ACTIVE-EXPIRE 0
//! turned it off), client eviction (`evict::clients`), eviction left unfinished
//! (`evict::background`), every 100 ms the
//! samples behind INFO's instantaneous figures, the `save` rules and shutdown on
//! SIGTERM/SIGINT (`persist`), closing MIGRATE's idle cached connections.
//!
//! Like Redis's activeExpireCycle, each run samples keys with a TTL in every database and
//! deletes the expired ones, sampling on while more than an acceptable share of a sample
//! was expired (10% at effort 1), within a time budget per run (25% of the period at
//! effort 1), so expired keys' memory stays bounded without long pauses, and a dataset
//! whose TTLs lie ahead costs one sample per database per run. It holds one shard lock at
//! a time, and passes over a shard another command holds after one wait slice.

use crate::dispatch::effects;
use crate::server::Server;
use engine::{Changes, Plan};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keys sampled per shard per round (ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
const SAMPLES: usize = 20;

pub fn spawn(srv: Arc<Server>) {
    let _ = std::thread::Builder::new()
        .name("skein-cron".into())
        .spawn(move || {
            let mut cursor = ExpireCursor::default();
            let mut last_sample = Instant::now() - Duration::from_secs(1);
            while !srv.is_shutting_down() {
                if last_sample.elapsed() >= Duration::from_millis(100) {
                    last_sample = Instant::now();
                    srv.stats.sample();
                    crate::supervise::oom_follow_role(&srv);
                }
                crate::persist::shutdown::on_signal(&srv);
                crate::persist::rules::cron(&srv);
                crate::persist::aof::rewrite::cron(&srv);
                crate::cmd::migrate::close_idle();
                let hz = srv.config.get_i64("hz").clamp(1, 500) as u64;
                let period = Duration::from_micros(1_000_000 / hz);
                let effort = srv.config.get_i64("active-expire-effort").clamp(1, 10) as u32;
                let budget = period * (25 + 2 * (effort - 1)) / 100;
                let start = Instant::now();
                // A replica's keys expire by its master's DELs (Redis's replicas run no
                // active expiry either); none while writes are paused (CLIENT PAUSE WRITE,
                // FAILOVER), as in Redis.
                if srv.stats.active_expire.load(Relaxed)
                    && !srv.repl.link.is_replica()
                    && srv.clients.pause.current(engine::now_ms()) == crate::clients::PauseKind::Off
                {
                    let done = expire_cycle(&srv, &mut cursor, effort, start + budget);
                    record_cycle(&srv, start.elapsed(), budget, done);
                }
                crate::evict::clients::evict(&srv);
                // Eviction a worker left unfinished, or a lowered maxmemory, in the rest
                // of the period.
                crate::evict::background(&srv, period.saturating_sub(start.elapsed()));
                let spent = start.elapsed();
                if spent < period {
                    std::thread::sleep(period - spent);
                }
            }
        });
}

/// Account for one expiry cycle: its CPU time and whether it hit its budget. (Unlike
/// Redis, no "expire-cycle" latency event: the cycle runs on its own thread, holding one
/// shard at a time, so it does not stall clients the way Redis's main-thread cycle does.)
/// Also folds the cycle's share of expired samples into `expired_stale_perc`, a running
/// average weighted 5% to the latest cycle, as Redis does.
fn record_cycle(
    srv: &Server,
    spent: Duration,
    budget: Duration,
    (sampled, expired): (usize, usize),
) {
    let st = &srv.stats;
    let current = if sampled > 0 {
        expired as f64 / sampled as f64
    } else {
        0.0
    };
    let before = f64::from_bits(st.expired_stale.load(Relaxed));
    st.expired_stale
        .store((current * 0.05 + before * 0.95).to_bits(), Relaxed);
    st.expire_cycle_us
        .fetch_add(spent.as_micros() as u64, Relaxed);
    if spent >= budget {
        st.expire_time_cap_reached.fetch_add(1, Relaxed);
    }
}

/// Where the expiry cycle resumes: the next database, and each database's next shard.
#[derive(Default)]
struct ExpireCursor {
    db: usize,
    shard: Vec<usize>,
}

/// One expiry cycle over every database, until `deadline`, shaped as Redis's
/// activeExpireCycle: each database's keys with a TTL are checked in batches of 20 (at
/// effort 1), going on where the last batch stopped (shard after shard, each swept by its
/// own cursor), until a batch finds no more than the acceptable share expired (10% at
/// effort 1) or the whole database was swept. A dataset whose TTLs lie ahead costs one
/// batch per database per cycle. Returns the keys checked and expired.
fn expire_cycle(
    srv: &Server,
    cur: &mut ExpireCursor,
    effort: u32,
    deadline: Instant,
) -> (usize, usize) {
    let dbs = srv.keyspace.dbs();
    cur.shard.resize(dbs.len(), 0);
    // Redis's config_keys_per_loop and config_cycle_acceptable_stale.
    let per_batch = SAMPLES + SAMPLES / 4 * (effort as usize - 1);
    let stale_ok = 10 - (effort as usize - 1);
    let mut changes = Changes::default();
    let (mut checked_all, mut expired_all) = (0, 0);
    for _ in 0..dbs.len() {
        let d = cur.db;
        cur.db = (d + 1) % dbs.len();
        let db = &dbs[d];
        if !db.has_expires() {
            // Nothing to sample (the pass below would sweep every shard, finding none,
            // and leave the cursor where it is): no shard is locked.
            continue;
        }
        let n = db.shard_count();
        // Shards swept to their end in this cycle: at most the whole database once.
        let mut passed = 0;
        loop {
            let (mut checked, mut expired) = (0, 0);
            while checked < per_batch && passed < n {
                let s = cur.shard[d];
                if db.shard_has_expires(s) {
                    let mut plan = Plan::new();
                    plan.shard(d, s);
                    // A shard another command holds (a long one on the offload pool,
                    // say) is passed over after one wait slice and swept on a later
                    // cycle: the cycle has its time budget, the cron thread other work.
                    let Some(mut locked) =
                        srv.keyspace
                            .lock_or(&mut plan, d, &mut changes, &|_, _| true)
                    else {
                        cur.shard[d] = (s + 1) % n;
                        passed += 1;
                        continue;
                    };
                    let (c, e, swept) = locked.expire_sample(d, s, per_batch - checked);
                    // Expired keys are change events like any other (notifications,
                    // WATCH, propagated DELs), fed while the shard is still held.
                    let mut ops = Vec::new();
                    effects::expired_ops(srv, locked.changes, &mut ops);
                    effects::consume(srv, srv.stats.workers.len(), locked.changes, ops);
                    locked.release();
                    changes.clear();
                    checked += c;
                    expired += e;
                    if !swept {
                        continue;
                    }
                }
                cur.shard[d] = (s + 1) % n;
                passed += 1;
            }
            checked_all += checked;
            expired_all += expired;
            if checked == 0 || expired * 100 <= checked * stale_ok || passed >= n {
                break;
            }
            if Instant::now() >= deadline {
                return (checked_all, expired_all);
            }
        }
    }
    (checked_all, expired_all)
}
