//! Sorted set commands: ZADD and the single-member commands ([`add`]), ranges by rank,
//! score and lex ([`range`]), pops and random members ([`pop`]), union/intersection/
//! difference ([`store`]) and ZSCAN ([`scan`]). Shared here: argument parsing with
//! Redis's errors, score replies and [`pop_members`] (also used by the blocking pops).

pub(crate) mod add;
mod pop;
mod range;
mod scan;
mod store;

use super::{coll, Ctx, Handler};
use engine::coll::{Limits, ZSet};
use engine::{Event, Locked};
use resp::ReplyBuf;

pub use pop::pop_members;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("zadd", add::zadd),
    ("zincrby", add::zincrby),
    ("zrem", add::zrem),
    ("zcard", add::zcard),
    ("zscore", add::zscore),
    ("zmscore", add::zmscore),
    ("zrank", range::zrank),
    ("zrevrank", range::zrevrank),
    ("zcount", range::zcount),
    ("zlexcount", range::zlexcount),
    ("zrange", range::zrange),
    ("zrangestore", range::zrangestore),
    ("zrevrange", range::zrevrange),
    ("zrangebyscore", range::zrangebyscore),
    ("zrevrangebyscore", range::zrevrangebyscore),
    ("zrangebylex", range::zrangebylex),
    ("zrevrangebylex", range::zrevrangebylex),
    ("zremrangebyrank", range::zremrangebyrank),
    ("zremrangebyscore", range::zremrangebyscore),
    ("zremrangebylex", range::zremrangebylex),
    ("zpopmin", pop::zpopmin),
    ("zpopmax", pop::zpopmax),
    ("zmpop", pop::zmpop),
    ("zrandmember", pop::zrandmember),
    ("zunion", store::zunion),
    ("zinter", store::zinter),
    ("zdiff", store::zdiff),
    ("zunionstore", store::zunionstore),
    ("zinterstore", store::zinterstore),
    ("zdiffstore", store::zdiffstore),
    ("zintercard", store::zintercard),
    ("zscan", scan::zscan),
];

/// A score as Redis 7.0 replies it (RESP2 bulk string, RESP3 double), one place for it.
pub fn reply_score(out: &mut ReplyBuf, score: f64) {
    let mut buf = [0u8; 32];
    match score_digits(score, &mut buf) {
        Some(text) => out.double_text(text),
        None => out.double(score),
    }
}

/// `%.17g` of a score without the general (slow, exact) float formatting where a faster
/// exact way applies: integers below 10^17 as their digits, most others through
/// [`engine::coll::zset::g17_fast`]. None for the rest (and for -0, inf).
fn score_digits(v: f64, buf: &mut [u8; 32]) -> Option<&[u8]> {
    if v.fract() == 0.0 && v.abs() < 1e17 && !(v == 0.0 && v.is_sign_negative()) {
        let mut w = std::io::Cursor::new(&mut buf[..]);
        std::io::Write::write_fmt(&mut w, format_args!("{}", v as i64)).ok()?;
        let n = w.position() as usize;
        return Some(&buf[..n]);
    }
    engine::coll::zset::g17_fast(v, buf)
}

/// A score as ZSCAN replies it (`%.17g` text, a bulk string in both protocols).
fn scan_score(out: &mut ReplyBuf, score: f64) {
    let mut buf = [0u8; 32];
    match score_digits(score, &mut buf) {
        Some(text) => out.bulk(text),
        None => out.bulk(resp::fmt::fmt_g17(score).as_bytes()),
    }
}

/// Members with or without their scores: a flat array in RESP2 (and without scores), an
/// array of [member, score] pairs in RESP3 with scores, as Redis's range replies.
fn reply_pairs(out: &mut ReplyBuf, pairs: &[(Vec<u8>, f64)], withscores: bool) {
    reply_header(out, pairs.len(), withscores);
    for (m, s) in pairs {
        reply_element(out, m, *s, withscores);
    }
}

/// The array header of a range reply of `n` elements.
fn reply_header(out: &mut ReplyBuf, n: usize, withscores: bool) {
    out.array(if withscores && !out.resp3() { n * 2 } else { n });
}

/// One element of a range reply.
fn reply_element(out: &mut ReplyBuf, m: &[u8], s: f64, withscores: bool) {
    if withscores && out.resp3() {
        out.array(2);
    }
    out.bulk(m);
    if withscores {
        reply_score(out, s);
    }
}

/// [member, score] pairs, nested in both protocols (ZMPOP, RESP3 pops with a count).
/// Member/score pairs as nested arrays (ZMPOP, BZMPOP, RESP3 ZPOP with a count).
pub fn reply_nested(out: &mut ReplyBuf, pairs: &[(Vec<u8>, f64)]) {
    out.array(pairs.len());
    for (m, s) in pairs {
        out.array(2);
        out.bulk(m);
        reply_score(out, *s);
    }
}

fn limits(ctx: &Ctx) -> Limits {
    ctx.srv.config.hot.coll_limits()
}

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// C's strtod over the whole argument (leading white space allowed, as zslParseRange
/// accepts it; the empty string reads as 0): None unless every byte is consumed.
fn strtod_all(arg: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(arg).ok()?;
    if s.is_empty() {
        return Some(0.0);
    }
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if t.is_empty() {
        return None;
    }
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let neg = t.starts_with('-');
    let lower = body.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let v = hex_float(hex)?;
        return Some(if neg { -v } else { v });
    }
    if lower == "inf" || lower == "infinity" {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if lower == "nan" || lower.starts_with("nan(") {
        return Some(f64::NAN);
    }
    if !body
        .bytes()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == b'.')
    {
        return None;
    }
    // Rust's grammar is strtod's decimal one once the special words are handled.
    t.parse::<f64>().ok()
}

/// The digits of a C hexadecimal float after `0x`: hex digits, an optional fraction, an
/// optional binary exponent (`p`, decimal).
fn hex_float(s: &str) -> Option<f64> {
    let (digits, exp) = match s.split_once('p') {
        Some((d, e)) => (d, e.parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut mant = 0.0f64;
    for c in int.chars().chain(frac.chars()) {
        mant = mant * 16.0 + f64::from(c.to_digit(16)?);
    }
    let e = i64::from(exp) - 4 * frac.len() as i64;
    Some(mant * 2f64.powi(e.clamp(-2000, 2000) as i32))
}

/// A score argument as Redis's getDoubleFromObject reads it: no leading space, the whole
/// string, no overflow to ±inf or underflow to 0 from finite digits, not NaN.
pub(crate) fn parse_score(arg: &[u8]) -> Option<f64> {
    if let Some(n) = engine::value::parse_strict_i64(arg) {
        return Some(n as f64);
    }
    if arg.is_empty() || arg[0].is_ascii_whitespace() || arg[0] == 0x0b {
        return None;
    }
    let v = strtod_all(arg)?;
    if v.is_nan() {
        return None;
    }
    let lower = arg.to_ascii_lowercase();
    if v.is_infinite() && !lower.windows(3).any(|w| w == b"inf") {
        return None;
    }
    if v == 0.0
        && lower
            .iter()
            .take_while(|&&c| c != b'e')
            .any(|c| (b'1'..=b'9').contains(c))
    {
        return None;
    }
    Some(v)
}

/// A score interval (zrangespec).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

impl ScoreRange {
    /// `min..max`, each end included unless its flag says excluded.
    pub(crate) fn new(min: f64, minex: bool, max: f64, maxex: bool) -> ScoreRange {
        ScoreRange {
            min,
            max,
            minex,
            maxex,
        }
    }

    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, &'static str> {
        let one = |a: &[u8]| -> Option<(f64, bool)> {
            let (ex, body) = match a.first() {
                Some(b'(') => (true, &a[1..]),
                _ => (false, a),
            };
            // zslParseRange reads the argument as a C string: it ends at a NUL byte.
            let v = strtod_all(body.split(|&b| b == 0).next().unwrap_or(body))?;
            (!v.is_nan()).then_some((v, ex))
        };
        match (one(min), one(max)) {
            (Some((min, minex)), Some((max, maxex))) => Ok(ScoreRange {
                min,
                max,
                minex,
                maxex,
            }),
            _ => Err(NOT_FLOAT_RANGE),
        }
    }
    fn gte_min(&self, v: f64) -> bool {
        if self.minex {
            v > self.min
        } else {
            v >= self.min
        }
    }
    fn lte_max(&self, v: f64) -> bool {
        if self.maxex {
            v < self.max
        } else {
            v <= self.max
        }
    }
}

/// One end of a lex range.
#[derive(Clone, Debug)]
enum Lex {
    Min,
    Max,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

#[derive(Clone, Debug)]
pub(crate) struct LexRange {
    min: Lex,
    max: Lex,
}

impl LexRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<LexRange, &'static str> {
        let one = |a: &[u8]| -> Option<Lex> {
            match a.first()? {
                b'+' if a.len() == 1 => Some(Lex::Max),
                b'-' if a.len() == 1 => Some(Lex::Min),
                b'(' => Some(Lex::Excl(a[1..].to_vec())),
                b'[' => Some(Lex::Incl(a[1..].to_vec())),
                _ => None,
            }
        };
        match (one(min), one(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(NOT_LEX_RANGE),
        }
    }
    /// sdscmplex(min, max) > 0, or equal bounds with either exclusive.
    fn empty_by_bounds(&self) -> bool {
        use std::cmp::Ordering::*;
        let rank = |l: &Lex| match l {
            Lex::Min => 0,
            Lex::Incl(_) | Lex::Excl(_) => 1,
            Lex::Max => 2,
        };
        let text = |l: &Lex| match l {
            Lex::Incl(v) | Lex::Excl(v) => v.clone(),
            _ => Vec::new(),
        };
        let excl = |l: &Lex| matches!(l, Lex::Excl(_));
        let cmp = rank(&self.min)
            .cmp(&rank(&self.max))
            .then_with(|| text(&self.min).cmp(&text(&self.max)));
        cmp == Greater || (cmp == Equal && (excl(&self.min) || excl(&self.max)))
    }

    fn gte_min(&self, v: &[u8]) -> bool {
        match &self.min {
            Lex::Min => true,
            Lex::Max => false,
            Lex::Incl(m) => v >= &m[..],
            Lex::Excl(m) => v > &m[..],
        }
    }
    fn lte_max(&self, v: &[u8]) -> bool {
        match &self.max {
            Lex::Min => false,
            Lex::Max => true,
            Lex::Incl(m) => v <= &m[..],
            Lex::Excl(m) => v < &m[..],
        }
    }
}

/// A range of a sorted set by score or by member: where it starts (ascending rank of its
/// first element) and how to test its upper end.
pub(crate) enum Interval {
    Score(ScoreRange),
    Lex(LexRange),
}

impl Interval {
    /// Visit the elements within the interval in ascending order while `f` returns true
    /// (ZRANGEBYSCORE's and the geo searches' walk).
    pub(crate) fn walk_forward(&self, z: &ZSet, mut f: impl FnMut(&[u8], f64) -> bool) {
        let first = z.count_prefix(|s, m| !self.gte_min(s, m));
        z.walk(first, false, |m, sc| self.lte_max(sc, m) && f(m, sc));
    }

    /// zslIsInLexRange / zzlIsInLexRange, which Redis asks before looking for a lex
    /// range's ends: false when the bounds make it empty, or when the last member is below
    /// min or the first above max. Only the two ends are looked at, so this decides the
    /// answer when members of different scores are not in lex order.
    pub(crate) fn lex_may_hold(&self, z: &ZSet) -> bool {
        let Interval::Lex(r) = self else {
            return true;
        };
        let (Some(tail), Some(head)) = (z.len().checked_sub(1), (!z.is_empty()).then_some(0))
        else {
            return false;
        };
        let mut inside = !r.empty_by_bounds();
        if inside {
            z.walk(tail, true, |m, _| {
                inside = r.gte_min(m);
                false
            });
        }
        if inside {
            z.walk(head, false, |m, _| {
                inside = r.lte_max(m);
                false
            });
        }
        inside
    }

    fn gte_min(&self, s: f64, m: &[u8]) -> bool {
        match self {
            Interval::Score(r) => r.gte_min(s),
            Interval::Lex(r) => r.gte_min(m),
        }
    }
    fn lte_max(&self, s: f64, m: &[u8]) -> bool {
        match self {
            Interval::Score(r) => r.lte_max(s),
            Interval::Lex(r) => r.lte_max(m),
        }
    }
    /// Ascending rank of the first element in the interval and of the last + 1 (the
    /// interval is empty when first >= end). `walk` follows the elements from the first
    /// while they are within the upper end (Redis's listpack counts and every removal);
    /// otherwise the end is found by descending the skiplist (its ZCOUNT/ZLEXCOUNT). Both
    /// agree unless a lex range meets members of different scores, where Redis's answer
    /// depends on how it looks too.
    /// Ascending rank of the last element within the upper end: found from the tail in a
    /// listpack, by descending the skiplist otherwise (as zzlLastInRange/zslLastInRange).
    fn last(&self, z: &ZSet) -> Option<usize> {
        if let ZSet::Listpack(_) = z {
            let mut r = z.len();
            let mut found = false;
            z.walk(z.len().checked_sub(1)?, true, |m, s| {
                r -= 1;
                found = self.lte_max(s, m);
                !found
            });
            found.then_some(r)
        } else {
            z.count_prefix(|s, m| self.lte_max(s, m)).checked_sub(1)
        }
    }

    fn ranks(&self, z: &ZSet, walk: bool) -> (usize, usize) {
        let first = z.count_prefix(|s, m| !self.gte_min(s, m));
        if walk || matches!(z, ZSet::Listpack(_)) {
            let mut end = first;
            z.walk(first, false, |m, s| {
                let inside = self.lte_max(s, m);
                end += usize::from(inside);
                inside
            });
            (first, end)
        } else {
            (first, z.count_prefix(|s, m| self.lte_max(s, m)))
        }
    }
}

/// Store `z` at `dst` as a *STORE command's result, or delete `dst` when `z` is empty;
/// replies with the size.
pub(crate) fn store_result(ctx: &mut Ctx, dst: &[u8], z: ZSet, event: &'static str) {
    let n = z.len();
    if n > 0 {
        coll::insert(ctx.keys, dst, z, Event::zset(event));
    } else if ctx.keys.remove(dst, Event::DEL).is_none() {
        // Nothing stored, nothing deleted: nothing to propagate.
    }
    ctx.out.int(n as i64);
}

/// Remove elements from the sorted set at `key` with `f` (which returns how many it
/// removed and its result): the event `ev` is recorded if any went, each removed element
/// counted in the dirty counter as Redis counts it, and the key deleted (`del` after `ev`)
/// when emptied. Ok(None) without such a key.
fn remove_with<R>(
    keys: &mut Locked,
    key: &[u8],
    ev: &'static str,
    f: impl FnOnce(&mut ZSet) -> (usize, R),
) -> Result<Option<R>, &'static str> {
    let (n, r, empty) = match coll::modify::<ZSet>(keys, key, Event::zset(ev))? {
        None => return Ok(None),
        Some(mut e) => {
            let z = coll::get_mut::<ZSet>(&mut e);
            let (n, r) = f(z);
            let empty = z.is_empty();
            if n > 0 {
                e.mark_changed();
            }
            (n, r, empty)
        }
    };
    if n > 1 {
        keys.add_dirty(n as u64 - 1);
    }
    if empty {
        coll::delete_empty(keys, key);
    }
    Ok(Some(r))
}

/// The sorted set at `key` for reading (a hit or miss counted).
pub(crate) fn read<'k>(keys: &'k mut Locked, key: &[u8]) -> Result<Option<&'k ZSet>, &'static str> {
    coll::read::<ZSet>(keys, key)
}
