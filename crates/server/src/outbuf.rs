//! `client-output-buffer-limit`: Redis's checkClientOutputBufferLimits for a client's
//! class (normal, replica, pubsub). The limits are read from `Config::hot`.

use crate::clients::{ClientInfo, ClientType};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

/// Class indexes, in `client-output-buffer-limit`'s order.
pub const NORMAL: usize = 0;
pub const REPLICA: usize = 1;
pub const PUBSUB: usize = 2;

/// The class whose limits apply to `info` (masters would count as normal, as in Redis).
pub fn class(info: &ClientInfo) -> usize {
    match info.client_type() {
        ClientType::Pubsub => PUBSUB,
        ClientType::Replica => REPLICA,
        ClientType::Normal | ClientType::Master => NORMAL,
    }
}

/// A class's hard limit in bytes (0: none).
pub fn hard_limit(srv: &Server, class: usize) -> usize {
    srv.config.hot.obuf_limits[class][0].load(Relaxed).max(0) as usize
}

/// Is `used` bytes of unsent output past `info`'s limits? At or past the hard limit, or
/// past the soft limit continuously for more than its seconds (the first time the soft
/// limit is seen passed starts the clock; going below it stops it).
pub fn reached(srv: &Server, info: &ClientInfo, used: usize) -> bool {
    let limits = &srv.config.hot.obuf_limits[class(info)];
    let hard = limits[0].load(Relaxed);
    let soft = limits[1].load(Relaxed);
    let used = used as i64;
    if hard > 0 && used >= hard {
        return true;
    }
    if soft == 0 || used < soft {
        info.obuf_soft_since.store(0, Relaxed);
        return false;
    }
    let now = engine::wall_ms() / 1000;
    let since = info.obuf_soft_since.load(Relaxed);
    if since == 0 {
        info.obuf_soft_since.store(now, Relaxed);
        return false;
    }
    now - since > limits[2].load(Relaxed)
}

/// Redis's log line for a client closed by its output buffer limits.
pub fn log_close(info: &ClientInfo) {
    crate::log::warning(&format!(
        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        info.id, info.addr
    ));
}
