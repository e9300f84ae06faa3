//! Generic key commands: existence, deletion, expiry, iteration, renaming.

use super::args::{self, is, NO_SUCH_KEY};
use super::scan_args;
use super::{Ctx, Handler};
use crate::propagate::deletion;
use engine::glob::glob_match;
use engine::locked::Read;
use engine::{now_ms, Event, NO_EXPIRE};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("del", del),
    ("unlink", del),
    ("exists", exists),
    ("touch", touch),
    ("type", type_cmd),
    ("ttl", ttl),
    ("pttl", pttl),
    ("expiretime", expiretime),
    ("pexpiretime", pexpiretime),
    ("expire", expire),
    ("pexpire", pexpire),
    ("expireat", expireat),
    ("pexpireat", pexpireat),
    ("persist", persist),
    ("keys", keys),
    ("scan", scan),
    ("randomkey", randomkey),
    ("rename", rename),
    ("renamenx", renamenx),
];

/// DEL and UNLINK. UNLINK (and DEL with `lazyfree-lazy-user-del`) frees a big value on
/// the lazyfree thread; a plain DEL of a big value frees it before replying (after its
/// shard is released), which the dispatcher runs on the background pool when it is past
/// `offload-threshold`.
fn del(ctx: &mut Ctx, argv: &[&[u8]]) {
    let lazy = argv[0].eq_ignore_ascii_case(b"unlink")
        || ctx.srv.config.hot.lazyfree_lazy_user_del.load(Relaxed) != 0;
    let mut n = 0;
    for k in &argv[1..] {
        // An expired key counts as absent.
        if let Some(e) = ctx.keys.remove(k, Event::DEL) {
            n += 1;
            if lazy {
                crate::lazyfree::free(e);
            } else {
                crate::lazyfree::free_here(e);
            }
        }
    }
    ctx.out.int(n);
}

/// Count the keys present (a key named twice counts twice); `touch` also marks them
/// accessed.
fn count_present(ctx: &mut Ctx, keys: &[&[u8]], touch: bool) {
    let how = if touch { Read::NORMAL } else { Read::NOTOUCH };
    let mut n = 0;
    for k in keys {
        n += ctx.keys.read(k, how).is_some() as i64;
    }
    ctx.out.int(n);
}

/// EXISTS: looks without touching (LOOKUP_NOTOUCH).
fn exists(ctx: &mut Ctx, argv: &[&[u8]]) {
    count_present(ctx, &argv[1..], false);
}

fn touch(ctx: &mut Ctx, argv: &[&[u8]]) {
    count_present(ctx, &argv[1..], true);
}

fn type_cmd(ctx: &mut Ctx, argv: &[&[u8]]) {
    match ctx.keys.read(argv[1], Read::NOTOUCH) {
        Some(e) => ctx.out.simple(e.value().type_name()),
        None => ctx.out.simple("none"),
    }
}

/// TTL family: `ms` selects milliseconds, `abs` an absolute Unix time.
fn ttl_generic(ctx: &mut Ctx, key: &[u8], ms: bool, abs: bool) {
    let now = ctx.keys.now();
    let Some(e) = ctx.keys.read(key, Read::NOTOUCH) else {
        return ctx.out.int(-2);
    };
    let at = e.expire_at();
    if at == NO_EXPIRE {
        return ctx.out.int(-1);
    }
    let t = if abs { at } else { at - now }.max(0);
    // (Rounded without overflow: Redis answers 9223372036854776 for i64::MAX ms.)
    let secs = (i128::from(t) + 500) / 1000;
    ctx.out.int(if ms { t } else { secs as i64 });
}

fn ttl(ctx: &mut Ctx, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], false, false);
}

fn pttl(ctx: &mut Ctx, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], true, false);
}

fn expiretime(ctx: &mut Ctx, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], false, true);
}

fn pexpiretime(ctx: &mut Ctx, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], true, true);
}

#[derive(Default)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_expire_flags(argv: &[&[u8]]) -> Result<ExpireFlags, Vec<u8>> {
    let mut f = ExpireFlags::default();
    for a in &argv[3..] {
        if is(a, "nx") {
            f.nx = true;
        } else if is(a, "xx") {
            f.xx = true;
        } else if is(a, "gt") {
            f.gt = true;
        } else if is(a, "lt") {
            f.lt = true;
        } else {
            return Err(args::error_text(&[
                b"ERR Unsupported option ",
                args::c_str(a),
            ]));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if f.gt && f.lt {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    Ok(f)
}

/// Redis's expireGenericCommand: `base` is added (now for relative forms), `seconds`
/// scales the argument.
fn expire_generic(ctx: &mut Ctx, argv: &[&[u8]], base: i64, seconds: bool) {
    let flags = match parse_expire_flags(argv) {
        Ok(f) => f,
        Err(e) => return ctx.out.error_bytes(&e),
    };
    let mut when = match args::int(argv[2]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let invalid = || {
        let cmd = String::from_utf8_lossy(argv[0]).to_lowercase();
        format!("ERR invalid expire time in '{cmd}' command")
    };
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return ctx.out.error(&invalid());
        }
        when *= 1000;
    }
    if when > i64::MAX - base {
        return ctx.out.error(&invalid());
    }
    when += base;
    let now = ctx.keys.now();
    let key = argv[1];
    let Some(mut e) = ctx.keys.modify(key, Event::generic("expire")) else {
        return ctx.out.int(0);
    };
    let cur = e.expire_at();
    if (flags.nx && cur != NO_EXPIRE)
        || (flags.xx && cur == NO_EXPIRE)
        || (flags.gt && (cur == NO_EXPIRE || when <= cur))
        || (flags.lt && cur != NO_EXPIRE && when >= cur)
    {
        return ctx.out.int(0);
    }
    if when <= now {
        drop(e);
        ctx.keys.remove(key, Event::DEL);
        let del = deletion(ctx.srv, "lazyfree-lazy-expire");
        ctx.propagate.replace(&[del, key]);
    } else {
        e.set_expire(when);
        drop(e);
        if ctx.propagate.wanted() && !argv[0].eq_ignore_ascii_case(b"pexpireat") {
            ctx.propagate
                .replace(&[b"PEXPIREAT", key, when.to_string().as_bytes()]);
        }
    }
    ctx.out.int(1);
}

fn expire(ctx: &mut Ctx, argv: &[&[u8]]) {
    expire_generic(ctx, argv, now_ms(), true);
}

fn pexpire(ctx: &mut Ctx, argv: &[&[u8]]) {
    expire_generic(ctx, argv, now_ms(), false);
}

fn expireat(ctx: &mut Ctx, argv: &[&[u8]]) {
    expire_generic(ctx, argv, 0, true);
}

fn pexpireat(ctx: &mut Ctx, argv: &[&[u8]]) {
    expire_generic(ctx, argv, 0, false);
}

fn persist(ctx: &mut Ctx, argv: &[&[u8]]) {
    let had = match ctx.keys.modify(argv[1], Event::generic("persist")) {
        Some(mut e) if e.expire_at() != NO_EXPIRE => {
            e.set_expire(NO_EXPIRE);
            true
        }
        _ => false,
    };
    ctx.out.int(had as i64);
}

fn keys(ctx: &mut Ctx, argv: &[&[u8]]) {
    let pattern = argv[1];
    let all = pattern == b"*";
    let now = ctx.keys.now();
    let db = ctx.keys.db();
    let mut found: Vec<Vec<u8>> = Vec::new();
    ctx.keys.for_each_in(db, |e| {
        if !e.is_expired(now) && (all || glob_match(pattern, e.key(), false)) {
            found.push(e.key().to_vec());
        }
    });
    ctx.out.bulk_array(found.iter());
}

fn scan(ctx: &mut Ctx, argv: &[&[u8]]) {
    let parsed = scan_args::parse_cursor(argv[1])
        .and_then(|c| Ok((c, scan_args::parse_opts(argv, 2, true)?)));
    let (cursor, opts) = match parsed {
        Ok(p) => p,
        Err(e) => return ctx.out.error(e),
    };
    let mut found: Vec<Vec<u8>> = Vec::new();
    let db = ctx.keys.db();
    let next = ctx.keys.scan_in(db, cursor, opts.count, |e| {
        if !opts.matches(e.key()) {
            return;
        }
        if let Some(t) = &opts.type_name {
            if e.value().type_name() != t {
                return;
            }
        }
        found.push(e.key().to_vec());
    });
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.bulk_array(found.iter());
}

fn randomkey(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let db = ctx.keys.db();
    match ctx.keys.random_key_in(db) {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
}

fn rename_generic(ctx: &mut Ctx, argv: &[&[u8]], nx: bool) {
    let (src, dst) = (argv[1], argv[2]);
    if !ctx.keys.exists_for_write(src) {
        return ctx.out.error(NO_SUCH_KEY);
    }
    if src == dst {
        return if nx { ctx.out.int(0) } else { ctx.out.ok() };
    }
    if ctx.keys.exists_for_write(dst) {
        if nx {
            return ctx.out.int(0);
        }
        // Redis deletes the old destination, then adds the key anew (`new` is announced).
        ctx.keys.remove(dst, Event::NONE);
    }
    let Some(entry) = ctx.keys.remove(src, Event::NONE) else {
        return ctx.out.error(NO_SUCH_KEY);
    };
    let db = ctx.keys.db();
    ctx.keys
        .insert_entry_in(db, dst, entry.with_key(dst), Event::NONE);
    ctx.keys.notify(src, Event::generic("rename_from"));
    ctx.keys.notify(dst, Event::generic("rename_to").clean());
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
}

fn rename(ctx: &mut Ctx, argv: &[&[u8]]) {
    rename_generic(ctx, argv, false);
}

fn renamenx(ctx: &mut Ctx, argv: &[&[u8]]) {
    rename_generic(ctx, argv, true);
}
