//! `maxmemory`: the memory figure it is held against, the admission check every command
//! passes when a limit is set (Redis's `processCommand` calling `performEvictions`), and
//! the `-OOM` refusal of commands flagged `denyoom` when nothing more can be freed.
//!
//! The figure is [`crate::memory::used_memory`] (the counting allocator's), less what
//! Redis does not count against the limit (replica output buffers and the AOF buffer:
//! Skein has neither yet, so nothing is subtracted).

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
    srv.config.hot.maxmemory.load(Relaxed)
}

/// Memory Redis does not count against `maxmemory` (freeMemoryGetNotCountedMemory).
pub fn not_counted(_srv: &Server) -> u64 {
    0
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
pub fn perform(srv: &Server) -> Outcome {
    if maxmemory(srv) == 0 || !safe(srv) || to_free(srv) == 0 {
        return Outcome::Ok;
    }
    match policy::current(srv) {
        Policy::NoEviction => Outcome::Fail,
        // The evicting policies: not yet (commands are refused as under noeviction).
        _ => Outcome::Fail,
    }
}

/// The maxmemory step of processCommand, run before a command (with no locks held) when
/// a limit is set: evict what the policy allows, then refuse the command with
/// [`OOM_ERR`] if memory is still over the limit and the command may grow it (flagged
/// `denyoom`, EXEC of a transaction holding one, or anything queued inside MULTI but
/// EXEC, DISCARD, QUIT and RESET). Returns true when the command must be refused.
pub fn refuses(srv: &Server, client: &ClientState, cmd: &CommandDef) -> bool {
    if perform(srv) != Outcome::Fail {
        return false;
    }
    let name = cmd.fullname.as_str();
    cmd.flags.denyoom
        || (name == "exec" && crate::dispatch::queued_any(srv, client, |f| f.denyoom))
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
