//! SCRIPT DEBUG: Redis's Lua debugger (ldb). `SCRIPT DEBUG YES|SYNC` marks the client;
//! its next EVAL (or EVAL_RO) starts a debugging session: the script stops at each line
//! the client steps to, and the client's commands are the debugger's (step, continue,
//! list, print, break, eval, redis, ...) until the script ends; the session's last logs
//! say `<endsession>`, the script's reply follows, and the connection closes, as in
//! Redis.
//!
//! Where it runs: the session has a thread of its own (`skein-ldb`), which runs the
//! EVAL through the dispatcher's path (its locks taken there) with the debugger's line
//! hook installed on that thread's Lua state ([`hook`]); the session's state is that
//! thread's ([`session`]). The client's worker never waits for the client: it hands each
//! debugger command to the session thread and waits for the script to stop again (the
//! time the script's Lua runs, as for any script on a worker), then writes the logs.
//! While the script waits at a prompt it is listed as a busy script, so other clients
//! needing its shards get -BUSY instead of stalling their workers. A client that
//! disconnects mid-session closes its end of the channel: the script then runs on
//! without stopping, as Redis's does.

pub mod hook;
pub mod human;
pub mod rollback;
pub mod session;

use crate::cmd::table::CommandDef;
use crate::cmd::{ClientState, Ctx};
use crate::server::Server;
use resp::ReplyBuf;
use session::Event;
use std::sync::mpsc::{self, Receiver, Sender};

/// A client's debugging state (`ClientState::ldb`).
pub enum ClientLdb {
    /// SCRIPT DEBUG YES (`sync` false) or SYNC: the next EVAL is debugged.
    Enabled { sync: bool },
    /// A session runs: the client's commands go to it.
    Session(Link),
}

/// The worker's end of a session.
pub struct Link {
    commands: Sender<Vec<Vec<u8>>>,
    events: Receiver<Event>,
    /// The mode debugging returns to when no script was debugged after all.
    sync: bool,
}

/// SCRIPT DEBUG YES|SYNC|NO.
pub fn script_debug(ctx: &mut Ctx, argv: &[&[u8]]) {
    if !ctx.out.out.is_empty() {
        // Replies of earlier commands not yet written (Redis's clientHasPendingReplies).
        return ctx
            .out
            .error("ERR SCRIPT DEBUG must be called outside a pipeline");
    }
    let mode = argv[2].to_ascii_lowercase();
    ctx.client.ldb = match mode.as_slice() {
        b"no" => None,
        b"yes" => Some(Box::new(ClientLdb::Enabled { sync: false })),
        b"sync" => Some(Box::new(ClientLdb::Enabled { sync: true })),
        _ => return ctx.out.error("ERR Use SCRIPT DEBUG YES/SYNC/NO"),
    };
    ctx.out.ok();
}

/// A command of a client in a session: it is the debugger's (the client's connection
/// is the debugger's console until the session ends). False when no session runs.
pub fn intercept(client: &mut ClientState, out: &mut ReplyBuf, argv: &[&[u8]]) -> bool {
    let Some(ClientLdb::Session(link)) = client.ldb.as_deref() else {
        return false;
    };
    client
        .info
        .last_interaction_ms
        .store(engine::now_ms(), std::sync::atomic::Ordering::Relaxed);
    let owned = argv.iter().map(|a| a.to_vec()).collect();
    // (A session that ended meanwhile, on a shutdown, left its end there.)
    let _ = link.commands.send(owned);
    let event = link.events.recv().ok();
    deliver(client, out, event);
    true
}

/// EVAL/EVAL_RO of a client with debugging on starts a session (after the command's
/// checks); EVALSHA is refused. False: not a script command, run it as usual.
pub fn start(
    srv: &Server,
    client: &mut ClientState,
    out: &mut ReplyBuf,
    argv: &[&[u8]],
    cmd: &CommandDef,
) -> bool {
    let Some(ClientLdb::Enabled { sync }) = client.ldb.as_deref() else {
        return false;
    };
    let sync = *sync;
    match cmd.fullname.as_str() {
        "eval" | "eval_ro" => {}
        // A transaction with a script: its EXEC runs in the session (as Redis's EXEC
        // calls EVAL with debugging on).
        "exec" if queues_script(client) => {}
        // (A SHA of the wrong length gets its NOSCRIPT first, from the command itself.)
        "evalsha" | "evalsha_ro" if argv[1].len() == 40 => {
            let msg = b"ERR Please use EVAL instead of EVALSHA for debugging";
            crate::dispatch::count_error_stat(srv, client.worker, msg);
            out.error_bytes(msg);
            return true;
        }
        _ => return false,
    }
    let Some(this) = srv.persist.server() else {
        return false;
    };
    let (commands, commands_rx) = mpsc::channel();
    let (events_tx, events) = mpsc::channel();
    let mut detached =
        ClientState::detached(client.id, client.db, client.worker, client.info.clone());
    detached.user = client.user.clone();
    detached.multi = client.multi.take();
    detached.watched = std::mem::take(&mut client.watched);
    let owned: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
    let proto = out.proto;
    let (started, ended) = if sync {
        (
            "Redis synchronous debugging eval session started",
            "Redis synchronous debugging eval session ended",
        )
    } else {
        (
            "Lua debugging session started (SCRIPT DEBUG YES: its writes are rolled back)",
            "Lua debugging session ended (its writes rolled back)",
        )
    };
    crate::log::warning(started);
    let spawned = std::thread::Builder::new()
        .name("skein-ldb".into())
        .spawn(move || {
            let busy = this.scripts.busy.clone();
            let threshold = this
                .config
                .hot
                .busy_reply_threshold_ms
                .load(std::sync::atomic::Ordering::Relaxed);
            session::begin(commands_rx, events_tx, threshold, busy, !sync);
            let _ = crate::script::state::with(&this, |st| {
                // SAFETY: `hook::install` is a lua_CFunction sound to call from Lua.
                let f = unsafe { st.lua.create_c_function(hook::install) };
                f.and_then(|f| f.call::<()>(()))
            });
            let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            let mut reply = ReplyBuf::new(proto);
            crate::dispatch::run_checked(&this, &mut detached, &mut reply, &refs);
            // (Its memory uncounted before the client hears the session ended.)
            crate::script::state::discard(&this);
            session::end(&reply.out);
            crate::log::warning(ended);
        });
    if spawned.is_err() {
        out.error("ERR can't start a thread for the debugging session");
        return true;
    }
    client.ldb = Some(Box::new(ClientLdb::Session(Link {
        commands,
        events,
        sync,
    })));
    let first = match client.ldb.as_deref() {
        Some(ClientLdb::Session(link)) => link.events.recv().ok(),
        _ => None,
    };
    deliver(client, out, first);
    true
}

/// Does the client's transaction queue a script (EVAL, EVALSHA and their `_RO`)?
fn queues_script(client: &ClientState) -> bool {
    client.multi.as_ref().is_some_and(|m| {
        m.queued.iter().any(|argv| {
            argv.first().is_some_and(|name| {
                ["eval", "eval_ro", "evalsha", "evalsha_ro"]
                    .iter()
                    .any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
            })
        })
    })
}

/// Write what the session sent; once it ended (or its thread is gone), the connection
/// closes after the reply, as Redis closes it.
fn deliver(client: &mut ClientState, out: &mut ReplyBuf, event: Option<Event>) {
    match event {
        Some(Event::Logs(bytes)) => out.raw(&bytes),
        Some(Event::NotStarted(bytes)) => {
            out.raw(&bytes);
            let sync = match client.ldb.as_deref() {
                Some(ClientLdb::Session(link)) => link.sync,
                _ => true,
            };
            client.ldb = Some(Box::new(ClientLdb::Enabled { sync }));
        }
        Some(Event::End(bytes)) => {
            out.raw(&bytes);
            client.ldb = None;
            client.close_after_reply = true;
        }
        None => {
            client.ldb = None;
            client.close_after_reply = true;
        }
    }
}

/// The stopped script is listed as busy (see the module documentation).
pub fn mark_busy() {
    if let Some(busy) = session::with(|s| s.busy.clone()) {
        crate::script::state::RUN.with(|r| r.mark_busy(&busy));
    }
}
