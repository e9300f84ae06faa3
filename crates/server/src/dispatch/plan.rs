//! The locks a command needs, worked out from the command table before its handler runs:
//! its key specs' keys, hashed once each, or the wider rule of [`LockRule`].

use crate::cmd::args::{db_index, is};
use crate::cmd::table::{CommandDef, LockRule};
use crate::server::Server;
use engine::Plan;

/// Add what `cmd` called with `argv` in database `db` needs to `plan`. Commands that walk
/// a database hold nothing up front (they lock one shard at a time as they go).
pub fn plan(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, plan: &mut Plan) {
    let ks = &srv.keyspace;
    match cmd.lock {
        LockRule::None | LockRule::WalkDb | LockRule::WalkAll => {}
        LockRule::Keys => spec_keys(srv, cmd, argv, db, plan),
        LockRule::WholeDb => plan.whole_db(db),
        LockRule::AllDbs => plan.all(),
        LockRule::CrossDb => cross_db(srv, cmd, argv, db, plan),
        LockRule::DebugObject => {
            if argv.len() >= 3 && is(argv[1], "object") {
                plan.key(ks, db, argv[2]);
            }
        }
    }
}

/// Like [`plan`], for a command that runs inside a transaction: everything it may touch is
/// held up front, walks included (a transaction never locks while it runs).
pub fn plan_held(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, p: &mut Plan) {
    match cmd.lock {
        LockRule::WalkDb => p.whole_db(db),
        LockRule::WalkAll => p.all(),
        _ => plan(srv, cmd, argv, db, p),
    }
}

/// The keys named by the key specs.
fn spec_keys(srv: &Server, cmd: &CommandDef, argv: &[&[u8]], db: usize, plan: &mut Plan) {
    let ks = &srv.keyspace;
    if let Some((first, last, step)) = cmd.simple_keys {
        let argc = argv.len() as i64;
        let last = if last >= 0 { last } else { argc + last };
        let mut i = first;
        while i <= last && i < argc {
            plan.key(ks, db, argv[i as usize]);
            i += step;
        }
        return;
    }
    for (i, _) in cmd.keys(argv) {
        if let Some(k) = argv.get(i) {
            plan.key(ks, db, k);
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
