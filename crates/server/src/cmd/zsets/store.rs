//! ZUNION, ZINTER, ZDIFF, their *STORE forms and ZINTERCARD (sets are inputs too, every
//! member scoring 1, as Redis allows).

use super::{limits, reply_pairs, store_result};
use crate::cmd::args::{self, SYNTAX_ERR, WRONGTYPE};
use crate::cmd::Ctx;
use engine::coll::{Set, ZSet};
use engine::{Locked, ValueRef};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq)]
enum Aggr {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, v: f64, a: Aggr) {
    match a {
        Aggr::Sum => {
            *target += v;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggr::Min => {
            if v < *target {
                *target = v
            }
        }
        Aggr::Max => {
            if v > *target {
                *target = v
            }
        }
    }
}

/// Members of a set input (all scoring 1).
fn set_members(s: &Set) -> Vec<Vec<u8>> {
    match s {
        Set::Intset(is) => (0..is.len())
            .map(|i| is.get(i).to_string().into_bytes())
            .collect(),
        Set::Table(t) => t.iter().map(|m| m.to_vec()).collect(),
    }
}

fn set_contains(s: &Set, m: &[u8]) -> bool {
    match s {
        Set::Intset(is) => engine::value::parse_strict_i64(m).is_some_and(|n| is.contains(n)),
        Set::Table(t) => t.contains(m),
    }
}

/// Call `f` with the input at `key` (a zset, a set, or nothing), without counting a read.
fn with_input<R>(keys: &mut Locked, key: &[u8], f: impl FnOnce(Input<'_>) -> R) -> R {
    match keys.peek(key).map(|e| e.value()) {
        Some(ValueRef::ZSet(z)) => f(Input::Z(z)),
        Some(ValueRef::Set(s)) => f(Input::S(s)),
        _ => f(Input::None),
    }
}

enum Input<'a> {
    None,
    Z(&'a ZSet),
    S(&'a Set),
}

impl Input<'_> {
    fn pairs(&self) -> Vec<(Vec<u8>, f64)> {
        match self {
            Input::None => Vec::new(),
            Input::Z(z) => z.to_pairs(),
            Input::S(s) => set_members(s).into_iter().map(|m| (m, 1.0)).collect(),
        }
    }
    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Input::None => None,
            Input::Z(z) => z.score(m),
            Input::S(s) => set_contains(s, m).then_some(1.0),
        }
    }
}

/// zunionInterDiffGenericCommand. `nk` is the index of numkeys.
fn generic(ctx: &mut Ctx, argv: &[&[u8]], nk: usize, dst: Option<&[u8]>, op: Op, card: bool) {
    let setnum = match args::int(argv[nk]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    if setnum < 1 {
        let name = String::from_utf8_lossy(argv[0]).to_ascii_lowercase();
        return ctx.out.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if setnum as u64 > (argv.len() - nk - 1) as u64 {
        return ctx.out.error(SYNTAX_ERR);
    }
    let setnum = setnum as usize;
    let keys = &argv[nk + 1..nk + 1 + setnum];
    let mut lens = Vec::with_capacity(setnum);
    for &k in keys {
        let len = match ctx.keys.get(k).map(|e| e.value()) {
            None => 0,
            Some(ValueRef::ZSet(z)) => z.len(),
            Some(ValueRef::Set(s)) => s.len(),
            Some(_) => return ctx.out.error(WRONGTYPE),
        };
        lens.push(len);
    }
    let mut weights = vec![1.0f64; setnum];
    let mut aggr = Aggr::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = nk + 1 + setnum;
    while j < argv.len() {
        let remaining = argv.len() - j;
        let a = argv[j];
        if op != Op::Diff && !card && remaining > setnum && args::is(a, "weights") {
            j += 1;
            for w in weights.iter_mut() {
                match super::parse_score(argv[j]) {
                    Some(v) => *w = v,
                    None => return ctx.out.error("ERR weight value is not a float"),
                }
                j += 1;
            }
        } else if op != Op::Diff && !card && remaining >= 2 && args::is(a, "aggregate") {
            let v = argv[j + 1];
            aggr = if args::is(v, "sum") {
                Aggr::Sum
            } else if args::is(v, "min") {
                Aggr::Min
            } else if args::is(v, "max") {
                Aggr::Max
            } else {
                return ctx.out.error(SYNTAX_ERR);
            };
            j += 2;
        } else if dst.is_none() && !card && args::is(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && args::is(a, "limit") {
            match args::card_limit(argv[j + 1]) {
                Ok(n) => limit = n,
                Err(e) => return ctx.out.error(e),
            }
            j += 2;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
    }
    // Inputs from the smallest to the largest (not for a difference: the first is the base).
    let mut order: Vec<usize> = (0..setnum).collect();
    if op != Op::Diff {
        order.sort_by_key(|&i| lens[i]);
    }
    let result: Vec<(Vec<u8>, f64)> = match op {
        Op::Union => {
            // Room for the largest input (the last in `order`) at once, and a fast hash:
            // the accumulator is the union's whole cost for big inputs.
            let largest = order.last().map_or(0, |&i| lens[i]);
            let mut acc: HashMap<Vec<u8>, f64, foldhash::fast::RandomState> =
                HashMap::with_capacity_and_hasher(largest, Default::default());
            for &i in &order {
                let w = weights[i];
                let pairs = with_input(ctx.keys, keys[i], |inp| inp.pairs());
                for (m, s) in pairs {
                    let mut v = w * s;
                    if v.is_nan() {
                        v = 0.0;
                    }
                    match acc.get_mut(&m) {
                        Some(t) => aggregate(t, v, aggr),
                        None => {
                            acc.insert(m, v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        Op::Inter => {
            let first = order[0];
            let w0 = weights[first];
            let mut cand: Vec<(Vec<u8>, f64)> = with_input(ctx.keys, keys[first], |inp| {
                inp.pairs()
                    .into_iter()
                    .map(|(m, s)| {
                        let v = w0 * s;
                        (m, if v.is_nan() { 0.0 } else { v })
                    })
                    .collect()
            });
            // The base set's own scores, for inputs naming the same key again.
            for &i in &order[1..] {
                let w = weights[i];
                with_input(ctx.keys, keys[i], |inp| {
                    cand.retain_mut(|(m, t)| match inp.score(m) {
                        Some(s) => {
                            aggregate(t, s * w, aggr);
                            true
                        }
                        None => false,
                    });
                });
            }
            cand
        }
        Op::Diff => {
            let mut cand = with_input(ctx.keys, keys[0], |inp| inp.pairs());
            for &k in &keys[1..] {
                if cand.is_empty() {
                    break;
                }
                with_input(ctx.keys, k, |inp| {
                    cand.retain(|(m, _)| inp.score(m).is_none());
                });
            }
            cand
        }
    };
    if card {
        let n = result.len();
        return ctx.out.int(if limit > 0 { n.min(limit) } else { n } as i64);
    }
    let l = limits(ctx);
    match dst {
        Some(dst) => {
            let ev = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            store_result(ctx, dst, ZSet::from_pairs(result, &l), ev);
        }
        None => {
            let mut result = result;
            result.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
            reply_pairs(ctx.out, &result, withscores);
        }
    }
}

pub fn zunion(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 1, None, Op::Union, false);
}

pub fn zinter(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 1, None, Op::Inter, false);
}

pub fn zdiff(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 1, None, Op::Diff, false);
}

pub fn zintercard(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 1, None, Op::Inter, true);
}

pub fn zunionstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 2, Some(argv[1]), Op::Union, false);
}

pub fn zinterstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 2, Some(argv[1]), Op::Inter, false);
}

pub fn zdiffstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    generic(ctx, argv, 2, Some(argv[1]), Op::Diff, false);
}
