//! String commands.

use super::args::{self, is, NOT_INT, OVERFLOW, SYNTAX_ERR, WRONGTYPE};
use super::{Ctx, Handler};
use engine::{now_ms, Shard, StrValue, Value, NO_EXPIRE};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("get", get),
    ("set", set),
    ("setnx", setnx),
    ("setex", setex),
    ("psetex", psetex),
    ("getset", getset),
    ("getdel", getdel),
    ("getex", getex),
    ("mget", mget),
    ("mset", mset),
    ("msetnx", msetnx),
    ("append", append),
    ("strlen", strlen),
    ("incr", incr),
    ("decr", decr),
    ("incrby", incrby),
    ("decrby", decrby),
    ("incrbyfloat", incrbyfloat),
    ("getrange", getrange),
    ("substr", getrange),
    ("setrange", setrange),
];

const MAX_BULK_ERR: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// The string at `key` in a locked shard: Ok(None) if absent, Err on wrong type.
pub fn read_str<'a>(
    shard: &'a mut Shard,
    h: u64,
    key: &[u8],
    now: i64,
) -> Result<Option<&'a mut StrValue>, &'static str> {
    match shard.get(h, key, now) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Str(s) => Ok(Some(s)),
            #[allow(unreachable_patterns)]
            _ => Err(WRONGTYPE),
        },
    }
}

fn count_lookup(ctx: &Ctx, hit: bool) {
    let w = ctx.worker_stats();
    if hit {
        w.keyspace_hits.fetch_add(1, Relaxed);
    } else {
        w.keyspace_misses.fetch_add(1, Relaxed);
    }
}

/// Reply with the string at `key` (GET semantics). Returns false on WRONGTYPE.
fn reply_get(ctx: &mut Ctx, shard: &mut Shard, h: u64, key: &[u8], now: i64) -> bool {
    match read_str(shard, h, key, now) {
        Ok(Some(s)) => {
            match s {
                StrValue::Int(n) => ctx.out.bulk_int(*n),
                StrValue::Bytes { data, .. } => ctx.out.bulk(data),
            }
            count_lookup(ctx, true);
            true
        }
        Ok(None) => {
            ctx.out.null();
            count_lookup(ctx, false);
            true
        }
        Err(e) => {
            ctx.out.error(e);
            false
        }
    }
}

fn get(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (mut shard, h) = ctx.db().lock(argv[1]);
    reply_get(ctx, &mut shard, h, argv[1], now_ms());
}

/// Options of SET (and GETEX's subset).
#[derive(Default)]
struct SetOpts {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// (which option, argument): EX, PX, EXAT or PXAT.
    expire: Option<(&'static str, Vec<u8>)>,
}

/// Redis's parseExtendedStringArgumentsOrReply.
fn parse_set_opts(argv: &[&[u8]], start: usize, for_set: bool) -> Result<SetOpts, &'static str> {
    let mut o = SetOpts::default();
    let mut j = start;
    while j < argv.len() {
        let a = argv[j];
        let has_next = j + 1 < argv.len();
        let timed = o.expire.is_some();
        if is(a, "nx") && !o.xx && for_set {
            o.nx = true;
        } else if is(a, "xx") && !o.nx && for_set {
            o.xx = true;
        } else if is(a, "get") && for_set {
            o.get = true;
        } else if is(a, "keepttl") && !o.persist && !timed && for_set {
            o.keepttl = true;
        } else if is(a, "persist") && !for_set && !timed && !o.keepttl {
            o.persist = true;
        } else if let Some(unit) = ["ex", "px", "exat", "pxat"]
            .into_iter()
            .find(|u| is(a, u))
            .filter(|_| !o.keepttl && !o.persist && has_next)
        {
            match &o.expire {
                Some((u, _)) if *u != unit => return Err(SYNTAX_ERR),
                _ => {}
            }
            o.expire = Some((unit, argv[j + 1].to_vec()));
            j += 1;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(o)
}

/// Absolute expiry in ms for an EX/PX/EXAT/PXAT argument (getExpireMillisecondsOrReply).
pub fn expire_ms(unit: &str, arg: &[u8], cmd: &str) -> Result<i64, String> {
    let invalid = || format!("ERR invalid expire time in '{cmd}' command");
    let n = args::int(arg).map_err(|e| e.to_string())?;
    let seconds = unit == "ex" || unit == "exat";
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let mut ms = if seconds { n * 1000 } else { n };
    if unit == "ex" || unit == "px" {
        ms = ms.wrapping_add(now_ms());
    }
    if ms <= 0 {
        return Err(invalid());
    }
    Ok(ms)
}

fn set(ctx: &mut Ctx, argv: &[&[u8]]) {
    let opts = match parse_set_opts(argv, 3, true) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    set_generic(ctx, argv[1], argv[2], &opts, "set", SetReply::Ok);
}

enum SetReply {
    /// +OK, or null when NX/XX stops the write.
    Ok,
    /// :1 / :0 (SETNX).
    Bool,
}

fn set_generic(ctx: &mut Ctx, key: &[u8], val: &[u8], o: &SetOpts, cmd: &str, style: SetReply) {
    let expire_at = match &o.expire {
        Some((unit, arg)) => match expire_ms(unit, arg, cmd) {
            Ok(ms) => Some(ms),
            Err(e) => return ctx.out.error(&e),
        },
        None => None,
    };
    let now = now_ms();
    let (mut shard, h) = ctx.db().lock(key);
    if o.get && !reply_get(ctx, &mut shard, h, key, now) {
        return;
    }
    let existing = shard.get(h, key, now).map(|e| e.expire_at);
    let found = existing.is_some();
    if (o.nx && found) || (o.xx && !found) {
        if !o.get {
            match style {
                SetReply::Ok => ctx.out.null(),
                SetReply::Bool => ctx.out.int(0),
            }
        }
        return;
    }
    let ttl = match (expire_at, o.keepttl, existing) {
        (Some(ms), _, _) => ms,
        (None, true, Some(old)) => old,
        _ => NO_EXPIRE,
    };
    shard.insert(h, key, Value::Str(StrValue::from_bytes(val)), ttl);
    if !o.get {
        match style {
            SetReply::Ok => ctx.out.ok(),
            SetReply::Bool => ctx.out.int(1),
        }
    }
}

fn setnx(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = SetOpts {
        nx: true,
        ..Default::default()
    };
    set_generic(ctx, argv[1], argv[2], &o, "setnx", SetReply::Bool);
}

fn setex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = SetOpts {
        expire: Some(("ex", argv[2].to_vec())),
        ..Default::default()
    };
    set_generic(ctx, argv[1], argv[3], &o, "setex", SetReply::Ok);
}

fn psetex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = SetOpts {
        expire: Some(("px", argv[2].to_vec())),
        ..Default::default()
    };
    set_generic(ctx, argv[1], argv[3], &o, "psetex", SetReply::Ok);
}

fn getset(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = SetOpts {
        get: true,
        ..Default::default()
    };
    set_generic(ctx, argv[1], argv[2], &o, "getset", SetReply::Ok);
}

fn getdel(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (mut shard, h) = ctx.db().lock(argv[1]);
    if reply_get(ctx, &mut shard, h, argv[1], now_ms()) {
        shard.remove(h, argv[1]);
    }
}

fn getex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = match parse_set_opts(argv, 2, false) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let now = now_ms();
    let key = argv[1];
    let (mut shard, h) = ctx.db().lock(key);
    // As Redis: a missing key or wrong type is answered before the expire time is checked.
    if !matches!(read_str(&mut shard, h, key, now), Ok(Some(_))) {
        reply_get(ctx, &mut shard, h, key, now);
        return;
    }
    let expire_at = match &o.expire {
        Some((unit, arg)) => match expire_ms(unit, arg, "getex") {
            Ok(ms) => Some(ms),
            Err(e) => return ctx.out.error(&e),
        },
        None => None,
    };
    reply_get(ctx, &mut shard, h, key, now);
    if let Some(ms) = expire_at {
        if ms <= now {
            // An expiry in the past deletes the key, as Redis does.
            shard.remove(h, key);
        } else {
            shard.set_expire(h, key, ms);
        }
    } else if o.persist {
        shard.set_expire(h, key, NO_EXPIRE);
    }
}

fn mget(ctx: &mut Ctx, argv: &[&[u8]]) {
    let keys = &argv[1..];
    let now = now_ms();
    let mut guard = ctx.db().lock_many(keys);
    ctx.out.array(keys.len());
    let (mut hits, mut misses) = (0, 0);
    for k in keys {
        let (shard, h) = guard.shard(k);
        match read_str(shard, h, k, now) {
            Ok(Some(s)) => {
                hits += 1;
                match s {
                    StrValue::Int(n) => ctx.out.bulk_int(*n),
                    StrValue::Bytes { data, .. } => ctx.out.bulk(data),
                }
            }
            _ => {
                misses += 1;
                ctx.out.null();
            }
        }
    }
    let w = ctx.worker_stats();
    w.keyspace_hits.fetch_add(hits, Relaxed);
    w.keyspace_misses.fetch_add(misses, Relaxed);
}

fn mset_generic(ctx: &mut Ctx, argv: &[&[u8]], nx: bool) {
    if argv.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let keys: Vec<&[u8]> = argv[1..].iter().step_by(2).copied().collect();
    let now = now_ms();
    let mut guard = ctx.db().lock_many(&keys);
    if nx {
        for k in &keys {
            let (shard, h) = guard.shard(k);
            if shard.get(h, k, now).is_some() {
                return ctx.out.int(0);
            }
        }
    }
    for pair in argv[1..].chunks(2) {
        let (shard, h) = guard.shard(pair[0]);
        shard.insert(
            h,
            pair[0],
            Value::Str(StrValue::from_bytes(pair[1])),
            NO_EXPIRE,
        );
    }
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
}

fn mset(ctx: &mut Ctx, argv: &[&[u8]]) {
    mset_generic(ctx, argv, false);
}

fn msetnx(ctx: &mut Ctx, argv: &[&[u8]]) {
    mset_generic(ctx, argv, true);
}

fn max_bulk(ctx: &Ctx) -> i64 {
    ctx.srv.config.get_i64("proto-max-bulk-len")
}

fn append(ctx: &mut Ctx, argv: &[&[u8]]) {
    let max = max_bulk(ctx);
    let now = now_ms();
    let (key, extra) = (argv[1], argv[2]);
    let (mut shard, h) = ctx.db().lock(key);
    match read_str(&mut shard, h, key, now) {
        Err(e) => ctx.out.error(e),
        Ok(None) => {
            shard.insert(h, key, Value::Str(StrValue::from_bytes(extra)), NO_EXPIRE);
            ctx.out.int(extra.len() as i64);
        }
        Ok(Some(s)) => {
            if (s.len() + extra.len()) as i64 > max {
                return ctx.out.error(MAX_BULK_ERR);
            }
            let mut data = std::mem::replace(s, StrValue::Int(0)).into_vec();
            data.extend_from_slice(extra);
            let len = data.len();
            *s = StrValue::raw(data);
            ctx.out.int(len as i64);
        }
    }
}

fn strlen(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (mut shard, h) = ctx.db().lock(argv[1]);
    match read_str(&mut shard, h, argv[1], now_ms()) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.int(0),
        Ok(Some(s)) => ctx.out.int(s.len() as i64),
    }
}

fn incr_generic(ctx: &mut Ctx, key: &[u8], by: i64) {
    let now = now_ms();
    let (mut shard, h) = ctx.db().lock(key);
    let cur = match read_str(&mut shard, h, key, now) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => None,
        Ok(Some(StrValue::Int(n))) => Some(*n),
        Ok(Some(s)) => match engine::value::parse_strict_i64(&s.to_bytes()) {
            Some(n) => Some(n),
            None => return ctx.out.error(NOT_INT),
        },
    };
    let Some(new) = cur.unwrap_or(0).checked_add(by) else {
        return ctx.out.error(OVERFLOW);
    };
    match read_str(&mut shard, h, key, now) {
        Ok(Some(s)) => *s = StrValue::Int(new),
        _ => {
            shard.insert(h, key, Value::Str(StrValue::Int(new)), NO_EXPIRE);
        }
    }
    ctx.out.int(new);
}

fn incr(ctx: &mut Ctx, argv: &[&[u8]]) {
    incr_generic(ctx, argv[1], 1);
}

fn decr(ctx: &mut Ctx, argv: &[&[u8]]) {
    incr_generic(ctx, argv[1], -1);
}

fn incrby(ctx: &mut Ctx, argv: &[&[u8]]) {
    match args::int(argv[2]) {
        Ok(n) => incr_generic(ctx, argv[1], n),
        Err(e) => ctx.out.error(e),
    }
}

fn decrby(ctx: &mut Ctx, argv: &[&[u8]]) {
    match args::int(argv[2]) {
        Ok(i64::MIN) => ctx.out.error("ERR decrement would overflow"),
        Ok(n) => incr_generic(ctx, argv[1], -n),
        Err(e) => ctx.out.error(e),
    }
}

fn incrbyfloat(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let Some(incr) = args::parse_f64(argv[2]) else {
        return ctx.out.error(args::NOT_FLOAT);
    };
    let now = now_ms();
    let (mut shard, h) = ctx.db().lock(key);
    let cur = match read_str(&mut shard, h, key, now) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => 0.0,
        Ok(Some(s)) => match args::parse_f64(&s.to_bytes()) {
            Some(v) => v,
            None => return ctx.out.error(args::NOT_FLOAT),
        },
    };
    let new = cur + incr;
    if new.is_nan() || new.is_infinite() {
        return ctx.out.error("ERR increment would produce NaN or Infinity");
    }
    let text = crate::floatfmt::long_double_human(new);
    match read_str(&mut shard, h, key, now) {
        Ok(Some(s)) => *s = StrValue::from_bytes(text.as_bytes()),
        _ => {
            shard.insert(
                h,
                key,
                Value::Str(StrValue::from_bytes(text.as_bytes())),
                NO_EXPIRE,
            );
        }
    }
    ctx.out.bulk(text.as_bytes());
}

fn getrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (start, end) = match (args::int(argv[2]), args::int(argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        _ => return ctx.out.error(NOT_INT),
    };
    let (mut shard, h) = ctx.db().lock(argv[1]);
    let s = match read_str(&mut shard, h, argv[1], now_ms()) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.bulk(b""),
        Ok(Some(s)) => s.to_bytes(),
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return ctx.out.bulk(b"");
    }
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return ctx.out.bulk(b"");
    }
    ctx.out.bulk(&s[start as usize..=end as usize]);
}

fn setrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let value = argv[3];
    let offset = match args::int(argv[2]) {
        Ok(o) if o < 0 => return ctx.out.error("ERR offset is out of range"),
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let max = max_bulk(ctx);
    let now = now_ms();
    let (mut shard, h) = ctx.db().lock(key);
    match read_str(&mut shard, h, key, now) {
        Err(e) => ctx.out.error(e),
        Ok(None) => {
            if value.is_empty() {
                return ctx.out.int(0);
            }
            if offset + value.len() as i64 > max {
                return ctx.out.error(MAX_BULK_ERR);
            }
            let mut data = vec![0u8; offset as usize];
            data.extend_from_slice(value);
            let len = data.len();
            shard.insert(h, key, Value::Str(StrValue::raw(data)), NO_EXPIRE);
            ctx.out.int(len as i64);
        }
        Ok(Some(s)) => {
            if value.is_empty() {
                return ctx.out.int(s.len() as i64);
            }
            if offset + value.len() as i64 > max {
                return ctx.out.error(MAX_BULK_ERR);
            }
            let mut data = std::mem::replace(s, StrValue::Int(0)).into_vec();
            let end = offset as usize + value.len();
            if data.len() < end {
                data.resize(end, 0);
            }
            data[offset as usize..end].copy_from_slice(value);
            let len = data.len();
            *s = StrValue::raw(data);
            ctx.out.int(len as i64);
        }
    }
}
