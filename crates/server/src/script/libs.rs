//! The C libraries Redis gives scripts: `cjson`, `cmsgpack`, `bit` and `struct`, compiled
//! from Redis 7.0.15's own sources (`crates/server/vendor/lua-libs`, built by build.rs).

use mlua::{ffi, Lua};
use std::os::raw::c_int;

unsafe extern "C-unwind" {
    fn luaopen_cjson(state: *mut ffi::lua_State) -> c_int;
    fn luaopen_cmsgpack(state: *mut ffi::lua_State) -> c_int;
    fn luaopen_bit(state: *mut ffi::lua_State) -> c_int;
    fn luaopen_struct(state: *mut ffi::lua_State) -> c_int;
}

/// Open the libraries in `lua`; each sets its global (`cjson`, `cmsgpack`, `bit`,
/// `struct`), as in Redis's luaLoadLibraries.
pub fn open(lua: &Lua) -> mlua::Result<()> {
    let opens: [ffi::lua_CFunction; 4] =
        [luaopen_cjson, luaopen_cmsgpack, luaopen_bit, luaopen_struct];
    for open in opens {
        // SAFETY: each is a lua_CFunction of the C library, linked against the same Lua
        // 5.1 (its headers come from mlua-sys, see build.rs); called by Lua like any C
        // function.
        let f = unsafe { lua.create_c_function(open)? };
        f.call::<()>(())?;
    }
    Ok(())
}
