//! One Lua 5.1 state per worker thread, set up as Redis sets up its own: the libraries
//! Redis loads (base, table, string, math; coroutine is part of base; cjson, cmsgpack, bit
//! and struct from [`super::libs`]), the `redis` table,
//! Redis's `math.random`, its `pcall`, and the global-protection sandbox.
//!
//! The sandbox: scripts see a globals table `E` that is empty and read-only (writing a
//! global raises "Attempt to modify a readonly table", as Redis's read-only tables do);
//! reads fall through to `R`, the allow-listed globals of script_lua.c, and a name not in
//! `R` raises "Script attempted to access nonexistent global variable". KEYS and ARGV are
//! put into `R` for each run. The real globals table of the state (with `print`,
//! `dofile`, `loadfile`) is replaced by `E`, so `loadstring` chunks see `E` too.
//!
//! Lua errors carry Redis's `{err = ...}` tables: functions written in Rust never raise;
//! they return what to raise, and small Lua wrappers (chunk `=skein`) raise it. The error
//! handler skips those frames to report the script's own line, as Redis's does.

use super::busy::{Busy, RunHandle, KILLED};
use super::cache::{Script, Sha};
use super::functions::Library;
use super::{convert, raise};
use crate::server::Server;
use mlua::{
    ffi, Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// The Lua side of the sandbox and the `redis` API (see the module documentation).
const BOOTSTRAP: &str = r#"
local G, rust, ABORT = ...
local lua_error, lua_type, lua_select = G.error, G.type, G.select
local lua_pcall, lua_xpcall, lua_rawset, lua_tostring = G.pcall, G.xpcall, G.rawset, G.tostring

local redis = {}
redis.call = rust.call
redis.pcall = rust.pcall
redis.acl_check_cmd = rust.acl_check_cmd
redis.log = rust.log
redis.setresp = rust.setresp
redis.set_repl = rust.set_repl
redis.sha1hex = rust.sha1hex
redis.error_reply = rust.error_reply
redis.status_reply = rust.status_reply
redis.breakpoint = rust.breakpoint
redis.debug = rust.debug
redis.replicate_commands = function() return true end
redis.REDIS_VERSION = rust.version
redis.REDIS_VERSION_NUM = rust.version_num
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

G.math.random = rust.random
G.math.randomseed = rust.randomseed

-- Redis's pcall: an error table becomes its err text. A restart request (ABORT) is
-- never caught by the script.
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if e == ABORT then lua_error(e, 0) end
  if lua_type(e) == 'table' then
    local s = e.err
    if lua_type(s) == 'string' or lua_type(s) == 'number' then e = s end
  end
  return false, e
end
local function xpcall_result(ok, ...)
  if not ok and (...) == ABORT then lua_error(ABORT, 0) end
  return ok, ...
end

local allowed = {
  'string', 'cjson', 'bit', 'cmsgpack', 'math', 'table', 'struct',
  'xpcall', 'tostring', 'getfenv', 'setmetatable', 'next', 'assert', 'tonumber',
  'rawequal', 'collectgarbage', 'getmetatable', 'rawset', 'pcall', 'coroutine', 'type',
  'select', 'unpack', 'gcinfo', 'pairs', 'rawget', 'loadstring', 'ipairs', '_VERSION',
  'setfenv', 'load', 'error',
}
local R = {}
for _, k in G.ipairs(allowed) do R[k] = G[k] end
local E = {}
R._G = E
R.redis = redis
R.pcall = function(f, ...) return pcall_result(lua_pcall(f, ...)) end
R.xpcall = function(f, h)
  return xpcall_result(lua_xpcall(f, function(e)
    if e == ABORT then return e end
    return h(e)
  end))
end
-- Writes to the globals or a library table raise, as on Redis's read-only tables.
local function readonly() lua_error('Attempt to modify a readonly table', 2) end
local function protect(t)
  local p = {}
  G.setmetatable(p, {__index = t, __newindex = readonly, __metatable = {}})
  return p
end
for _, k in G.ipairs({'string', 'math', 'table', 'coroutine', 'cjson', 'cmsgpack', 'bit', 'struct'}) do
  R[k] = protect(G[k])
end
R.redis = protect(redis)
local protected = {}
for _, v in G.pairs(R) do protected[v] = true end
protected[E] = true
R.rawset = function(t, k, v)
  if protected[t] then lua_error('Attempt to modify a readonly table', 0) end
  return lua_rawset(t, k, v)
end
local lua_setmetatable = G.setmetatable
R.setmetatable = function(t, m)
  if protected[t] then lua_error('Attempt to modify a readonly table', 0) end
  return lua_setmetatable(t, m)
end
local function nonexistent(_, k)
  lua_error("Script attempted to access nonexistent global variable '" .. lua_tostring(k) .. "'", 2)
end
G.setmetatable(R, {__index = nonexistent})
G.setmetatable(E, {__index = R, __newindex = readonly, __metatable = {}})

-- What a library's code sees while it loads (Redis's LIBRARY_API): redis.register_function,
-- redis.log and the version fields. make_env gives a library its globals and the
-- function that switches them to the scripts' globals once it has loaded.
local load_redis = {
  register_function = rust.register_function, log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}
G.setmetatable(load_redis, {__index = nonexistent})
local LOAD = G.setmetatable({redis = protect(load_redis)}, {__index = nonexistent})
-- What a function sees once its library has loaded: the scripts' globals, without KEYS
-- and ARGV, and a redis table without the debugger's functions and
-- replicate_commands (Redis's function engine registers none of them).
local fn_redis = {}
for k, v in G.pairs(redis) do fn_redis[k] = v end
fn_redis.debug, fn_redis.breakpoint, fn_redis.replicate_commands = nil, nil, nil
local FR = {}
for k, v in G.pairs(R) do FR[k] = v end
FR.redis = protect(fn_redis)
protected[FR] = true
protected[FR.redis] = true
G.setmetatable(FR, {__index = nonexistent})
local function make_env()
  local mt = {__index = LOAD, __newindex = readonly, __metatable = {}}
  return G.setmetatable({}, mt), function() mt.__index = FR end
end
return E, R, make_env
"#;

thread_local! {
    static STATE: RefCell<Option<LuaState>> = const { RefCell::new(None) };
    /// The script running on this thread (one at a time: scripts cannot call scripts).
    pub static RUN: RunFlags = RunFlags::default();
}

/// The script running on this thread: what it set through the `redis` API, and what the
/// busy-script check needs.
pub struct RunFlags {
    /// `redis.setresp(3)`: commands reply in RESP3 to the script.
    pub resp3: Cell<bool>,
    /// `redis.set_repl`: REPL_AOF (1) | REPL_REPLICA (2).
    pub repl: Cell<u8>,
    /// The server's `loglevel` when the run started (for `redis.log`).
    pub verbosity: Cell<u8>,
    running: Cell<bool>,
    start: Cell<Instant>,
    /// busy-reply-threshold when the run started (0: never busy).
    threshold_ms: Cell<i64>,
    timed_out: Cell<bool>,
    /// The script's SHA or the function's name (for the log).
    name: RefCell<Vec<u8>>,
    /// This thread's handle, reused by each run (see `super::busy`).
    pub handle: Arc<RunHandle>,
}

impl Default for RunFlags {
    fn default() -> Self {
        RunFlags {
            resp3: Cell::new(false),
            repl: Cell::new(3),
            verbosity: Cell::new(2),
            running: Cell::new(false),
            start: Cell::new(Instant::now()),
            threshold_ms: Cell::new(0),
            timed_out: Cell::new(false),
            name: RefCell::new(Vec::new()),
            handle: Arc::new(RunHandle::default()),
        }
    }
}

/// Is a script or function running on this thread (a command called by `redis.call`)?
pub fn in_script() -> bool {
    RUN.with(|r| r.running.get())
}

impl RunFlags {
    /// A run of the script `sha` starts (`eval`: not a function).
    pub fn begin(&self, srv: &Server, name: &[u8], eval: bool) {
        let hot = &srv.config.hot;
        self.resp3.set(false);
        self.repl.set(3);
        self.verbosity.set(hot.log_level.load(Relaxed) as u8);
        self.running.set(true);
        self.start.set(Instant::now());
        self.threshold_ms
            .set(hot.busy_reply_threshold_ms.load(Relaxed));
        self.timed_out.set(false);
        let mut n = self.name.borrow_mut();
        n.clear();
        n.extend_from_slice(name);
        self.handle.reset(eval);
    }

    /// The run is over: it leaves the busy list if it was there.
    pub fn end(&self, busy: &Busy) {
        self.running.set(false);
        if self.timed_out.replace(false) {
            busy.leave(&self.handle);
        }
    }

    /// A debugged script stopped at a prompt: listed as busy now (see `super::ldb`).
    pub fn mark_busy(&self, busy: &Busy) {
        if self.running.get() && !self.timed_out.replace(true) {
            busy.enter(&self.handle);
        }
    }

    /// Redis's scriptInterrupt: time the run out past the threshold; the error to raise
    /// once it is killed (or the server shuts down).
    pub fn check(&self, busy: &Busy) -> Result<(), &'static str> {
        if !self.running.get() {
            return Ok(());
        }
        if !self.timed_out.get() {
            let threshold = self.threshold_ms.get();
            let elapsed = self.start.get().elapsed().as_millis() as i64;
            if threshold <= 0 || elapsed < threshold {
                return Ok(());
            }
            self.timed_out.set(true);
            busy.enter(&self.handle);
            let eval = self.handle.eval.load(Relaxed);
            let name = self.name.borrow();
            crate::log::warning(&format!(
                "Slow script detected: still in execution after {elapsed} milliseconds. You can try \
                 killing the script using the {} command. Script name is: {}.",
                if eval { "SCRIPT KILL" } else { "FUNCTION KILL" },
                String::from_utf8_lossy(&name)
            ));
        }
        if busy.shutdown.load(Relaxed) {
            return Err("Script killed by user with SHUTDOWN NOSAVE...");
        }
        if self.handle.killed.load(Relaxed) {
            crate::log::warning("Lua script killed by user with SCRIPT KILL.");
            return Err(KILLED);
        }
        Ok(())
    }
}

/// A worker's Lua state.
pub struct LuaState {
    pub lua: Lua,
    /// The cache generation the compiled functions belong to.
    generation: u64,
    /// The memory last added to the server's total (INFO used_memory_lua).
    reported: usize,
    functions: HashMap<Sha, Function>,
    /// The allow-listed globals (KEYS and ARGV go here).
    pub globals: Table,
    /// Gives a library its globals (see BOOTSTRAP).
    make_env: Function,
    /// `redis.register_function` outside FUNCTION LOAD.
    register_outside: Function,
    /// The libraries compiled here: name -> (library id, its functions).
    libraries: HashMap<Vec<u8>, CompiledLibrary>,
    /// The value a restart request raises (see `super::run`).
    pub abort: Table,
    /// Lua's own xpcall, and the error handler scripts run under.
    pub xpcall: Function,
    /// `call_with(f, handler, keys, args)`: xpcall of `f(keys, args)` (FCALL).
    pub call_with: Function,
    pub handler: Function,
    /// An EVAL set KEYS and ARGV since a function last cleared them.
    keys_argv_set: bool,
    /// What `super::eval_globals::set` reads from the registry.
    eval_refs: super::eval_globals::Refs,
}

/// Run `f` with this thread's Lua state (created on first use, and again after SCRIPT
/// FLUSH). `None` if the state is already in use on this thread or cannot be created.
pub fn with<R>(srv: &Server, f: impl FnOnce(&mut LuaState) -> R) -> Result<R, String> {
    STATE.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| "ERR the Lua state of this worker is busy".to_string())?;
        let generation = srv.scripts.generation();
        if slot.as_ref().is_none_or(|s| s.generation != generation) {
            if let Some(old) = slot.take() {
                srv.scripts.vm_changed(-(old.reported as isize));
            }
            let busy = srv.scripts.busy.clone();
            *slot = Some(LuaState::new(generation, busy).map_err(|e| format!("ERR Lua: {e}"))?);
        }
        let st = slot.as_mut().ok_or("ERR Lua state unavailable")?;
        let r = f(st);
        let now = st.lua.used_memory();
        srv.scripts.vm_changed(now as isize - st.reported as isize);
        st.reported = now;
        Ok(r)
    })
}

/// Drop this thread's Lua state, its memory no longer counted (a thread that ran
/// scripts is ending: a debugging session's, `super::ldb`).
pub fn discard(srv: &Server) {
    if let Some(old) = STATE.with(|cell| cell.try_borrow_mut().ok()?.take()) {
        srv.scripts.vm_changed(-(old.reported as isize));
    }
}

impl LuaState {
    fn new(generation: u64, busy: Arc<Busy>) -> mlua::Result<LuaState> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        super::libs::open(&lua)?;
        let real = lua.globals();
        let xpcall: Function = real.raw_get("xpcall")?;
        let tostring: Function = real.raw_get("tostring")?;
        let rust = api(&lua)?;
        let abort = lua.create_table()?;
        // The bootstrap chunk's closures see an empty environment: nothing they are
        // reachable from (getfenv) leads back to the real globals.
        let (env, globals, make_env): (Table, Table, Function) = lua
            .load(BOOTSTRAP)
            .set_name("=skein")
            .set_environment(lua.create_table()?)
            .call((real, rust, abort.clone()))?;
        lua.set_globals(env)?;
        let eval_refs = super::eval_globals::Refs::new(&lua, &globals)?;
        let register_outside = lua.create_function(|lua, _: MultiValue| {
            let e = convert::error_table(
                lua,
                b"redis.register_function can only be called on FUNCTION LOAD command",
            )?;
            Ok((Value::Table(e), true))
        })?;
        lua.set_named_registry_value(raise::key_str(raise::LOAD_KEY), register_outside.clone())?;
        lua.set_named_registry_value(raise::key_str(super::call_c::ABORT_KEY), abort.clone())?;
        let handler = error_handler(&lua, tostring)?;
        let call_with: Function = lua
            .load(CALL_WITH)
            .set_name("=skein")
            .set_environment(lua.create_table()?)
            .call(xpcall.clone())?;
        // Redis's luaMaskCountHook: every 100,000 instructions, the busy-script check.
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(100_000),
            move |_, _| match RUN.with(|r| r.check(&busy)) {
                Ok(()) => Ok(VmState::Continue),
                Err(msg) => Err(mlua::Error::RuntimeError(msg.to_string())),
            },
        )?;
        Ok(LuaState {
            lua,
            generation,
            reported: 0,
            functions: HashMap::new(),
            globals,
            make_env,
            register_outside,
            libraries: HashMap::new(),
            abort,
            xpcall,
            call_with,
            handler,
            keys_argv_set: false,
            eval_refs,
        })
    }

    /// The compiled function of `script` in this state (compiled on first use). The
    /// error is Redis's reply text.
    pub fn function(&mut self, script: &Script) -> Result<Function, String> {
        if let Some(f) = self.functions.get(&script.sha) {
            return Ok(f.clone());
        }
        let f = self.compile(script)?;
        self.functions.insert(script.sha, f.clone());
        Ok(f)
    }

    /// Compile `script` (as Redis's luaCreateFunction does).
    pub fn compile(&self, script: &Script) -> Result<Function, String> {
        self.lua
            .load(script.code())
            .set_name("@user_script")
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                format!("ERR Error compiling script (new function): {msg}")
            })
    }

    /// The callback of function `name` of `lib` in this state (the library compiled here
    /// on first use).
    pub fn library_function(&mut self, lib: &Library, name: &[u8]) -> Result<Function, String> {
        if let Some((id, fns)) = self.libraries.get(&lib.name) {
            if *id == lib.id {
                return fns
                    .get(name)
                    .cloned()
                    .ok_or_else(|| "ERR Function not found".into());
            }
        }
        let fns: HashMap<Vec<u8>, Function> = self
            .load_library(lib.body())?
            .into_iter()
            .map(|r| (r.name, r.callback))
            .collect();
        let f = fns.get(name).cloned();
        self.libraries.insert(lib.name.clone(), (lib.id, fns));
        f.ok_or_else(|| "ERR Function not found".into())
    }

    /// Run a library's code (after its shebang line) so it registers its functions, as
    /// Redis's luaEngineCreate does. The error is the reply's text.
    pub fn load_library(&self, body: &[u8]) -> Result<Vec<Registered>, String> {
        let lua_err = |e: mlua::Error| format!("ERR {e}");
        let (env, activate): (Table, Function) = self.make_env.call(()).map_err(lua_err)?;
        let chunk = self
            .lua
            .load(body)
            .set_name("@user_function")
            .set_environment(env)
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                format!("ERR Error compiling function: {msg}")
            })?;
        let collected = RefCell::new(Vec::new());
        let key = raise::key_str(raise::LOAD_KEY);
        let result = self.lua.scope(|scope| {
            let register = scope.create_function(|lua, args: MultiValue| {
                let args: Vec<Value> = args.into_iter().skip(1).collect();
                let registered = super::functions_lua::register(&args, &collected.borrow());
                match registered {
                    Ok(r) => {
                        collected.borrow_mut().push(r);
                        Ok((Value::Nil, false))
                    }
                    Err(msg) => Ok((
                        Value::Table(convert::error_table(lua, msg.as_bytes())?),
                        true,
                    )),
                }
            })?;
            self.lua.set_named_registry_value(key, register)?;
            let r = self
                .xpcall
                .call::<(bool, Value)>((chunk, self.handler.clone()));
            self.lua
                .set_named_registry_value(key, self.register_outside.clone())?;
            r
        });
        match result.map_err(lua_err)? {
            (true, _) => {}
            (false, err) => {
                let msg = match &err {
                    Value::Table(t) => t.get::<Option<mlua::LuaString>>("err").ok().flatten(),
                    _ => None,
                };
                let msg = msg.map_or(String::new(), |m| {
                    String::from_utf8_lossy(&m.as_bytes()).into_owned()
                });
                return Err(format!("ERR Error registering functions: {msg}"));
            }
        }
        activate.call::<()>(()).map_err(lua_err)?;
        let list = collected.into_inner();
        if list.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok(list)
    }

    /// Set EVAL's globals KEYS and ARGV to arrays of these strings
    /// (`super::eval_globals`).
    pub fn set_keys_argv(&mut self, keys: &[&[u8]], args: &[&[u8]]) -> Result<(), String> {
        super::eval_globals::set(&self.lua, &self.eval_refs, keys, args)?;
        self.keys_argv_set = true;
        Ok(())
    }

    /// Remove KEYS and ARGV (a function sees neither), if a script set them.
    pub fn clear_keys_argv(&mut self) -> mlua::Result<()> {
        if std::mem::take(&mut self.keys_argv_set) {
            self.globals.raw_set("KEYS", Value::Nil)?;
            self.globals.raw_set("ARGV", Value::Nil)?;
        }
        Ok(())
    }

    /// An array of strings.
    pub fn array(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, it) in items.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(it)?)?;
        }
        Ok(t)
    }
}

/// `call_with(f, h, k, a)`: `xpcall` of `f(k, a)` under handler `h` without a closure
/// per call (Lua 5.1's xpcall passes no arguments): the call's function and arguments
/// wait in upvalues of one trampoline, cleared when it returns (FCALL is refused inside
/// a script, so calls never nest).
const CALL_WITH: &str = "local xpcall = ...
local F, K, A
local function call() return F(K, A) end
local function done(...) F, K, A = nil, nil, nil return ... end
return function(f, h, k, a) F, K, A = f, k, a return done(xpcall(call, h)) end";

/// A library compiled in a worker's state: its load's id and its functions' callbacks.
type CompiledLibrary = (u64, HashMap<Vec<u8>, Function>);

/// A function a library registered.
pub struct Registered {
    pub name: Vec<u8>,
    pub description: Option<Vec<u8>>,
    pub flags: super::flags::ScriptFlags,
    pub callback: Function,
}

/// Redis's `__redis__err__handler`: the error as a table, with the source and line of
/// the script code that raised it.
fn error_handler(lua: &Lua, tostring: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, err: Value| {
        let mut at = None;
        for level in 1.. {
            let Some((what, source, line)) = lua.inspect_stack(level, |d| {
                let s = d.source();
                (s.what, s.source.map(|x| x.into_owned()), d.current_line())
            }) else {
                break;
            };
            if what == "C" || source.as_deref() == Some("=skein") {
                continue;
            }
            at = Some((source, line));
            break;
        }
        let t = match err {
            Value::Table(t) => t,
            Value::Error(e) => {
                let t = lua.create_table()?;
                t.raw_set("err", format!("ERR {}", error_text(&e)))?;
                t
            }
            other => {
                let text: mlua::LuaString = tostring.call(other)?;
                let mut msg = b"ERR ".to_vec();
                msg.extend_from_slice(&text.as_bytes());
                let t = lua.create_table()?;
                t.raw_set("err", lua.create_string(msg)?)?;
                t
            }
        };
        if let Some((Some(source), line)) = at {
            t.set("source", source)?;
            t.set("line", line.map_or(-1, |l| l as i64))?;
        }
        Ok(t)
    })
}

/// The text of an error raised from Rust (the busy-script hook).
fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}

/// The functions of the `redis` API written in Rust (wrapped by the bootstrap chunk).
fn api(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("version", crate::REDIS_VERSION)?;
    t.raw_set("version_num", version_num())?;
    lua.set_named_registry_value(
        raise::key_str(raise::API_KEY),
        lua.create_function(|lua, args: MultiValue| {
            let mut args = args.into_iter();
            let mode = args.next().and_then(|m| number(&m)).unwrap_or(-1.0) as u8;
            let args: Vec<Value> = args.collect();
            let outcome = match mode {
                raise::LOG => log(&args).map(|()| Value::Nil),
                raise::SETRESP => setresp(&args).map(|()| Value::Nil),
                raise::SET_REPL => set_repl(&args).map(|()| Value::Nil),
                raise::SHA1HEX => sha1hex(lua, &args),
                raise::RANDOM => {
                    return Ok(match random(&args) {
                        Ok(n) => (Value::Number(n), false),
                        Err(msg) => (lua_c_error(lua, &msg)?, true),
                    })
                }
                _ => {
                    return Ok(match checkint(&args, 1, "randomseed") {
                        Ok(seed) => {
                            super::rand48::seed(seed);
                            (Value::Nil, false)
                        }
                        Err(msg) => (lua_c_error(lua, &msg)?, true),
                    })
                }
            };
            match outcome {
                Ok(v) => Ok((v, false)),
                Err(msg) => Ok((
                    Value::Table(convert::error_table(lua, msg.as_bytes())?),
                    true,
                )),
            }
        })?,
    )?;
    let c_functions: [(&str, ffi::lua_CFunction); 12] = [
        ("debug", super::ldb::hook::lua_debug),
        ("breakpoint", super::ldb::hook::lua_breakpoint),
        ("call", super::call_c::command::<{ raise::CALL }>),
        ("pcall", super::call_c::command::<{ raise::PCALL }>),
        ("acl_check_cmd", super::call_c::command::<{ raise::ACL }>),
        ("log", raise::trampoline::<{ raise::LOG }>),
        ("setresp", raise::trampoline::<{ raise::SETRESP }>),
        ("set_repl", raise::trampoline::<{ raise::SET_REPL }>),
        ("sha1hex", raise::trampoline::<{ raise::SHA1HEX }>),
        ("random", raise::trampoline::<{ raise::RANDOM }>),
        ("randomseed", raise::trampoline::<{ raise::RANDOMSEED }>),
        (
            "register_function",
            raise::trampoline::<{ raise::REGISTER }>,
        ),
    ];
    for (name, f) in c_functions {
        // SAFETY: `trampoline`, `command` and the debugger's are lua_CFunctions that are
        // sound to call from Lua (see `raise::trampoline`, `call_c::command`, `ldb::hook`).
        t.raw_set(name, unsafe { lua.create_c_function(f)? })?;
    }
    t.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            let text = match (args.len(), args.front()) {
                (1, Some(Value::String(s))) => {
                    let s = s.as_bytes();
                    let mut e = Vec::with_capacity(s.len() + 1);
                    if !s.starts_with(b"-") {
                        e.push(b'-');
                    }
                    e.extend_from_slice(&s);
                    e
                }
                _ => b"wrong number or type of arguments".to_vec(),
            };
            super::convert::error_table(lua, &text)
        })?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| {
            let t = lua.create_table()?;
            match (args.len(), args.front()) {
                (1, Some(Value::String(s))) => t.raw_set("ok", s.clone())?,
                _ => t.raw_set("err", "ERR wrong number or type of arguments")?,
            }
            Ok(t)
        })?,
    )?;
    Ok(t)
}

/// Redis's math.random (the one shipped with Lua, on redisLrand48).
fn random(args: &[Value]) -> Result<f64, String> {
    const MAX: i32 = i32::MAX;
    let r = (super::rand48::next() % MAX) as f64 / MAX as f64;
    match args.len() {
        0 => Ok(r),
        1 => {
            let u = checkint(args, 1, "random")?;
            if u < 1 {
                return Err("bad argument #1 to 'random' (interval is empty)".into());
            }
            Ok((r * u as f64).floor() + 1.0)
        }
        2 => {
            let l = checkint(args, 1, "random")?;
            let u = checkint(args, 2, "random")?;
            if l > u {
                return Err("bad argument #2 to 'random' (interval is empty)".into());
            }
            Ok((r * (u as f64 - l as f64 + 1.0)).floor() + l as f64)
        }
        _ => Err("wrong number of arguments".into()),
    }
}

/// luaL_checkint on argument `n` (1-based) of function `name`.
fn checkint(args: &[Value], n: usize, name: &str) -> Result<i32, String> {
    let v = args.get(n - 1);
    match v.and_then(number) {
        Some(x) => Ok(x as i64 as i32),
        None => {
            let got = v.map_or("no value", |v| v.type_name());
            Err(format!(
                "bad argument #{n} to '{name}' (number expected, got {got})"
            ))
        }
    }
}

/// A luaL_error raised from one of the C functions: `msg` prefixed with the calling
/// script's position (luaL_where(L, 1): level 2 from here, past the C function).
fn lua_c_error(lua: &Lua, msg: &str) -> mlua::Result<Value> {
    let at = lua
        .inspect_stack(2, |d| {
            let line = d.current_line()?;
            let src = d.source().short_src?.into_owned();
            Some(format!("{src}:{line}: "))
        })
        .flatten()
        .unwrap_or_default();
    Ok(Value::String(lua.create_string(format!("{at}{msg}"))?))
}

/// REDIS_VERSION_NUM: 0x00MMmmpp.
fn version_num() -> i64 {
    let mut parts = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// A Lua number, or a string Lua would convert to one (lua_tonumber).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes())
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        _ => None,
    }
}

/// A string, or a number as Lua's tostring shows it (lua_tolstring).
pub fn lua_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(resp::fmt::fmt_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// redis.setresp(2|3).
fn setresp(args: &[Value]) -> Result<(), &'static str> {
    if args.len() != 1 {
        return Err("redis.setresp() requires one argument.");
    }
    match number(&args[0]).map(|n| n as i64) {
        Some(2) => RUN.with(|r| r.resp3.set(false)),
        Some(3) => RUN.with(|r| r.resp3.set(true)),
        _ => return Err("RESP version must be 2 or 3."),
    }
    Ok(())
}

/// redis.set_repl(flags).
fn set_repl(args: &[Value]) -> Result<(), &'static str> {
    if args.len() != 1 {
        return Err("redis.set_repl() requires two arguments.");
    }
    let flags = args.first().and_then(number).unwrap_or(0.0) as i64;
    if flags & !3 != 0 {
        return Err(
            "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        );
    }
    RUN.with(|r| r.repl.set(flags as u8));
    Ok(())
}

/// redis.sha1hex(string).
fn sha1hex(lua: &Lua, args: &[Value]) -> Result<Value, &'static str> {
    if args.len() != 1 {
        return Err("wrong number of arguments");
    }
    let data = lua_bytes(&args[0]).unwrap_or_default();
    let sha = super::cache::sha1_hex(&data);
    lua.create_string(sha)
        .map(Value::String)
        .map_err(|_| "out of memory")
}

/// redis.log(level, ...).
fn log(args: &[Value]) -> Result<(), &'static str> {
    if args.len() < 2 {
        return Err("redis.log() requires two arguments or more.");
    }
    let Some(level) = number(&args[0]) else {
        return Err("First argument must be a number (log level).");
    };
    let level = level as i64;
    if !(0..=3).contains(&level) {
        return Err("Invalid debug level.");
    }
    let parts: Vec<String> = args
        .iter()
        .skip(1)
        .filter_map(lua_bytes)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    let line = parts.join(" ");
    if level as u8 >= RUN.with(|r| r.verbosity.get()) {
        crate::log::at(level as u8, &line);
    }
    Ok(())
}
