//! Ranges: ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT, ZRANGE (and its older forms), ZRANGESTORE,
//! ZREMRANGEBYRANK/BYSCORE/BYLEX.

use super::{
    limits, read, remove_with, reply_element, reply_header, store_result, Interval, LexRange,
    ScoreRange,
};
use crate::cmd::args::{self, SYNTAX_ERR};
use crate::cmd::Ctx;
use engine::coll::ZSet;
use resp::ReplyBuf;

fn rank_generic(ctx: &mut Ctx, argv: &[&[u8]], rev: bool) {
    match read(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(z) => match z.and_then(|z| z.rank(argv[2]).map(|r| (r.0, z.len()))) {
            Some((r, n)) => ctx.out.int(if rev { n - 1 - r } else { r } as i64),
            None => ctx.out.null(),
        },
    }
}

pub fn zrank(ctx: &mut Ctx, argv: &[&[u8]]) {
    rank_generic(ctx, argv, false);
}

pub fn zrevrank(ctx: &mut Ctx, argv: &[&[u8]]) {
    rank_generic(ctx, argv, true);
}

fn count_generic(ctx: &mut Ctx, argv: &[&[u8]], iv: Result<Interval, &'static str>) {
    let iv = match iv {
        Ok(iv) => iv,
        Err(e) => return ctx.out.error(e),
    };
    match read(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.int(0),
        Ok(Some(z)) if !iv.lex_may_hold(z) => ctx.out.int(0),
        Ok(Some(z)) => {
            let (first, end) = iv.ranks(z, false);
            ctx.out.int(end.saturating_sub(first) as i64);
        }
    }
}

pub fn zcount(ctx: &mut Ctx, argv: &[&[u8]]) {
    let iv = ScoreRange::parse(argv[2], argv[3]).map(Interval::Score);
    count_generic(ctx, argv, iv);
}

pub fn zlexcount(ctx: &mut Ctx, argv: &[&[u8]]) {
    let iv = LexRange::parse(argv[2], argv[3]).map(Interval::Lex);
    count_generic(ctx, argv, iv);
}

#[derive(Clone, Copy, PartialEq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

/// Sanitized ascending rank bounds of `start..=end` (Redis's index rules), None if empty.
fn rank_bounds(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

/// The elements of a range request, in reply order, each given to `emit`.
fn walk_range(
    z: &ZSet,
    by: By,
    rank: (i64, i64),
    iv: Option<&Interval>,
    rev: bool,
    (offset, limit): (i64, i64),
    mut emit: impl FnMut(&[u8], f64),
) {
    let len = z.len();
    if by == By::Rank {
        let Some((s, e)) = rank_bounds(rank.0, rank.1, len) else {
            return;
        };
        let from = if rev { len - 1 - s } else { s };
        let mut n = e - s + 1;
        z.walk(from, rev, |m, sc| {
            emit(m, sc);
            n -= 1;
            n > 0
        });
        return;
    }
    let Some(iv) = iv.filter(|iv| iv.lex_may_hold(z)) else {
        return;
    };
    if offset < 0 || (offset > 0 && offset as usize >= len) || limit == 0 {
        return;
    }
    let mut skip = offset as usize;
    let mut left = limit;
    let mut visit = |m: &[u8], sc: f64| -> bool {
        if skip > 0 {
            skip -= 1;
            return true;
        }
        emit(m, sc);
        left = left.wrapping_sub(1);
        left != 0
    };
    if rev {
        let Some(last) = iv.last(z) else {
            return;
        };
        z.walk(last, true, |m, sc| iv.gte_min(sc, m) && visit(m, sc));
    } else {
        iv.walk_forward(z, visit);
    }
}

/// zrangeGenericCommand: `at` is the index of the source key; `dst` the ZRANGESTORE
/// destination.
fn range_generic(
    ctx: &mut Ctx,
    argv: &[&[u8]],
    at: usize,
    dst: Option<&[u8]>,
    mut by: By,
    mut rev: Option<bool>,
) {
    let store = dst.is_some();
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = at + 3;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = argv[j];
        if !store && args::is(a, "withscores") {
            withscores = true;
        } else if args::is(a, "limit") && left >= 2 {
            match (args::int(argv[j + 1]), args::int(argv[j + 2])) {
                (Ok(o), Ok(l)) => {
                    offset = o;
                    limit = l;
                }
                (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
            }
            j += 2;
        } else if rev.is_none() && args::is(a, "rev") {
            rev = Some(true);
        } else if by == By::Auto && args::is(a, "bylex") {
            by = By::Lex;
        } else if by == By::Auto && args::is(a, "byscore") {
            by = By::Score;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if by == By::Auto {
        by = By::Rank;
    }
    if limit != -1 && by == By::Rank {
        return ctx.out.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && by == By::Lex {
        return ctx
            .out
            .error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut lo, mut hi) = (argv[at + 1], argv[at + 2]);
    if rev && by != By::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let mut rank = (0, 0);
    let iv = match by {
        By::Rank | By::Auto => match (args::int(lo), args::int(hi)) {
            (Ok(s), Ok(e)) => {
                rank = (s, e);
                None
            }
            (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
        },
        By::Score => match ScoreRange::parse(lo, hi) {
            Ok(r) => Some(Interval::Score(r)),
            Err(e) => return ctx.out.error(e),
        },
        By::Lex => match LexRange::parse(lo, hi) {
            Ok(r) => Some(Interval::Lex(r)),
            Err(e) => return ctx.out.error(e),
        },
    };
    let z = match read(ctx.keys, argv[at]) {
        Err(e) => return ctx.out.error(e),
        Ok(z) => z,
    };
    let iv = iv.as_ref();
    match dst {
        Some(dst) => {
            let mut pairs = Vec::new();
            if let Some(z) = z {
                walk_range(z, by, rank, iv, rev, (offset, limit), |m, s| {
                    pairs.push((m.to_vec(), s))
                });
            }
            let z = ZSet::from_pairs(pairs, &limits(ctx));
            store_result(ctx, dst, z, "zrangestore");
        }
        None => {
            // The elements go to a body buffer first: their count heads the reply (as
            // Redis's deferred length).
            let mut body = ReplyBuf::new(ctx.out.proto);
            let mut n = 0;
            if let Some(z) = z {
                walk_range(z, by, rank, iv, rev, (offset, limit), |m, s| {
                    reply_element(&mut body, m, s, withscores);
                    n += 1;
                });
            }
            reply_header(ctx.out, n, withscores);
            ctx.out.raw(&body.out);
        }
    }
}

pub fn zrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Auto, None);
}

pub fn zrangestore(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 2, Some(argv[1]), By::Auto, None);
}

pub fn zrevrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Rank, Some(true));
}

pub fn zrangebyscore(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Score, Some(false));
}

pub fn zrevrangebyscore(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Score, Some(true));
}

pub fn zrangebylex(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Lex, Some(false));
}

pub fn zrevrangebylex(ctx: &mut Ctx, argv: &[&[u8]]) {
    range_generic(ctx, argv, 1, None, By::Lex, Some(true));
}

enum Rem {
    Rank(i64, i64),
    Iv(Interval),
}

fn remrange_generic(
    ctx: &mut Ctx,
    argv: &[&[u8]],
    what: Result<Rem, &'static str>,
    ev: &'static str,
) {
    let what = match what {
        Ok(w) => w,
        Err(e) => return ctx.out.error(e),
    };
    let r = remove_with(ctx.keys, argv[1], ev, |z| {
        let bounds = match &what {
            Rem::Rank(s, en) => rank_bounds(*s, *en, z.len()),
            // (zzlDeleteRangeByLex asks zzlIsInLexRange; the skiplist's walk does not.)
            Rem::Iv(iv) if matches!(z, ZSet::Listpack(_)) && !iv.lex_may_hold(z) => None,
            Rem::Iv(iv) => {
                let (first, end) = iv.ranks(z, true);
                (first < end).then(|| (first, end - 1))
            }
        };
        let mut removed = 0usize;
        if let Some((s, en)) = bounds {
            z.remove_ranks(s, en, |_, _| removed += 1);
        }
        (removed, removed)
    });
    match r {
        Err(e) => ctx.out.error(e),
        Ok(n) => ctx.out.int(n.unwrap_or(0) as i64),
    }
}

pub fn zremrangebyrank(ctx: &mut Ctx, argv: &[&[u8]]) {
    let what = args::int(argv[2]).and_then(|s| args::int(argv[3]).map(|e| Rem::Rank(s, e)));
    remrange_generic(ctx, argv, what, "zremrangebyrank");
}

pub fn zremrangebyscore(ctx: &mut Ctx, argv: &[&[u8]]) {
    let what = ScoreRange::parse(argv[2], argv[3]).map(|r| Rem::Iv(Interval::Score(r)));
    remrange_generic(ctx, argv, what, "zremrangebyscore");
}

pub fn zremrangebylex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let what = LexRange::parse(argv[2], argv[3]).map(|r| Rem::Iv(Interval::Lex(r)));
    remrange_generic(ctx, argv, what, "zremrangebylex");
}
