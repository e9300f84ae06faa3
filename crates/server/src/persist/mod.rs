//! Persistence: RDB files written by SAVE, BGSAVE, the `save` rules, SHUTDOWN and
//! FLUSHALL, and loaded at start-up and by DEBUG RELOAD (`save`, `load`, `rules`); the
//! state INFO persistence reports and `stop-writes-on-bgsave-error` reads.
//!
//! A synchronous save runs with every shard held by the command (Redis's SAVE blocks the
//! server too). BGSAVE installs an `engine::snapshot::Snapshot` and serializes shard by
//! shard on a thread of its own while writes go on: no fork, copy-on-write at shard
//! granularity (see ARCHITECTURE.md).

pub mod aof;
pub mod load;
pub mod rules;
pub mod save;
pub mod shutdown;

use crate::server::Server;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{OnceLock, Weak};

/// Redis's MISCONF error (shared.bgsaveerr), without the leading '-'.
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Seconds after a failed BGSAVE before the `save` rules try again
/// (CONFIG_BGSAVE_RETRY_DELAY).
pub const BGSAVE_RETRY_DELAY: i64 = 5;

/// What INFO persistence and the `save` rules need to know.
pub struct Persistence {
    /// The server itself, for the BGSAVE thread.
    this: OnceLock<Weak<Server>>,
    /// Unix time of the last successful save (start-up time before any).
    pub lastsave: AtomicI64,
    /// Whether the last background save succeeded (rdb_last_bgsave_status).
    pub last_bgsave_ok: AtomicBool,
    /// Unix time of the last BGSAVE attempt.
    pub lastbgsave_try: AtomicI64,
    /// Unix time the running BGSAVE started, or -1.
    pub bgsave_started: AtomicI64,
    /// Duration of the last BGSAVE in seconds, or -1.
    pub last_bgsave_secs: AtomicI64,
    /// Total of the dirty counters when the last save started (BGSAVE) or ended (SAVE).
    dirty_at_save: AtomicU64,
    /// The dirty total when the running BGSAVE started.
    dirty_before_bgsave: AtomicU64,
    /// rdb_saves.
    pub saves: AtomicU64,
    /// BGSAVE SCHEDULE waiting for its turn.
    pub scheduled: AtomicBool,
    /// A dataset is being loaded (clients get -LOADING).
    pub loading: AtomicBool,
    pub last_load_loaded: AtomicU64,
    pub last_load_expired: AtomicU64,
    /// Keys in the dataset when the running BGSAVE started.
    pub save_keys_total: AtomicU64,
    /// Copy-on-write writes (a key each, or what was left of a shard for SWAPDB) made by
    /// writers before their modification during the last BGSAVE.
    pub last_cow_writes: AtomicU64,
    /// Bytes of those writes' records.
    pub last_cow_bytes: AtomicU64,
    /// The append-only file.
    pub aof: aof::Aof,
}

impl Persistence {
    pub fn new(now_secs: i64) -> Persistence {
        Persistence {
            this: OnceLock::new(),
            lastsave: AtomicI64::new(now_secs),
            last_bgsave_ok: AtomicBool::new(true),
            lastbgsave_try: AtomicI64::new(0),
            bgsave_started: AtomicI64::new(-1),
            last_bgsave_secs: AtomicI64::new(-1),
            dirty_at_save: AtomicU64::new(0),
            dirty_before_bgsave: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            scheduled: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            last_load_loaded: AtomicU64::new(0),
            last_load_expired: AtomicU64::new(0),
            save_keys_total: AtomicU64::new(0),
            last_cow_writes: AtomicU64::new(0),
            last_cow_bytes: AtomicU64::new(0),
            aof: aof::Aof::default(),
        }
    }

    /// Remember the server (for the BGSAVE thread); called once at start.
    pub fn attach(&self, srv: Weak<Server>) {
        let _ = self.this.set(srv);
    }

    /// The server, for threads of their own (BGSAVE, the AOF).
    pub fn server(&self) -> Option<std::sync::Arc<Server>> {
        self.this.get().and_then(Weak::upgrade)
    }

    pub fn bgsave_in_progress(&self) -> bool {
        self.bgsave_started.load(Relaxed) >= 0
    }

    pub fn is_loading(&self) -> bool {
        self.loading.load(Relaxed)
    }
}

/// Unix time in seconds.
pub fn unix_secs() -> i64 {
    engine::wall_ms() / 1000
}

/// The dirty counters' total.
fn dirty_total(srv: &Server) -> u64 {
    srv.stats.sum(|w| &w.dirty)
}

/// rdb_changes_since_last_save (Redis's `server.dirty`).
pub fn changes_since_save(srv: &Server) -> u64 {
    dirty_total(srv).saturating_sub(srv.persist.dirty_at_save.load(Relaxed))
}

/// Forget the changes so far (a save succeeded covering them). `pending`: changes the
/// running command has made but not yet counted.
pub fn reset_dirty(srv: &Server, pending: u64) {
    srv.persist
        .dirty_at_save
        .store(dirty_total(srv) + pending, Relaxed);
}

/// Are writes refused now for a disk error (writeCommandsDeniedByDiskError), and with
/// which error: a failed BGSAVE under `stop-writes-on-bgsave-error`, or a failed AOF
/// write.
pub fn writes_denied(srv: &Server) -> Option<String> {
    if !srv.persist.last_bgsave_ok.load(Relaxed)
        && srv.config.get_bool("stop-writes-on-bgsave-error")
        && !rules::parse(&srv.config.get("save")).is_empty()
    {
        return Some(MISCONF.to_string());
    }
    let aof = &srv.persist.aof;
    if aof.is_on() && !aof.last_write_ok.load(Relaxed) {
        return Some(format!(
            "MISCONF Errors writing to the AOF file: {}",
            aof.write_error.lock()
        ));
    }
    None
}
