//! Replication commands, the master's side: REPLCONF, PSYNC, SYNC, ROLE (see
//! `crate::repl`).

use super::args::{self, is, NOT_INT, SYNTAX_ERR};
use super::{Ctx, Handler};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("replconf", replconf),
    ("psync", psync),
    ("sync", sync),
    ("role", role),
    ("wait", wait),
    ("replicaof", replicaof),
    ("slaveof", replicaof),
];

/// NET_HOST_STR_LEN: the longest `ip-address` a replica may announce, plus one.
const HOST_MAX: usize = 256;

/// REPLCONF <option> <value> ...: what a replica tells before PSYNC (replconfCommand).
fn replconf(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len().is_multiple_of(2) {
        return ctx.out.error(SYNTAX_ERR);
    }
    for pair in argv[1..].chunks(2) {
        let (opt, val) = (pair[0], pair[1]);
        if is(opt, "listening-port") {
            match args::int(val) {
                // Kept as Redis's int field keeps it.
                Ok(port) => ctx.client.replconf.port = port as u16,
                Err(_) => return ctx.out.error(NOT_INT),
            }
        } else if is(opt, "ip-address") {
            if val.len() >= HOST_MAX {
                return ctx.out.error(&format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    val.len()
                ));
            }
            ctx.client.replconf.ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if is(opt, "capa") {
            if is(val, "eof") {
                ctx.client.replconf.eof = true;
            } else if is(val, "psync2") {
                ctx.client.replconf.psync2 = true;
            }
        } else if is(opt, "ack") || is(opt, "getack") {
            // From a replica (after PSYNC its thread reads them) or from a master to its
            // replica; a plain client gets no reply at all, as in Redis.
            return;
        } else if is(opt, "rdb-only") {
            match args::int(val) {
                Ok(0 | 1) => {}
                Ok(_) => {
                    return ctx
                        .out
                        .error("ERR value is out of range, value must between 0 and 1")
                }
                Err(e) => return ctx.out.error(e),
            }
        } else {
            let msg = args::error_text(&[b"ERR Unrecognized REPLCONF option: ", args::c_str(opt)]);
            return ctx.out.error_bytes(&msg);
        }
    }
    ctx.out.ok();
}

/// REPLICAOF host port | NO ONE (and SLAVEOF): follow a master, or be one again.
fn replicaof(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(srv) = ctx.srv.persist.server() else {
        return ctx.out.error("ERR");
    };
    if ctx.srv.repl.failover.state() != crate::repl::failover::NONE {
        return ctx
            .out
            .error("ERR REPLICAOF not allowed while failing over.");
    }
    let me = || {
        ctx.client
            .info
            .describe(engine::now_ms(), |_| String::new())
    };
    if is(argv[1], "no") && is(argv[2], "one") {
        if crate::repl::link::promote(&srv) {
            crate::log::notice(&format!(
                "MASTER MODE enabled (user request from '{}')",
                me()
            ));
        }
        return ctx.out.ok();
    }
    let port = match args::int(argv[2]) {
        Ok(p) => p as u16,
        Err(e) => return ctx.out.error(e),
    };
    let host = String::from_utf8_lossy(args::c_str(argv[1])).into_owned();
    if !crate::repl::link::follow(&srv, host.clone(), port) {
        crate::log::notice("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
        return ctx.out.simple("OK Already connected to specified master");
    }
    crate::log::notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        me()
    ));
    ctx.out.ok();
}

/// PSYNC <replid> <offset>: continue from the backlog, or a full resync.
/// PSYNC <replid> <offset> [FAILOVER]: continue from the backlog, or a full resync;
/// FAILOVER (from our master failing over to us) makes this server a master first.
fn psync(ctx: &mut Ctx, argv: &[&[u8]]) {
    if ctx.client.become_replica {
        return;
    }
    if argv.len() > 3 && is(argv[3], "failover") && !super::failover::psync_failover(ctx, argv) {
        return;
    }
    if !may_sync(ctx) {
        return;
    }
    let offset = match args::int(argv[2]) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    ctx.client.replconf.psync = Some((args::c_str(argv[1]).to_vec(), offset));
    become_replica(ctx);
}

/// SYNC: the old full resync (no +FULLRESYNC line).
fn sync(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if ctx.client.become_replica || !may_sync(ctx) {
        return;
    }
    ctx.client.replconf.psync = None;
    become_replica(ctx);
}

/// May a replica sync from us now? Not while failing over, nor while our own master's
/// link is down (the error is answered).
fn may_sync(ctx: &mut Ctx) -> bool {
    if ctx.srv.repl.failover.state() != crate::repl::failover::NONE {
        ctx.out.error("NOMASTERLINK Can't SYNC while failing over");
        return false;
    }
    let link = &ctx.srv.repl.link;
    if link.is_replica() && link.state.load(Relaxed) != crate::repl::link::CONNECTED {
        ctx.out
            .error("NOMASTERLINK Can't SYNC while not connected with my master");
        return false;
    }
    true
}

/// The connection becomes a replica's once this command's batch is answered: its worker
/// hands it to a replica thread, which replies.
fn become_replica(ctx: &mut Ctx) {
    ctx.client.become_replica = true;
    ctx.client.replconf.client = Some(ctx.client.info.clone());
    ctx.client.close_after_reply = true;
}

/// WAIT numreplicas timeout: how many replicas acknowledged this client's writes so far,
/// once `numreplicas` have or the timeout (ms, 0: none) passes (waitCommand). The target is
/// the stream's position now if the client wrote anything (at least where its last write
/// ended: never too early), else 0.
fn wait(ctx: &mut Ctx, argv: &[&[u8]]) {
    let want = match args::int(argv[1]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let ms = match args::timeout_ms(argv[2]) {
        Ok(ms) => ms,
        Err(e) => return ctx.out.error(e),
    };
    let srv = ctx.srv;
    if srv.repl.link.is_replica() {
        return ctx.out.error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let target = if ctx.client.wrote {
        crate::repl::offset(srv)
    } else {
        0
    };
    let acked = srv.repl.acked(target);
    let Some(this) = srv.persist.server() else {
        return ctx.out.int(acked as i64);
    };
    // Inside EXEC a client cannot block: the count now, as in Redis.
    if acked as i64 >= want || ctx.exec_ops.is_some() {
        return ctx.out.int(acked as i64);
    }
    let deadline = if ms > 0 {
        engine::wall_ms().saturating_add(ms)
    } else {
        0
    };
    let silent = matches!(
        ctx.client.reply_mode,
        super::ReplyMode::Off | super::ReplyMode::Skipping
    );
    let reply = crate::offload::Reply::waiting(silent);
    ctx.client.offloaded = Some(reply.clone());
    crate::repl::wait(
        &this,
        target,
        want.max(0) as u64,
        deadline,
        reply,
        ctx.client.info.clone(),
    );
}

/// ROLE: "master", the stream offset, and the online replicas (ip, port, acked offset);
/// or "slave", its master, the link's state and the offset processed.
fn role(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let link = &ctx.srv.repl.link;
    if let Some((host, port)) = link.master() {
        use crate::repl::link::{CONNECT, CONNECTED, CONNECTING, SYNC};
        let state: &[u8] = match link.state.load(Relaxed) {
            CONNECT => b"connect",
            CONNECTING => b"connecting",
            SYNC => b"sync",
            CONNECTED => b"connected",
            _ => b"handshake",
        };
        ctx.out.array(5);
        ctx.out.bulk(b"slave");
        ctx.out.bulk(host.as_bytes());
        ctx.out.int(i64::from(port));
        ctx.out.bulk(state);
        let connected = link.state.load(Relaxed) == CONNECTED;
        ctx.out.int(if connected {
            link.offset.load(Relaxed)
        } else {
            -1
        });
        return;
    }
    let online: Vec<_> = ctx
        .srv
        .repl
        .replicas()
        .into_iter()
        .filter(|r| r.state.load(Relaxed) == crate::repl::ONLINE)
        .collect();
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(crate::repl::offset(ctx.srv) as i64);
    ctx.out.array(online.len());
    for r in online {
        ctx.out.array(3);
        ctx.out.bulk(r.ip.as_bytes());
        ctx.out.bulk(r.port.to_string().as_bytes());
        ctx.out.bulk(r.ack.load(Relaxed).to_string().as_bytes());
    }
}
