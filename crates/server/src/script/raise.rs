//! The C functions behind the `redis` functions that raise Redis's error tables (but
//! `redis.call`, `redis.pcall` and `redis.acl_check_cmd`: `super::call_c`).
//!
//! Why C functions: a Lua function calling `error` would lose the script's line in
//! Redis's error texts (`return redis.call(...)` is a tail call, which replaces the
//! script's frame with the callee's in Lua 5.1, unless the callee is a C function), and
//! mlua gives Rust callbacks no way to raise a Lua table as the error value. So each of
//! these is a small C function that calls its Rust implementation (an ordinary mlua
//! function kept in the registry) and raises what it returned.

use mlua::ffi;
use std::os::raw::c_int;

/// Registry key of `redis.register_function`'s implementation: the library being loaded
/// collects its functions there (`super::state::LuaState::load_library`).
pub const LOAD_KEY: &std::ffi::CStr = c"skein.load";
/// Registry key of the static API function (`super::state`), same convention.
pub const API_KEY: &std::ffi::CStr = c"skein.api";

/// A registry key as mlua names it.
pub fn key_str(key: &std::ffi::CStr) -> &str {
    key.to_str().unwrap_or_default()
}

/// `redis.call`: a command's error reply raises.
pub const CALL: u8 = 0;
/// `redis.pcall`: a command's error reply is returned.
pub const PCALL: u8 = 1;
/// `redis.acl_check_cmd`.
pub const ACL: u8 = 2;
pub const LOG: u8 = 3;
pub const SETRESP: u8 = 4;
pub const SET_REPL: u8 = 5;
pub const SHA1HEX: u8 = 6;
/// `math.random` and `math.randomseed` (errors are strings, as luaL_error's).
pub const RANDOM: u8 = 7;
pub const RANDOMSEED: u8 = 8;
/// `redis.register_function` (while a library loads).
pub const REGISTER: u8 = 9;

/// Calls `registry[LOAD_KEY or API_KEY](MODE, args...)` and raises its first result when
/// its second is true, else returns the first.
///
/// # Safety
/// Called by Lua only, as a `lua_CFunction`. It holds no Rust value with a destructor:
/// `lua_call` may unwind through it (an error inside the callee) and `lua_error` leaves
/// it by `longjmp`, both of which only skip frames without destructors (plain integers
/// here). A C function has LUA_MINSTACK (20) free slots; it pushes at most 2 beyond its
/// arguments before the call.
pub unsafe extern "C-unwind" fn trampoline<const MODE: u8>(state: *mut ffi::lua_State) -> c_int {
    let key = match MODE {
        REGISTER => LOAD_KEY,
        _ => API_KEY,
    };
    // SAFETY: see the function's documentation; every call below is on `state`, the
    // running Lua state handed to this C function.
    unsafe {
        let n = ffi::lua_gettop(state);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, key.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_pushinteger(state, MODE as ffi::lua_Integer);
        ffi::lua_insert(state, 2);
        ffi::lua_call(state, n + 1, 2);
        if ffi::lua_toboolean(state, -1) != 0 {
            ffi::lua_pop(state, 1);
            ffi::lua_error(state)
        }
        ffi::lua_pop(state, 1);
        1
    }
}
