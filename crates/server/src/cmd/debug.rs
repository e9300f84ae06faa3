//! DEBUG: SLEEP, SET-ACTIVE-EXPIRE, SET-SKIP-CHECKSUM-VALIDATION, OBJECT, RELOAD, LOADAOF,
//! CHANGE-REPL-ID, POPULATE, DIGEST, DIGEST-VALUE, PROTOCOL, ERROR, LOG, HELP; and the
//! `enable-debug-command` gate Redis applies to protected commands.

mod digest;
mod populate;
mod protocol;

use super::args::NO_SUCH_KEY;
use super::help::{reply_help, subcommand_syntax_error};
use super::table::CommandDef;
use super::{Ctx, Handler};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[("debug", debug)];

/// Redis's DEBUG HELP text (the subcommands Redis 7.0 lists).
const HELP: &[&str] = &[
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
];

/// Whether the client may run a PROTECTED command (Redis's allowProtectedAction);
/// `Err` carries Redis's rejection text.
pub fn check_protected(
    srv: &crate::server::Server,
    client: &super::ClientState,
    cmd: &CommandDef,
) -> Result<(), String> {
    if !cmd.flags.protected {
        return Ok(());
    }
    // MODULE's protected commands are its subcommands (LOAD, LOADEX, UNLOAD).
    let (name, option) = if cmd.fullname.starts_with("module|") {
        ("MODULE", "enable-module-command")
    } else {
        ("DEBUG", "enable-debug-command")
    };
    let allowed = match srv.config.get(option).as_str() {
        "yes" => true,
        "local" => client.info.is_local(),
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    Err(format!(
        "ERR {name} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
    ))
}

fn debug(ctx: &mut Ctx, argv: &[&[u8]]) {
    let sub = String::from_utf8_lossy(argv[1]).to_lowercase();
    match (sub.as_str(), argv.len()) {
        ("help", 2) => reply_help(ctx, argv[0], HELP),
        ("sleep", 3) => {
            let secs = strtod(argv[2]);
            let us = (secs * 1_000_000.0) as i64;
            if us > 0 {
                std::thread::sleep(std::time::Duration::from_micros(us as u64));
            }
            ctx.out.ok();
        }
        ("set-active-expire", 3) => set_flag(ctx, &ctx.srv.stats.active_expire, argv[2]),
        ("set-skip-checksum-validation", 3) => set_flag(ctx, &ctx.srv.stats.skip_checksum, argv[2]),
        ("object", 3) => object(ctx, argv[2]),
        ("error", 3) => {
            // The argument as the whole error line (no code added), CR and LF as spaces,
            // sent raw: Redis counts it in no error statistics.
            let mut line = Vec::with_capacity(argv[2].len() + 3);
            line.push(b'-');
            line.extend(argv[2].iter().map(|&b| match b {
                b'\r' | b'\n' => b' ',
                b => b,
            }));
            line.extend_from_slice(b"\r\n");
            ctx.out.raw(&line);
            ctx.client.uncounted_error = true;
        }
        ("protocol", 3) => protocol::protocol(ctx, argv[2]),
        ("log", 3) => {
            // Read as a C string: up to its first NUL byte.
            let msg = argv[2].split(|&b| b == 0).next().unwrap_or_default();
            crate::log::warning(&format!("DEBUG LOG: {}", String::from_utf8_lossy(msg)));
            ctx.out.ok();
        }
        ("populate", 3..=5) => populate::populate(ctx, argv),
        ("digest", 2) => digest::dataset(ctx),
        ("digest-value", _) => digest::values(ctx, &argv[2..]),
        ("reload", _) => reload(ctx, &argv[2..]),
        ("loadaof", 2) => loadaof(ctx),
        ("propagation", 3) => propagation(ctx, argv[2]),
        ("change-repl-id", 2) => {
            crate::log::warning("Changing replication IDs after receiving DEBUG change-repl-id");
            *ctx.srv.stats.replid.lock() = crate::stats::random_hex40();
            *ctx.srv.repl.replid2.lock() = None;
            ctx.out.ok();
        }
        _ => subcommand_syntax_error(ctx, argv),
    }
}

/// A switch set as Redis sets it: `atoi(arg)`, non-zero is on.
fn set_flag(ctx: &mut Ctx, flag: &std::sync::atomic::AtomicBool, arg: &[u8]) {
    flag.store(super::args::c_atoi(arg) != 0, Relaxed);
    ctx.out.ok();
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the dataset, load the file back,
/// with every shard held.
fn reload(ctx: &mut Ctx, opts: &[&[u8]]) {
    use crate::persist::{load, save};
    let (mut flush, mut do_save, mut merge) = (true, true, false);
    for o in opts {
        if o.eq_ignore_ascii_case(b"merge") {
            merge = true;
        } else if o.eq_ignore_ascii_case(b"noflush") {
            flush = false;
        } else if o.eq_ignore_ascii_case(b"nosave") {
            do_save = false;
        } else {
            return ctx
                .out
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    let srv = ctx.srv;
    if srv.persist.is_loading() {
        // DEBUG LOADAOF is replaying (DEBUG runs while loading).
        return ctx.out.error(LOADING);
    }
    if do_save && save::save_held(srv, ctx.keys, 0).is_err() {
        return ctx.out.error("ERR");
    }
    if flush {
        empty_data(ctx);
    }
    let dups = if merge {
        load::Duplicates::Replace
    } else {
        load::Duplicates::Refuse
    };
    // Loaded keys are not changes anyone consumes one by one: only counted.
    ctx.keys.changes.keep_events(false);
    ctx.keys.changes.want_informational(0);
    let keys = &mut ctx.keys;
    let put = |db, entry| load::insert(keys, db, entry, dups);
    if load::load_file(srv, load::Presize::No, put).is_err() {
        return ctx.out.error("ERR Error trying to load the RDB dump");
    }
    crate::log::warning("DB reloaded by DEBUG RELOAD");
    ctx.out.ok();
}

const LOADING: &str = "LOADING Redis is loading the dataset in memory";

/// emptyData for DEBUG RELOAD and LOADAOF, every shard held.
fn empty_data(ctx: &mut Ctx) {
    let tables: Vec<_> = (0..ctx.srv.keyspace.len())
        .map(|db| ctx.keys.flush_db(db))
        .collect();
    drop(tables);
    // Emptying for a reload is not a change to save (emptyData does not count it); the
    // flush itself stays recorded (WATCH).
    ctx.keys.changes.extra_dirty = 0;
}

/// DEBUG LOADAOF: write out what the AOF has not written yet, empty the dataset, and load
/// the AOF directory again (with `appendonly no` too: whatever AOF is on disk). As in
/// Redis, a load that fails (no AOF at all included) ends the server. The flush happens
/// with every shard held, and `loading` is set before they are released: until the
/// replay ends, other clients get -LOADING (Redis serves them so while it loads). The
/// replay runs through the dispatcher, each command taking its own locks, as at start-up.
fn loadaof(ctx: &mut Ctx) {
    use crate::persist::aof;
    let srv = ctx.srv;
    if srv
        .persist
        .loading
        .compare_exchange(false, true, Relaxed, Relaxed)
        .is_err()
    {
        return ctx.out.error(LOADING);
    }
    if srv.persist.aof.is_on() {
        aof::before_reply(srv);
    }
    empty_data(ctx);
    ctx.keys.relock(&mut engine::Plan::new());
    let ret = aof::load::reload(srv, ctx.client.worker);
    if !matches!(ret, aof::load::Status::Ok | aof::load::Status::Empty) {
        std::process::exit(1);
    }
    // Every shard again, as the dispatcher locked them for this command: inside EXEC the
    // commands queued after this one run under them.
    let mut all = engine::Plan::new();
    all.all();
    ctx.keys.relock(&mut all);
    srv.persist.loading.store(false, Relaxed);
    // server.dirty = 0: the replayed commands are not changes to save.
    crate::persist::reset_dirty(srv, ctx.keys.changes.dirty());
    crate::log::warning("Append Only File loaded by DEBUG LOADAOF");
    ctx.out.ok();
}

/// Skein's DEBUG PROPAGATION START|TAKE|STOP: read the propagation stream (what the AOF
/// and replicas receive) from a client, for tests. START keeps records from now on; TAKE
/// returns what was kept since, as RESP commands; STOP drops it.
fn propagation(ctx: &mut Ctx, what: &[u8]) {
    let p = &ctx.srv.propagation;
    let started = &ctx.client.propagation_reader;
    if what.eq_ignore_ascii_case(b"start") {
        if !*started {
            p.attach();
            ctx.client.propagation_reader = true;
        }
        ctx.out.ok();
    } else if what.eq_ignore_ascii_case(b"take") {
        if ctx.srv.persist.aof.is_on() || p.feeds_replicas() {
            // The stream has one reader at a time: taking would rob the AOF or replicas.
            return ctx
                .out
                .error("ERR the propagation stream is being read by the AOF or replicas");
        }
        let bytes = p.take();
        ctx.out.bulk(&bytes);
    } else if what.eq_ignore_ascii_case(b"stop") {
        if *started {
            p.detach();
            ctx.client.propagation_reader = false;
        }
        ctx.out.ok();
    } else {
        ctx.out.error(super::args::SYNTAX_ERR);
    }
}

/// C's strtod on the longest valid prefix (garbage gives 0), as DEBUG SLEEP reads it.
fn strtod(a: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(a);
    let s = s.trim_start();
    let n = s
        .bytes()
        .take(400)
        .take_while(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
        .count();
    (1..=n)
        .rev()
        .find_map(|i| s[..i].parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

fn object(ctx: &mut Ctx, key: &[u8]) {
    let compress = super::dump::compression(ctx);
    let Some(e) = ctx.keys.peek(key) else {
        return ctx.out.error(NO_SUCH_KEY);
    };
    let shared = matches!(e.value().as_str(),
        Some(engine::StrRef::Int(n)) if (0..super::object::OBJ_SHARED_INTEGERS).contains(&n));
    let refcount: i64 = if shared {
        super::object::OBJ_SHARED_REFCOUNT
    } else {
        1
    };
    let encoding = e.value().encoding();
    // rdbSavedObjectLen: the value's RDB serialization, compressed as RDB would be.
    let mut rdb = Vec::new();
    engine::rdb::write_object(&mut rdb, e.value(), compress);
    let serialized = rdb.len();
    let addr = e.addr();
    let lru = e.lru();
    let idle = engine::evict::access::idle_seconds(lru);
    // A quicklist's figures, as Redis appends them.
    let extra = match e.value().as_list() {
        Some(l) => {
            let (fill, depth) = l.options();
            let nodes = l.node_count();
            format!(
                " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{fill} ql_compressed:{} ql_uncompressed_size:{}",
                l.len() as f64 / nodes as f64,
                u8::from(depth != 0),
                l.uncompressed_size()
            )
        }
        None => String::new(),
    };
    ctx.out.simple(&format!(
        "Value at:{addr:#x} refcount:{refcount} encoding:{encoding} serializedlength:{serialized} lru:{lru} lru_seconds_idle:{idle}{extra}"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_parsing() {
        assert_eq!(strtod(b"0.5"), 0.5);
        assert_eq!(strtod(b"1.5abc"), 1.5);
        assert_eq!(strtod(b"abc"), 0.0);
        assert_eq!(crate::cmd::args::c_atoi(b"0"), 0);
        assert_eq!(crate::cmd::args::c_atoi(b"12x"), 12);
        assert_eq!(crate::cmd::args::c_atoi(b"-3"), -3);
    }
}
