//! String commands.

use super::args::{self, is, NOT_INT, OVERFLOW, SYNTAX_ERR, WRONGTYPE};
use super::{Ctx, Handler};
use crate::floatfmt::LongDouble;
use crate::propagate::deletion;
use engine::locked::EntryMut;
use engine::{now_ms, Event, Locked, StrRef, NO_EXPIRE};
use resp::ReplyBuf;
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
    ("lcs", lcs),
];

const MAX_BULK_ERR: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

const SET: Event = Event::string("set");
const INCRBY: Event = Event::string("incrby");
const EXPIRE: Event = Event::generic("expire");
/// SET's `expire`, which Redis counts with its `set` as one change.
const SET_EXPIRE: Event = EXPIRE.clean();

/// The string at `key` (a read lookup): Ok(None) if absent, Err on wrong type.
pub fn read_str<'k>(keys: &'k mut Locked, key: &[u8]) -> Result<Option<StrRef<'k>>, &'static str> {
    match keys.get(key) {
        None => Ok(None),
        Some(e) => e.value().as_str().map(Some).ok_or(WRONGTYPE),
    }
}

/// A string as a bulk reply.
fn reply_str(out: &mut ReplyBuf, s: StrRef<'_>) {
    match s {
        StrRef::Int(n) => out.bulk_int(n),
        StrRef::Embstr(data) | StrRef::Raw(data) => out.bulk(data),
    }
}

/// Reply with the string at `key` (GET semantics). Returns false on WRONGTYPE.
fn reply_get(ctx: &mut Ctx, key: &[u8]) -> bool {
    match read_str(ctx.keys, key) {
        Ok(Some(s)) => {
            reply_str(ctx.out, s);
            true
        }
        Ok(None) => {
            ctx.out.null();
            true
        }
        Err(e) => {
            ctx.out.error(e);
            false
        }
    }
}

fn get(ctx: &mut Ctx, argv: &[&[u8]]) {
    reply_get(ctx, argv[1]);
}

/// Options of SET (and GETEX's subset).
#[derive(Default)]
struct SetOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// (which option, argument): EX, PX, EXAT or PXAT.
    expire: Option<(&'static str, &'a [u8])>,
}

/// Redis's parseExtendedStringArgumentsOrReply.
fn parse_set_opts<'a>(
    argv: &[&'a [u8]],
    start: usize,
    for_set: bool,
) -> Result<SetOpts<'a>, &'static str> {
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
            o.expire = Some((unit, argv[j + 1]));
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
    if o.get && !reply_get(ctx, key) {
        return;
    }
    let keys = &mut ctx.keys;
    let value = StrRef::encode(val);
    // Overwrite in place when the key exists: one lookup on the hot path of SET.
    let overwritten = match keys.modify(key, SET) {
        Some(_) if o.nx => None,
        None if o.xx => None,
        Some(mut e) => {
            let old = e.expire_at();
            e.set_value(value);
            let ttl = expire_at.unwrap_or(if o.keepttl { old } else { NO_EXPIRE });
            if ttl != old {
                e.set_expire(ttl);
            }
            Some(true)
        }
        None => Some(false),
    };
    match overwritten {
        None => {
            if !o.get {
                match style {
                    SetReply::Ok => ctx.out.null(),
                    SetReply::Bool => ctx.out.int(0),
                }
            }
            return;
        }
        Some(false) => keys.insert(key, value, expire_at.unwrap_or(NO_EXPIRE), SET),
        Some(true) => {}
    }
    if let Some(ms) = expire_at {
        keys.notify(key, SET_EXPIRE);
        // Propagated with an absolute time.
        if ctx.propagate.wanted() {
            ctx.propagate
                .replace(&[b"SET", key, val, b"PXAT", ms.to_string().as_bytes()]);
        }
    } else if o.get && cmd == "set" {
        // Propagated without GET.
        let mut args: Vec<&[u8]> = vec![b"SET", key, val];
        if o.nx {
            args.push(b"NX");
        }
        if o.xx {
            args.push(b"XX");
        }
        if o.keepttl {
            args.push(b"KEEPTTL");
        }
        ctx.propagate.replace(&args);
    }
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
        expire: Some(("ex", argv[2])),
        ..Default::default()
    };
    set_generic(ctx, argv[1], argv[3], &o, "setex", SetReply::Ok);
}

fn psetex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = SetOpts {
        expire: Some(("px", argv[2])),
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
    let key = argv[1];
    let found = match read_str(ctx.keys, key) {
        Ok(Some(s)) => {
            reply_str(ctx.out, s);
            true
        }
        Ok(None) => {
            ctx.out.null();
            false
        }
        Err(e) => return ctx.out.error(e),
    };
    if found {
        ctx.keys.remove(key, Event::DEL);
        ctx.propagate.replace(&[b"DEL", key]);
    }
}

fn getex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let o = match parse_set_opts(argv, 2, false) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let now = ctx.keys.now();
    let key = argv[1];
    // Redis looks the key up (null / WRONGTYPE) before it validates the expire time.
    match read_str(ctx.keys, key) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.null(),
        Ok(Some(_)) => {}
    }
    let expire_at = match &o.expire {
        Some((unit, arg)) => match expire_ms(unit, arg, "getex") {
            Ok(ms) => Some(ms),
            Err(e) => return ctx.out.error(&e),
        },
        None => None,
    };
    if let Some(s) = ctx.keys.peek(key).and_then(|e| e.value().as_str()) {
        reply_str(ctx.out, s);
    }
    match (expire_at, &o.expire) {
        // An EXAT/PXAT time already past deletes the key, as Redis does.
        (Some(ms), Some((unit, _))) if ms <= now && unit.ends_with("at") => {
            ctx.keys.remove(key, Event::DEL);
            let del = deletion(ctx.srv, "lazyfree-lazy-expire");
            ctx.propagate.replace(&[del, key]);
        }
        (Some(ms), Some((unit, arg))) => {
            ctx.keys.set_expire(key, ms, EXPIRE);
            if *unit == "pxat" {
                ctx.propagate.replace(&[b"GETEX", key, b"PXAT", arg]);
            } else {
                ctx.propagate
                    .replace(&[b"PEXPIREAT", key, ms.to_string().as_bytes()]);
            }
        }
        _ if o.persist => {
            let had = ctx
                .keys
                .modify(key, Event::NONE)
                .is_some_and(|e| e.expire_at() != NO_EXPIRE);
            if had {
                ctx.keys
                    .set_expire(key, NO_EXPIRE, Event::generic("persist"));
                ctx.propagate.replace(&[b"PERSIST", key]);
            }
        }
        _ => {}
    }
}

fn mget(ctx: &mut Ctx, argv: &[&[u8]]) {
    let keys = &argv[1..];
    ctx.out.array(keys.len());
    for k in keys {
        match read_str(ctx.keys, k) {
            Ok(Some(s)) => reply_str(ctx.out, s),
            _ => ctx.out.null(),
        }
    }
}

fn mset_generic(ctx: &mut Ctx, argv: &[&[u8]], nx: bool) {
    if argv.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    if nx {
        for k in argv[1..].iter().step_by(2) {
            if ctx.keys.exists_for_write(k) {
                return ctx.out.int(0);
            }
        }
    }
    for pair in argv[1..].chunks(2) {
        ctx.keys
            .insert(pair[0], StrRef::encode(pair[1]), NO_EXPIRE, SET);
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
    ctx.srv.config.hot.proto_max_bulk_len.load(Relaxed)
}

/// checkStringLength: a string of `size + append` bytes is allowed.
fn check_len(ctx: &Ctx, size: i64, append: i64) -> Result<(), ()> {
    match size.checked_add(append) {
        Some(total) if total <= max_bulk(ctx) => Ok(()),
        _ => Err(()),
    }
}

/// The string at `key` for modification: Ok(None) if absent, Err on wrong type.
fn modify_str<'k>(
    keys: &'k mut Locked,
    key: &[u8],
    event: Event,
) -> Result<Option<EntryMut<'k>>, &'static str> {
    match keys.modify(key, event) {
        None => Ok(None),
        Some(e) if e.value().as_str().is_some() => Ok(Some(e)),
        Some(_) => Err(WRONGTYPE),
    }
}

fn append(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (key, extra) = (argv[1], argv[2]);
    let ev = Event::string("append");
    let max = max_bulk(ctx);
    let appended = match modify_str(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => None,
        Ok(Some(mut e)) => {
            let len = e.value().as_str().map_or(0, |s| s.len()) as i64;
            if len.checked_add(extra.len() as i64).is_none_or(|t| t > max) {
                return ctx.out.error(MAX_BULK_ERR);
            }
            let data = e.make_raw();
            data.extend_from_slice(extra);
            Some(data.len())
        }
    };
    let len = appended.unwrap_or_else(|| {
        ctx.keys.insert(key, StrRef::encode(extra), NO_EXPIRE, ev);
        extra.len()
    });
    ctx.out.int(len as i64);
}

fn strlen(ctx: &mut Ctx, argv: &[&[u8]]) {
    match read_str(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.int(0),
        Ok(Some(s)) => ctx.out.int(s.len() as i64),
    }
}

fn incr_generic(ctx: &mut Ctx, key: &[u8], by: i64) {
    // One lookup: update in place when the key exists, insert only when it does not.
    let updated = match modify_str(ctx.keys, key, INCRBY) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            let cur = match e.value().as_str() {
                Some(StrRef::Int(n)) => n,
                Some(other) => match engine::value::parse_strict_i64(&other.to_bytes()) {
                    Some(n) => n,
                    None => return ctx.out.error(NOT_INT),
                },
                None => return ctx.out.error(WRONGTYPE),
            };
            let Some(new) = cur.checked_add(by) else {
                return ctx.out.error(OVERFLOW);
            };
            e.set_value(StrRef::Int(new));
            Some(new)
        }
        Ok(None) => None,
    };
    let new = updated.unwrap_or_else(|| {
        ctx.keys.insert(key, StrRef::Int(by), NO_EXPIRE, INCRBY);
        by
    });
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
    let ev = Event::string("incrbyfloat");
    let cur = match modify_str(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => Some(LongDouble::from_i64(0)),
        Ok(Some(e)) => match e.value().as_str() {
            Some(StrRef::Int(n)) => Some(LongDouble::from_i64(n)),
            Some(StrRef::Embstr(data) | StrRef::Raw(data)) => LongDouble::parse(data),
            None => None,
        },
    };
    let (Some(cur), Some(incr)) = (cur, LongDouble::parse(argv[2])) else {
        return ctx.out.error(args::NOT_FLOAT);
    };
    let new = cur + incr;
    if !new.is_finite() {
        return ctx.out.error("ERR increment would produce NaN or Infinity");
    }
    let text = new.to_human().into_bytes();
    ctx.out.bulk(&text);
    // createStringObject: embstr or raw, never int; the TTL is kept.
    let value = StrRef::created(&text);
    let updated = match ctx.keys.modify(key, ev) {
        Some(mut e) => {
            e.set_value(value);
            true
        }
        None => false,
    };
    if !updated {
        ctx.keys.insert(key, value, NO_EXPIRE, ev);
    }
    // Propagated as a SET of the result, so float rounding cannot differ on replay.
    ctx.propagate.replace(&[b"SET", key, &text, b"KEEPTTL"]);
}

fn getrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (start, end) = match (args::int(argv[2]), args::int(argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        _ => return ctx.out.error(NOT_INT),
    };
    let s = match read_str(ctx.keys, argv[1]) {
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
    let ev = Event::string("setrange");
    let fits = check_len(ctx, offset, value.len() as i64).is_ok();
    let found = match modify_str(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(found) => found.is_some(),
    };
    if !found {
        if value.is_empty() {
            return ctx.out.int(0);
        }
        if !fits {
            return ctx.out.error(MAX_BULK_ERR);
        }
        let mut data = vec![0u8; offset as usize];
        data.extend_from_slice(value);
        let len = data.len();
        ctx.keys.insert(key, StrRef::Raw(&data), NO_EXPIRE, ev);
        return ctx.out.int(len as i64);
    }
    match modify_str(ctx.keys, key, ev) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.int(0),
        Ok(Some(mut e)) => {
            let len = e.value().as_str().map_or(0, |s| s.len());
            if value.is_empty() {
                return ctx.out.int(len as i64);
            }
            if !fits {
                return ctx.out.error(MAX_BULK_ERR);
            }
            let data = e.make_raw();
            let end = offset as usize + value.len();
            if data.len() < end {
                data.resize(end, 0);
            }
            data[offset as usize..end].copy_from_slice(value);
            ctx.out.int(data.len() as i64);
        }
    }
}

/// One LCS match range: (a_start, a_end, b_start, b_end).
type LcsRange = (u32, u32, u32, u32);

/// The LCS string and its match ranges (walking back from the ends, as Redis emits
/// them), keeping ranges of at least `minmatchlen`.
fn lcs_walk(a: &[u8], b: &[u8], table: &[u32], minmatchlen: i64) -> (Vec<u8>, Vec<LcsRange>) {
    let (alen, blen) = (a.len(), b.len());
    let at = |i: usize, j: usize| table[j + i * (blen + 1)];
    let mut idx = at(alen, blen) as usize;
    let mut result = vec![0u8; idx];
    let mut ranges = Vec::new();
    // `None` is Redis's "arange_start == alen" (no range in progress).
    let mut cur: Option<LcsRange> = None;
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            let (i1, j1) = ((i - 1) as u32, (j - 1) as u32);
            match &mut cur {
                None => cur = Some((i1, i1, j1, j1)),
                Some(r) if r.0 == i as u32 && r.2 == j as u32 => {
                    r.0 -= 1;
                    r.2 -= 1;
                }
                Some(_) => emit = true,
            }
            if let Some(r) = cur {
                if r.0 == 0 || r.2 == 0 {
                    emit = true;
                }
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = cur.is_some();
        }
        if emit {
            if let Some(r) = cur.take() {
                let len = i64::from(r.1 - r.0 + 1);
                if minmatchlen == 0 || len >= minmatchlen {
                    ranges.push(r);
                }
            }
        }
    }
    (result, ranges)
}

fn lcs(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (a, b) = {
        let mut get =
            |k: &[u8]| read_str(ctx.keys, k).map(|s| s.map(|s| s.to_bytes().into_owned()));
        match (get(argv[1]), get(argv[2])) {
            (Ok(a), Ok(b)) => (a.unwrap_or_default(), b.unwrap_or_default()),
            _ => {
                return ctx
                    .out
                    .error("ERR The specified keys must contain string values")
            }
        }
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: i64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let opt = argv[j];
        if is(opt, "idx") {
            getidx = true;
        } else if is(opt, "len") {
            getlen = true;
        } else if is(opt, "withmatchlen") {
            withmatchlen = true;
        } else if is(opt, "minmatchlen") && j + 1 < argv.len() {
            match args::int(argv[j + 1]) {
                Ok(n) => minmatchlen = n.max(0),
                Err(e) => return ctx.out.error(e),
            }
            j += 1;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 1;
    }
    if getlen && getidx {
        return ctx
            .out
            .error("ERR If you want both the length and indexes, please just use IDX.");
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return ctx.out.error("ERR String too long for LCS");
    }
    let cells = (a.len() + 1) as u64 * (b.len() + 1) as u64;
    if cells * 4 > ctx.srv.config.hot.proto_max_bulk_len.load(Relaxed) as u64 {
        return ctx
            .out
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return ctx
            .out
            .error("ERR Insufficient memory, failed allocating transient memory for LCS");
    }
    table.resize(cells as usize, 0);
    let w = b.len() + 1;
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[j + i * w] = if a[i - 1] == b[j - 1] {
                table[(j - 1) + (i - 1) * w] + 1
            } else {
                table[j + (i - 1) * w].max(table[(j - 1) + i * w])
            };
        }
    }
    let total = i64::from(table[cells as usize - 1]);
    if getlen {
        return ctx.out.int(total);
    }
    let (result, ranges) = lcs_walk(&a, &b, &table, minmatchlen);
    if !getidx {
        return ctx.out.bulk(&result);
    }
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(ranges.len());
    for (a0, a1, b0, b1) in ranges {
        ctx.out.array(2 + usize::from(withmatchlen));
        ctx.out.array(2);
        ctx.out.int(i64::from(a0));
        ctx.out.int(i64::from(a1));
        ctx.out.array(2);
        ctx.out.int(i64::from(b0));
        ctx.out.int(i64::from(b1));
        if withmatchlen {
            ctx.out.int(i64::from(a1 - a0 + 1));
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.int(total);
}
