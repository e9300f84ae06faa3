//! Where values the keyspace drops by itself go: a key found past its TTL (lazy expiry) or
//! a value replaced by a write (setKey's overwrite). By default they are dropped at once;
//! the server installs a function that may free big ones on another thread (Redis's
//! `lazyfree-lazy-expire` and `lazyfree-lazy-server-del`).

use crate::entry::Entry;
use std::cell::{Cell, RefCell};
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

thread_local! {
    /// Values [`defer`]red on this thread, dropped by [`drain`].
    static DEFERRED: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    /// Whether `DEFERRED` may hold anything (a plain flag: the common check costs no
    /// more than a thread-local load).
    static ANY: Cell<bool> = const { Cell::new(false) };
}

/// Keep `e` to be dropped by this thread once it holds no shard: a big value freed inline
/// (its lazyfree option off) then does not keep its shard locked while it is freed. The
/// keyspace drains at the end of every [`crate::Locked`].
pub fn defer(e: Entry) {
    DEFERRED.with(|d| d.borrow_mut().push(e));
    ANY.with(|a| a.set(true));
}

/// Drop what this thread has deferred.
#[inline]
pub fn drain() {
    if ANY.with(|a| a.get()) {
        drain_now();
    }
}

#[cold]
#[inline(never)]
fn drain_now() {
    ANY.with(|a| a.set(false));
    let values = DEFERRED.with(|d| std::mem::take(&mut *d.borrow_mut()));
    drop(values);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_values_wait_for_drain() {
        let e = Entry::new(b"k", crate::StrRef::encode(b"v"), crate::NO_EXPIRE, 0);
        defer(e);
        assert_eq!(DEFERRED.with(|d| d.borrow().len()), 1);
        drain();
        assert_eq!(DEFERRED.with(|d| d.borrow().len()), 0);
        assert!(!ANY.with(|a| a.get()));
    }
}
