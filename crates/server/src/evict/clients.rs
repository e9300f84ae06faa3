//! Client eviction (`maxmemory-clients`, Redis 7.0's evictClients): once the clients'
//! buffers (CLIENT LIST's tot-mem, summed over every client) reach the limit, the biggest
//! clients not flagged `CLIENT NO-EVICT` are disconnected, biggest first, until the sum is
//! below it; each counts in INFO's `evicted_clients`. The cron thread checks every period
//! (`hz`); Redis checks before every command as well.

use crate::server::Server;
use std::cmp::Reverse;
use std::sync::atomic::Ordering::Relaxed;

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

/// Disconnect the biggest evictable clients while the clients' memory is at the limit.
pub fn evict(srv: &Server) {
    let limit = limit(srv);
    if limit == 0 {
        return;
    }
    let clients = srv.clients.all();
    let mem = |c: &crate::clients::ClientInfo| c.memory();
    let mut total: u64 = clients.iter().map(|c| mem(c)).sum();
    if total < limit {
        return;
    }
    let mut evictable: Vec<_> = clients
        .into_iter()
        .filter(|c| !c.has(crate::clients::flag::NO_EVICT))
        .collect();
    evictable.sort_by_key(|c| Reverse(mem(c)));
    let now = engine::now_ms();
    let all = &srv.commands.all;
    for c in evictable {
        if total < limit {
            return;
        }
        let line = c.describe(now, |i| {
            all.get(i).map(|d| d.fullname.clone()).unwrap_or_default()
        });
        crate::log::notice(&format!("Evicting client: {line}"));
        total = total.saturating_sub(mem(&c));
        srv.clients.kill(&c);
        srv.stats.global.evicted_clients.fetch_add(1, Relaxed);
    }
    if total >= limit {
        crate::log::warning("Over client maxmemory after evicting all evictable clients");
    }
}
