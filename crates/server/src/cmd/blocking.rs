//! The blocking list and sorted-set commands: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
//! BZPOPMIN, BZPOPMAX, BZMPOP. With data present they act as their non-blocking forms
//! (and propagate as those); without, the client waits ([`crate::blocking`]), except
//! inside MULTI/EXEC, where they answer as on a timeout.

use super::args;
use super::{lists, zsets, Ctx, Handler};
use crate::blocking::{Op, Waiter};
use crate::floatfmt::LongDouble;
use std::sync::Arc;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("blpop", blpop),
    ("brpop", brpop),
    ("blmove", blmove),
    ("brpoplpush", brpoplpush),
    ("blmpop", blmpop),
    ("bzpopmin", bzpopmin),
    ("bzpopmax", bzpopmax),
    ("bzmpop", bzmpop),
];

/// getTimeoutFromObjectOrReply (seconds, as a long double): the absolute deadline in
/// ms, 0 for none.
fn parse_timeout(arg: &[u8]) -> Result<i64, &'static str> {
    let secs = LongDouble::parse(arg).ok_or("ERR timeout is not a float or out of range")?;
    // Redis converts to a long long: out of range (infinities included) comes out as
    // LLONG_MIN on x86-64, hence "negative".
    let ms = secs.mul_ceil(1000).unwrap_or(i64::MIN);
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok(if ms > 0 {
        engine::wall_ms().saturating_add(ms)
    } else {
        0
    })
}

/// No data: answer as a timeout inside MULTI/EXEC, otherwise block the client.
pub fn block(ctx: &mut Ctx, keys: &[&[u8]], op: Op, deadline: i64) {
    if ctx.exec_ops.is_some() {
        // Not allowed to block: BLMOVE answers as LMOVE would, the pops as on a timeout.
        return match op {
            Op::ListMove { .. } => ctx.out.null(),
            _ => op.null_reply(ctx.out),
        };
    }
    let w = Arc::new(Waiter::new(
        ctx.client.info.clone(),
        ctx.client.db,
        keys.iter().map(|k| k.to_vec()).collect(),
        op,
        deadline,
    ));
    ctx.srv.blocking.register(&w);
    ctx.client.blocked = Some(w);
}

/// BLPOP/BRPOP/BLMPOP: pop from the first non-empty list, or block.
fn list_pop(ctx: &mut Ctx, keys: &[&[u8]], left: bool, count: Option<usize>, timeout: &[u8]) {
    let deadline = match parse_timeout(timeout) {
        Ok(d) => d,
        Err(e) => return ctx.out.error(e),
    };
    let name: &[u8] = if left { b"LPOP" } else { b"RPOP" };
    for &key in keys {
        let elems = match lists::pop_elements(ctx.keys, key, left, count.unwrap_or(1)) {
            Err(e) => return ctx.out.error(e),
            Ok(None) => continue,
            Ok(Some(elems)) => elems,
        };
        ctx.out.array(2);
        ctx.out.bulk(key);
        match count {
            None => {
                ctx.out.bulk(&elems[0]);
                ctx.propagate.replace(&[name, key]);
            }
            Some(_) => {
                ctx.out.array(elems.len());
                for e in &elems {
                    ctx.out.bulk(e);
                }
                let n = elems.len().to_string();
                ctx.propagate.replace(&[name, key, n.as_bytes()]);
            }
        }
        return;
    }
    block(ctx, keys, Op::ListPop { left, count }, deadline);
}

fn blpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = argv.len();
    list_pop(ctx, &argv[1..n - 1], true, None, argv[n - 1]);
}

fn brpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = argv.len();
    list_pop(ctx, &argv[1..n - 1], false, None, argv[n - 1]);
}

fn blmpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    match args::mpop(argv, 2, ["left", "right"]) {
        Ok(m) => list_pop(ctx, &m.keys, m.first, Some(m.count), argv[1]),
        Err(e) => ctx.out.error(e),
    }
}

/// BLMOVE/BRPOPLPUSH: move at once if the source has data, or block.
fn list_move(ctx: &mut Ctx, argv: &[&[u8]], from_left: bool, to_left: bool, timeout: &[u8]) {
    let deadline = match parse_timeout(timeout) {
        Ok(d) => d,
        Err(e) => return ctx.out.error(e),
    };
    let (src, dst) = (argv[1], argv[2]);
    let rpoplpush = argv.len() == 4;
    let limits = ctx.srv.config.hot.coll_limits();
    match lists::move_element(ctx.keys, src, dst, from_left, to_left, &limits) {
        Err(e) => ctx.out.error(e),
        Ok(Some(elem)) => {
            ctx.out.bulk(&elem);
            if rpoplpush {
                ctx.propagate.replace(&[b"RPOPLPUSH", src, dst]);
            } else {
                ctx.propagate
                    .replace(&[b"LMOVE", src, dst, argv[3], argv[4]]);
            }
        }
        Ok(None) => {
            let op = Op::ListMove {
                dst: dst.to_vec(),
                from_left,
                to_left,
                rpoplpush,
            };
            block(ctx, &[src], op, deadline);
        }
    }
}

fn blmove(ctx: &mut Ctx, argv: &[&[u8]]) {
    let sides = lists::position(argv[3]).and_then(|f| Ok((f, lists::position(argv[4])?)));
    match sides {
        Ok((from, to)) => list_move(ctx, argv, from, to, argv[5]),
        Err(e) => ctx.out.error(e),
    }
}

fn brpoplpush(ctx: &mut Ctx, argv: &[&[u8]]) {
    list_move(ctx, argv, false, true, argv[3]);
}

/// BZPOPMIN/BZPOPMAX/BZMPOP: pop from the first non-empty sorted set, or block.
fn zset_pop(ctx: &mut Ctx, keys: &[&[u8]], max: bool, count: Option<usize>, timeout: &[u8]) {
    let deadline = match parse_timeout(timeout) {
        Ok(d) => d,
        Err(e) => return ctx.out.error(e),
    };
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    for &key in keys {
        let popped = match zsets::pop_members(ctx.keys, key, max, count.unwrap_or(1)) {
            Err(e) => return ctx.out.error(e),
            Ok(None) => continue,
            Ok(Some(p)) => p,
        };
        match count {
            None => {
                ctx.out.array(3);
                ctx.out.bulk(key);
                ctx.out.bulk(&popped[0].0);
                zsets::reply_score(ctx.out, popped[0].1);
                ctx.propagate.replace(&[name, key]);
            }
            Some(_) => {
                crate::blocking::reply_key_and_pairs(ctx.out, key, &popped);
                let n = popped.len().to_string();
                ctx.propagate.replace(&[name, key, n.as_bytes()]);
            }
        }
        return;
    }
    block(ctx, keys, Op::ZPop { max, count }, deadline);
}

fn bzpopmin(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = argv.len();
    zset_pop(ctx, &argv[1..n - 1], false, None, argv[n - 1]);
}

fn bzpopmax(ctx: &mut Ctx, argv: &[&[u8]]) {
    let n = argv.len();
    zset_pop(ctx, &argv[1..n - 1], true, None, argv[n - 1]);
}

fn bzmpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    match args::mpop(argv, 2, ["min", "max"]) {
        Ok(m) => zset_pop(ctx, &m.keys, !m.first, Some(m.count), argv[1]),
        Err(e) => ctx.out.error(e),
    }
}
