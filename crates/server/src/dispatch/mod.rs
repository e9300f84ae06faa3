//! One home for what runs around a handler, in the order of Redis's `call()`:
//!
//! 1. look the command up and check it (existence, arity, protection, authentication);
//! 2. plan its locks from the command table's key specs ([`plan`]) and take them;
//! 3. run the handler, which reads and writes keys only through the held shards
//!    (`ctx.keys`), every write recording a change event;
//! 4. hand the events to their consumers while the locks are still held ([`effects`]):
//!    statistics, the dirty counter, WATCH versions, notifications, client-side caching,
//!    blocked clients, and the ordered propagation stream;
//! 5. release the locks, then account for the call: command statistics, latency
//!    histogram, slow log, latency monitor, MONITOR.

pub mod effects;
pub mod plan;

use crate::cmd::table::CommandDef;
use crate::cmd::{client, debug, ClientState, Ctx};
use crate::propagate::PropagateAs;
use crate::server::Server;
use engine::{Changes, Plan, Scope};
use resp::ReplyBuf;
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;

/// Commands that run at once inside MULTI instead of being queued (as in Redis).
/// A write refused for want of good replicas (shared.noreplicaserr).
pub const NOREPLICAS_ERR: &str = "NOREPLICAS Not enough good replicas to write.";

/// A command refused by a replica whose link is down (shared.masterdownerr).
pub const MASTERDOWN_ERR: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
/// A write refused on a read-only replica (shared.roslaveerr).
pub const READONLY_ERR: &str = "READONLY You can't write against a read only replica.";

const EXEMPT_FROM_QUEUE: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

thread_local! {
    /// Buffers reused by every command this thread runs.
    static SCRATCH: RefCell<Changes> = RefCell::new(Changes::default());
}

/// Run one command from a client connection and account for it. A heavy command may go
/// to the background pool ([`crate::offload`]): the connection then waits for its reply.
pub fn execute(srv: &Server, client: &mut ClientState, out: &mut ReplyBuf, argv: &[&[u8]]) {
    execute_with(srv, client, out, argv, true);
}

/// [`execute`] for a client that cannot wait for a reply (the AOF's replaying client):
/// every command runs here and now.
pub fn execute_inline(srv: &Server, client: &mut ClientState, out: &mut ReplyBuf, argv: &[&[u8]]) {
    execute_with(srv, client, out, argv, false);
}

fn execute_with(
    srv: &Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    may_offload: bool,
) {
    // A client debugging a script: its commands are the debugger's.
    if client.ldb.is_some() && crate::script::ldb::intercept(client, out, argv) {
        return;
    }
    crate::tracking::before_command(srv, client, argv);
    let Some(cmd) = check(srv, client, out, argv) else {
        return;
    };
    if client.in_multi() && !EXEMPT_FROM_QUEUE.contains(&cmd.fullname.as_str()) {
        client.queue(argv);
        out.simple("QUEUED");
        return;
    }
    if client.ldb.is_some() && crate::script::ldb::start(srv, client, out, argv, cmd) {
        return;
    }
    run_and_serve(srv, client, out, argv, cmd, may_offload);
}

/// Run a command the pool took from a worker ([`crate::offload`]): it was checked there.
pub fn run_offloaded(srv: &Server, client: &mut ClientState, out: &mut ReplyBuf, argv: &[&[u8]]) {
    if let Some(cmd) = srv.commands.lookup(argv) {
        srv.stats.offload.note_thread();
        let start = std::time::Instant::now();
        run_and_serve(srv, client, out, argv, cmd, false);
        srv.stats.offload.add_busy(start.elapsed());
    }
}

/// Run a command checked on its client's worker here, on another thread, taking its
/// locks here (a debugged EVAL on its session thread, `crate::script::ldb`).
pub fn run_checked(srv: &Server, client: &mut ClientState, out: &mut ReplyBuf, argv: &[&[u8]]) {
    if let Some(cmd) = srv.commands.lookup(argv) {
        run_and_serve(srv, client, out, argv, cmd, false);
    }
}

fn run_and_serve(
    srv: &Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    cmd: &CommandDef,
    may_offload: bool,
) {
    let worker = client.worker;
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut changes) => run(srv, client, out, argv, cmd, &mut changes, may_offload),
        // A command run from inside another (none today): a buffer of its own.
        Err(_) => run(
            srv,
            client,
            out,
            argv,
            cmd,
            &mut Changes::default(),
            may_offload,
        ),
    });
    // Waiters on keys this command created are served now, before its reply leaves.
    crate::blocking::serve_ready(srv, worker);
}

/// Take the command's locks, run it with its effects, release the locks. A command past
/// the cost threshold releases them again and goes to the background pool instead.
fn run(
    srv: &Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    cmd: &CommandDef,
    changes: &mut Changes,
    may_offload: bool,
) {
    let db = client.db;
    // While a shard it needs is busy, and a script past busy-reply-threshold holds one of
    // its shards: -BUSY rather than waiting (and stalling this worker's other clients).
    let busy = &srv.scripts.busy;
    let busy_error = |scope: Scope, slots: &[(u32, u32)]| {
        busy.active()
            .then(|| busy.blocking(&srv.keyspace, scope, slots))
            .flatten()
    };
    // A shard held by a command running on the background pool (for as long as that
    // command takes): this command goes to the pool too and waits there, in order, rather
    // than stalling this worker. A walk that may be run again from the start (KEYS, DEBUG
    // DIGEST) meets such a shard part way: it stops there and goes to the pool the same way.
    let wait_on_pool = may_offload && crate::offload::may_wait_there(cmd, argv);
    let handoff = std::cell::Cell::new(false);
    let give_up = |scope: Scope, slots: &[(u32, u32)]| {
        if busy_error(scope, slots).is_some() {
            return true;
        }
        let pool_busy = wait_on_pool && srv.offload.busy();
        handoff.set(pool_busy);
        pool_busy
    };
    let (keys, blocked) = match plan::single_key(cmd, argv) {
        // One key (GET, SET, INCR...): its shard, without building a plan.
        Some(key) => {
            let keys = srv.keyspace.lock_key_or(db, key, changes, &give_up);
            let blocked = keys.is_none().then(|| {
                let shard = srv.keyspace.db(db).shard_index(engine::hash_key(key));
                busy_error(Scope::Keys, &[(db as u32, shard as u32)])
            });
            (keys, blocked.flatten())
        }
        None => {
            let mut plan = Plan::new();
            plan::plan(srv, client, cmd, argv, &mut plan);
            match srv.keyspace.lock_or(&mut plan, db, changes, &give_up) {
                Some(keys) => (Some(keys), None),
                None => (None, busy_error(plan.scope(), plan.slots())),
            }
        }
    };
    let mut held = keys;
    let Some(keys) = held.as_mut() else {
        return not_run(srv, client, out, argv, cmd, blocked, handoff.get());
    };
    // DEBUG LOADAOF sets `loading` with every shard held: a command that passed the
    // check before and waited for its locks meanwhile must not run inside the replay.
    if srv.persist.is_loading()
        && !cmd.flags.loading
        && client.id != crate::persist::aof::load::AOF_CLIENT_ID
    {
        drop(held); // the locks go before the reply
        cmd.counters[client.worker].rejected.fetch_add(1, Relaxed);
        client.flag_transaction();
        return reply_error(srv, client.worker, out, LOADING_ERR.as_bytes());
    }
    if may_offload && crate::offload::wanted(srv, cmd, argv, keys) {
        // The pool takes the locks again itself.
        drop(held);
        return crate::offload::submit(srv, client, out, argv);
    }
    // Keys past their TTL are deleted where met, but on a replica or while clients are
    // paused (one check here).
    if srv.repl.link.is_replica() || srv.clients.pause.maybe_active() {
        keys.set_expiry(crate::repl::expiry_off_master(srv, client.id));
    }
    if wait_on_pool {
        // Only walks that may run again from the start get here (`may_wait_there`).
        keys.give_up_walks(&give_up);
    }
    let mut ctx = Ctx {
        srv,
        client,
        out,
        keys,
        propagate: PropagateAs::default(),
        exec_ops: None,
    };
    effects::prepare(srv, ctx.keys.changes);
    let _running = crate::tracking::Running::enter(ctx.client.id);
    let ran = call(&mut ctx, cmd, argv);
    // Only a worker may offload: the pool (and the AOF's replay) are not its busy time.
    if may_offload {
        srv.stats.workers[ctx.client.worker].add_busy(ran);
    }
    ctx.keys.changes.clear();
    if let Some(slot) = ctx.keys.walk_stopped() {
        // `call` discarded the partial reply and accounted for nothing.
        drop(held);
        let blocked = busy_error(Scope::Keys, &[slot]);
        not_run(srv, client, out, argv, cmd, blocked, handoff.get());
    }
}

/// A command whose wait for a shard was given up: to the pool, to wait there
/// (`handoff`), or refused with `blocked` (a busy script holds the shard).
fn not_run(
    srv: &Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    cmd: &CommandDef,
    blocked: Option<&str>,
    handoff: bool,
) {
    if blocked.is_none() && handoff {
        return crate::offload::submit(srv, client, out, argv);
    }
    let msg = blocked.unwrap_or(crate::script::busy::BUSY_EVAL);
    cmd.counters[client.worker].rejected.fetch_add(1, Relaxed);
    client.flag_transaction();
    reply_error(srv, client.worker, out, msg.as_bytes())
}

const LOADING_ERR: &str = "LOADING Redis is loading the dataset in memory";

/// Redis's checks before a command runs, in Redis's order. Replies the error and returns
/// `None` when the command must not run.
fn check<'t>(
    srv: &'t Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
) -> Option<&'t CommandDef> {
    let worker = client.worker;
    client
        .info
        .last_interaction_ms
        .store(engine::now_ms(), Relaxed);
    let Some(cmd) = srv.commands.lookup(argv) else {
        let msg = unknown_command_error(srv, argv);
        client.flag_transaction();
        reply_error(srv, worker, out, &msg);
        return None;
    };
    client.info.last_cmd.store(cmd.id + 1, Relaxed);
    let rejected = |client: &mut ClientState, out: &mut ReplyBuf, msg: &str| {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        client.flag_transaction();
        if cmd.fullname == "exec" {
            // rejectCommand on EXEC: execCommandAbort, in MULTI or not.
            client.end_transaction(srv);
            let why = msg.strip_prefix("ERR ").unwrap_or(msg);
            let msg = format!("EXECABORT Transaction discarded because of: {why}");
            return reply_error(srv, worker, out, msg.as_bytes());
        }
        reply_error(srv, worker, out, msg.as_bytes());
    };
    if !cmd.arity_ok(argv.len()) {
        let msg = format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.fullname
        );
        rejected(client, out, &msg);
        return None;
    }
    if let Err(msg) = debug::check_protected(srv, client, cmd) {
        rejected(client, out, &msg);
        return None;
    }
    if !cmd.flags.no_auth && client.needs_auth(srv) {
        rejected(client, out, "NOAUTH Authentication required.");
        return None;
    }
    if cmd.handler.is_none() {
        // A container called with its subcommand missing from our table.
        let msg = unknown_command_error(srv, argv);
        client.flag_transaction();
        reply_error(srv, worker, out, &msg);
        return None;
    }
    if client.in_multi() && cmd.flags.no_multi {
        rejected(client, out, "ERR Command not allowed inside a transaction");
        return None;
    }
    let context = crate::acl::log::Context::of(client);
    if let Err(denied) = crate::acl::check_client(srv, client, cmd, argv, context) {
        rejected(client, out, &denied.noperm(cmd));
        return None;
    }
    // The AOF's replaying client runs what the file says, as Redis's fake client does, and
    // a replica's master client what its master sends (mustObeyClient): no memory limit,
    // no loading state, no disk-error or read-only refusal.
    let replaying = client.id == crate::persist::aof::load::AOF_CLIENT_ID
        || client.id == crate::repl::link::MASTER_CLIENT_ID;
    if !replaying && crate::evict::clients::before_command(srv, &client.info, out.out.capacity()) {
        // Evicted itself (Redis aborts the command; the connection closes unanswered).
        return None;
    }
    client.oom_at_start = false;
    if !replaying
        && crate::evict::maxmemory(srv) != 0
        && crate::evict::refuses(srv, client, cmd, argv)
    {
        rejected(client, out, crate::evict::OOM_ERR);
        return None;
    }
    // (Whether writes are denied is two loads; whether this command writes can take a
    // script's flags or a transaction's queue, so it is asked only then.)
    if !replaying {
        if let Some(msg) = crate::persist::writes_denied(srv) {
            if is_write(srv, client, cmd, argv) || cmd.name == "ping" {
                rejected(client, out, &msg);
                return None;
            }
        }
    }
    if !replaying
        && srv.config.hot.min_replicas_to_write.load(Relaxed) > 0
        && !crate::repl::enough_good_replicas(srv)
        && is_write(srv, client, cmd, argv)
    {
        rejected(client, out, NOREPLICAS_ERR);
        return None;
    }
    if !replaying
        && srv.repl.link.is_replica()
        && srv.config.hot.replica_read_only.load(Relaxed)
        && is_write(srv, client, cmd, argv)
    {
        rejected(client, out, READONLY_ERR);
        return None;
    }
    if let Err(msg) = crate::pubsub::check_context(client, out, cmd) {
        rejected(client, out, &msg);
        return None;
    }
    if client.info.is_monitor() && client::replica_denied(cmd) {
        rejected(client, out, "ERR Replica can't interact with the keyspace");
        return None;
    }
    // replica-serve-stale-data no: while the link is down only `stale` commands run.
    if !replaying
        && srv.repl.link.is_replica()
        && srv.repl.link.state.load(Relaxed) != crate::repl::link::CONNECTED
        && (!cmd.flags.stale
            || (cmd.fullname == "exec" && queued_any(srv, client, |c, _| !c.flags.stale)))
        && !srv.config.hot.replica_serve_stale_data.load(Relaxed)
    {
        rejected(client, out, MASTERDOWN_ERR);
        return None;
    }
    if srv.persist.is_loading() && !cmd.flags.loading && !replaying {
        rejected(client, out, LOADING_ERR);
        return None;
    }
    Some(cmd)
}

/// Is this a write (Redis's is_write_command): a `write` command, or EXEC of a
/// transaction that queued one.
/// Is the command a write (for a script, unless it declared `no-writes`), or EXEC of a
/// transaction holding one?
fn is_write(srv: &Server, client: &ClientState, cmd: &CommandDef, argv: &[&[u8]]) -> bool {
    let writes = |c: &CommandDef, a: &[&[u8]]| crate::script::flags::writes(srv, c, a);
    writes(cmd, argv) || (cmd.fullname == "exec" && queued_any(srv, client, writes))
}

/// Does the client's open transaction hold a command whose flags satisfy `pred`
/// (Redis's `mstate.cmd_flags`)?
pub fn queued_any(
    srv: &Server,
    client: &ClientState,
    pred: impl Fn(&CommandDef, &[&[u8]]) -> bool,
) -> bool {
    client.multi.as_ref().is_some_and(|m| {
        m.queued.iter().any(|argv| {
            let args: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
            srv.commands.lookup(&args).is_some_and(|c| pred(c, &args))
        })
    })
}

/// Run a checked command whose locks are held: the handler, its effects, its statistics.
/// Returns how long the handler ran.
pub fn call(ctx: &mut Ctx, cmd: &CommandDef, argv: &[&[u8]]) -> std::time::Duration {
    let Some(handler) = cmd.handler else {
        return std::time::Duration::ZERO;
    };
    let srv = ctx.srv;
    let worker = ctx.client.worker;
    let before = ctx.out.out.len();
    ctx.propagate.off = !srv.propagation.active();
    let start = std::time::Instant::now();
    // A bug in one handler must not take the worker (and its clients) down: the panic is
    // turned into an error reply for this command and logged. (parking_lot locks do not
    // poison; what the handler recorded before the panic still takes effect.)
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(ctx, argv)));
    if ran.is_ok() && ctx.keys.walk_stopped().is_some() {
        // A walk stopped at a busy shard: the command runs again from the start elsewhere
        // (see `run`); nothing it made of its partial walk counts.
        ctx.out.out.truncate(before);
        return start.elapsed();
    }
    if ran.is_err() {
        ctx.out.out.truncate(before);
        crate::log::warning(&format!("internal error running '{}'", cmd.fullname));
        ctx.out.error(&format!(
            "ERR internal error running '{}' (this is a Skein bug)",
            cmd.fullname
        ));
    }
    let elapsed = start.elapsed();
    effects::apply(ctx, argv);
    if cmd.flags.readonly {
        // Client-side caching remembers the keys read, their locks still held.
        crate::tracking::after_read(ctx, cmd, argv);
    }
    let c = &cmd.counters[worker];
    let counted = std::mem::take(&mut ctx.client.error_counted);
    c.failed
        .fetch_add(std::mem::take(&mut ctx.client.extra_failures), Relaxed);
    if ctx.out.out.get(before) == Some(&b'-') && !std::mem::take(&mut ctx.client.uncounted_error) {
        c.failed.fetch_add(1, Relaxed);
        if !counted {
            count_error_stat(srv, worker, &ctx.out.out[before + 1..]);
        }
    }
    record_call(ctx, cmd, argv, elapsed);
    if srv.clients.monitors.active() {
        client::feed_monitors(ctx, cmd, argv);
    }
    ctx.client.redacted = 0;
    elapsed
}

/// Run one command queued by MULTI, inside EXEC (whose locks cover it).
pub fn call_queued(ctx: &mut Ctx, argv: &[&[u8]]) {
    match ctx.srv.commands.lookup(argv) {
        Some(cmd) => {
            // The rules may have changed since the command was queued.
            let context = crate::acl::log::Context::Multi;
            if let Err(d) = crate::acl::check_client(ctx.srv, ctx.client, cmd, argv, context) {
                let msg = format!(
                    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
                    d.exec_reason()
                );
                return reply_error(ctx.srv, ctx.client.worker, ctx.out, msg.as_bytes());
            }
            call(ctx, cmd, argv);
        }
        None => {
            let msg = unknown_command_error(ctx.srv, argv);
            reply_error(ctx.srv, ctx.client.worker, ctx.out, &msg);
        }
    }
}

/// Redis's "unknown command" / "unknown subcommand" text for `argv` (commandCheckExistence):
/// the client's bytes as `%.128s` prints them; CR and LF become spaces in `error_bytes`.
fn unknown_command_error(srv: &Server, argv: &[&[u8]]) -> Vec<u8> {
    use crate::cmd::args::c_str_max;
    let is_container = srv.commands.get(argv[0]).is_some_and(|c| c.is_container());
    if is_container {
        let name = crate::cmd::args::c_str(argv[0]).to_ascii_uppercase();
        return [
            b"ERR unknown subcommand '",
            c_str_max(argv[1], 128),
            b"'. Try ",
            &name,
            b" HELP.",
        ]
        .concat();
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str_max(argv[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    let args_at = msg.len();
    for a in &argv[1..] {
        let len = msg.len() - args_at;
        if len >= 128 {
            break;
        }
        msg.push(b'\'');
        msg.extend_from_slice(c_str_max(a, 128 - len));
        msg.extend_from_slice(b"' ");
    }
    msg
}

fn reply_error(srv: &Server, worker: usize, out: &mut ReplyBuf, msg: &[u8]) {
    count_error_stat(srv, worker, msg);
    out.error_bytes(msg);
}

/// Count an error reply (its text after the `-`) in total_error_replies and errorstats.
pub fn count_error_stat(srv: &Server, worker: usize, msg: &[u8]) {
    srv.stats.total_error_replies.fetch_add(1, Relaxed);
    srv.stats.workers[worker].count_error(msg);
}

/// After a command ran: commandstats, its latency histogram, the latency monitor and the
/// slow log. Per-worker counters only; the slow log and latency monitor take their locks
/// only for commands past their thresholds.
fn record_call(ctx: &Ctx, cmd: &CommandDef, argv: &[&[u8]], elapsed: std::time::Duration) {
    if ctx.client.id == crate::persist::aof::load::AOF_CLIENT_ID {
        // The AOF's replay runs outside the call statistics (Redis's fake client).
        return;
    }
    let srv = ctx.srv;
    let hot = &srv.config.hot;
    let usec = elapsed.as_micros() as u64;
    let c = &cmd.counters[ctx.client.worker];
    c.calls.fetch_add(1, Relaxed);
    c.usec.fetch_add(usec, Relaxed);
    if hot.latency_tracking.load(Relaxed) != 0 {
        c.record_latency(usec * 1000);
    }
    srv.stats.workers[ctx.client.worker]
        .commands
        .fetch_add(1, Relaxed);
    let threshold_ms = hot.latency_threshold_ms.load(Relaxed);
    if threshold_ms > 0 && (usec / 1000) as i64 >= threshold_ms {
        let event = if cmd.flags.fast {
            "fast-command"
        } else {
            "command"
        };
        srv.stats.latency.add_sample(event, usec / 1000);
    }
    let slower_than = hot.slowlog_slower_than.load(Relaxed);
    if slower_than >= 0 && usec as i64 >= slower_than && !cmd.flags.skip_slowlog {
        let max_len = srv.config.get_i64("slowlog-max-len").max(0) as usize;
        let info = &ctx.client.info;
        let name = info.name.lock().clone();
        let redacted = ctx.client.redacted;
        if redacted == 0 {
            srv.stats
                .slowlog
                .push(argv, usec, &info.addr, &name, max_len);
        } else {
            // AUTH/HELLO secrets and sensitive CONFIG SET values, as Redis logs them.
            let shown: Vec<&[u8]> = argv
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    if i < 64 && redacted & (1 << i) != 0 {
                        &b"(redacted)"[..]
                    } else {
                        *a
                    }
                })
                .collect();
            srv.stats
                .slowlog
                .push(&shown, usec, &info.addr, &name, max_len);
        }
    }
}
