//! Client eviction (`maxmemory-clients`, Redis 7.0's evictClients): once the clients'
//! buffers (CLIENT LIST's tot-mem, summed over every client) reach the limit, the biggest
//! clients not flagged `CLIENT NO-EVICT` are disconnected, biggest first, until the sum is
//! below it; each counts in INFO's `evicted_clients`. As in Redis, the check runs before
//! every command ([`before_command`]: one load per worker while under the limit), and the
//! cron thread runs the full count every period (`hz`), which also weighs what other
//! threads queued for subscribers.

use crate::clients::ClientInfo;
use crate::server::Server;
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One eviction pass at a time (two workers over the limit at once would both pick the
/// same victims' successors).
static PASS: Mutex<()> = Mutex::new(());
/// The clients' memory left by the last pass that could not get under the limit (only
/// no-evict clients remained), so that commands do not start a futile pass each until
/// the figure grows; 0 after a pass that got under it.
static FUTILE_AT: AtomicU64 = AtomicU64::new(0);

/// The smallest limit honoured, whatever is configured (so that a bad setting never cuts
/// every client off).
const MIN_LIMIT: u64 = 128 * 1024;

/// getClientEvictionLimit: `maxmemory-clients` in bytes, or as a percentage of `maxmemory`
/// (stored negative), at least [`MIN_LIMIT`]; 0 when client eviction is off.
pub fn limit(srv: &Server) -> u64 {
    let v = srv.config.hot.maxmemory_clients.load(Relaxed);
    let max = super::maxmemory(srv);
    let bytes = if v < 0 && max > 0 {
        (max as f64 * -(v as f64) / 100.0) as u64
    } else if v > 0 {
        v as u64
    } else {
        return 0;
    };
    bytes.max(MIN_LIMIT)
}

/// Redis's evictClients at the start of processCommand: weigh every client (the workers'
/// sums of their connections' memory, plus what the running client's reply buffer, now
/// `out_capacity` bytes, grew by since its worker last published it), and past the limit
/// disconnect the biggest evictable clients. True when the running client itself was
/// evicted: its command must not run.
pub fn before_command(srv: &Server, me: &ClientInfo, out_capacity: usize) -> bool {
    let limit = limit(srv);
    if limit == 0 {
        return false;
    }
    let grown = (out_capacity as u64).saturating_sub(me.rbuf_size.load(Relaxed));
    let published: u64 = srv
        .stats
        .workers
        .iter()
        .map(|w| w.clients_mem.load(Relaxed))
        .sum();
    let total = published + grown;
    if total < limit || total <= FUTILE_AT.load(Relaxed) {
        return false;
    }
    if let Some(_pass) = PASS.try_lock() {
        pass(srv, limit, Some((me.id, grown)));
    }
    me.kill.load(Relaxed)
}

/// Disconnect the biggest evictable clients while the clients' memory is at the limit
/// (the cron's check).
pub fn evict(srv: &Server) {
    let limit = limit(srv);
    if limit == 0 {
        return;
    }
    let _pass = PASS.lock();
    pass(srv, limit, None);
}

/// One pass over every client; `running` is the running client's id and the bytes its
/// reply buffer holds beyond what its worker published.
fn pass(srv: &Server, limit: u64, running: Option<(u64, u64)>) {
    // Normal and pub/sub clients only (Redis's clientEvictionAllowed): never the master's
    // link nor a replica's.
    let clients: Vec<_> = srv
        .clients
        .all()
        .into_iter()
        .filter(|c| !c.has(crate::clients::flag::MASTER | crate::clients::flag::REPLICA))
        .collect();
    let mem = |c: &ClientInfo| match running {
        Some((id, grown)) if id == c.id => c.memory() + grown,
        _ => c.memory(),
    };
    let mut total: u64 = clients.iter().map(|c| mem(c)).sum();
    if total < limit {
        FUTILE_AT.store(0, Relaxed);
        return;
    }
    let mut evictable: Vec<_> = clients
        .into_iter()
        .filter(|c| !c.has(crate::clients::flag::NO_EVICT))
        .collect();
    evictable.sort_by_key(|c| Reverse(mem(c)));
    for c in evictable {
        if total < limit {
            FUTILE_AT.store(0, Relaxed);
            return;
        }
        let line = srv.client_line(&c);
        crate::log::notice(&format!("Evicting client: {line}"));
        total = total.saturating_sub(mem(&c));
        srv.clients.kill(&c);
        srv.stats.global.evicted_clients.fetch_add(1, Relaxed);
    }
    if total >= limit {
        FUTILE_AT.store(total, Relaxed);
        crate::log::warning("Over client maxmemory after evicting all evictable clients");
    } else {
        FUTILE_AT.store(0, Relaxed);
    }
}
