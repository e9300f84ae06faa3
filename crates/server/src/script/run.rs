//! Running a script: its declared keys' shards are held by the dispatcher (EVAL's key
//! specs) for the whole run; `redis.call` runs each command through `dispatch::call`
//! with those locks, the command's reply converted to Lua ([`super::convert`]).
//!
//! Keys the script did not declare: before a command runs, its lock plan is checked
//! against what the run holds. Missing shards are taken without waiting
//! (`Locked::try_extend`: never blocking, so never a deadlock; nothing released before
//! the end, so the run stays serializable). When a shard is busy:
//! - if the run has not written yet (no write or may-replicate command called), it is
//!   abandoned (every later `redis.call` raises a value scripts cannot catch) and run
//!   again from the start holding the shards it held plus the busy one, taken in (db,
//!   shard) order like any command (a rerun mostly touches the same keys); if that run
//!   too meets a busy shard it did not hold, it runs again holding its whole database
//!   (every database if it reached another one), and the script is remembered so later
//!   runs hold the whole database from the start (`Script::whole_db`);
//! - if it has written (or runs inside MULTI/EXEC, whose earlier commands cannot be
//!   undone), it retries for up to [`BUSY_WAIT`] and then fails that command with an
//!   error, the script also remembered for later runs.
//!
//! Writes are propagated as their effects, one record for the run (wrapped in
//! MULTI/EXEC when there are several), as Redis 7.0 does.

use super::cache::Script;
use super::flags::ScriptFlags;
use super::functions::{Function as LibFunction, Library};
use super::state::{self, LuaState, RUN};
use super::{active, convert, raise};
use crate::cmd::table::CommandDef;
use crate::cmd::Ctx;
use crate::dispatch;
use engine::Plan;
use mlua::{ffi, Value};
use resp::{Proto, ReplyBuf};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a run that has written waits for a busy shard of an undeclared key. No
/// thread waits for a shard while holding another (`engine::Keyspace::lock`), so the
/// holder is running and releases it soon, unless it is another script waiting, the same
/// way, for a shard this run holds: then one of them gives up at this limit.
const BUSY_WAIT: Duration = Duration::from_secs(1);

/// How many times a run is started again under a wider lock.
const MAX_ATTEMPTS: usize = 3;

/// What runs: an EVAL script, or a function of a library (FCALL).
pub enum Target<'a> {
    Eval(&'a Arc<Script>),
    Function(&'a Arc<Library>, &'a LibFunction),
}

impl Target<'_> {
    fn flags(&self) -> ScriptFlags {
        match self {
            Target::Eval(s) => s.flags,
            Target::Function(_, f) => f.flags,
        }
    }

    /// The name in errors and logs: the SHA, or the function's name.
    fn name(&self) -> &[u8] {
        match self {
            Target::Eval(s) => &s.sha,
            Target::Function(_, f) => &f.name,
        }
    }

    fn is_eval(&self) -> bool {
        matches!(self, Target::Eval(_))
    }

    /// Later runs hold the whole database from the start.
    fn mark_whole_db(&self, srv: &crate::server::Server) {
        match self {
            Target::Eval(s) => srv.scripts.mark_whole_db(s),
            Target::Function(_, f) => {
                f.whole_db.store(true, Relaxed);
                srv.scripts.mark_any_whole_db();
            }
        }
    }
}

/// The state of one run, shared by its `redis.call`s.
struct Run<'s> {
    target: &'s Target<'s>,
    /// The database the script's commands run in (SELECT inside the script changes it).
    db: usize,
    read_only: bool,
    /// A write (or may-replicate) command was called: the run can no longer restart.
    wrote: bool,
    /// A write command was called (Redis's SCRIPT_WRITE_DIRTY): later writes are allowed
    /// even when memory was over `maxmemory` when the script started.
    dirty: bool,
    /// The run may restart under a wider lock (not inside MULTI/EXEC).
    may_restart: bool,
    /// Abandoned: restart under a wider lock.
    restart: Option<Restart>,
    /// The buffer each `redis.call`'s reply is written to.
    reply: ReplyBuf,
    /// The text of the error table a `redis.call` fails with.
    fail: Vec<u8>,
}

/// Where the keys of `EVAL|FCALL x numkeys key... arg...` end, or Redis's error.
pub fn keys_end(argv: &[&[u8]], numkeys: i64) -> Result<usize, &'static str> {
    if numkeys > (argv.len() - 3) as i64 {
        return Err("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative");
    }
    Ok(3 + numkeys as usize)
}

/// Run `script` for the client of `ctx` (EVAL/EVALSHA after their argument checks) and
/// reply.
pub fn run(ctx: &mut Ctx, target: &Target, keys: &[&[u8]], args: &[&[u8]], ro: bool) {
    let flags = target.flags();
    if ro && !flags.compat && !flags.no_writes {
        return ctx
            .out
            .error("ERR Can not execute a script with write flag using *_ro command.");
    }
    let own_ops = ctx.exec_ops.is_none();
    if own_ops {
        ctx.exec_ops = Some(Vec::new());
    }
    let caller_db = ctx.client.db;
    for attempt in 1..=MAX_ATTEMPTS {
        RUN.with(|r| {
            r.begin(ctx.srv, target.name(), target.is_eval());
            r.handle.set_held(ctx.keys.scope(), ctx.keys.held_shards());
        });
        let outcome = state::with(ctx.srv, |st| {
            attempt_run(ctx, st, target, keys, args, flags.read_only(ro), own_ops)
        })
        .and_then(|r| r);
        ctx.client.db = caller_db;
        ctx.keys.set_db(caller_db);
        match outcome {
            Err(msg) => {
                ctx.out.error(&msg);
                break;
            }
            Ok(Some(restart)) if attempt < MAX_ATTEMPTS => {
                // First the shards the run held plus the busy one, taken in order (most
                // reruns touch the same keys); then the whole database, which later runs
                // of the script hold from the start.
                let mut plan = Plan::new();
                match restart {
                    Restart::Shards(shards) if attempt == 1 => {
                        for (d, s) in shards {
                            plan.shard(d as usize, s as usize);
                        }
                    }
                    Restart::Shards(_) | Restart::WholeDb => {
                        target.mark_whole_db(ctx.srv);
                        plan.whole_db(caller_db);
                    }
                    Restart::All => {
                        target.mark_whole_db(ctx.srv);
                        plan.all();
                    }
                }
                // Not behind a busy script (one stopped in the debugger included): -BUSY
                // rather than this worker waiting for it.
                let srv = ctx.srv;
                let busy = &srv.scripts.busy;
                let give_up = |scope: engine::Scope, slots: &[(u32, u32)]| {
                    busy.active() && busy.blocking(&srv.keyspace, scope, slots).is_some()
                };
                if !ctx.keys.relock_or(&mut plan, &give_up) {
                    let msg = busy
                        .blocking(&srv.keyspace, plan.scope(), plan.slots())
                        .unwrap_or(super::busy::BUSY_EVAL);
                    ctx.out.error(msg);
                    break;
                }
            }
            Ok(Some(_)) => {
                ctx.out
                    .error("ERR script could not take the locks of its undeclared keys");
                break;
            }
            Ok(None) => break,
        }
    }
    RUN.with(|r| r.end(&ctx.srv.scripts.busy));
    ctx.client.info.db.store(caller_db, Relaxed);
    if own_ops {
        if let Some(ops) = ctx.exec_ops.take() {
            ctx.srv.propagation.push(ctx.client.worker, ops);
        }
    }
}

/// What an abandoned run restarts holding.
enum Restart {
    /// These (db, shard) pairs: what it held and what it needed.
    Shards(Vec<(u32, u32)>),
    /// Its whole database.
    WholeDb,
    /// Every database.
    All,
}

/// One attempt. `Ok(Some(restart))`: abandoned, to restart under a wider lock;
/// `Ok(None)`: replied; `Err`: the error reply's text.
fn attempt_run(
    ctx: &mut Ctx,
    st: &mut LuaState,
    target: &Target,
    keys: &[&[u8]],
    args: &[&[u8]],
    read_only: bool,
    may_restart: bool,
) -> Result<Option<Restart>, String> {
    let lua_err = |e: mlua::Error| format!("ERR Error running script: {e}");
    // EVAL: KEYS and ARGV are globals; a function gets them as its two arguments.
    let (f, call_args) = match target {
        Target::Eval(script) => {
            let f = st.function(script)?;
            st.set_keys_argv(keys, args)?;
            (f, None)
        }
        Target::Function(lib, def) => {
            let f = st.library_function(lib, &def.name)?;
            // Functions have no KEYS/ARGV globals (Redis runs them in a Lua of their own).
            st.clear_keys_argv().map_err(lua_err)?;
            let k = st.array(keys).map_err(lua_err)?;
            let a = st.array(args).map_err(lua_err)?;
            (f, Some((k, a)))
        }
    };
    let run = Run {
        target,
        db: ctx.client.db,
        read_only,
        wrote: false,
        dirty: false,
        may_restart,
        restart: None,
        reply: ReplyBuf::new(Proto::Resp2),
        fail: Vec::new(),
    };
    let shared: RefCell<Shared> = RefCell::new((&mut *ctx, run));
    let result = {
        // The run's `redis.call`s reach `shared` through `command_on_stack`.
        let _published = active::Published::new(&shared);
        match call_args {
            None => st.xpcall.call::<(bool, Value)>((f, st.handler.clone())),
            Some((k, a)) => st
                .call_with
                .call::<(bool, Value)>((f, st.handler.clone(), k, a)),
        }
    };
    let (ctx, run) = shared.into_inner();
    // A SCRIPT DEBUG YES session: its writes are undone, its shards still held.
    super::ldb::rollback::restore(ctx);
    if let Some(restart) = run.restart {
        return Ok(Some(restart));
    }
    match result {
        Ok((true, v)) => {
            let resp3 = RUN.with(|r| r.resp3.get());
            let nested = convert::lua_to_reply(&v, ctx.out, resp3).map_err(lua_err)?;
            ctx.client.error_counted = convert::error_counted(&v, false);
            for text in &nested.texts {
                dispatch::count_error_stat(ctx.srv, ctx.client.worker, text);
            }
            ctx.client.extra_failures = nested.counted + u64::from(!nested.texts.is_empty());
        }
        Ok((false, err)) => {
            script_error(ctx.out, &err, target);
            ctx.client.error_counted = convert::error_counted(&err, true);
        }
        Err(e) => return Err(lua_err(e)),
    }
    Ok(None)
}

/// The reply to a script that raised `err` (Redis's luaCallFunction).
fn script_error(out: &mut ReplyBuf, err: &Value, target: &Target) {
    let name = String::from_utf8_lossy(target.name());
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "execution failure".to_string(),
        };
        let msg: String = msg.chars().take(100).collect();
        return out.error(&format!(
            "ERR Error running script {}{name}, {msg}",
            if target.is_eval() { "f_" } else { "" }
        ));
    };
    let field = |name: &str| -> Option<Vec<u8>> {
        match t.get::<Value>(name).ok()? {
            // (C strings: each ends at a NUL byte.)
            Value::String(s) => Some(convert::c_str(&s.as_bytes()).to_vec()),
            Value::Integer(i) => Some(i.to_string().into_bytes()),
            Value::Number(n) => Some(resp::fmt::fmt_g(n, 14).into_bytes()),
            _ => None,
        }
    };
    let mut msg = field("err").unwrap_or_default();
    if let (Some(line), Some(source)) = (field("line"), field("source")) {
        msg.extend_from_slice(format!(" script: {name}, on ").as_bytes());
        msg.extend_from_slice(&source);
        msg.push(b':');
        msg.extend_from_slice(&line);
        msg.push(b'.');
    }
    convert::raw_error(out, &msg);
}

/// What a run publishes for its `redis.call`s: the command context and the run.
type Shared<'c, 'a, 'k, 's> = (&'c mut Ctx<'a, 'k>, Run<'s>);

/// What a `redis.call` leaves for its C function ([`super::call_c`]) to push: plain
/// data. The bytes it points to are the run's (its reply buffer or its failure text) and
/// stay untouched until the next `redis.call`.
#[derive(Clone, Copy)]
pub enum Done {
    /// The command's reply (one RESP reply); raise it (an error reply to `redis.call`).
    Reply {
        ptr: *const u8,
        len: usize,
        raise: bool,
    },
    /// An error table of this text (as `convert::error_text` reads it); `counted`: a
    /// refusal of the command (Redis's scriptCall), already in the error statistics, so
    /// the table says `ignore_error_stats_update = true`.
    Fail {
        ptr: *const u8,
        len: usize,
        raise: bool,
        counted: bool,
    },
    /// The run was abandoned: raise the abort table.
    Abort,
    /// `redis.acl_check_cmd`'s answer: the caller's user may run the command.
    Permitted(bool),
    /// No script runs on this thread.
    NoScript,
    /// A bug: the command panicked outside its handler.
    Panicked,
}

/// One argument of a `redis.call`.
enum Arg<'l> {
    /// A Lua string, borrowed from the stack.
    Lua(&'l [u8]),
    /// A number, formatted as Redis does (%.17g).
    Number(String),
}

impl Arg<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Arg::Lua(b) => b,
            Arg::Number(n) => n.as_bytes(),
        }
    }
}

/// `redis.call` (`mode` = `raise::CALL`), `redis.pcall` or `redis.acl_check_cmd` with the
/// arguments on `state`'s stack: [`command`] on the running script's state, published by
/// [`attempt_run`] for the duration of its Lua call.
///
/// # Safety
/// `state` is the running Lua state, as handed to a C function. Only non-raising Lua
/// functions are called on it (type checks and reading values); the strings borrowed from
/// its stack stay there (and alive) until this returns.
pub unsafe fn command_on_stack(state: *mut ffi::lua_State, mode: u8) -> Done {
    // SAFETY: see the function's documentation.
    let n = unsafe { ffi::lua_gettop(state) };
    let mut args: SmallVec<[Arg; 8]> = SmallVec::new();
    let mut bad = false;
    for i in 1..=n {
        // SAFETY: `i` is a valid index of the stack; lua_tolstring of a string value
        // neither converts nor raises, and its bytes live while the value is on the stack.
        match unsafe { ffi::lua_type(state, i) } {
            ffi::LUA_TSTRING => args.push(Arg::Lua(unsafe {
                let mut len = 0;
                let p = ffi::lua_tolstring(state, i, &mut len);
                std::slice::from_raw_parts(p as *const u8, len)
            })),
            ffi::LUA_TNUMBER => args.push(Arg::Number(resp::fmt::fmt_g17(unsafe {
                ffi::lua_tonumber(state, i)
            }))),
            _ => {
                bad = true;
                break;
            }
        }
    }
    // SAFETY: `attempt_run` publishes a `RefCell<Shared>` and nothing else; `command`
    // keeps no reference into the state past its return.
    let done = unsafe {
        active::with(|s: &mut Shared| {
            let (ctx, run) = s;
            command(ctx, run, mode, &args, bad)
        })
    };
    done.unwrap_or(Done::NoScript)
}

/// An error table of `msg` for `redis.call` to return (or raise): a call Redis's
/// luaRedisGenericCommand refuses itself (its arguments).
fn fail(run: &mut Run, msg: &[u8], raise: bool) -> Done {
    fail_as(run, msg, raise, false)
}

/// An error table of `msg`: a command (`cmd`, when known) refused as Redis's scriptCall
/// refuses it (unknown, wrong arity, not allowed from scripts or now), counted in the
/// error statistics and the command's rejected calls then.
fn refuse(ctx: &mut Ctx, run: &mut Run, cmd: Option<&CommandDef>, msg: &[u8], raise: bool) -> Done {
    let worker = ctx.client.worker;
    let text = msg.strip_prefix(b"-").unwrap_or(msg);
    let code_given = msg.len() > text.len();
    dispatch::count_error_stat(ctx.srv, worker, if code_given { text } else { b"ERR" });
    if let Some(cmd) = cmd {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
    }
    fail_as(run, msg, raise, true)
}

fn fail_as(run: &mut Run, msg: &[u8], raise: bool, counted: bool) -> Done {
    super::ldb::session::log_error(msg);
    run.fail.clear();
    run.fail.extend_from_slice(msg);
    Done::Fail {
        ptr: run.fail.as_ptr(),
        len: run.fail.len(),
        raise,
        counted,
    }
}

/// `redis.call` / `redis.pcall` / `redis.acl_check_cmd` of `args` (`bad`: an argument
/// was neither a string nor a number).
fn command(ctx: &mut Ctx, run: &mut Run, mode: u8, args: &[Arg], bad: bool) -> Done {
    if run.restart.is_some() {
        return Done::Abort;
    }
    if let Err(msg) = RUN.with(|r| r.check(&ctx.srv.scripts.busy)) {
        return fail(run, msg.as_bytes(), true);
    }
    let acl_check = mode == raise::ACL;
    let raise_errors = mode != raise::PCALL;
    if bad {
        return fail(
            run,
            b"Lua redis lib command arguments must be strings or integers",
            raise_errors,
        );
    }
    if args.is_empty() {
        return fail(
            run,
            b"Please specify at least one argument for this redis lib call",
            raise_errors,
        );
    }
    let argv: SmallVec<[&[u8]; 8]> = args.iter().map(Arg::bytes).collect();
    super::ldb::session::log_command(&argv);
    let srv = ctx.srv;
    let cmd = srv.commands.lookup(&argv).filter(|c| c.handler.is_some());
    if acl_check {
        return match cmd {
            Some(cmd) => Done::Permitted(
                ctx.client
                    .user
                    .as_ref()
                    .is_none_or(|u| u.check(cmd, &argv).is_ok()),
            ),
            None => fail(
                run,
                b"Invalid command passed to redis.acl_check_cmd()",
                raise_errors,
            ),
        };
    }
    let Some(cmd) = cmd else {
        return refuse(
            ctx,
            run,
            None,
            b"Unknown Redis command called from script",
            raise_errors,
        );
    };
    if !cmd.arity_ok(argv.len()) {
        return refuse(
            ctx,
            run,
            Some(cmd),
            b"Wrong number of args calling Redis command from script",
            raise_errors,
        );
    }
    if cmd.flags.noscript {
        return refuse(
            ctx,
            run,
            Some(cmd),
            b"This Redis command is not allowed from script",
            raise_errors,
        );
    }
    if let Err(d) =
        crate::acl::check_client(srv, ctx.client, cmd, &argv, crate::acl::log::Context::Lua)
    {
        let msg = format!("The user executing the script {}", d.message());
        return refuse(ctx, run, Some(cmd), msg.as_bytes(), raise_errors);
    }
    let writes = cmd.flags.write || cmd.flags.may_replicate;
    if run.read_only && writes {
        return refuse(
            ctx,
            run,
            Some(cmd),
            b"Write commands are not allowed from read-only scripts.",
            raise_errors,
        );
    }
    // scriptVerifyWriteCommandAllow: until the script has written, a write command fails
    // on a read-only replica, or while writes are denied (a failed save or AOF write).
    if cmd.flags.write && !run.dirty {
        if srv.repl.link.is_replica()
            && srv.config.hot.replica_read_only.load(Relaxed)
            && ctx.client.id != crate::repl::link::MASTER_CLIENT_ID
        {
            return refuse(
                ctx,
                run,
                Some(cmd),
                format!("-{}", crate::dispatch::READONLY_ERR).as_bytes(),
                raise_errors,
            );
        }
        if let Some(msg) = crate::persist::writes_denied(srv) {
            return refuse(
                ctx,
                run,
                Some(cmd),
                format!("-{msg}").as_bytes(),
                raise_errors,
            );
        }
        if !crate::repl::enough_good_replicas(srv) {
            return refuse(
                ctx,
                run,
                Some(cmd),
                format!("-{}", crate::dispatch::NOREPLICAS_ERR).as_bytes(),
                raise_errors,
            );
        }
    }
    // scriptVerifyOOM: the first write of a script not declaring allow-oom fails when
    // memory was over the limit as the script's command started.
    if cmd.flags.denyoom
        && !run.dirty
        && ctx.client.oom_at_start
        && !run.target.flags().allow_oom
        && crate::evict::maxmemory(srv) != 0
    {
        return refuse(
            ctx,
            run,
            Some(cmd),
            format!("-{}", crate::evict::OOM_ERR).as_bytes(),
            raise_errors,
        );
    }
    if let Some(msg) = super::ldb::rollback::refused(cmd, &argv) {
        return refuse(ctx, run, Some(cmd), msg, raise_errors);
    }
    if let Err(msg) = hold_keys(ctx, run, cmd, &argv) {
        return match msg {
            None => Done::Abort,
            Some(m) => refuse(ctx, run, Some(cmd), m.as_bytes(), raise_errors),
        };
    }
    if writes {
        run.wrote = true;
        run.dirty |= cmd.flags.write;
        if cmd.flags.write {
            RUN.with(|r| r.handle.wrote.store(true, Relaxed));
        }
    }
    // Run it as the script's client: its database, its protocol, its own reply buffer.
    let caller_db = ctx.client.db;
    ctx.client.db = run.db;
    ctx.keys.set_db(run.db);
    let proto = if RUN.with(|r| r.resp3.get()) {
        Proto::Resp3
    } else {
        Proto::Resp2
    };
    // The command replies into the run's buffer (reused from call to call).
    let mut reply = std::mem::replace(&mut run.reply, ReplyBuf::new(proto));
    reply.out.clear();
    reply.proto = proto;
    std::mem::swap(ctx.out, &mut reply);
    let ops_before = ctx.exec_ops.as_ref().map_or(0, |o| o.len());
    dispatch::effects::prepare(srv, ctx.keys.changes);
    super::ldb::rollback::before(ctx, cmd, &argv, run.db);
    dispatch::call(ctx, cmd, &argv);
    std::mem::swap(ctx.out, &mut reply);
    if RUN.with(|r| r.repl.get()) == 0 {
        // redis.set_repl(redis.REPL_NONE): not propagated.
        if let Some(ops) = ctx.exec_ops.as_mut() {
            ops.truncate(ops_before);
        }
    }
    run.db = ctx.client.db;
    ctx.client.db = caller_db;
    ctx.keys.set_db(caller_db);
    let is_error = reply.out.first() == Some(&b'-');
    super::ldb::session::log_reply(&reply.out);
    run.reply = reply;
    Done::Reply {
        ptr: run.reply.out.as_ptr(),
        len: run.reply.out.len(),
        raise: is_error && raise_errors,
    }
}

/// Make sure the run holds what `cmd` needs. `Err(None)`: the run is abandoned (to
/// restart under a wider lock); `Err(Some(text))`: the command fails with that error.
fn hold_keys(
    ctx: &mut Ctx,
    run: &mut Run,
    cmd: &crate::cmd::table::CommandDef,
    argv: &[&[u8]],
) -> Result<(), Option<&'static str>> {
    let mut plan = Plan::new();
    dispatch::plan::held_throughout(ctx.srv, cmd, argv, run.db, &mut plan);
    if ctx.keys.covers(&plan) {
        return Ok(());
    }
    let held = |keys: &engine::Locked| {
        RUN.with(|r| r.handle.set_held(keys.scope(), keys.held_shards()));
    };
    if ctx.keys.try_extend(&plan) {
        held(ctx.keys);
        return Ok(());
    }
    if !run.wrote && run.may_restart {
        run.restart = Some(match plan.scope() {
            _ if run.db != ctx.client.db => Restart::All,
            engine::Scope::All => Restart::All,
            engine::Scope::Db(_) => Restart::WholeDb,
            engine::Scope::Keys => {
                let mut shards: Vec<(u32, u32)> = ctx.keys.held_shards().collect();
                shards.extend_from_slice(plan.slots());
                Restart::Shards(shards)
            }
        });
        return Err(None);
    }
    run.target.mark_whole_db(ctx.srv);
    let start = Instant::now();
    for round in 0u32.. {
        if start.elapsed() >= BUSY_WAIT {
            break;
        }
        if round < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
        if ctx.keys.try_extend(&plan) {
            held(ctx.keys);
            return Ok(());
        }
    }
    Err(Some(
        "Script reached an undeclared key held by another client after it had written; \
         it will hold its whole database from its next run",
    ))
}
