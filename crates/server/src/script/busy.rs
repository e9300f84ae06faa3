//! Busy scripts: a run past `busy-reply-threshold` (`lua-time-limit`) is "timed out".
//! Clients whose commands need a shard it holds then get `-BUSY` instead of waiting
//! (clients of other keys are not stalled at all); SCRIPT KILL stops a timed-out run that
//! has not written (`-UNKILLABLE` once it has); SHUTDOWN NOSAVE stops it too.
//!
//! Each worker thread has one [`RunHandle`] it reuses for its runs; a run enters the
//! server's [`Busy`] list only when it times out, so a run that ends in time touches no
//! shared state. The check is made by the Lua count hook (every 100,000 instructions, as
//! Redis) and by `redis.call`.

use engine::{Keyspace, Scope};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// What a killed script raises.
pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// One worker's running script, as other threads see it once it timed out.
#[derive(Default)]
pub struct RunHandle {
    pub killed: AtomicBool,
    /// A write command was called (Redis's SCRIPT_WRITE_DIRTY).
    pub wrote: AtomicBool,
    /// An EVAL script (not a function).
    pub eval: AtomicBool,
    held: Mutex<Held>,
}

/// The shards a run holds: its scope and, for `Scope::Keys`, the (db, shard) pairs.
#[derive(Default)]
struct Held {
    scope: Option<Scope>,
    shards: Vec<(u32, u32)>,
}

impl RunHandle {
    /// A new run starts on this handle.
    pub fn reset(&self, eval: bool) {
        self.killed.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        self.eval.store(eval, Relaxed);
    }

    /// Record what the run holds now.
    pub fn set_held(&self, scope: Scope, shards: impl Iterator<Item = (u32, u32)>) {
        let mut h = self.held.lock();
        h.scope = Some(scope);
        h.shards.clear();
        if scope == Scope::Keys {
            h.shards.extend(shards);
        }
    }

    /// Does the run hold shard (db, shard)?
    fn holds(&self, db: u32, shard: u32) -> bool {
        let h = self.held.lock();
        match h.scope {
            Some(Scope::All) => true,
            Some(Scope::Db(d)) => d as u32 == db,
            Some(Scope::Keys) => h.shards.contains(&(db, shard)),
            None => false,
        }
    }
}

/// The timed-out runs of the server.
#[derive(Default)]
pub struct Busy {
    count: AtomicUsize,
    list: Mutex<Vec<Arc<RunHandle>>>,
    /// SHUTDOWN NOSAVE: every running script stops.
    pub shutdown: AtomicBool,
}

impl Busy {
    /// Is any run timed out? (One atomic load per command.)
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub fn enter(&self, h: &Arc<RunHandle>) {
        let mut l = self.list.lock();
        l.push(h.clone());
        self.count.store(l.len(), Relaxed);
    }

    pub fn leave(&self, h: &Arc<RunHandle>) {
        let mut l = self.list.lock();
        l.retain(|x| !Arc::ptr_eq(x, h));
        self.count.store(l.len(), Relaxed);
    }

    /// The -BUSY error for a command needing these shards of `ks` (a plan's scope and
    /// key slots), if a timed-out run holds one of them.
    pub fn blocking(
        &self,
        ks: &Keyspace,
        scope: Scope,
        slots: &[(u32, u32)],
    ) -> Option<&'static str> {
        let l = self.list.lock();
        let hit = l.iter().find(|h| match scope {
            Scope::Keys => slots.iter().any(|&(d, s)| h.holds(d, s)),
            Scope::Db(d) => (0..ks.db(d).shard_count()).any(|s| h.holds(d as u32, s as u32)),
            Scope::All => true,
        })?;
        Some(if hit.eval.load(Relaxed) {
            BUSY_EVAL
        } else {
            BUSY_FUNCTION
        })
    }

    /// Is an EVAL script busy?
    pub fn eval_busy(&self) -> bool {
        self.active() && self.list.lock().iter().any(|h| h.eval.load(Relaxed))
    }

    /// SCRIPT KILL (`eval`) / FUNCTION KILL: stop the timed-out runs of that kind that
    /// have not written. The error text when none could be.
    pub fn kill(&self, eval: bool) -> Result<(), &'static str> {
        let l = self.list.lock();
        if l.is_empty() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        let mine: Vec<&Arc<RunHandle>> =
            l.iter().filter(|h| h.eval.load(Relaxed) == eval).collect();
        if mine.is_empty() {
            return Err(if eval { BUSY_FUNCTION } else { BUSY_EVAL });
        }
        let mut killed = false;
        for h in mine {
            if !h.wrote.load(Relaxed) {
                h.killed.store(true, Relaxed);
                killed = true;
            }
        }
        if killed {
            Ok(())
        } else {
            Err(
                "UNKILLABLE Sorry the script already executed write commands against the \
                 dataset. You can either wait the script termination or kill the server in a \
                 hard way using the SHUTDOWN NOSAVE command.",
            )
        }
    }
}
