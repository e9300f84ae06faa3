//! ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE.

use super::{limits, parse_score, read, remove_with, reply_score};
use crate::cmd::args::{self, NOT_FLOAT, SYNTAX_ERR};
use crate::cmd::{coll, Ctx};
use engine::coll::ZSet;
use engine::Event;

#[derive(Default, Clone, Copy)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

enum Outcome {
    Added,
    Updated,
    Same,
    Nop,
}

/// zsetAdd: apply one element with the flags (one lookup); Err on an increment to NaN.
fn apply(
    z: &mut ZSet,
    member: &[u8],
    score: f64,
    f: Flags,
    l: &engine::coll::Limits,
) -> Result<(Outcome, f64), ()> {
    let mut out = Ok((Outcome::Nop, score));
    z.upsert(member, l, |cur| {
        let Some(cur) = cur else {
            if f.xx {
                return None;
            }
            out = Ok((Outcome::Added, score));
            return Some(score);
        };
        out = Ok((Outcome::Nop, cur));
        if f.nx {
            return None;
        }
        let mut score = score;
        if f.incr {
            score += cur;
            if score.is_nan() {
                out = Err(());
                return None;
            }
        }
        if (f.lt && score >= cur) || (f.gt && score <= cur) {
            return None;
        }
        if score != cur {
            out = Ok((Outcome::Updated, score));
            Some(score)
        } else {
            out = Ok((Outcome::Same, score));
            None
        }
    });
    out
}

fn zadd_generic(ctx: &mut Ctx, argv: &[&[u8]], mut f: Flags) {
    let key = argv[1];
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i];
        if args::is(a, "nx") {
            f.nx = true;
        } else if args::is(a, "xx") {
            f.xx = true;
        } else if args::is(a, "ch") {
            f.ch = true;
        } else if args::is(a, "incr") {
            f.incr = true;
        } else if args::is(a, "gt") {
            f.gt = true;
        } else if args::is(a, "lt") {
            f.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &argv[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return ctx.out.error(SYNTAX_ERR);
    }
    if f.nx && f.xx {
        return ctx
            .out
            .error("ERR XX and NX options at the same time are not compatible");
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return ctx
            .out
            .error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && rest.len() > 2 {
        return ctx
            .out
            .error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        match parse_score(p[0]) {
            Some(s) => scores.push(s),
            None => return ctx.out.error(NOT_FLOAT),
        }
    }
    let l = limits(ctx);
    let ev = Event::zset(if f.incr { "zincr" } else { "zadd" });
    let mut c = Counts::default();
    let existed = match coll::modify::<ZSet>(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            c = run(coll::get_mut::<ZSet>(&mut e), rest, &scores, f, &l);
            if c.added + c.updated > 0 {
                e.mark_changed();
            }
            true
        }
        Ok(None) => false,
    };
    if !existed {
        if f.xx {
            return reply_zadd(ctx, f, 0, 0, 0, 0.0);
        }
        let mut z = ZSet::for_first(rest[1].len(), &l);
        c = run(&mut z, rest, &scores, f, &l);
        if !z.is_empty() {
            coll::insert(ctx.keys, key, z, ev);
        }
    }
    if c.nan {
        return ctx.out.error("ERR resulting score is not a number (NaN)");
    }
    // Redis counts every member added or updated in the dirty counter (the event counted
    // one of them).
    let changed = c.added + c.updated;
    if changed > 1 {
        ctx.keys.add_dirty(changed as u64 - 1);
    }
    reply_zadd(ctx, f, c.added, c.updated, c.processed, c.last);
}

#[derive(Default)]
struct Counts {
    added: i64,
    updated: i64,
    processed: i64,
    last: f64,
    nan: bool,
}

fn run(z: &mut ZSet, rest: &[&[u8]], scores: &[f64], f: Flags, l: &engine::coll::Limits) -> Counts {
    let mut c = Counts::default();
    for (p, &s) in rest.chunks(2).zip(scores) {
        match apply(z, p[1], s, f, l) {
            Err(()) => {
                c.nan = true;
                return c;
            }
            Ok((o, newscore)) => {
                match o {
                    Outcome::Added => c.added += 1,
                    Outcome::Updated => c.updated += 1,
                    Outcome::Same => {}
                    Outcome::Nop => continue,
                }
                c.processed += 1;
                c.last = newscore;
            }
        }
    }
    c
}

fn reply_zadd(ctx: &mut Ctx, f: Flags, added: i64, updated: i64, processed: i64, score: f64) {
    if f.incr {
        if processed > 0 {
            reply_score(ctx.out, score);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.int(if f.ch { added + updated } else { added });
    }
}

pub fn zadd(ctx: &mut Ctx, argv: &[&[u8]]) {
    zadd_generic(ctx, argv, Flags::default());
}

pub fn zincrby(ctx: &mut Ctx, argv: &[&[u8]]) {
    let v = [argv[0], argv[1], argv[2], argv[3]];
    zadd_generic(
        ctx,
        &v,
        Flags {
            incr: true,
            ..Flags::default()
        },
    );
}

pub fn zrem(ctx: &mut Ctx, argv: &[&[u8]]) {
    let r = remove_with(ctx.keys, argv[1], "zrem", |z| {
        let mut removed = 0;
        for m in &argv[2..] {
            if z.remove(m) {
                removed += 1;
                if z.is_empty() {
                    break;
                }
            }
        }
        (removed, removed)
    });
    match r {
        Err(e) => ctx.out.error(e),
        Ok(n) => ctx.out.int(n.unwrap_or(0) as i64),
    }
}

pub fn zcard(ctx: &mut Ctx, argv: &[&[u8]]) {
    match read(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(z) => ctx.out.int(z.map_or(0, |z| z.len() as i64)),
    }
}

pub fn zscore(ctx: &mut Ctx, argv: &[&[u8]]) {
    match read(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(z) => match z.and_then(|z| z.score(argv[2])) {
            Some(s) => reply_score(ctx.out, s),
            None => ctx.out.null(),
        },
    }
}

pub fn zmscore(ctx: &mut Ctx, argv: &[&[u8]]) {
    match read(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(z) => {
            ctx.out.array(argv.len() - 2);
            for m in &argv[2..] {
                match z.and_then(|z| z.score(m)) {
                    Some(s) => reply_score(ctx.out, s),
                    None => ctx.out.null(),
                }
            }
        }
    }
}
