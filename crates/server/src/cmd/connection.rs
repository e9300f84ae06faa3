//! Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET (CLIENT and MONITOR
//! are in `client.rs`).

use super::args::{self, is};
use super::{Ctx, Handler, ReplyMode};
use resp::Proto;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("quit", quit),
    ("select", select),
    ("auth", auth),
    ("hello", hello),
    ("reset", reset),
];

fn ping(ctx: &mut Ctx, argv: &[&[u8]]) {
    match argv.len() {
        // Redis answers a RESP2 subscriber with an array: "pong" and the argument.
        1 | 2 if crate::pubsub::resp2_subscribed(ctx) => {
            ctx.out.array(2);
            ctx.out.bulk(b"pong");
            ctx.out.bulk(argv.get(1).copied().unwrap_or(b""));
        }
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(argv[1]),
        _ => ctx
            .out
            .error("ERR wrong number of arguments for 'ping' command"),
    }
}

fn echo(ctx: &mut Ctx, argv: &[&[u8]]) {
    ctx.out.bulk(argv[1]);
}

fn quit(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
}

fn select(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = match args::db_index(argv[1], ctx.srv.keyspace.len()) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    ctx.client.db = n;
    ctx.client.info.db.store(n, Relaxed);
    ctx.out.ok();
}

/// ACLAuthenticateUser: on success the client runs as `user` from now on; a failure is
/// logged (its object is the command's name as sent).
fn authenticate(ctx: &mut Ctx, cmd_name: &[u8], user: &[u8], pass: &[u8]) -> bool {
    match ctx.srv.acl.authenticate(user, pass) {
        Some(slot) => {
            ctx.client.authenticated = true;
            ctx.client.set_user(slot);
            true
        }
        None => {
            let context = crate::acl::log::Context::of(ctx.client);
            crate::acl::log_event(
                ctx.srv,
                &ctx.client.info,
                crate::acl::log::Reason::Auth,
                context,
                cmd_name.to_vec(),
                user.to_vec(),
            );
            false
        }
    }
}

fn auth(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return ctx.out.error(args::SYNTAX_ERR);
    }
    // MONITOR (and logs) never show the secrets.
    ctx.client.redacted |= if argv.len() == 3 { 0b110 } else { 0b10 };
    let (user, pass) = if argv.len() == 2 {
        if ctx.srv.acl.default_nopass() {
            return ctx.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        }
        (&b"default"[..], argv[1])
    } else {
        (argv[1], argv[2])
    };
    if authenticate(ctx, argv[0], user, pass) {
        ctx.out.ok();
    } else {
        ctx.out
            .error("WRONGPASS invalid username-password pair or user is disabled.");
    }
}

/// Validate a client name as Redis does (no spaces or special characters).
pub fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

pub const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

fn hello(ctx: &mut Ctx, argv: &[&[u8]]) {
    let mut ver = 0;
    let mut j = 1;
    if argv.len() >= 2 {
        match args::int(argv[1]) {
            Ok(v) => ver = v,
            Err(_) => {
                return ctx
                    .out
                    .error("ERR Protocol version is not an integer or out of range")
            }
        }
        if !(2..=3).contains(&ver) {
            return ctx.out.error("NOPROTO unsupported protocol version");
        }
        j = 2;
    }
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if is(argv[j], "auth") && more >= 2 {
            if j + 2 < 64 {
                ctx.client.redacted |= (1 << (j + 1)) | (1 << (j + 2));
            }
            if !authenticate(ctx, argv[0], argv[j + 1], argv[j + 2]) {
                return ctx
                    .out
                    .error("WRONGPASS invalid username-password pair or user is disabled.");
            }
            j += 3;
        } else if is(argv[j], "setname") && more >= 1 {
            if !valid_client_name(argv[j + 1]) {
                return ctx.out.error(BAD_CLIENT_NAME);
            }
            // Named at once, as Redis's clientSetNameOrReply in the loop: a later bad
            // option (or NOAUTH) leaves the name set.
            *ctx.client.info.name.lock() = argv[j + 1].to_vec();
            j += 2;
        } else {
            return ctx.out.error_bytes(&args::error_text(&[
                b"ERR Syntax error in HELLO option '",
                args::c_str(argv[j]),
                b"'",
            ]));
        }
    }
    // Redis tests the flag itself here (not authRequired).
    if !ctx.client.authenticated {
        return ctx.out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if ver == 3 {
        ctx.out.proto = Proto::Resp3;
    } else if ver == 2 {
        ctx.out.proto = Proto::Resp2;
    }
    let proto = if ctx.out.resp3() { 3 } else { 2 };
    ctx.client.info.resp.store(proto, Relaxed);
    ctx.out.map(7);
    ctx.out.bulk(b"server");
    ctx.out.bulk(b"redis");
    ctx.out.bulk(b"version");
    ctx.out.bulk(crate::REDIS_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.int(proto as i64);
    ctx.out.bulk(b"id");
    ctx.out.int(ctx.client.id as i64);
    ctx.out.bulk(b"mode");
    ctx.out.bulk(b"standalone");
    ctx.out.bulk(b"role");
    ctx.out.bulk(b"master");
    ctx.out.bulk(b"modules");
    ctx.out.array(0);
}

fn reset(ctx: &mut Ctx, _argv: &[&[u8]]) {
    super::client::stop_monitoring(ctx);
    ctx.client.end_transaction(ctx.srv);
    crate::pubsub::reset(ctx);
    crate::tracking::disable(ctx.srv, &ctx.client.info);
    ctx.client.db = 0;
    ctx.client.info.db.store(0, Relaxed);
    ctx.client.reply_mode = ReplyMode::On;
    ctx.out.proto = Proto::Resp2;
    ctx.client.info.resp.store(2, Relaxed);
    ctx.client.info.name.lock().clear();
    // clientSetDefaultAuth.
    let default = ctx.srv.acl.default.clone();
    ctx.client.authenticated = {
        let def = default.read();
        def.nopass && def.enabled
    };
    ctx.client.set_user(default);
    ctx.out.simple("RESET");
}
