//! EVAL's `KEYS` and `ARGV` globals, built with Lua's C API.
//!
//! Every EVAL/EVALSHA run gives the script fresh `KEYS` and `ARGV` arrays, as Redis's
//! luaCreateArray does. Through mlua each array cost about 1,500 instructions (a
//! registry reference per string, a stack guard per call): 16% of an EVALSHA of INCR +
//! EXPIRE under callgrind. Here they are made directly on the state's stack.

use mlua::{ffi, Lua};
use std::ffi::{c_char, c_int};

/// What [`set`] needs, held in the Lua registry (read back by integer reference, which
/// costs neither a string's hashing nor a lookup by name): the sandbox's globals table
/// (where a script's `KEYS` and `ARGV` are found) and the two names.
pub struct Refs {
    globals: mlua::RegistryKey,
    keys: mlua::RegistryKey,
    argv: mlua::RegistryKey,
}

impl Refs {
    pub fn new(lua: &Lua, globals: &mlua::Table) -> mlua::Result<Refs> {
        Ok(Refs {
            globals: lua.create_registry_value(globals.clone())?,
            keys: lua.create_registry_value(lua.create_string("KEYS")?)?,
            argv: lua.create_registry_value(lua.create_string("ARGV")?)?,
        })
    }
}

/// Set `KEYS` and `ARGV` in the sandbox's globals to new arrays of these strings.
pub fn set(lua: &Lua, refs: &Refs, keys: &[&[u8]], args: &[&[u8]]) -> Result<(), &'static str> {
    if keys.len().max(args.len()) >= c_int::MAX as usize {
        return Err("ERR too many arguments for a script");
    }
    let state = lua.exec_raw_lua(|raw| raw.state());
    let registry = |key: &mlua::RegistryKey| key.id() as ffi::lua_Integer;
    // SAFETY: `state` is this thread's Lua state, used by nothing else meanwhile (its
    // `LuaState` is borrowed mutably by the caller), and not inside any Lua call (runs
    // set their globals before calling the script), so its stack is the main one; the
    // stack is left as found (`lua_settop`). None of these calls can raise a Lua error,
    // which would unwind through this Rust frame: there is room for the 4 values pushed
    // (`lua_checkstack`); no metamethod runs (raw reads and writes only; the registry
    // entries are live, their `RegistryKey`s held by `refs`); keys are strings; and no
    // allocation fails: the state has no memory limit (mlua's allocator then aborts the
    // process on exhaustion, `handle_alloc_error`, instead of returning null to Lua),
    // which is why mlua itself makes these calls unprotected for such a state. Each
    // string is copied by `lua_pushlstring` from a slice valid for the call. Indices
    // fit a C int (checked above).
    unsafe {
        if ffi::lua_checkstack(state, 4) == 0 {
            return Err("ERR Lua stack overflow");
        }
        let top = ffi::lua_gettop(state);
        ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, registry(&refs.globals));
        for (name, items) in [(&refs.keys, keys), (&refs.argv, args)] {
            ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, registry(name));
            ffi::lua_createtable(state, items.len() as c_int, 0);
            for (i, item) in items.iter().enumerate() {
                ffi::lua_pushlstring(state, item.as_ptr() as *const c_char, item.len());
                ffi::lua_rawseti(state, -2, i as ffi::lua_Integer + 1);
            }
            ffi::lua_rawset(state, -3);
        }
        ffi::lua_settop(state, top);
    }
    Ok(())
}
