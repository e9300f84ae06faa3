//! The background cron thread: the active expiry cycle (unless DEBUG SET-ACTIVE-EXPIRE 0
//! turned it off), client eviction (`evict::clients`), eviction left unfinished
//! (`evict::background`), every 100 ms the
//! samples behind INFO's instantaneous figures, the `save` rules and shutdown on
//! SIGTERM/SIGINT (`persist`).
//!
//! Like Redis's activeExpireCycle, each run samples keys with a TTL shard by shard and
//! deletes the expired ones, repeating on a shard while more than a quarter of its samples
//! were expired, within a time budget per run (25% of the period at effort 1), so expired
//! keys' memory stays bounded without long pauses. It holds one shard lock at a time.

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
            // Where the previous run stopped: (db, shard).
            let mut cursor = (0usize, 0usize);
            let mut last_sample = Instant::now() - Duration::from_secs(1);
            while !srv.is_shutting_down() {
                if last_sample.elapsed() >= Duration::from_millis(100) {
                    last_sample = Instant::now();
                    srv.stats.sample();
                }
                crate::persist::shutdown::on_signal(&srv);
                crate::persist::rules::cron(&srv);
                crate::persist::aof::rewrite::cron(&srv);
                let hz = srv.config.get_i64("hz").clamp(1, 500) as u64;
                let period = Duration::from_micros(1_000_000 / hz);
                let effort = srv.config.get_i64("active-expire-effort").clamp(1, 10) as u32;
                let budget = period * (25 + 2 * (effort - 1)) / 100;
                let start = Instant::now();
                if srv.stats.active_expire.load(Relaxed) {
                    cursor = expire_cycle(&srv, cursor, start + budget);
                    record_cycle(&srv, start.elapsed(), budget);
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
fn record_cycle(srv: &Server, spent: Duration, budget: Duration) {
    let st = &srv.stats;
    st.expire_cycle_us
        .fetch_add(spent.as_micros() as u64, Relaxed);
    if spent >= budget {
        st.expire_time_cap_reached.fetch_add(1, Relaxed);
    }
}

/// Run expiry rounds until `deadline` or one full pass; returns where to resume.
fn expire_cycle(srv: &Server, mut cursor: (usize, usize), deadline: Instant) -> (usize, usize) {
    let dbs = srv.keyspace.dbs();
    let total: usize = dbs.iter().map(|d| d.shard_count()).sum();
    let mut changes = Changes::default();
    for _ in 0..total {
        if Instant::now() >= deadline {
            break;
        }
        let (d, s) = cursor;
        let db = &dbs[d];
        if db.shard_has_expires(s) {
            let mut plan = Plan::new();
            plan.shard(d, s);
            let mut locked = srv.keyspace.lock(&mut plan, d, &mut changes);
            loop {
                let (sampled, expired) = locked.expire_sample(d, s, SAMPLES);
                if sampled == 0 || expired * 4 <= sampled || Instant::now() >= deadline {
                    break;
                }
            }
            // Expired keys are change events like any other (notifications, WATCH,
            // propagated DELs), fed while the shard is still held.
            let mut ops = Vec::new();
            effects::expired_ops(srv, locked.changes, &mut ops);
            effects::consume(srv, srv.stats.workers.len(), locked.changes, ops);
            locked.release();
            changes.clear();
        }
        cursor = if s + 1 < db.shard_count() {
            (d, s + 1)
        } else {
            ((d + 1) % dbs.len(), 0)
        };
    }
    cursor
}
