//! `redis.call`, `redis.pcall` and `redis.acl_check_cmd` as C functions working on the
//! Lua stack.
//!
//! Their arguments are read where Lua keeps them (strings borrowed from the stack) and the
//! command's reply is pushed straight onto the stack (`convert::push_reply`), with no mlua
//! callback between: mlua's callback entry, its argument conversion and the value
//! references it makes cost about 2,500 instructions per `redis.call` under callgrind, a
//! tenth of an EVALSHA of INCR + EXPIRE. (As for `raise::trampoline`, being a C function
//! also keeps the script's line in error texts and lets the error value be a table.)
//!
//! Lua raises errors by `longjmp`, which must not skip a Rust destructor. So the work is
//! in two phases: [`super::run::command_on_stack`] reads the arguments and runs the
//! command, calling no Lua function that can raise, and has dropped everything it made
//! when it returns a [`Done`] (plain data; the bytes it names stay in the run). Then only
//! plain frames push the result and raise it.

use super::convert;
use super::run::{self, Done};
use mlua::ffi;
use std::os::raw::c_int;

/// Registry key of the table every `redis.call` of an abandoned run raises (the run is
/// restarted under a wider lock; the bootstrap's error handler lets it through).
pub const ABORT_KEY: &std::ffi::CStr = c"skein.abort";

/// `redis.call` (`MODE` = `raise::CALL`), `redis.pcall` (`PCALL`) and
/// `redis.acl_check_cmd` (`ACL`).
///
/// # Safety
/// Called by Lua only, as a `lua_CFunction`, on the thread running the script. After
/// `command_on_stack` returns, this frame holds only plain values (`Done` is `Copy`; the
/// panic payload of a failed call is dropped first), so a `longjmp` out of the pushes or
/// out of `lua_error` skips no destructor. The bytes a `Done` points to belong to the run
/// published for this thread (`run::Run`), which outlives this call, and nothing touches
/// them before this function returns: the pushes run no Lua code (scripts cannot make
/// userdata with `__gc`, the one way a collection step could call back).
pub unsafe extern "C-unwind" fn command<const MODE: u8>(state: *mut ffi::lua_State) -> c_int {
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `state` is the running state handed to this C function.
        unsafe { run::command_on_stack(state, MODE) }
    }))
    .unwrap_or(Done::Panicked);
    // SAFETY: see the function's documentation; every call is on `state`, which has
    // LUA_MINSTACK free slots (push_reply checks for more as it nests).
    unsafe {
        match done {
            Done::Permitted(yes) => {
                ffi::lua_pushboolean(state, c_int::from(yes));
                1
            }
            Done::Abort => {
                ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, ABORT_KEY.as_ptr());
                ffi::lua_error(state)
            }
            Done::Fail {
                ptr,
                len,
                raise,
                counted,
            } => {
                convert::push_error_table(state, std::slice::from_raw_parts(ptr, len));
                if counted {
                    convert::mark_counted(state);
                }
                if raise {
                    ffi::lua_error(state);
                }
                1
            }
            Done::Reply { ptr, len, raise } => {
                convert::push_reply(state, std::slice::from_raw_parts(ptr, len));
                if raise {
                    ffi::lua_error(state);
                }
                1
            }
            Done::NoScript => {
                let msg = b"no script is running";
                ffi::lua_pushlstring(state, msg.as_ptr() as *const _, msg.len());
                ffi::lua_error(state)
            }
            Done::Panicked => {
                convert::push_error_table(
                    state,
                    b"ERR internal error running a script's command (this is a Skein bug)",
                );
                ffi::lua_error(state)
            }
        }
    }
}
