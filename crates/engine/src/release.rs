//! Where values the keyspace drops by itself go: a key found past its TTL (lazy expiry) or
//! a value replaced by a write (setKey's overwrite). By default they are dropped at once;
//! the server installs a function that may free big ones on another thread (Redis's
//! `lazyfree-lazy-expire` and `lazyfree-lazy-server-del`).

use crate::entry::Entry;
use std::sync::OnceLock;

/// Why the keyspace lets go of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Deleted because its TTL had passed when a command looked it up.
    Expired,
    /// Replaced by a new value under the same key.
    Overwritten,
}

static HOOK: OnceLock<fn(Entry, Why)> = OnceLock::new();

/// Install the function values go to (once per process; later calls are ignored).
pub fn install(f: fn(Entry, Why)) {
    let _ = HOOK.set(f);
}

/// Let go of `e`: through the installed function, or dropped here.
#[inline]
pub fn release(e: Entry, why: Why) {
    match HOOK.get() {
        Some(f) => f(e, why),
        None => drop(e),
    }
}
