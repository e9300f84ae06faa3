//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key...], as Redis's migrateCommand: the keys present
//! are DUMPed and sent as RESTOREs (REPLACE when asked, their TTLs left as relative ones)
//! after AUTH and SELECT where needed, on a connection cached per target
//! ([`socket`]); each key the target accepted is deleted here (unless COPY) and the call
//! propagates as `DEL` of those keys. A connection that failed before any reply is opened
//! again once, unless it timed out.
//!
//! The network I/O blocks: on a worker MIGRATE always runs on the background pool
//! (`offload::wanted`), which holds its keys' shards for the whole call, so no other
//! client sees the keys between the DUMP and the DEL (Redis's whole server waits), and the
//! worker goes on serving its other connections. Inside MULTI/EXEC or a script it runs
//! where it is called, as Redis runs it: blocking.

mod socket;

use super::args::{self, is, SYNTAX_ERR};
use super::{Ctx, Handler};
use crate::propagate::encode;
use engine::{rdb, Event, NO_EXPIRE};
use socket::{Failure, Target};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

pub use socket::close_idle;

pub const COMMANDS: &[(&str, Handler)] = &[("migrate", migrate)];

const KEYS_NOT_EMPTY: &str =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
const CONNECT_ERR: &str = "IOERR error or timeout connecting to the client";

/// MIGRATE's options.
struct Options<'a> {
    copy: bool,
    replace: bool,
    username: Option<&'a [u8]>,
    password: Option<&'a [u8]>,
    /// The keys to move: the key argument, or the arguments after KEYS.
    keys: &'a [&'a [u8]],
}

/// A key found here, dumped.
struct Found<'a> {
    key: &'a [u8],
    payload: Vec<u8>,
    expire_at: i64,
}

/// Parse the options after the timeout; AUTH and AUTH2 secrets are redacted (SLOWLOG,
/// MONITOR) as they are read, as Redis does.
fn parse<'a>(ctx: &mut Ctx, argv: &'a [&'a [u8]]) -> Result<Options<'a>, &'static str> {
    let mut o = Options {
        copy: false,
        replace: false,
        username: None,
        password: None,
        keys: &argv[3..4],
    };
    let mut redact = |i: usize| {
        if i < 64 {
            ctx.client.redacted |= 1 << i;
        }
    };
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let a = argv[j];
        if is(a, "copy") {
            o.copy = true;
        } else if is(a, "replace") {
            o.replace = true;
        } else if is(a, "auth") {
            if more == 0 {
                return Err(SYNTAX_ERR);
            }
            j += 1;
            o.password = Some(argv[j]);
            redact(j);
        } else if is(a, "auth2") {
            if more < 2 {
                return Err(SYNTAX_ERR);
            }
            o.username = Some(argv[j + 1]);
            o.password = Some(argv[j + 2]);
            redact(j + 1);
            redact(j + 2);
            j += 2;
        } else if is(a, "keys") {
            if !argv[3].is_empty() {
                return Err(KEYS_NOT_EMPTY);
            }
            o.keys = &argv[j + 1..];
            break;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(o)
}

fn migrate(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = match parse(ctx, argv) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let (timeout, db) = match (args::int(argv[5]), args::int(argv[4])) {
        (Ok(t), Ok(d)) => (t, d),
        (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    // The keys here (lookupKeyRead: expired ones go), dumped.
    let compress = super::dump::compression(ctx);
    let mut found = Vec::new();
    for &key in o.keys {
        if let Some(e) = ctx.keys.get(key) {
            found.push(Found {
                key,
                payload: rdb::dump_payload(e.value(), compress),
                expire_at: e.expire_at(),
            });
        }
    }
    if found.is_empty() {
        return ctx.out.simple("NOKEY");
    }
    // MIGRATE itself never propagates: only the DEL of the keys moved.
    ctx.propagate.only_rewrites();
    let name = socket::name(argv[1], argv[2]);
    let port = args::c_atoi(argv[2]);
    let mut may_retry = true;
    loop {
        let Some(mut target) = socket::checkout(&name, argv[1], port, timeout) else {
            return ctx.out.error(CONNECT_ERR);
        };
        match exchange(ctx, &o, db, &found, &mut target, timeout) {
            Exchange::Replied { error: None } => {
                target.last_db = db;
                socket::checkin(name, target);
                return ctx.out.ok();
            }
            Exchange::Replied { error: Some(e) } => {
                // On an error the database selected is no longer trusted.
                target.last_db = -1;
                socket::checkin(name, target);
                return target_error(ctx, &e);
            }
            Exchange::TargetErrorThenBroken { error } => return target_error(ctx, &error),
            Exchange::Broken {
                writing,
                failure,
                retry,
            } => {
                // The connection is dropped (closed); one retry with a new one unless it
                // timed out or something was already done.
                if retry && may_retry && failure != Failure::TimedOut {
                    may_retry = false;
                    continue;
                }
                let what = if writing { "writing" } else { "reading" };
                return ctx
                    .out
                    .error(&format!("IOERR error or timeout {what} to target instance"));
            }
        }
    }
}

fn target_error(ctx: &mut Ctx, line: &[u8]) {
    let mut msg = b"ERR Target instance replied with error: ".to_vec();
    msg.extend_from_slice(line.get(1..).unwrap_or_default());
    ctx.out.error_bytes(&msg);
}

/// How one exchange with the target ended.
enum Exchange {
    /// Every reply read; `error`: the first error line, if any.
    Replied { error: Option<Vec<u8>> },
    /// An error line, then the connection failed (it is closed; the error is the reply).
    TargetErrorThenBroken { error: Vec<u8> },
    /// The connection failed while writing or reading; `retry` when nothing was done yet.
    Broken {
        writing: bool,
        failure: Failure,
        retry: bool,
    },
}

/// Send AUTH, SELECT and the RESTOREs, read their replies, delete each key the target
/// took (unless COPY).
fn exchange(
    ctx: &mut Ctx,
    o: &Options,
    db: i64,
    found: &[Found],
    target: &mut Target,
    timeout: Duration,
) -> Exchange {
    let mut cmd = Vec::new();
    if let Some(password) = o.password {
        match o.username {
            Some(user) => cmd.extend(encode(&[b"AUTH", user, password])),
            None => cmd.extend(encode(&[b"AUTH", password])),
        }
    }
    let select = target.last_db != db;
    if select {
        cmd.extend(encode(&[b"SELECT", db.to_string().as_bytes()]));
    }
    // Keys that expired since they were found are left out (Redis's second look).
    let now = engine::wall_ms();
    let mut sent = Vec::with_capacity(found.len());
    for f in found {
        let mut ttl = 0;
        if f.expire_at != NO_EXPIRE {
            ttl = f.expire_at - now;
            if ttl < 0 {
                continue;
            }
            ttl = ttl.max(1);
        }
        let ttl = ttl.to_string();
        let mut restore: Vec<&[u8]> = vec![b"RESTORE", f.key, ttl.as_bytes(), &f.payload];
        if o.replace {
            restore.push(b"REPLACE");
        }
        cmd.extend(encode(&restore));
        sent.push(f.key);
    }
    let broken = |writing, failure| Exchange::Broken {
        writing,
        failure,
        retry: true,
    };
    if let Err(f) = target.write(&cmd, timeout) {
        return broken(true, f);
    }
    let mut read_optional = |wanted: bool| -> Result<Option<Vec<u8>>, Failure> {
        if wanted {
            target.read_line(timeout).map(Some)
        } else {
            Ok(None)
        }
    };
    let auth = match read_optional(o.password.is_some()) {
        Ok(l) => l,
        Err(f) => return broken(false, f),
    };
    let selected = match read_optional(select) {
        Ok(l) => l,
        Err(f) => return broken(false, f),
    };
    let is_err = |l: &Option<Vec<u8>>| l.as_ref().is_some_and(|l| l.first() == Some(&b'-'));
    let mut error: Option<Vec<u8>> = None;
    let mut moved: Vec<&[u8]> = Vec::new();
    let mut failed = None;
    for (n, &key) in sent.iter().enumerate() {
        let line = match target.read_line(timeout) {
            Ok(l) => l,
            Err(f) => {
                failed = Some((n, f));
                break;
            }
        };
        if is_err(&auth) || is_err(&selected) || line.first() == Some(&b'-') {
            if error.is_none() {
                error = [auth.clone(), selected.clone(), Some(line)]
                    .into_iter()
                    .flatten()
                    .find(|l| l.first() == Some(&b'-'));
            }
        } else if !o.copy {
            delete(ctx, key);
            moved.push(key);
        }
    }
    if !moved.is_empty() {
        let mut del: Vec<&[u8]> = vec![b"DEL"];
        del.extend(moved);
        ctx.propagate.also(&del);
    }
    match (failed, error) {
        (None, error) => Exchange::Replied { error },
        (Some(_), Some(error)) => Exchange::TargetErrorThenBroken { error },
        (Some((n, failure)), None) => Exchange::Broken {
            writing: false,
            failure,
            retry: n == 0,
        },
    }
}

/// Delete a key the target took, as Redis's dbDelete (lazily freed under
/// `lazyfree-lazy-server-del`), signalled as a `del`.
fn delete(ctx: &mut Ctx, key: &[u8]) {
    if let Some(e) = ctx.keys.remove(key, Event::DEL) {
        if crate::lazyfree::LAZY_SERVER_DEL.load(Relaxed) {
            crate::lazyfree::free(e);
        } else {
            crate::lazyfree::free_here(e);
        }
    }
}
