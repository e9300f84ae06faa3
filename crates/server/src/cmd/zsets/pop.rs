//! ZPOPMIN, ZPOPMAX, ZMPOP (all through [`pop_members`]) and ZRANDMEMBER.

use super::{read, remove_with, reply_nested, reply_pairs, reply_score};
use crate::cmd::args::{self, SYNTAX_ERR};
use crate::cmd::{coll, Ctx};
use engine::coll::ZSet;
use engine::Event;
use engine::Locked;
use rand::Rng;

/// Pop up to `count` (>= 1) members with the lowest (`max` false) or highest scores from
/// the sorted set at `key`: Ok(None) if there is no such key, Err(WRONGTYPE) if it is not a
/// sorted set. Records `zpopmin`/`zpopmax` and `del` when emptied (deleting it), as
/// Redis's ZPOPMIN/ZMPOP do. No reply is written and no propagation is set.
#[allow(clippy::type_complexity)] // the signature the blocking pops are written against
pub fn pop_members(
    keys: &mut Locked,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<(Vec<u8>, f64)>>, &'static str> {
    let ev = if max { "zpopmax" } else { "zpopmin" };
    remove_with(keys, key, ev, |z| {
        let n = count.min(z.len());
        let mut popped = Vec::with_capacity(n);
        if n > 0 {
            let (s, en) = if max {
                (z.len() - n, z.len() - 1)
            } else {
                (0, n - 1)
            };
            z.remove_ranks(s, en, |m, sc| popped.push((m.to_vec(), sc)));
            if max {
                popped.reverse();
            }
        }
        (n, popped)
    })
}

/// A count argument as getRangeLongFromObjectOrReply(1.., msg) reads it.
fn positive(arg: &[u8], min: i64, msg: &'static str) -> Result<i64, &'static str> {
    match args::int(arg) {
        Ok(n) if n >= min => Ok(n),
        _ => Err(msg),
    }
}

fn zpop_generic(ctx: &mut Ctx, argv: &[&[u8]], max: bool) {
    if argv.len() > 3 {
        return ctx.out.error(SYNTAX_ERR);
    }
    let count = match argv.get(2) {
        None => None,
        Some(a) => match positive(a, 0, "ERR value is out of range, must be positive") {
            Ok(n) => Some(n as usize),
            Err(e) => return ctx.out.error(e),
        },
    };
    let nested = ctx.out.resp3() && count.is_some();
    if count == Some(0) {
        // The type is still checked first, by a write lookup (no hit or miss counted).
        return match coll::modify::<ZSet>(ctx.keys, argv[1], Event::NONE) {
            Err(e) => ctx.out.error(e),
            Ok(_) => ctx.out.array(0),
        };
    }
    match pop_members(ctx.keys, argv[1], max, count.unwrap_or(1)) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.array(0),
        Ok(Some(popped)) => {
            if nested {
                reply_nested(ctx.out, &popped);
            } else {
                ctx.out.array(popped.len() * 2);
                for (m, s) in &popped {
                    ctx.out.bulk(m);
                    reply_score(ctx.out, *s);
                }
            }
        }
    }
}

pub fn zpopmin(ctx: &mut Ctx, argv: &[&[u8]]) {
    zpop_generic(ctx, argv, false);
}

pub fn zpopmax(ctx: &mut Ctx, argv: &[&[u8]]) {
    zpop_generic(ctx, argv, true);
}

pub fn zmpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    let m = match args::mpop(argv, 1, ["min", "max"]) {
        Ok(m) => m,
        Err(e) => return ctx.out.error(e),
    };
    let (max, count) = (!m.first, m.count);
    for &key in &m.keys {
        match pop_members(ctx.keys, key, max, count) {
            Err(e) => return ctx.out.error(e),
            Ok(None) => continue,
            Ok(Some(popped)) => {
                ctx.out.array(2);
                ctx.out.bulk(key);
                reply_nested(ctx.out, &popped);
                let n = popped.len().to_string();
                let cmd: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
                ctx.propagate.replace(&[cmd, key, n.as_bytes()]);
                return;
            }
        }
    }
    ctx.out.null_array();
}

pub fn zrandmember(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() < 3 {
        return match read(ctx.keys, argv[1]) {
            Err(e) => ctx.out.error(e),
            Ok(None) => ctx.out.null(),
            Ok(Some(z)) => {
                let r = rand::thread_rng().gen_range(0..z.len());
                ctx.out.bulk(&z.get(r).0);
            }
        };
    }
    let l = match args::random_count(argv[2]) {
        Err(e) => return ctx.out.error(e),
        Ok(n) => n,
    };
    let withscores = argv.len() == 4 && args::is(argv[3], "withscores");
    if argv.len() > 4 || (argv.len() == 4 && !withscores) {
        return ctx.out.error(SYNTAX_ERR);
    }
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return ctx.out.error("ERR value is out of range");
    }
    let z = match read(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.array(0),
        Ok(Some(z)) => z,
    };
    let size = z.len();
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        return ctx.out.array(0);
    }
    let mut rng = rand::thread_rng();
    if l < 0 || count == 1 {
        // Repeats allowed: streamed, never collected.
        ctx.out.array(if withscores && !ctx.out.resp3() {
            count * 2
        } else {
            count
        });
        for _ in 0..count {
            let (m, s) = z.get(rng.gen_range(0..size));
            if withscores && ctx.out.resp3() {
                ctx.out.array(2);
            }
            ctx.out.bulk(&m);
            if withscores {
                reply_score(ctx.out, s);
            }
        }
        return;
    }
    let picked: Vec<(Vec<u8>, f64)> = if count >= size {
        // The whole set, as Redis's zset iterator walks it: from the highest score.
        let mut all = z.to_pairs();
        all.reverse();
        all
    } else {
        // Distinct ranks, in random order.
        let ranks = rand::seq::index::sample(&mut rng, size, count);
        ranks.into_iter().map(|r| z.get(r)).collect()
    };
    reply_pairs(ctx.out, &picked, withscores);
}
