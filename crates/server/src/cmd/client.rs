//! CLIENT subcommands and MONITOR.

use super::args::{self, is, SYNTAX_ERR};
use super::connection::{valid_client_name, BAD_CLIENT_NAME};
use super::help::{reply_help, subcommand_syntax_error};
use super::table::CommandDef;
use super::{Ctx, Handler, ReplyMode};
use crate::clients::{flag, ClientInfo, ClientType, PauseKind};
use resp::fmt::cat_repr;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("client|help", help),
    ("client|id", id),
    ("client|setname", setname),
    ("client|getname", getname),
    ("client|list", list),
    ("client|info", info),
    ("client|kill", kill),
    ("client|pause", pause),
    ("client|unpause", unpause),
    ("client|reply", reply),
    ("client|no-evict", no_evict),
    ("client|unblock", unblock),
    ("monitor", monitor),
];

const HELP: &[&str] = &[
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
];

fn help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(ctx, argv[0], HELP);
}

fn id(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.out.int(ctx.client.id as i64);
}

fn setname(ctx: &mut Ctx, argv: &[&[u8]]) {
    if !valid_client_name(argv[2]) {
        return ctx.out.error(BAD_CLIENT_NAME);
    }
    *ctx.client.info.name.lock() = argv[2].to_vec();
    ctx.out.ok();
}

fn getname(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let name = ctx.client.info.name.lock().clone();
    if name.is_empty() {
        ctx.out.null();
    } else {
        ctx.out.bulk(&name);
    }
}

/// CLIENT LIST / INFO lines; the calling client reports its running command's size.
fn describe_all<'a>(
    ctx: &mut Ctx,
    argv: &[&[u8]],
    clients: impl IntoIterator<Item = &'a ClientInfo>,
) -> String {
    let me = &ctx.client.info;
    let argv_mem: usize = argv.iter().map(|a| a.len()).sum();
    me.argv_mem.store(argv_mem as u64, Relaxed);
    let mut o = String::new();
    for c in clients {
        o.push_str(&ctx.srv.client_line(c));
        o.push('\n');
    }
    me.argv_mem.store(0, Relaxed);
    o
}

/// "Unknown client type '%s'" for CLIENT LIST TYPE and CLIENT KILL TYPE.
fn unknown_type(name: &[u8]) -> Vec<u8> {
    args::error_text(&[b"ERR Unknown client type '", args::c_str(name), b"'"])
}

fn list(ctx: &mut Ctx, argv: &[&[u8]]) {
    let srv = ctx.srv;
    let chosen: Vec<std::sync::Arc<ClientInfo>> = if argv.len() == 4 && is(argv[2], "type") {
        let Some(t) = ClientType::parse(argv[3]) else {
            return ctx.out.error_bytes(&unknown_type(argv[3]));
        };
        srv.clients
            .all()
            .into_iter()
            .filter(|c| c.client_type() == t)
            .collect()
    } else if argv.len() > 3 && is(argv[2], "id") {
        let mut v = Vec::new();
        for a in &argv[3..] {
            let Ok(id) = args::int(a) else {
                return ctx.out.error("ERR Invalid client ID");
            };
            if let Some(c) = u64::try_from(id).ok().and_then(|id| srv.clients.get(id)) {
                v.push(c);
            }
        }
        v
    } else if argv.len() != 2 {
        return ctx.out.error(SYNTAX_ERR);
    } else {
        srv.clients.all()
    };
    let text = describe_all(ctx, argv, chosen.iter().map(|c| &**c));
    ctx.out.verbatim(text.as_bytes(), "txt");
}

fn info(ctx: &mut Ctx, argv: &[&[u8]]) {
    let me = ctx.client.info.clone();
    let text = describe_all(ctx, argv, [&*me]);
    ctx.out.verbatim(text.as_bytes(), "txt");
}

/// CLIENT KILL's filters.
#[derive(Default)]
struct KillFilter<'a> {
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    kind: Option<ClientType>,
    id: u64,
    user: Option<&'a [u8]>,
    max_age: i64,
    skipme: bool,
}

impl KillFilter<'_> {
    fn matches(&self, c: &ClientInfo, me: u64, now_ms: i64) -> bool {
        self.addr.is_none_or(|a| a == c.addr.as_bytes())
            && self.laddr.is_none_or(|a| a == c.laddr.as_bytes())
            && self.kind.is_none_or(|t| c.client_type() == t)
            && (self.id == 0 || c.id == self.id)
            && self.user.is_none_or(|u| u == c.user.lock().as_slice())
            && (self.max_age == 0 || now_ms / 1000 - c.created_ms / 1000 >= self.max_age)
            && !(self.skipme && c.id == me)
    }
}

/// Parse the new form's `<option> <value>` pairs, or reply with Redis's error.
fn parse_kill_filter<'a>(ctx: &mut Ctx, argv: &[&'a [u8]]) -> Option<KillFilter<'a>> {
    let mut f = KillFilter {
        skipme: true,
        ..Default::default()
    };
    let mut i = 2;
    while i < argv.len() {
        let opt = argv[i];
        let Some(&val) = argv.get(i + 1) else {
            ctx.out.error(SYNTAX_ERR);
            return None;
        };
        if is(opt, "id") {
            match args::int(val) {
                Ok(n) if n >= 1 => f.id = n as u64,
                _ => {
                    ctx.out.error("ERR client-id should be greater than 0");
                    return None;
                }
            }
        } else if is(opt, "maxage") {
            // Redis 7.4's filter, accepted here as well.
            let Ok(n) = args::int(val) else {
                ctx.out
                    .error("ERR maxage is not an integer or out of range");
                return None;
            };
            if n <= 0 {
                ctx.out.error("ERR maxage should be greater than 0");
                return None;
            }
            f.max_age = n;
        } else if is(opt, "type") {
            let Some(t) = ClientType::parse(val) else {
                ctx.out.error_bytes(&unknown_type(val));
                return None;
            };
            f.kind = Some(t);
        } else if is(opt, "addr") {
            f.addr = Some(val);
        } else if is(opt, "laddr") {
            f.laddr = Some(val);
        } else if is(opt, "user") {
            if ctx.srv.acl.get(val).is_none() {
                ctx.out.error_bytes(&args::error_text(&[
                    b"ERR No such user '",
                    args::c_str(val),
                    b"'",
                ]));
                return None;
            }
            f.user = Some(val);
        } else if is(opt, "skipme") {
            if is(val, "yes") {
                f.skipme = true;
            } else if is(val, "no") {
                f.skipme = false;
            } else {
                ctx.out.error(SYNTAX_ERR);
                return None;
            }
        } else {
            ctx.out.error(SYNTAX_ERR);
            return None;
        }
        i += 2;
    }
    Some(f)
}

fn kill(ctx: &mut Ctx, argv: &[&[u8]]) {
    let old_form = argv.len() == 3;
    let filter = if old_form {
        // CLIENT KILL <addr>: may kill the caller itself.
        KillFilter {
            addr: Some(argv[2]),
            ..Default::default()
        }
    } else {
        match parse_kill_filter(ctx, argv) {
            Some(f) => f,
            None => return,
        }
    };
    let me = ctx.client.id;
    let now = engine::now_ms();
    let mut killed = 0;
    let mut close_me = false;
    for c in ctx.srv.clients.all() {
        if !filter.matches(&c, me, now) {
            continue;
        }
        if c.id == me {
            close_me = true;
        } else {
            ctx.srv.clients.kill(&c);
        }
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            ctx.out.error("ERR No such client");
        } else {
            ctx.out.ok();
        }
    } else {
        ctx.out.int(killed);
    }
    if close_me {
        ctx.client.close_after_reply = true;
    }
}

fn pause(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return subcommand_syntax_error(ctx, argv);
    }
    let mut kind = PauseKind::All;
    if argv.len() == 4 {
        if is(argv[3], "write") {
            kind = PauseKind::Write;
        } else if !is(argv[3], "all") {
            return ctx.out.error("ERR CLIENT PAUSE mode must be WRITE or ALL");
        }
    }
    let ms = match args::timeout_ms(argv[2]) {
        Ok(ms) => ms,
        Err(e) => return ctx.out.error(e),
    };
    // Redis adds the current time to a positive timeout (wrapping as C does).
    let end = if ms > 0 {
        ms.wrapping_add(engine::now_ms())
    } else {
        0
    };
    ctx.srv.clients.pause.pause(end, kind);
    ctx.out.ok();
}

fn unpause(ctx: &mut Ctx, _argv: &[&[u8]]) {
    ctx.srv.clients.pause.unpause();
    ctx.srv.clients.wake_all_workers();
    ctx.out.ok();
}

fn reply(ctx: &mut Ctx, argv: &[&[u8]]) {
    if is(argv[2], "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if is(argv[2], "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if is(argv[2], "skip") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        ctx.out.error(SYNTAX_ERR);
    }
}

fn no_evict(ctx: &mut Ctx, argv: &[&[u8]]) {
    if is(argv[2], "on") {
        ctx.client.info.set_flag(flag::NO_EVICT, true);
    } else if is(argv[2], "off") {
        ctx.client.info.set_flag(flag::NO_EVICT, false);
    } else {
        return ctx.out.error(SYNTAX_ERR);
    }
    ctx.out.ok();
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if that client was blocked on keys (and is no
/// longer), else 0.
fn unblock(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return subcommand_syntax_error(ctx, argv);
    }
    if argv.len() == 4 && !is(argv[3], "timeout") && !is(argv[3], "error") {
        return ctx
            .out
            .error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    }
    let id = match args::int(argv[2]) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let error = argv.len() == 4 && is(argv[3], "error");
    let done = id >= 0 && ctx.srv.blocking.unblock(id as u64, error);
    ctx.out.int(i64::from(done));
}

fn monitor(ctx: &mut Ctx, _argv: &[&[u8]]) {
    if ctx.exec_ops.is_some() {
        // Inside EXEC, as Redis refuses it (a transaction's client cannot block).
        return ctx
            .out
            .error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    let info = &ctx.client.info;
    // Already monitoring: Redis ignores the command (no reply).
    if info.is_monitor() {
        return;
    }
    info.set_flag(flag::MONITOR, true);
    ctx.srv.clients.monitors.add(info.clone());
    ctx.out.ok();
}

/// Leave MONITOR mode (RESET).
pub fn stop_monitoring(ctx: &mut Ctx) {
    let info = &ctx.client.info;
    if info.is_monitor() {
        info.set_flag(flag::MONITOR, false);
        ctx.srv.clients.monitors.remove(info.id);
    }
}

fn has_flag(cmd: &CommandDef, name: &str) -> bool {
    cmd.spec
        .get("command_flags")
        .and_then(|f| f.as_array())
        .is_some_and(|a| a.iter().any(|f| f.as_str() == Some(name)))
}

/// Does CLIENT PAUSE WRITE hold this command back? (Writes and commands that may
/// replicate, such as EVAL and PUBLISH.)
pub fn paused_by_write_pause(cmd: &CommandDef) -> bool {
    cmd.flags.write || has_flag(cmd, "MAY_REPLICATE")
}

/// Commands a MONITOR client (a replica to Redis) may not run: "Replica can't interact
/// with the keyspace".
pub fn replica_denied(cmd: &CommandDef) -> bool {
    cmd.flags.readonly || paused_by_write_pause(cmd)
}

/// Send the command just run to every MONITOR client, formatted as Redis does
/// (administrative commands are not shown; AUTH/HELLO secrets are redacted).
pub fn feed_monitors(ctx: &Ctx, cmd: &CommandDef, argv: &[&[u8]]) {
    if cmd.flags.admin || has_flag(cmd, "SKIP_MONITOR") {
        return;
    }
    monitor_line(ctx, argv);
}

/// Send `argv` to every MONITOR client: EVAL, EVALSHA and FCALL (flagged SKIP_MONITOR)
/// show themselves as they start, before the commands they run, as Redis's evalCommand
/// and fcallCommandGeneric do.
pub fn feed_monitors_first(ctx: &Ctx, argv: &[&[u8]]) {
    if ctx.srv.clients.monitors.active() {
        monitor_line(ctx, argv);
    }
}

/// Redis's replicationFeedMonitors: a command run by a script shows as `[db lua]`.
fn monitor_line(ctx: &Ctx, argv: &[&[u8]]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let info = &ctx.client.info;
    let mut line = format!(
        "+{}.{:06} [{} ",
        now.as_secs(),
        now.subsec_micros(),
        ctx.client.db
    )
    .into_bytes();
    if crate::script::state::in_script() {
        line.extend_from_slice(b"lua");
    } else if info.is_unix {
        line.extend_from_slice(b"unix:");
        line.extend_from_slice(ctx.srv.config.get("unixsocket").as_bytes());
    } else {
        line.extend_from_slice(info.addr.as_bytes());
    }
    line.extend_from_slice(b"] ");
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            line.push(b' ');
        }
        if i < 64 && ctx.client.redacted & (1 << i) != 0 {
            cat_repr(&mut line, b"(redacted)");
        } else {
            cat_repr(&mut line, a);
        }
    }
    line.extend_from_slice(b"\r\n");
    ctx.srv.clients.monitors.feed(&line);
}
