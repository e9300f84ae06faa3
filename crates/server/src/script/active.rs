//! The running script's state, reached by its `redis.call`s.
//!
//! Each worker's Lua state has one command function, made once (`LuaState::new`), that
//! `redis.call`/`pcall` reach through `raise::trampoline`. The state it works on (the
//! command context and the run's bookkeeping, borrowed by `run::attempt_run` for the
//! duration of one Lua call) is published here, in a thread-local pointer, while that
//! call runs. A closure made per run with `mlua::Lua::scope` did the same without
//! `unsafe`, at about 4,700 instructions per run (its registration and teardown: 14% of
//! an EVALSHA of INCR + EXPIRE under callgrind), which is why this module exists.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

thread_local! {
    /// The `RefCell` published by the innermost live [`Published`] of this thread, or
    /// null.
    static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// While alive, [`with`] on this thread reaches the `RefCell` it was made from. Dropping
/// it (also on unwinding) restores what was published before.
pub struct Published<'r, T> {
    previous: *const (),
    _borrow: PhantomData<&'r RefCell<T>>,
}

impl<'r, T> Published<'r, T> {
    /// Publish `cell` until the returned guard is dropped. The guard borrows `cell`, so
    /// `cell` can be neither moved nor dropped while it is published.
    pub fn new(cell: &'r RefCell<T>) -> Self {
        let previous = CURRENT.with(|c| c.replace(cell as *const RefCell<T> as *const ()));
        Published {
            previous,
            _borrow: PhantomData,
        }
    }
}

impl<T> Drop for Published<'_, T> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Run `f` on the published state, whose type the caller names as `T` (the one type
/// `run` publishes). `None` when nothing is published on this thread or the state is
/// already borrowed (a re-entrant call).
///
/// # Safety
/// The caller must name the same `T` as the `Published<T>` live on this thread (up to
/// lifetimes; `run` publishes exactly one type). Given that, the pointer is valid: it was
/// made from a `&RefCell<T>` that the live guard still borrows (so the cell is alive and
/// has not moved), on this thread (thread-local), and it is cleared before the guard's
/// borrow ends. Mutable access goes through `RefCell::try_borrow_mut`, so no two `&mut`
/// to the state exist at once. The caller must also keep every reference reachable from
/// the state inside `f` (`T`'s lifetimes, as named by the caller, may be longer than the
/// real ones): `f`'s argument itself cannot escape, its lifetime being local to this
/// call.
pub unsafe fn with<T, R>(f: impl FnOnce(&mut T) -> R) -> Option<R> {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: see the function's documentation: `p` points to a live `RefCell<T>`.
    let cell = unsafe { &*(p as *const RefCell<T>) };
    let mut state = cell.try_borrow_mut().ok()?;
    Some(f(&mut state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_only_while_the_guard_lives() {
        let cell = RefCell::new(5u32);
        // SAFETY: nothing published on this thread.
        assert_eq!(unsafe { with(|v: &mut u32| *v) }, None);
        {
            let _g = Published::new(&cell);
            // SAFETY: the live guard published a RefCell<u32>.
            assert_eq!(
                unsafe {
                    with(|v: &mut u32| {
                        *v += 1;
                        *v
                    })
                },
                Some(6)
            );
            let _b = cell.borrow_mut();
            // SAFETY: as above; the cell is borrowed, so `with` declines.
            assert_eq!(unsafe { with(|v: &mut u32| *v) }, None);
        }
        // SAFETY: the guard is gone: nothing published.
        assert_eq!(unsafe { with(|v: &mut u32| *v) }, None);
        assert_eq!(cell.into_inner(), 6);
    }

    #[test]
    fn nested_guards_restore_the_outer_one() {
        let (outer, inner) = (RefCell::new(1u8), RefCell::new(2u8));
        let _o = Published::new(&outer);
        {
            let _i = Published::new(&inner);
            // SAFETY: the live guards published RefCell<u8>s.
            assert_eq!(unsafe { with(|v: &mut u8| *v) }, Some(2));
        }
        // SAFETY: as above.
        assert_eq!(unsafe { with(|v: &mut u8| *v) }, Some(1));
    }
}
