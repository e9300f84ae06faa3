//! The locks a command needs, worked out from the command table before its handler runs:
//! its key specs' keys, hashed once each, or the wider rule of [`LockRule`].

use crate::cmd::args::{db_index, is};
use crate::cmd::table::{CommandDef, LockRule};
use crate::cmd::ClientState;
use crate::server::Server;
use engine::Plan;

/// Add what `cmd` called with `argv` by `client` needs to `plan`. Commands that walk a
/// database hold nothing up front (they lock one shard at a time as they go).
pub fn plan(srv: &Server, client: &ClientState, cmd: &CommandDef, argv: &[&[u8]], p: &mut Plan) {
    if cmd.lock == LockRule::Transaction {
        return transaction(srv, client, p);
    }
    command(srv, cmd, argv, client.db, p);
}

/// EXEC: every queued command's needs, walks included (a transaction never locks while
/// it runs), following SELECTs, plus the watched keys (checked under their locks).
fn transaction(srv: &Server, client: &ClientState, p: &mut Plan) {
    let mut db = client.db;
    if let Some(m) = &client.multi {
        for argv in &m.queued {
            let args: smallvec::SmallVec<[&[u8]; 8]> = argv.iter().map(|a| a.as_slice()).collect();
            let Some(cmd) = srv.commands.lookup(&args) else {
                continue;
            };
            held_throughout(srv, cmd, &args, db, p);
            if cmd.fullname == "select" {
                if let Some(n) = args
                    .get(1)
                    .and_then(|a| db_index(a, srv.keyspace.len()).ok())
                {
                    db = n;
                }
            }
        }
    }
    for w in &client.watched {
        p.key(&srv.keyspace, w.db, &w.key);
    }
}

/// The needs of one command run inside a transaction or a script, which never locks
/// while it runs: walks are widened to their whole database (or every database).
pub fn held_throughout(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, p: &mut Plan) {
    match cmd.lock {
        LockRule::WalkDb => p.whole_db(db),
        LockRule::WalkAll => p.all(),
        // DEBUG POPULATE locks its keys a batch at a time outside a transaction.
        LockRule::DebugObject if argv.len() > 2 && is(argv[1], "populate") => p.whole_db(db),
        // DEBUG DIGEST walks every database a shard at a time outside a transaction.
        LockRule::DebugObject if argv.len() == 2 && is(argv[1], "digest") => p.all(),
        _ => command(srv, cmd, argv, db, p),
    }
}

/// The needs of one command run in database `db`.
fn command(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, plan: &mut Plan) {
    let ks = &srv.keyspace;
    match cmd.lock {
        LockRule::Transaction => {}
        LockRule::None | LockRule::WalkDb | LockRule::WalkAll => {}
        LockRule::Keys => spec_keys(srv, cmd, argv, db, plan),
        LockRule::WholeDb => plan.whole_db(db),
        LockRule::AllDbs => plan.all(),
        LockRule::CrossDb => cross_db(srv, cmd, argv, db, plan),
        LockRule::Sort => match crate::cmd::sort::keys_needed(argv, cmd.name == "sort_ro") {
            None => plan.whole_db(db),
            Some(keys) => keys.iter().for_each(|k| plan.key(ks, db, k)),
        },
        LockRule::AllArgs => {
            for k in argv.iter().skip(1) {
                plan.key(ks, db, k);
            }
        }
        LockRule::Shutdown => {
            if !argv.iter().skip(1).any(|a| is(a, "nosave")) {
                plan.all();
            }
        }
        LockRule::Script => {
            spec_keys(srv, cmd, argv, db, plan);
            let scripts = &srv.scripts;
            if let (true, Some(arg)) = (scripts.any_whole_db(), argv.get(1)) {
                let whole = if cmd.name.starts_with("fcall") {
                    scripts.functions.wants_whole_db(arg)
                } else {
                    scripts.wants_whole_db(cmd.name.starts_with("evalsha"), arg)
                };
                if whole {
                    plan.whole_db(db);
                }
            }
        }
        LockRule::DebugObject => {
            if argv.len() >= 3 && is(argv[1], "object") {
                plan.key(ks, db, argv[2]);
            } else if argv.len() >= 2 && is(argv[1], "digest-value") {
                argv[2..].iter().for_each(|k| plan.key(ks, db, k));
            } else if is(argv[1], "reload") || is(argv[1], "loadaof") {
                plan.all();
            }
        }
        LockRule::GeoStore => {
            spec_keys(srv, cmd, argv, db, plan);
            for w in argv.windows(2).skip(2) {
                if is(w[0], "store") || is(w[0], "storedist") {
                    plan.key(ks, db, w[1]);
                }
            }
        }
    }
}

/// The one key of a command whose key spec is exactly argv[1] (GET, SET, INCR, EXPIRE...).
#[inline]
pub fn single_key<'a>(cmd: &CommandDef, argv: &[&'a [u8]]) -> Option<&'a [u8]> {
    match (cmd.lock, cmd.simple_keys) {
        (LockRule::Keys, Some((1, 1, _))) => argv.get(1).copied(),
        _ => None,
    }
}

/// The keys named by the key specs.
fn spec_keys(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, plan: &mut Plan) {
    let ks = &srv.keyspace;
    each_spec_key(cmd, argv, |k| plan.key(ks, db, k));
}

/// Visit each key the key specs name, in order (what [`plan`] locks for `LockRule::Keys`).
pub fn each_spec_key<'a>(cmd: &CommandDef, argv: &[&'a [u8]], mut visit: impl FnMut(&'a [u8])) {
    if let Some((first, last, step)) = cmd.simple_keys {
        let argc = argv.len() as i64;
        let last = if last >= 0 { last } else { argc + last };
        let mut i = first;
        while i <= last && i < argc {
            visit(argv[i as usize]);
            i += step;
        }
        return;
    }
    for (i, _) in cmd.keys(argv) {
        if let Some(k) = argv.get(i) {
            visit(k);
        }
    }
}

/// MOVE key db / COPY src dst [DB db]: the keys in the client's database, and the
/// destination key in the named one (when the argument names one; otherwise the handler
/// answers the error before touching it).
fn cross_db(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, plan: &mut Plan) {
    let ks = &srv.keyspace;
    spec_keys(srv, cmd, argv, db, plan);
    let target = if cmd.name == "move" {
        argv.get(2).and_then(|a| db_index(a, ks.len()).ok())
    } else {
        argv.iter()
            .enumerate()
            .skip(3)
            .rfind(|(_, a)| is(a, "db"))
            .and_then(|(i, _)| argv.get(i + 1))
            .and_then(|a| db_index(a, ks.len()).ok())
    };
    if let Some(t) = target {
        let key = if cmd.name == "move" { argv[1] } else { argv[2] };
        plan.key(ks, t, key);
    }
}
