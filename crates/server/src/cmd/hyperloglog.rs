//! HyperLogLog commands (Redis's hyperloglog.c): PFADD, PFCOUNT, PFMERGE, PFDEBUG and
//! PFSELFTEST. An HLL is a string value in Redis's format (`engine::hll`), modified in
//! place through the write path, so `GET`, DUMP/RESTORE and SET see Redis's bytes.

use super::args::{self, is, WRONGTYPE};
use super::{Ctx, Handler};
use engine::hll::{self, Registers};
use engine::locked::Read;
use engine::{Event, StrRef, ValueMut, ValueRef, NO_EXPIRE};
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("pfadd", pfadd),
    ("pfcount", pfcount),
    ("pfmerge", pfmerge),
    ("pfdebug", pfdebug),
    ("pfselftest", pfselftest),
];

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
/// PFADD's and PFMERGE's event. PFADD counts its dirty changes itself (one per register
/// raised, plus one for a created key).
const PFADD: Event = Event::string("pfadd");

/// isHLLObjectOrReply: the HLL's bytes, or the error for a value that is not one.
fn hll_bytes(v: ValueRef<'_>) -> Result<&[u8], &'static str> {
    let s = v.as_str().ok_or(WRONGTYPE)?;
    // An integer-encoded string is never an HLL (Redis: not sds-encoded).
    match s.as_slice() {
        Some(b) if hll::is_valid(b) => Ok(b),
        _ => Err(NOT_HLL),
    }
}

fn sparse_max(ctx: &Ctx) -> u64 {
    ctx.srv.config.hot.hll_sparse_max_bytes.load(Relaxed).max(0) as u64
}

/// Add `elements` to `s`, counting the registers raised; Err when `s` is found corrupt
/// (what was added before stays, as in Redis).
fn add_all(s: &mut Vec<u8>, elements: &[&[u8]], max: u64) -> Result<u64, &'static str> {
    let mut raised = 0;
    for ele in elements {
        if hll::add(s, ele, max).map_err(|_| CORRUPT)? {
            raised += 1;
        }
    }
    if raised > 0 {
        hll::invalidate_cache(s);
    }
    Ok(raised)
}

fn pfadd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (key, elements) = (argv[1], &argv[2..]);
    let max = sparse_max(ctx);
    let found = ctx.keys.modify(key, Event::NONE).map(|mut e| {
        hll_bytes(e.value())?;
        add_all(e.make_raw_unmarked(), elements, max)
    });
    let updated = match found {
        Some(Ok(n)) => n,
        Some(Err(err)) => return ctx.out.error(err),
        None => {
            let mut s = hll::new_sparse();
            // A new HLL is valid: adding to it cannot fail.
            let n = add_all(&mut s, elements, max).unwrap_or(0);
            hll::invalidate_cache(&mut s);
            ctx.keys
                .insert(key, StrRef::Raw(&s), NO_EXPIRE, Event::NONE);
            n + 1
        }
    };
    if updated > 0 {
        ctx.keys.notify(key, PFADD.clean());
        ctx.keys.add_dirty(updated);
    }
    ctx.out.int(i64::from(updated > 0));
}

/// The registers of the union of the HLLs at `keys` (read lookups; a missing key is an
/// empty HLL), and whether any of them is dense.
fn union(ctx: &mut Ctx, keys: &[&[u8]]) -> Result<(Registers, bool), &'static str> {
    let mut regs = Registers::default();
    let mut dense = false;
    for key in keys {
        if let Some(e) = ctx.keys.get(key) {
            let s = hll_bytes(e.value())?;
            dense |= hll::is_dense(s);
            regs.merge(s).map_err(|_| CORRUPT)?;
        }
    }
    Ok((regs, dense))
}

fn pfcount(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 2 {
        // The union's cardinality; the keys are left as they are.
        return match union(ctx, &argv[1..]) {
            Ok((regs, _)) => ctx.out.int(regs.count() as i64),
            Err(err) => ctx.out.error(err),
        };
    }
    let key = argv[1];
    let db = ctx.keys.db();
    let Some(e) = ctx.keys.read_in(db, key, Read::NORMAL) else {
        return ctx.out.int(0);
    };
    if let Err(err) = hll_bytes(e.value()) {
        return ctx.out.error(err);
    }
    let ValueMut::Str(s) = e.value_mut() else {
        return ctx.out.error(WRONGTYPE);
    };
    let s = s.make_raw();
    if let Some(card) = hll::cached(s) {
        return ctx.out.int(card as i64);
    }
    let Ok(card) = hll::count(s) else {
        return ctx.out.error(CORRUPT);
    };
    // The cached cardinality is part of the string: a change to announce to WATCH and
    // to propagate, with no keyspace notification.
    hll::set_cache(s, card);
    ctx.keys.notify(key, Event::MODIFIED);
    ctx.out.int(card as i64);
}

/// Write the union `regs` into the HLL `s` (dense first if any input was), as PFMERGE.
fn store_union(s: &mut Vec<u8>, regs: &Registers, dense: bool, max: u64) -> Result<(), ()> {
    if dense {
        hll::to_dense(s).map_err(|_| ())?;
    }
    for (i, v) in regs.nonzero() {
        // The destination was merged above, so it is valid (Redis ignores this result).
        let _ = hll::raise(s, i, v, max);
    }
    hll::invalidate_cache(s);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx, argv: &[&[u8]]) {
    // The destination counts as a source too.
    let (regs, dense) = match union(ctx, &argv[1..]) {
        Ok(u) => u,
        Err(err) => return ctx.out.error(err),
    };
    let dest = argv[1];
    let max = sparse_max(ctx);
    let found = ctx
        .keys
        .modify(dest, Event::NONE)
        .map(|mut e| store_union(e.make_raw_unmarked(), &regs, dense, max));
    let stored = found.unwrap_or_else(|| {
        let mut s = hll::new_sparse();
        let r = store_union(&mut s, &regs, dense, max);
        ctx.keys
            .insert(dest, StrRef::Raw(&s), NO_EXPIRE, Event::NONE);
        r
    });
    if stored.is_err() {
        return ctx.out.error(CORRUPT);
    }
    ctx.keys.notify(dest, PFADD);
    ctx.out.ok();
}

fn pfdebug(ctx: &mut Ctx, argv: &[&[u8]]) {
    // Redis reads the subcommand as a C string (strcasecmp, `%s`): up to a NUL.
    let (sub, key) = (args::c_str(argv[1]), argv[2]);
    let Some(mut e) = ctx.keys.modify(key, Event::NONE) else {
        return ctx.out.error("ERR The specified key does not exist");
    };
    if let Err(err) = hll_bytes(e.value()) {
        return ctx.out.error(err);
    }
    let s = e.make_raw_unmarked();
    let mut converted = false;
    if is(sub, "getreg") || is(sub, "todense") {
        converted = match hll::to_dense(s) {
            Ok(c) => c,
            Err(_) => return ctx.out.error(CORRUPT),
        };
        if is(sub, "getreg") {
            ctx.out.array(hll::REGISTERS);
            for v in hll::dense_registers(s) {
                ctx.out.int(i64::from(v));
            }
        } else {
            ctx.out.int(i64::from(converted));
        }
    } else if is(sub, "decode") {
        if hll::is_dense(s) {
            return ctx.out.error("ERR HLL encoding is not sparse");
        }
        ctx.out.bulk(hll::sparse::decode(s).as_bytes());
    } else if is(sub, "encoding") {
        ctx.out
            .simple(if hll::is_dense(s) { "dense" } else { "sparse" });
    } else {
        ctx.out.error_bytes(&args::error_text(&[
            b"ERR Unknown PFDEBUG subcommand '",
            sub,
            b"'",
        ]));
    }
    drop(e);
    if converted {
        // A new representation, with no notification: Redis counts it dirty so that it
        // propagates.
        ctx.keys.add_dirty(1);
    }
}

fn pfselftest(ctx: &mut Ctx, _argv: &[&[u8]]) {
    let max = sparse_max(ctx);
    match hll::selftest::run(&mut rand::thread_rng(), max) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&format!("ERR {e}")),
    }
}
