//! Set commands (Redis 7.0's t_set.c, on the command seam of [`super::coll`]): members are
//! added and removed through [`engine::coll::Set`], which keeps Redis's encodings (intset,
//! then a hash table one way); events, deletion of emptied keys and propagation rewrites
//! follow Redis.

use super::args::{self, is, SYNTAX_ERR};
use super::coll;
use super::{Ctx, Handler};
use engine::coll::set::Elem;
use engine::coll::{Limits, Set};
use engine::Event;
use rand::Rng;
use resp::ReplyBuf;

pub const COMMANDS: &[(&str, Handler)] = &[
    ("sadd", sadd),
    ("srem", srem),
    ("sismember", sismember),
    ("smismember", smismember),
    ("scard", scard),
    ("smembers", smembers),
    ("srandmember", srandmember),
    ("spop", spop),
    ("smove", smove),
    ("sinter", sinter),
    ("sintercard", sintercard),
    ("sinterstore", sinterstore),
    ("sunion", sunion),
    ("sunionstore", sunionstore),
    ("sdiff", sdiff),
    ("sdiffstore", sdiffstore),
    ("sscan", sscan),
];

const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// SPOP with a count propagates its removals as SREMs of at most this many members.
const SPOP_BATCH: usize = 1024;
/// SPOP with a count builds a new set of the remaining members when they are at most
/// count / this (Redis's SPOP_MOVE_STRATEGY_MUL).
const SPOP_MOVE_STRATEGY_MUL: u64 = 5;

fn limits(ctx: &Ctx) -> Limits {
    ctx.srv.config.hot.coll_limits()
}

fn reply_elem(out: &mut ReplyBuf, e: Elem<'_>) {
    match e {
        Elem::Int(n) => out.bulk_int(n),
        Elem::Bytes(b) => out.bulk(b),
    }
}

/// Reply a whole set as RESP3's set type (an array in RESP2).
fn reply_set(out: &mut ReplyBuf, s: &Set) {
    out.set(s.len());
    for e in s.iter() {
        reply_elem(out, e);
    }
}

fn sadd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let lim = limits(ctx);
    let ev = Event::set("sadd");
    let added = match coll::modify::<Set>(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Set>(&mut e);
            let added = argv[2..].iter().filter(|m| s.insert(m, &lim)).count();
            if added > 0 {
                e.mark_changed();
            }
            Some(added)
        }
        Ok(None) => None,
    };
    let added = added.unwrap_or_else(|| {
        let mut s = Set::for_first(argv[2]);
        let added = argv[2..].iter().filter(|m| s.insert(m, &lim)).count();
        coll::insert(ctx.keys, key, s, ev);
        added
    });
    if added > 1 {
        ctx.keys.add_dirty(added as u64 - 1);
    }
    ctx.out.int(added as i64);
}

fn srem(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let (removed, empty) = match coll::modify::<Set>(ctx.keys, key, Event::set("srem")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Set>(&mut e);
            let mut removed = 0u64;
            for m in &argv[2..] {
                if s.remove(m) {
                    removed += 1;
                    if s.is_empty() {
                        break;
                    }
                }
            }
            let empty = s.is_empty();
            if removed > 0 {
                e.mark_changed();
            }
            (removed, empty)
        }
    };
    if empty {
        coll::delete_empty(ctx.keys, key);
    }
    if removed > 1 {
        ctx.keys.add_dirty(removed - 1);
    }
    ctx.out.int(removed as i64);
}

fn sismember(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(s) => ctx
            .out
            .int(i64::from(s.is_some_and(|s| s.contains(argv[2])))),
    }
}

fn smismember(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(s) => {
            ctx.out.array(argv.len() - 2);
            for m in &argv[2..] {
                ctx.out.int(i64::from(s.is_some_and(|s| s.contains(m))));
            }
        }
    }
}

fn scard(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(s) => ctx.out.int(s.map_or(0, |s| s.len() as i64)),
    }
}

fn smembers(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.set(0),
        Ok(Some(s)) => reply_set(ctx.out, s),
    }
}

fn srandmember(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return ctx.out.error(SYNTAX_ERR);
    }
    if argv.len() == 3 {
        return srandmember_count(ctx, argv);
    }
    match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.null(),
        Ok(Some(s)) => match s.random(&mut rand::thread_rng()) {
            Some(e) => reply_elem(ctx.out, e),
            None => ctx.out.null(),
        },
    }
}

/// `count` distinct positions of 0..len in random order (count < len).
fn distinct_positions(len: usize, count: usize, rng: &mut impl Rng) -> Vec<usize> {
    if count * 3 > len {
        // A partial Fisher-Yates shuffle of every position.
        let mut all: Vec<usize> = (0..len).collect();
        for i in 0..count {
            let j = rng.gen_range(i..len);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let p = rng.gen_range(0..len);
            if seen.insert(p) {
                out.push(p);
            }
        }
        out
    }
}

fn srandmember_count(ctx: &mut Ctx, argv: &[&[u8]]) {
    let l = match args::random_count(argv[2]) {
        Err(e) => return ctx.out.error(e),
        Ok(n) => n,
    };
    let (count, uniq) = (l.unsigned_abs(), l >= 0);
    let s = match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.array(0),
        Ok(Some(s)) => s,
    };
    let rng = &mut rand::thread_rng();
    if count == 0 {
        return ctx.out.array(0);
    }
    if !uniq || count == 1 {
        ctx.out.array(count as usize);
        for _ in 0..count {
            if let Some(e) = s.random(rng) {
                reply_elem(ctx.out, e);
            }
        }
        return;
    }
    if count >= s.len() as u64 {
        ctx.out.array(s.len());
        for e in s.iter() {
            reply_elem(ctx.out, e);
        }
        return;
    }
    let picks = distinct_positions(s.len(), count as usize, rng);
    ctx.out.array(picks.len());
    for p in picks {
        reply_elem(ctx.out, s.at(p));
    }
}

fn spop(ctx: &mut Ctx, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return ctx.out.error(SYNTAX_ERR);
    }
    if argv.len() == 3 {
        return spop_count(ctx, argv);
    }
    let key = argv[1];
    let (member, empty) = match coll::modify::<Set>(ctx.keys, key, Event::set("spop")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.null(),
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Set>(&mut e);
            let Some(m) = s.pop_random(&mut rand::thread_rng()) else {
                return ctx.out.null();
            };
            let empty = s.is_empty();
            e.mark_changed();
            (m, empty)
        }
    };
    if empty {
        coll::delete_empty(ctx.keys, key);
    }
    ctx.propagate.replace(&[b"SREM", key, &member]);
    ctx.out.bulk(&member);
}

fn spop_count(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let lim = limits(ctx);
    let count = match args::int(argv[2]) {
        Ok(n) if n >= 0 => n as u64,
        _ => return ctx.out.error(NOT_POSITIVE),
    };
    let mut e = match coll::modify::<Set>(ctx.keys, key, Event::set("spop")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.set(0),
        Ok(Some(e)) => e,
    };
    if count == 0 {
        return ctx.out.set(0);
    }
    let s = coll::get_mut::<Set>(&mut e);
    let size = s.len() as u64;
    e.mark_changed();
    if count >= size {
        reply_set(ctx.out, coll::get_mut::<Set>(&mut e));
        drop(e);
        coll::delete_empty(ctx.keys, key);
        ctx.keys.add_dirty(size.saturating_sub(1));
        let del = crate::propagate::deletion(ctx.srv, "lazyfree-lazy-server-del");
        ctx.propagate.replace(&[del, key]);
        return;
    }
    let s = coll::get_mut::<Set>(&mut e);
    let rng = &mut rand::thread_rng();
    ctx.out.set(count as usize);
    ctx.propagate.rewrite.clear();
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(SPOP_BATCH.min(count as usize));
    for _ in 0..count {
        let Some(m) = s.pop_random(rng) else { break };
        ctx.out.bulk(&m);
        batch.push(m);
        if batch.len() == SPOP_BATCH {
            propagate_srem(&mut ctx.propagate, key, &mut batch);
        }
    }
    if !batch.is_empty() {
        propagate_srem(&mut ctx.propagate, key, &mut batch);
    }
    if (size - count) * SPOP_MOVE_STRATEGY_MUL <= count && matches!(s, Set::Table(_)) {
        // Redis builds a new set of the members that stay (its encoding chosen afresh).
        if s.fits_intset(&lim) {
            *s = build_set(&s.iter().map(Elem::to_vec).collect::<Vec<_>>(), &lim);
        }
    }
    drop(e);
    ctx.keys.add_dirty(count - 1);
}

fn propagate_srem(p: &mut crate::propagate::PropagateAs, key: &[u8], batch: &mut Vec<Vec<u8>>) {
    let mut cmd: Vec<&[u8]> = Vec::with_capacity(batch.len() + 2);
    cmd.push(b"SREM");
    cmd.push(key);
    cmd.extend(batch.iter().map(|m| m.as_slice()));
    p.also(&cmd);
    batch.clear();
}

fn smove(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (src, dst, member) = (argv[1], argv[2], argv[3]);
    // Redis looks both keys up for writing, then checks their types.
    let src_exists = match coll::peek::<Set>(ctx.keys, src) {
        Err(e) => Err(e),
        Ok(s) => Ok(s.is_some()),
    };
    let dst_state = coll::peek::<Set>(ctx.keys, dst).map(|s| s.is_some());
    let src_exists = match src_exists {
        Ok(false) => return ctx.out.int(0),
        Ok(true) => true,
        Err(e) => return ctx.out.error(e),
    };
    let dst_exists = match dst_state {
        Ok(d) => d,
        Err(e) => return ctx.out.error(e),
    };
    debug_assert!(src_exists);
    if src == dst {
        let found =
            coll::peek::<Set>(ctx.keys, src).is_ok_and(|s| s.is_some_and(|s| s.contains(member)));
        return ctx.out.int(i64::from(found));
    }
    let empty = match coll::modify::<Set>(ctx.keys, src, Event::set("srem")) {
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Set>(&mut e);
            if !s.remove(member) {
                return ctx.out.int(0);
            }
            let empty = s.is_empty();
            e.mark_changed();
            empty
        }
        _ => return ctx.out.int(0),
    };
    if empty {
        coll::delete_empty(ctx.keys, src);
    }
    let lim = limits(ctx);
    let ev = Event::set("sadd");
    if dst_exists {
        if let Ok(Some(mut e)) = coll::modify::<Set>(ctx.keys, dst, ev) {
            if coll::get_mut::<Set>(&mut e).insert(member, &lim) {
                e.mark_changed();
            }
        }
    } else {
        let mut s = Set::for_first(member);
        s.insert(member, &lim);
        coll::insert(ctx.keys, dst, s, ev);
    }
    ctx.out.int(1);
}

/// The sets named by `keys`, looked up in order for reading (hits and misses counted):
/// each one's length, or None if absent; Err(WRONGTYPE) at the first key of another type.
fn lookup_all(ctx: &mut Ctx, keys: &[&[u8]]) -> Result<Vec<Option<usize>>, &'static str> {
    keys.iter()
        .map(|k| coll::read::<Set>(ctx.keys, k).map(|s| s.map(Set::len)))
        .collect()
}

/// The members of the set at `key` (already looked up) as owned bytes.
fn members_of(ctx: &mut Ctx, key: &[u8]) -> Vec<Vec<u8>> {
    match coll::peek::<Set>(ctx.keys, key) {
        Ok(Some(s)) => s.iter().map(Elem::to_vec).collect(),
        _ => Vec::new(),
    }
}

/// Keep the candidates that are (or, with `keep_if == false`, are not) in the set at `key`.
fn filter_by(ctx: &mut Ctx, key: &[u8], cands: &mut Vec<Vec<u8>>, keep_if: bool) {
    if let Ok(Some(s)) = coll::peek::<Set>(ctx.keys, key) {
        cands.retain(|m| s.contains(m) == keep_if);
    } else if keep_if {
        cands.clear();
    }
}

/// The intersection's members (in the smallest set's order), up to `limit` (0 = all); None
/// when a set is missing (the result is empty).
fn intersect(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    limit: usize,
) -> Result<Option<Vec<Vec<u8>>>, &'static str> {
    let lens = lookup_all(ctx, keys)?;
    if lens.iter().any(Option::is_none) {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&j| lens[j]);
    let mut cands = members_of(ctx, keys[order[0]]);
    for &j in &order[1..] {
        if keys[j] != keys[order[0]] {
            filter_by(ctx, keys[j], &mut cands, true);
        }
    }
    if limit > 0 {
        cands.truncate(limit);
    }
    Ok(Some(cands))
}

/// Build a result set as Redis does (an intset to start, members added one by one).
fn build_set(members: &[Vec<u8>], lim: &Limits) -> Set {
    let mut s = Set::new();
    for m in members {
        s.insert(m, lim);
    }
    s
}

/// Store `result` in `dst` (or delete `dst` when empty), replying its size.
fn store(ctx: &mut Ctx, dst: &[u8], result: Set, event: &'static str) {
    let n = result.len();
    if n > 0 {
        coll::insert(ctx.keys, dst, result, Event::set(event));
    } else {
        ctx.keys.remove(dst, Event::DEL);
    }
    ctx.out.int(n as i64);
}

fn sinter(ctx: &mut Ctx, argv: &[&[u8]]) {
    match intersect(ctx, &argv[1..], 0) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.set(0),
        Ok(Some(m)) => {
            ctx.out.set(m.len());
            for x in &m {
                ctx.out.bulk(x);
            }
        }
    }
}

fn sinterstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    match intersect(ctx, &argv[2..], 0) {
        Err(e) => ctx.out.error(e),
        Ok(m) => {
            let lim = limits(ctx);
            let result = build_set(&m.unwrap_or_default(), &lim);
            store(ctx, argv[1], result, "sinterstore");
        }
    }
}

fn sintercard(ctx: &mut Ctx, argv: &[&[u8]]) {
    let numkeys = match args::int(argv[1]) {
        Ok(n) if n >= 1 => n as u64,
        _ => return ctx.out.error("ERR numkeys should be greater than 0"),
    };
    if numkeys > (argv.len() - 2) as u64 {
        return ctx
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    let nk = numkeys as usize;
    let mut limit = 0usize;
    let mut j = 2 + nk;
    while j < argv.len() {
        if is(argv[j], "limit") && j + 1 < argv.len() {
            match args::card_limit(argv[j + 1]) {
                Ok(n) => limit = n,
                Err(e) => return ctx.out.error(e),
            }
            j += 2;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
    }
    match intersect(ctx, &argv[2..2 + nk], limit) {
        Err(e) => ctx.out.error(e),
        Ok(m) => ctx.out.int(m.map_or(0, |m| m.len() as i64)),
    }
}

/// SUNION/SDIFF's result, built as Redis builds it (so a stored result has Redis's
/// encoding).
fn union_diff(ctx: &mut Ctx, keys: &[&[u8]], diff: bool) -> Result<Set, &'static str> {
    let lens = lookup_all(ctx, keys)?;
    let lim = limits(ctx);
    if !diff {
        let mut out = Set::new();
        let mut buf = [0u8; 20];
        // The union holds at least its largest input: a hash-table result gets that room
        // at once instead of growing (rehashing) on the way there.
        let largest = lens.iter().flatten().copied().max().unwrap_or(0);
        let mut reserved = false;
        for (j, k) in keys.iter().enumerate() {
            if lens[j].is_none() {
                continue;
            }
            if let Ok(Some(s)) = coll::peek::<Set>(ctx.keys, k) {
                for e in s.iter() {
                    out.insert(e.as_bytes(&mut buf), &lim);
                    if !reserved && matches!(out, Set::Table(_)) {
                        out.reserve(largest);
                        reserved = true;
                    }
                }
            }
        }
        return Ok(out);
    }
    let Some(first_len) = lens[0] else {
        return Ok(Set::new());
    };
    if keys[1..].contains(&keys[0]) {
        return Ok(Set::new());
    }
    // Redis picks between two algorithms by estimated work; the second one adds the whole
    // first set to the result before removing, which decides the stored encoding.
    let (mut one, mut two) = (0u64, 0u64);
    for l in lens.iter().flatten() {
        one += first_len as u64;
        two += *l as u64;
    }
    let algo_two = one / 2 > two;
    let mut cands = members_of(ctx, keys[0]);
    let mut others: Vec<usize> = (1..keys.len()).filter(|&j| lens[j].is_some()).collect();
    others.sort_by_key(|&j| std::cmp::Reverse(lens[j]));
    for &j in &others {
        if cands.is_empty() {
            break;
        }
        filter_by(ctx, keys[j], &mut cands, false);
    }
    let mut out = build_set(&cands, &lim);
    if algo_two && !out.is_empty() {
        let first_fits =
            matches!(coll::peek::<Set>(ctx.keys, keys[0]), Ok(Some(s)) if s.fits_intset(&lim));
        if !first_fits {
            out.convert_to_table();
        }
    }
    Ok(out)
}

/// SUNION/SDIFF (reply the set) and their STORE forms (`event` names the store's event).
fn union_diff_command(ctx: &mut Ctx, argv: &[&[u8]], diff: bool, event: Option<&'static str>) {
    let keys = if event.is_some() {
        &argv[2..]
    } else {
        &argv[1..]
    };
    match (union_diff(ctx, keys, diff), event) {
        (Err(e), _) => ctx.out.error(e),
        (Ok(s), None) => reply_set(ctx.out, &s),
        (Ok(s), Some(ev)) => store(ctx, argv[1], s, ev),
    }
}

fn sunion(ctx: &mut Ctx, argv: &[&[u8]]) {
    union_diff_command(ctx, argv, false, None)
}

fn sunionstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    union_diff_command(ctx, argv, false, Some("sunionstore"))
}

fn sdiff(ctx: &mut Ctx, argv: &[&[u8]]) {
    union_diff_command(ctx, argv, true, None)
}

fn sdiffstore(ctx: &mut Ctx, argv: &[&[u8]]) {
    union_diff_command(ctx, argv, true, Some("sdiffstore"))
}

fn sscan(ctx: &mut Ctx, argv: &[&[u8]]) {
    let cursor = match super::scan_args::parse_cursor(argv[2]) {
        Ok(c) => c,
        Err(e) => return ctx.out.error(e),
    };
    let s = match coll::read::<Set>(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return super::scan_args::reply_empty(ctx.out),
        Ok(Some(s)) => s,
    };
    let opts = match super::scan_args::parse_opts(argv, 3, false) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let count = opts.count;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut keep = |m: &[u8]| {
        if opts.matches(m) {
            found.push(m.to_vec());
        }
    };
    let next = match s {
        Set::Intset(_) => {
            for e in s.iter() {
                keep(&e.to_vec());
            }
            0
        }
        Set::Table(t) => t.scan(cursor, count, keep),
    };
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.bulk_array(found.iter());
}
