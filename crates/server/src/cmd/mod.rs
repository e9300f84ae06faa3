//! Command dispatch: lookup in the command table, Redis's checks in Redis's order
//! (existence, arity, authentication), then the handler, then the statistics.
//!
//! Handlers live in one module per command family; each module exports `COMMANDS`, a list
//! of (full name, handler) rows joined with the JSON definitions in [`table`].

pub mod args;
pub mod bitmaps;
pub mod client;
pub mod command;
pub mod config;
pub mod connection;
pub mod debug;
pub mod dump;
pub mod help;
pub mod info;
pub mod keys;
pub mod keyspec;
pub mod latency;
pub mod object;
pub mod pubsub;
pub mod server_cmds;
pub mod slowlog;
pub mod strings;
pub mod table;

use crate::clients::ClientInfo;
use crate::server::Server;
use resp::ReplyBuf;
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A command implementation: arguments (name first) in, reply into `ctx.out`.
pub type Handler = fn(&mut Ctx, &[&[u8]]);

/// Whether replies are sent (CLIENT REPLY ON|OFF|SKIP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplyMode {
    #[default]
    On,
    Off,
    /// Skip the reply of the next command only.
    SkipNext,
    /// Skipping the current command's reply.
    Skipping,
}

/// The per-connection state commands see and change.
pub struct ClientState {
    pub id: u64,
    pub db: usize,
    pub authenticated: bool,
    pub info: Arc<ClientInfo>,
    /// Close the connection once the pending replies are written (QUIT, protocol error).
    pub close_after_reply: bool,
    pub reply_mode: ReplyMode,
    pub worker: usize,
    /// Bit i set: argv[i] of the running command is shown as "(redacted)" (AUTH, HELLO).
    pub redacted: u64,
}

/// What a handler works with.
pub struct Ctx<'a> {
    pub srv: &'a Server,
    pub client: &'a mut ClientState,
    pub out: &'a mut ReplyBuf,
}

impl<'a> Ctx<'a> {
    /// The client's selected database (borrowed from the server, not from `self`, so a
    /// handler can hold shard locks while it writes replies).
    pub fn db(&self) -> &'a engine::Db {
        let srv: &'a Server = self.srv;
        srv.keyspace.db(self.client.db)
    }

    pub fn worker_stats(&self) -> &'a crate::stats::WorkerStats {
        let srv: &'a Server = self.srv;
        &srv.stats.workers[self.client.worker]
    }
}

/// Every handler Skein has, by full name.
pub fn handlers() -> HashMap<&'static str, Handler> {
    let families: &[&[(&'static str, Handler)]] = &[
        strings::COMMANDS,
        bitmaps::COMMANDS,
        keys::COMMANDS,
        object::COMMANDS,
        dump::COMMANDS,
        connection::COMMANDS,
        client::COMMANDS,
        server_cmds::COMMANDS,
        config::COMMANDS,
        command::COMMANDS,
        info::COMMANDS,
        slowlog::COMMANDS,
        latency::COMMANDS,
        debug::COMMANDS,
        pubsub::COMMANDS,
    ];
    families.iter().flat_map(|f| f.iter().copied()).collect()
}

/// Redis's "unknown command" / "unknown subcommand" text for `argv`.
fn unknown_command_error(srv: &Server, argv: &[&[u8]]) -> String {
    let name = String::from_utf8_lossy(argv[0]);
    let is_container = srv.commands.get(argv[0]).is_some_and(|c| c.is_container());
    let msg = if is_container {
        let arg = String::from_utf8_lossy(argv[1]);
        format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            truncate(&arg, 128),
            name.to_uppercase()
        )
    } else {
        let mut args = String::new();
        for a in &argv[1..] {
            if args.len() >= 128 {
                break;
            }
            let room = 128 - args.len();
            let a = String::from_utf8_lossy(a);
            args.push('\'');
            args.push_str(truncate(&a, room));
            args.push_str("' ");
        }
        format!(
            "ERR unknown command '{}', with args beginning with: {}",
            truncate(&name, 128),
            args
        )
    };
    msg.replace(['\r', '\n'], " ")
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Run one command and account for it.
pub fn execute(ctx: &mut Ctx, argv: &[&[u8]]) {
    let srv = ctx.srv;
    let worker = ctx.client.worker;
    ctx.client
        .info
        .last_interaction_ms
        .store(engine::now_ms(), Relaxed);
    let Some(cmd) = srv.commands.lookup(argv) else {
        let msg = unknown_command_error(srv, argv);
        reply_error(ctx, &msg);
        return;
    };
    ctx.client.info.last_cmd.store(cmd.id + 1, Relaxed);
    if !cmd.arity_ok(argv.len()) {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        let msg = format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.fullname
        );
        reply_error(ctx, &msg);
        return;
    }
    if let Err(msg) = debug::check_protected(ctx, cmd) {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        reply_error(ctx, &msg);
        return;
    }
    if !ctx.client.authenticated && !cmd.flags.no_auth {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        reply_error(ctx, "NOAUTH Authentication required.");
        return;
    }
    let Some(handler) = cmd.handler else {
        // A container called with its subcommand missing from our table.
        let msg = unknown_command_error(srv, argv);
        reply_error(ctx, &msg);
        return;
    };
    if let Err(msg) = crate::pubsub::check_context(ctx, cmd) {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        return reply_error(ctx, &msg);
    }
    if ctx.client.info.is_monitor() && client::replica_denied(cmd) {
        cmd.counters[worker].rejected.fetch_add(1, Relaxed);
        reply_error(ctx, "ERR Replica can't interact with the keyspace");
        return;
    }
    let before = ctx.out.out.len();
    let start = std::time::Instant::now();
    // A bug in one handler must not take the worker (and its clients) down: the panic is
    // turned into an error reply for this command and logged.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(ctx, argv)));
    if ran.is_err() {
        ctx.out.out.truncate(before);
        crate::log::warning(&format!("internal error running '{}'", cmd.fullname));
        ctx.out.error(&format!(
            "ERR internal error running '{}' (this is a Skein bug)",
            cmd.fullname
        ));
    }
    let elapsed = start.elapsed();
    let c = &cmd.counters[worker];
    if ctx.out.out.get(before) == Some(&b'-') {
        c.failed.fetch_add(1, Relaxed);
        srv.stats.total_error_replies.fetch_add(1, Relaxed);
        srv.stats.workers[worker].count_error(&ctx.out.out[before + 1..]);
    }
    crate::stats::record_call(ctx, cmd, argv, elapsed);
    if srv.clients.monitors.active() {
        client::feed_monitors(ctx, cmd, argv);
    }
    ctx.client.redacted = 0;
}

fn reply_error(ctx: &mut Ctx, msg: &str) {
    ctx.srv.stats.total_error_replies.fetch_add(1, Relaxed);
    ctx.worker_stats().count_error(msg.as_bytes());
    ctx.out.error(msg);
}
