//! OBJECT and the keyspace commands that move values: COPY, MOVE.

use super::args::{self, is, SYNTAX_ERR};
use super::help::reply_help;
use super::{Ctx, Handler};
use engine::evict::access;
use engine::locked::Read;
use engine::{Entry, Event, StrRef, ValueRef};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("object|help", object_help),
    ("object|encoding", object_encoding),
    ("object|freq", object_freq),
    ("object|idletime", object_idletime),
    ("object|refcount", object_refcount),
    ("copy", copy),
    ("move", move_cmd),
];

const SAME_OBJECT: &str = "ERR source and destination objects are the same";

/// Integers 0..OBJ_SHARED_INTEGERS are shared objects in Redis, whose refcount reads as
/// OBJ_SHARED_REFCOUNT.
pub const OBJ_SHARED_INTEGERS: i64 = 10_000;
pub const OBJ_SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// Is an LFU `maxmemory-policy` selected?
pub fn lfu_policy(_ctx: &Ctx) -> bool {
    access::lfu()
}

fn object_help(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_help(
        ctx,
        argv[0],
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
}

/// Look the key up without touching its access time, and reply with what `f` computes, or
/// null when the key is absent. `f` may instead return an error text.
fn with_entry(ctx: &mut Ctx, key: &[u8], f: impl FnOnce(&Entry) -> Result<i64, &'static str>) {
    let r = ctx.keys.read(key, Read::NOTOUCH_NONOTIFY).map(f);
    match r {
        None => ctx.out.null(),
        Some(Ok(n)) => ctx.out.int(n),
        Some(Err(e)) => ctx.out.error(e),
    }
}

fn object_encoding(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[2];
    let enc = ctx
        .keys
        .read(key, Read::NOTOUCH_NONOTIFY)
        .map(|e| e.value().encoding());
    match enc {
        Some(enc) => ctx.out.bulk(enc.as_bytes()),
        None => ctx.out.null(),
    }
}

fn object_freq(ctx: &mut Ctx, argv: &[&[u8]]) {
    let lfu = lfu_policy(ctx);
    with_entry(ctx, argv[2], |e| {
        if !lfu {
            return Err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
        }
        Ok(i64::from(access::lfu_counter(e.lru())))
    });
}

fn object_idletime(ctx: &mut Ctx, argv: &[&[u8]]) {
    let lfu = lfu_policy(ctx);
    with_entry(ctx, argv[2], |e| {
        if lfu {
            return Err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
        }
        Ok(i64::from(access::idle_seconds(e.lru())))
    });
}

fn object_refcount(ctx: &mut Ctx, argv: &[&[u8]]) {
    // Redis shares the objects of small integers unless maxmemory is set with an LRU or
    // LFU policy (MAXMEMORY_FLAG_NO_SHARED_INTEGERS).
    let policy = ctx.srv.config.get("maxmemory-policy");
    let shared_ok = ctx.srv.config.get_i64("maxmemory") == 0
        || !(policy.ends_with("-lru") || policy.ends_with("-lfu"));
    with_entry(ctx, argv[2], |e| {
        Ok(match e.value() {
            ValueRef::Str(StrRef::Int(n)) if shared_ok && (0..OBJ_SHARED_INTEGERS).contains(&n) => {
                OBJ_SHARED_REFCOUNT
            }
            _ => 1,
        })
    })
}

/// A database number argument: an int (getIntFromObjectOrReply) naming an existing database.
fn parse_db(ctx: &Ctx, arg: &[u8]) -> Result<usize, &'static str> {
    args::db_index(arg, ctx.srv.keyspace.len())
}

/// Copy or move `src` (database `from`) to `dst` (database `to`). `replace` overwrites an
/// existing destination; `copy` keeps the source. Returns whether anything was written.
#[allow(clippy::too_many_arguments)]
fn transfer(
    ctx: &mut Ctx,
    from: usize,
    to: usize,
    src: &[u8],
    dst: &[u8],
    replace: bool,
    copy: bool,
) -> bool {
    let keys = &mut ctx.keys;
    // COPY reads the source (lookupKeyRead); MOVE looks it up for writing.
    let found = if copy {
        keys.read_in(from, src, Read::NORMAL).is_some()
    } else {
        keys.exists_for_write_in(from, src)
    };
    if !found {
        return false;
    }
    if keys.exists_for_write_in(to, dst) {
        if !replace {
            return false;
        }
        // Redis deletes the destination, then adds the key anew (`new` is announced).
        keys.remove_in(to, dst, Event::NONE);
    }
    let entry = if copy {
        let Some(e) = keys.peek_in(from, src) else {
            return false;
        };
        Entry::new(dst, e.value(), e.expire_at(), access::fresh())
    } else {
        let Some(e) = keys.remove_in(from, src, Event::NONE) else {
            return false;
        };
        e.with_key(dst)
    };
    keys.insert_entry_in(to, dst, entry, Event::NONE);
    if copy {
        keys.notify_in(to, dst, Event::generic("copy_to"));
    } else {
        keys.notify_in(from, src, Event::generic("move_from"));
        keys.notify_in(to, dst, Event::generic("move_to").clean());
    }
    true
}

/// COPY source destination [DB destination-db] [REPLACE]
fn copy(ctx: &mut Ctx, argv: &[&[u8]]) {
    let from = ctx.client.db;
    let mut to = from;
    let mut replace = false;
    let mut j = 3;
    while j < argv.len() {
        if is(argv[j], "replace") {
            replace = true;
        } else if is(argv[j], "db") && j + 1 < argv.len() {
            match parse_db(ctx, argv[j + 1]) {
                Ok(n) => to = n,
                Err(e) => return ctx.out.error(e),
            }
            j += 1;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 1;
    }
    let (src, dst) = (argv[1], argv[2]);
    if from == to && src == dst {
        return ctx.out.error(SAME_OBJECT);
    }
    let done = transfer(ctx, from, to, src, dst, replace, true);
    ctx.out.int(i64::from(done));
}

/// MOVE key db
fn move_cmd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let from = ctx.client.db;
    let to = match parse_db(ctx, argv[2]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    if from == to {
        return ctx.out.error(SAME_OBJECT);
    }
    let done = transfer(ctx, from, to, argv[1], argv[1], false, false);
    ctx.out.int(i64::from(done));
}
