//! Hash commands (Redis's t_hash.c on the collection seam, see [`super::coll`]).

use super::args::{self, is, SYNTAX_ERR};
use super::coll;
use super::scan_args;
use super::{Ctx, Handler};
use crate::floatfmt::LongDouble;
use engine::coll::listpack::Item;
use engine::coll::Hash;
use engine::Event;
use rand::Rng;
use resp::ReplyBuf;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("hset", hset),
    ("hmset", hset),
    ("hsetnx", hsetnx),
    ("hget", hget),
    ("hmget", hmget),
    ("hdel", hdel),
    ("hlen", hlen),
    ("hstrlen", hstrlen),
    ("hexists", hexists),
    ("hincrby", hincrby),
    ("hincrbyfloat", hincrbyfloat),
    ("hkeys", hkeys),
    ("hvals", hvals),
    ("hgetall", hgetall),
    ("hscan", hscan),
    ("hrandfield", hrandfield),
];

const HSET: Event = Event::hash("hset");
const HDEL: Event = Event::hash("hdel");
const HINCRBY: Event = Event::hash("hincrby");
const HINCRBYFLOAT: Event = Event::hash("hincrbyfloat");

/// Redis's HRANDFIELD_SUB_STRATEGY_MUL.
const SUB_STRATEGY_MUL: usize = 3;

fn reply_item(out: &mut ReplyBuf, i: Item<'_>) {
    match i {
        Item::Int(n) => out.bulk_int(n),
        Item::Str(s) => out.bulk(s),
    }
}

/// Apply `f` to the hash at `key`, created empty if absent (Redis's
/// hashTypeLookupWriteOrCreate: the key exists from then on). `f` returns whether it
/// changed the hash; the event is recorded only then.
fn write_or_create<R>(
    ctx: &mut Ctx,
    key: &[u8],
    ev: Event,
    f: impl FnOnce(&mut Hash) -> (bool, R),
) -> Result<R, &'static str> {
    if let Some(mut e) = coll::modify::<Hash>(ctx.keys, key, ev)? {
        let (changed, r) = f(coll::get_mut::<Hash>(&mut e));
        if changed {
            e.mark_changed();
        }
        return Ok(r);
    }
    let mut h = Hash::new();
    let (changed, r) = f(&mut h);
    // A new key is only left behind by a write (every caller writes on a new key).
    if changed {
        coll::insert(ctx.keys, key, h, ev);
    }
    Ok(r)
}

fn hset(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() % 2 == 1 {
        let name = String::from_utf8_lossy(argv[0]).to_lowercase();
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let limits = ctx.srv.config.hot.coll_limits();
    let r = write_or_create(ctx, argv[1], HSET, |h| {
        h.prepare_for(argv[2..].iter().map(|a| a.len()), &limits);
        let mut created = 0;
        for pair in argv[2..].chunks_exact(2) {
            created += h.set(pair[0], pair[1], &limits) as i64;
        }
        (true, created)
    });
    if r.is_ok() {
        // Redis counts every pair in the dirty counter.
        ctx.keys.add_dirty((argv.len() as u64 - 2) / 2 - 1);
    }
    match r {
        Err(e) => ctx.out.error(e),
        Ok(created) if argv[0][1].eq_ignore_ascii_case(&b's') => ctx.out.int(created),
        Ok(_) => ctx.out.ok(),
    }
}

fn hsetnx(ctx: &mut Ctx, argv: &[&[u8]]) {
    let limits = ctx.srv.config.hot.coll_limits();
    let (field, value) = (argv[2], argv[3]);
    let r = write_or_create(ctx, argv[1], HSET, |h| {
        if h.contains(field) {
            return (false, 0);
        }
        h.prepare_for([field.len(), value.len()], &limits);
        h.set(field, value, &limits);
        (true, 1)
    });
    match r {
        Err(e) => ctx.out.error(e),
        Ok(n) => ctx.out.int(n),
    }
}

fn hget(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(h) => match h.and_then(|h| h.get(argv[2])) {
            Some(v) => reply_item(ctx.out, v),
            None => ctx.out.null(),
        },
    }
}

fn hmget(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(h) => {
            ctx.out.array(argv.len() - 2);
            for f in &argv[2..] {
                match h.and_then(|h| h.get(f)) {
                    Some(v) => reply_item(ctx.out, v),
                    None => ctx.out.null(),
                }
            }
        }
    }
}

fn hdel(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let (deleted, emptied) = match coll::modify::<Hash>(ctx.keys, key, HDEL) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(mut e)) => {
            let h = coll::get_mut::<Hash>(&mut e);
            let mut deleted = 0;
            for f in &argv[2..] {
                if h.remove(f) {
                    deleted += 1;
                    if h.is_empty() {
                        break;
                    }
                }
            }
            let emptied = h.is_empty();
            if deleted > 0 {
                e.mark_changed();
            }
            (deleted, emptied)
        }
    };
    if deleted > 1 {
        ctx.keys.add_dirty(deleted as u64 - 1);
    }
    if emptied {
        coll::delete_empty(ctx.keys, key);
    }
    ctx.out.int(deleted);
}

fn hlen(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(h) => ctx.out.int(h.map_or(0, |h| h.len() as i64)),
    }
}

fn hstrlen(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(h) => {
            let n = h.and_then(|h| h.get(argv[2])).map_or(0, |v| v.byte_len());
            ctx.out.int(n as i64)
        }
    }
}

fn hexists(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(h) => ctx.out.int(h.is_some_and(|h| h.contains(argv[2])) as i64),
    }
}

fn hincrby(ctx: &mut Ctx, argv: &[&[u8]]) {
    let incr = match args::int(argv[3]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let limits = ctx.srv.config.hot.coll_limits();
    let field = argv[2];
    let r = write_or_create(ctx, argv[1], HINCRBY, |h| {
        let old = match h.get(field) {
            None => 0,
            Some(Item::Int(n)) => n,
            Some(Item::Str(s)) => match engine::value::parse_strict_i64(s) {
                Some(n) => n,
                None => return (false, Err("ERR hash value is not an integer")),
            },
        };
        let Some(new) = old.checked_add(incr) else {
            return (false, Err(args::OVERFLOW));
        };
        h.set(field, new.to_string().as_bytes(), &limits);
        (true, Ok(new))
    });
    match r.and_then(|r| r) {
        Err(e) => ctx.out.error(e),
        Ok(n) => ctx.out.int(n),
    }
}

fn hincrbyfloat(ctx: &mut Ctx, argv: &[&[u8]]) {
    let Some(incr) = LongDouble::parse(argv[3]) else {
        return ctx.out.error(args::NOT_FLOAT);
    };
    if !incr.is_finite() {
        return ctx.out.error("ERR value is NaN or Infinity");
    }
    let limits = ctx.srv.config.hot.coll_limits();
    let field = argv[2];
    let r = write_or_create(ctx, argv[1], HINCRBYFLOAT, |h| {
        let old = match h.get(field) {
            None => LongDouble::from_i64(0),
            Some(Item::Int(n)) => LongDouble::from_i64(n),
            Some(Item::Str(s)) => match LongDouble::parse(s) {
                Some(v) => v,
                None => return (false, Err("ERR hash value is not a float")),
            },
        };
        let new = old + incr;
        if !new.is_finite() {
            return (false, Err("ERR increment would produce NaN or Infinity"));
        }
        let text = new.to_human().into_bytes();
        h.set(field, &text, &limits);
        (true, Ok(text))
    });
    match r.and_then(|r| r) {
        Err(e) => ctx.out.error(e),
        Ok(text) => {
            ctx.out.bulk(&text);
            // Propagated as HSET of the result, so float rounding cannot differ on replay.
            ctx.propagate.replace(&[b"HSET", argv[1], field, &text]);
        }
    }
}

/// HKEYS / HVALS / HGETALL.
fn getall(ctx: &mut Ctx, argv: &[&[u8]], keys: bool, vals: bool) {
    let h = match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(h) => h,
    };
    let len = h.map_or(0, |h| h.len());
    if keys && vals {
        ctx.out.map(len);
    } else {
        ctx.out.array(len);
    }
    if let Some(h) = h {
        for (k, v) in h.iter() {
            if keys {
                reply_item(ctx.out, k);
            }
            if vals {
                reply_item(ctx.out, v);
            }
        }
    }
}

fn hkeys(ctx: &mut Ctx, argv: &[&[u8]]) {
    getall(ctx, argv, true, false);
}

fn hvals(ctx: &mut Ctx, argv: &[&[u8]]) {
    getall(ctx, argv, false, true);
}

fn hgetall(ctx: &mut Ctx, argv: &[&[u8]]) {
    getall(ctx, argv, true, true);
}

fn hscan(ctx: &mut Ctx, argv: &[&[u8]]) {
    let cursor = match scan_args::parse_cursor(argv[2]) {
        Ok(c) => c,
        Err(e) => return ctx.out.error(e),
    };
    let h = match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return scan_args::reply_empty(ctx.out),
        Ok(Some(h)) => h,
    };
    let opts = match scan_args::parse_opts(argv, 3, false) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let count = opts.count;
    let keep = |f: &[u8]| opts.matches(f);
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let next = match h {
        Hash::Listpack(_) => {
            for (k, v) in h.iter() {
                let k = k.to_vec();
                if keep(&k) {
                    found.push((k, v.to_vec()));
                }
            }
            0
        }
        Hash::Table(t) => {
            // As Redis: up to COUNT*10 buckets per call, stopping once COUNT fields are in.
            let mut cursor = cursor;
            let mut budget = count.saturating_mul(10);
            loop {
                cursor = t.scan_bucket(cursor, |k, v| {
                    if keep(k) {
                        found.push((k.to_vec(), v.to_vec()));
                    }
                });
                budget -= 1;
                if cursor == 0 || budget == 0 || found.len() >= count {
                    break;
                }
            }
            cursor
        }
    };
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len() * 2);
    for (k, v) in &found {
        ctx.out.bulk(k);
        ctx.out.bulk(v);
    }
}

fn hrandfield(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() >= 3 {
        let l = match args::random_count(argv[2]) {
            Err(e) => return ctx.out.error(e),
            Ok(n) => n,
        };
        let withvalues = match argv.len() {
            3 => false,
            4 if is(argv[3], "withvalues") => {
                if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                    return ctx.out.error("ERR value is out of range");
                }
                true
            }
            _ => return ctx.out.error(SYNTAX_ERR),
        };
        return hrandfield_count(ctx, argv[1], l, withvalues);
    }
    match coll::read::<Hash>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.null(),
        Ok(Some(h)) => {
            let i = rand::thread_rng().gen_range(0..h.len());
            reply_item(ctx.out, h.pair_at(i).0);
        }
    }
}

fn hrandfield_count(ctx: &mut Ctx, key: &[u8], l: i64, withvalues: bool) {
    let h = match coll::read::<Hash>(ctx.keys, key) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.array(0),
        Ok(Some(h)) => h,
    };
    let resp3 = ctx.out.resp3();
    let out = &mut *ctx.out;
    let reply_pair = |out: &mut ReplyBuf, k: Item<'_>, v: Item<'_>| {
        if withvalues && resp3 {
            out.array(2);
        }
        reply_item(out, k);
        if withvalues {
            reply_item(out, v);
        }
    };
    let size = h.len();
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        return out.array(0);
    }
    let mut rng = rand::thread_rng();
    // Repeats allowed (negative count): random pairs, in random order.
    if l < 0 || count == 1 {
        out.array(if withvalues && !resp3 {
            count * 2
        } else {
            count
        });
        match h {
            Hash::Table(_) => {
                for _ in 0..count {
                    let (k, v) = h.pair_at(rng.gen_range(0..size));
                    reply_pair(out, k, v);
                }
            }
            Hash::Listpack(_) => {
                let pairs: Vec<_> = h.iter().collect();
                for _ in 0..count {
                    let (k, v) = pairs[rng.gen_range(0..size)];
                    reply_pair(out, k, v);
                }
            }
        }
        return;
    }
    let n = count.min(size);
    out.array(if withvalues && !resp3 { n * 2 } else { n });
    if count >= size {
        for (k, v) in h.iter() {
            reply_pair(out, k, v);
        }
        return;
    }
    // Distinct pairs: a random subset of the indices.
    let mut idx = if count * SUB_STRATEGY_MUL > size {
        rand::seq::index::sample(&mut rng, size, count).into_vec()
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut v = Vec::with_capacity(count);
        while v.len() < count {
            let i = rng.gen_range(0..size);
            if seen.insert(i) {
                v.push(i);
            }
        }
        v
    };
    if let Hash::Listpack(_) = h {
        // Redis's lpRandomPairsUnique returns the pairs in listpack order.
        idx.sort_unstable();
    }
    for (k, v) in h.pairs_at(&idx) {
        reply_pair(out, k, v);
    }
}
