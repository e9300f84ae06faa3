//! `maxmemory`: the memory figure it is held against, the admission check every command
//! passes when a limit is set (Redis's `processCommand` calling `performEvictions`), the
//! eviction the policy allows ([`cycle`]), and the `-OOM` refusal of commands flagged
//! `denyoom` when nothing more can be freed.
//!
//! The figure is [`crate::memory::used_memory`] (the counting allocator's), less what
//! Redis does not count against the limit (replica output buffers and the AOF buffer;
//! Skein has neither yet, but subtracts the propagation stream's records kept for its
//! reader, which will feed them).
//!
//! Eviction runs where Redis runs it: before a command, on the worker about to run it,
//! when memory is over the limit; and on the cron thread ([`background`]) when a call ran
//! out of the time `maxmemory-eviction-tenacity` allows or the limit was lowered.

pub mod clients;
pub mod cycle;
pub mod policy;

use crate::cmd::table::CommandDef;
use crate::cmd::ClientState;
use crate::server::Server;
pub use policy::Policy;
use std::sync::atomic::Ordering::Relaxed;

/// Redis's shared.oomerr.
pub const OOM_ERR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// What [`perform`] achieved (Redis's EVICT_OK, EVICT_RUNNING, EVICT_FAIL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit, or evictions are not safe now).
    Ok,
    /// Over the limit, but work is under way that will free memory.
    Running,
    /// Over the limit and nothing could be freed.
    Fail,
}

/// The limit in bytes (0 = none).
#[inline]
pub fn maxmemory(srv: &Server) -> u64 {
    let max = srv.config.hot.maxmemory.load(Relaxed);
    // A replica leaves its keys to its master (`replica-ignore-maxmemory yes`, the
    // default): no eviction, no OOM refusal.
    if max != 0
        && srv.repl.link.is_replica()
        && srv.config.hot.replica_ignore_maxmemory.load(Relaxed)
    {
        return 0;
    }
    max
}

/// Memory Redis does not count against `maxmemory` (freeMemoryGetNotCountedMemory:
/// replica output buffers and the AOF buffer): here the propagated writes kept for the
/// stream's reader.
pub fn not_counted(srv: &Server) -> u64 {
    // The backlog counts up to its size; what it keeps beyond for a slow replica does
    // not (freeMemoryGetNotCountedMemory's replication buffer).
    let backlog = srv
        .propagation
        .backlog
        .bytes()
        .saturating_sub(crate::repl::backlog_size(srv));
    backlog
        + if srv.persist.aof.is_on() {
            crate::persist::aof::buffer_bytes(srv)
        } else {
            srv.propagation.buffered()
        }
}

/// How far over the limit the counted memory is (getMaxmemoryState's `tofree`): 0 when
/// under it or when there is no limit.
pub fn to_free(srv: &Server) -> u64 {
    let max = maxmemory(srv);
    if max == 0 {
        return 0;
    }
    let used = crate::memory::used_memory();
    if used <= max {
        return 0;
    }
    used.saturating_sub(not_counted(srv)).saturating_sub(max)
}

/// May keys be evicted now? Not while the dataset loads, nor while clients are paused
/// (the dataset must stay still, expiry and eviction included), as Redis's
/// isSafeToPerformEvictions.
fn safe(srv: &Server) -> bool {
    !srv.persist.is_loading()
        && (!srv.clients.pause.maybe_active()
            || srv.clients.pause.current(engine::now_ms()) == crate::clients::PauseKind::Off)
}

/// performEvictions: bring the counted memory under the limit if the policy allows.
/// `writer` is the calling worker (or the stats slot of the other threads).
pub fn perform(srv: &Server, writer: usize) -> Outcome {
    if maxmemory(srv) == 0 || !safe(srv) {
        return Outcome::Ok;
    }
    let need = to_free(srv);
    let outcome = if need == 0 {
        Outcome::Ok
    } else {
        match policy::current(srv) {
            Policy::NoEviction => Outcome::Fail,
            p => cycle::run(srv, p, need, writer),
        }
    };
    note_exceeded(srv, outcome);
    outcome
}

/// Keep the time spent over the limit (total/current_eviction_exceeded_time).
fn note_exceeded(srv: &Server, outcome: Outcome) {
    let st = &srv.stats;
    let now = srv.started.elapsed().as_micros() as u64 + 1;
    let since = st.eviction_exceeded_since_us.load(Relaxed);
    if outcome == Outcome::Ok {
        if since != 0
            && st
                .eviction_exceeded_since_us
                .compare_exchange(since, 0, Relaxed, Relaxed)
                .is_ok()
        {
            st.eviction_exceeded_total_us
                .fetch_add(now.saturating_sub(since), Relaxed);
        }
    } else if since == 0 {
        let _ = st
            .eviction_exceeded_since_us
            .compare_exchange(0, now, Relaxed, Relaxed);
    }
}

/// (total, current) time over the limit, in milliseconds, for INFO stats.
pub fn exceeded_ms(srv: &Server) -> (u64, u64) {
    let st = &srv.stats;
    let since = st.eviction_exceeded_since_us.load(Relaxed);
    let current = if since == 0 {
        0
    } else {
        (srv.started.elapsed().as_micros() as u64 + 1).saturating_sub(since)
    };
    (
        (st.eviction_exceeded_total_us.load(Relaxed) + current) / 1000,
        current / 1000,
    )
}

/// The cron thread's part (Redis's eviction time proc): while memory is over the limit
/// under an evicting policy, go on evicting, within `budget`.
pub fn background(srv: &Server, budget: std::time::Duration) {
    if maxmemory(srv) == 0 || policy::current(srv) == Policy::NoEviction {
        return;
    }
    let start = std::time::Instant::now();
    let writer = srv.stats.workers.len();
    while start.elapsed() < budget && perform(srv, writer) == Outcome::Running {}
}

/// The maxmemory step of processCommand, run before a command (with no locks held) when
/// a limit is set: evict what the policy allows, then refuse the command with
/// [`OOM_ERR`] if memory is still over the limit and the command may grow it (flagged
/// `denyoom` — for a script, unless it declared `allow-oom` or `no-writes` —, EXEC of a
/// transaction holding one, or anything queued inside MULTI but EXEC, DISCARD, QUIT and
/// RESET). Records whether memory was over the limit in `client.oom_at_start` (a
/// script's first write checks it). Returns true when the command must be refused.
pub fn refuses(srv: &Server, client: &mut ClientState, cmd: &CommandDef, argv: &[&[u8]]) -> bool {
    client.oom_at_start = perform(srv, client.worker) == Outcome::Fail;
    if !client.oom_at_start {
        return false;
    }
    let name = cmd.fullname.as_str();
    let denyoom = |c: &CommandDef, a: &[&[u8]]| crate::script::flags::denyoom(srv, c, a);
    denyoom(cmd, argv)
        || (name == "exec" && crate::dispatch::queued_any(srv, client, denyoom))
        || (client.in_multi() && !matches!(name, "exec" | "discard" | "quit" | "reset"))
}

/// After `maxmemory` changed to `max` (CONFIG SET): Redis's warning when the new limit is
/// below the memory in use.
pub fn limit_changed(max: u64) {
    if max == 0 {
        return;
    }
    let used = crate::memory::used_memory();
    if max < used {
        crate::log::warning(&format!(
            "WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy."
        ));
    }
}
