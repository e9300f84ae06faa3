//! List commands (Redis 7.0's t_list.c on the command seam; see [`super::coll`]). The
//! blocking commands are built on [`pop_elements`] and [`move_element`].

use super::args::{self, SYNTAX_ERR, WRONGTYPE};
use super::coll::{self, Coll};
use super::{Ctx, Handler};
use engine::coll::List;
use engine::locked::Read;
use engine::{Event, Locked};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("lpush", lpush),
    ("rpush", rpush),
    ("lpushx", lpushx),
    ("rpushx", rpushx),
    ("lpop", lpop),
    ("rpop", rpop),
    ("llen", llen),
    ("lrange", lrange),
    ("lindex", lindex),
    ("lset", lset),
    ("linsert", linsert),
    ("lrem", lrem),
    ("ltrim", ltrim),
    ("lpos", lpos),
    ("lmove", lmove),
    ("rpoplpush", rpoplpush),
    ("lmpop", lmpop),
];

const OUT_OF_RANGE: &str = "ERR index out of range";
const MUST_BE_POSITIVE: &str = "ERR value is out of range, must be positive";

fn push_event(left: bool) -> Event {
    Event::list(if left { "lpush" } else { "rpush" })
}

fn pop_event(left: bool) -> Event {
    Event::list(if left { "lpop" } else { "rpop" })
}

/// getPositiveLongFromObjectOrReply: a non-negative integer; one message (`msg`, or
/// Redis's default) for a non-integer and a negative one alike.
fn positive(arg: &[u8], msg: Option<&'static str>) -> Result<i64, &'static str> {
    match args::int(arg) {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(msg.unwrap_or(MUST_BE_POSITIVE)),
    }
}

/// LEFT / RIGHT (getListPositionFromObjectOrReply): true for LEFT.
pub fn position(arg: &[u8]) -> Result<bool, &'static str> {
    if args::is(arg, "left") {
        Ok(true)
    } else if args::is(arg, "right") {
        Ok(false)
    } else {
        Err(SYNTAX_ERR)
    }
}

/// Pop up to `count` (>= 1) elements from the head (`left`) or tail of the list at `key`:
/// Ok(None) if there is no such key, Err(WRONGTYPE) if it is not a list. Records the
/// `lpop`/`rpop` event and `del` when the list is emptied (deleting it), as Redis's
/// LPOP/LMPOP do. No reply is written and no propagation is set.
pub fn pop_elements(
    keys: &mut Locked,
    key: &[u8],
    left: bool,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, &'static str> {
    let Some(mut e) = coll::modify::<List>(keys, key, pop_event(left))? else {
        return Ok(None);
    };
    let l = coll::get_mut::<List>(&mut e);
    let out = if count <= 1 {
        l.pop(left).into_iter().collect::<Vec<_>>()
    } else {
        // Redis replies with the range, then deletes it in one quicklistDelRange.
        let n = count.min(l.len());
        let mut out = Vec::with_capacity(n);
        if n > 0 {
            let start = if left { 0 } else { l.len() - 1 };
            l.visit(start, left, |it| {
                out.push(it.to_vec());
                out.len() < n
            });
            l.del_range(if left { 0 } else { -(n as i64) }, n);
        }
        out
    };
    let empty = l.is_empty();
    if !out.is_empty() {
        e.mark_changed();
    }
    drop(e);
    if out.len() > 1 {
        keys.add_dirty(out.len() as u64 - 1);
    }
    if empty {
        coll::delete_empty(keys, key);
    }
    Ok(Some(out))
}

/// LMOVE's effect: pop from `src`'s head/tail and push onto `dst`'s head/tail (creating
/// it); Ok(None) if `src` does not exist; Err(WRONGTYPE) (before any change) if `src` or an
/// existing `dst` is not a list. Records Redis 7.0's events in its order (lmoveHandlePush
/// announces the push first): lpush/rpush on dst (`new` first when it is created), then
/// lpop/rpop on src, then del if src was emptied. Returns the moved element. No reply, no
/// propagation. A destination it creates takes its list options from `limits`.
pub fn move_element(
    keys: &mut Locked,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
    limits: &engine::coll::Limits,
) -> Result<Option<Vec<u8>>, &'static str> {
    // lookupKeyWrite of both keys first (an expired one goes, as in Redis), then types.
    let src_live = coll::modify::<List>(keys, src, Event::NONE)?
        .is_some_and(|mut e| !coll::get_mut::<List>(&mut e).is_empty());
    if !src_live {
        return Ok(None);
    }
    let same = src == dst;
    if !same {
        coll::modify::<List>(keys, dst, Event::NONE)?;
    }
    // Pop from the source (pushing back onto it when it is also the destination).
    let (value, src_empty) = {
        let Some(mut e) = coll::modify::<List>(keys, src, Event::NONE)? else {
            return Ok(None);
        };
        let l = coll::get_mut::<List>(&mut e);
        let Some(v) = l.pop(from_left) else {
            return Ok(None);
        };
        if same {
            l.push(&v, to_left);
        }
        let empty = l.is_empty();
        e.mark_changed();
        (v, empty)
    };
    if !same {
        let pushed = match coll::modify::<List>(keys, dst, Event::NONE)? {
            Some(mut e) => {
                coll::get_mut::<List>(&mut e).push(&value, to_left);
                e.mark_changed();
                true
            }
            None => false,
        };
        if !pushed {
            let mut l = List::from_limits(limits);
            l.push(&value, to_left);
            coll::insert(keys, dst, l, Event::NONE);
        }
    }
    // One change in the dirty counter, as Redis counts LMOVE.
    keys.notify(dst, push_event(to_left).clean());
    keys.notify(src, pop_event(from_left));
    if src_empty {
        coll::delete_empty(keys, src);
    }
    Ok(Some(value))
}

/// The list at `key` for a read command (a read lookup: hits, misses, access time) that
/// may still recompress nodes, as Redis's list iterators do when compression is on.
fn read_mut<'k>(keys: &'k mut Locked, key: &[u8]) -> Result<Option<&'k mut List>, &'static str> {
    let db = keys.db();
    match keys.read_in(db, key, Read::NORMAL) {
        None => Ok(None),
        Some(e) => List::of_mut(e.value_mut()).map(Some).ok_or(WRONGTYPE),
    }
}

/// A new list with the server's current list options.
fn new_list(ctx: &Ctx) -> List {
    List::from_limits(&ctx.srv.config.hot.coll_limits())
}

// ---------------------------------------------------------------- push

fn push_generic(ctx: &mut Ctx, argv: &[&[u8]], left: bool, xx: bool) {
    let key = argv[1];
    let ev = push_event(left);
    let elems = &argv[2..];
    let existing = match coll::modify::<List>(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            let l = coll::get_mut::<List>(&mut e);
            for v in elems {
                l.push(v, left);
            }
            let n = l.len();
            e.mark_changed();
            Some(n)
        }
        Ok(None) => None,
    };
    let len = match existing {
        Some(n) => n,
        None if xx => return ctx.out.int(0),
        None => {
            let mut l = new_list(ctx);
            for v in elems {
                l.push(v, left);
            }
            let n = l.len();
            coll::insert(ctx.keys, key, l, ev);
            n
        }
    };
    if elems.len() > 1 {
        ctx.keys.add_dirty(elems.len() as u64 - 1);
    }
    ctx.out.int(len as i64);
}

fn lpush(ctx: &mut Ctx, argv: &[&[u8]]) {
    push_generic(ctx, argv, true, false)
}

fn rpush(ctx: &mut Ctx, argv: &[&[u8]]) {
    push_generic(ctx, argv, false, false)
}

fn lpushx(ctx: &mut Ctx, argv: &[&[u8]]) {
    push_generic(ctx, argv, true, true)
}

fn rpushx(ctx: &mut Ctx, argv: &[&[u8]]) {
    push_generic(ctx, argv, false, true)
}

// ---------------------------------------------------------------- pop

fn reply_elements(ctx: &mut Ctx, items: &[Vec<u8>]) {
    ctx.out.array(items.len());
    for v in items {
        ctx.out.bulk(v);
    }
}

fn pop_generic(ctx: &mut Ctx, argv: &[&[u8]], left: bool) {
    if argv.len() > 3 {
        let name = args::text(argv[0]).to_ascii_lowercase();
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let count = if argv.len() == 3 {
        match positive(argv[2], None) {
            Ok(n) => Some(n as usize),
            Err(e) => return ctx.out.error(e),
        }
    } else {
        None
    };
    let key = argv[1];
    if count == Some(0) {
        // Redis's fast exit: the key is looked up (null / WRONGTYPE) but nothing popped.
        match coll::modify::<List>(ctx.keys, key, Event::NONE) {
            Err(e) => ctx.out.error(e),
            Ok(None) => ctx.out.null_array(),
            Ok(Some(_)) => ctx.out.array(0),
        }
        return;
    }
    match pop_elements(ctx.keys, key, left, count.unwrap_or(1)) {
        Err(e) => ctx.out.error(e),
        Ok(None) if count.is_some() => ctx.out.null_array(),
        Ok(None) => ctx.out.null(),
        Ok(Some(items)) if count.is_some() => reply_elements(ctx, &items),
        Ok(Some(items)) => match items.first() {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        },
    }
}

fn lpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    pop_generic(ctx, argv, true)
}

fn rpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    pop_generic(ctx, argv, false)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
fn lmpop(ctx: &mut Ctx, argv: &[&[u8]]) {
    let m = match args::mpop(argv, 1, ["left", "right"]) {
        Ok(m) => m,
        Err(e) => return ctx.out.error(e),
    };
    let (left, count) = (m.first, m.count);
    for key in &m.keys {
        match pop_elements(ctx.keys, key, left, count) {
            Err(e) => return ctx.out.error(e),
            Ok(None) => continue,
            Ok(Some(items)) => {
                ctx.out.array(2);
                ctx.out.bulk(key);
                reply_elements(ctx, &items);
                let n = items.len().to_string();
                let cmd: &[u8] = if left { b"LPOP" } else { b"RPOP" };
                ctx.propagate.replace(&[cmd, key, n.as_bytes()]);
                return;
            }
        }
    }
    ctx.out.null_array();
}

// ---------------------------------------------------------------- move

fn move_generic(ctx: &mut Ctx, argv: &[&[u8]], from_left: bool, to_left: bool) {
    let limits = ctx.srv.config.hot.coll_limits();
    match move_element(ctx.keys, argv[1], argv[2], from_left, to_left, &limits) {
        Err(e) => ctx.out.error(e),
        Ok(None) => ctx.out.null(),
        Ok(Some(v)) => ctx.out.bulk(&v),
    }
}

fn lmove(ctx: &mut Ctx, argv: &[&[u8]]) {
    let from = match position(argv[3]) {
        Ok(p) => p,
        Err(e) => return ctx.out.error(e),
    };
    let to = match position(argv[4]) {
        Ok(p) => p,
        Err(e) => return ctx.out.error(e),
    };
    move_generic(ctx, argv, from, to)
}

fn rpoplpush(ctx: &mut Ctx, argv: &[&[u8]]) {
    move_generic(ctx, argv, false, true)
}

// ---------------------------------------------------------------- read

fn llen(ctx: &mut Ctx, argv: &[&[u8]]) {
    match coll::read::<List>(ctx.keys, argv[1]) {
        Err(e) => ctx.out.error(e),
        Ok(l) => ctx.out.int(l.map_or(0, |l| l.len()) as i64),
    }
}

fn lindex(ctx: &mut Ctx, argv: &[&[u8]]) {
    let l = match read_mut(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.null(),
        Ok(Some(l)) => l,
    };
    let index = match args::int(argv[2]) {
        Ok(i) => i,
        Err(e) => return ctx.out.error(e),
    };
    match l.get_visit(index) {
        Some(v) => ctx.out.bulk(&v),
        None => ctx.out.null(),
    }
}

/// Redis's range clamping (addListRangeReply / LTRIM): Some((start, end)) inclusive and
/// in range, or None for an empty range.
fn clamp_range(start: i64, end: i64, len: i64) -> Option<(i64, i64)> {
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start, end))
}

fn lrange(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (start, end) = match (args::int(argv[2]), args::int(argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
    };
    let l = match read_mut(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.array(0),
        Ok(Some(l)) => l,
    };
    let Some((start, end)) = clamp_range(start, end, l.len() as i64) else {
        return ctx.out.array(0);
    };
    let mut left = (end - start + 1) as usize;
    ctx.out.array(left);
    let out = &mut *ctx.out;
    l.visit(start as usize, true, |it| {
        match it {
            engine::coll::listpack::Item::Int(n) => out.bulk_int(n),
            engine::coll::listpack::Item::Str(s) => out.bulk(s),
        }
        left -= 1;
        left > 0
    });
}

fn lpos(ctx: &mut Ctx, argv: &[&[u8]]) {
    let ele = argv[2];
    let mut rank: i64 = 1;
    let mut count: i64 = -1;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if args::is(argv[j], "rank") && more {
            j += 1;
            rank =
                match args::int(argv[j]) {
                    Ok(0) => return ctx.out.error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list",
                    ),
                    Ok(r) => r,
                    Err(e) => return ctx.out.error(e),
                };
        } else if args::is(argv[j], "count") && more {
            j += 1;
            count = match positive(argv[j], Some("ERR COUNT can't be negative")) {
                Ok(c) => c,
                Err(e) => return ctx.out.error(e),
            };
        } else if args::is(argv[j], "maxlen") && more {
            j += 1;
            maxlen = match positive(argv[j], Some("ERR MAXLEN can't be negative")) {
                Ok(m) => m,
                Err(e) => return ctx.out.error(e),
            };
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 1;
    }
    // A negative rank searches from the tail (Redis negates LONG_MIN to itself).
    let forward = rank >= 0;
    if rank < 0 {
        rank = rank.wrapping_neg();
    }
    let l = match read_mut(ctx.keys, argv[1]) {
        Err(e) => return ctx.out.error(e),
        Ok(None) if count != -1 => return ctx.out.array(0),
        Ok(None) => return ctx.out.null(),
        Ok(Some(l)) => l,
    };
    let llen = l.len() as i64;
    let mut index: i64 = 0;
    let mut matches: i64 = 0;
    let mut found: Vec<i64> = Vec::new();
    let mut single: Option<i64> = None;
    if llen > 0 {
        let start = if forward { 0 } else { llen as usize - 1 };
        l.visit(start, forward, |it| {
            if maxlen != 0 && index >= maxlen {
                return false;
            }
            if it.eq_bytes(ele) {
                matches += 1;
                let at = if forward { index } else { llen - index - 1 };
                if matches >= rank {
                    if count != -1 {
                        found.push(at);
                        if count != 0 && matches - rank + 1 >= count {
                            return false;
                        }
                    } else {
                        single = Some(at);
                        return false;
                    }
                }
            }
            index += 1;
            true
        });
    }
    if count != -1 {
        ctx.out.array(found.len());
        for i in found {
            ctx.out.int(i);
        }
    } else {
        match single {
            Some(i) => ctx.out.int(i),
            None => ctx.out.null(),
        }
    }
}

// ---------------------------------------------------------------- edit

fn lset(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let mut e = match coll::modify::<List>(ctx.keys, key, Event::list("lset")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.error(args::NO_SUCH_KEY),
        Ok(Some(e)) => e,
    };
    let index = match args::int(argv[2]) {
        Ok(i) => i,
        Err(err) => return ctx.out.error(err),
    };
    if coll::get_mut::<List>(&mut e).set(index, argv[3]) {
        e.mark_changed();
        ctx.out.ok();
    } else {
        ctx.out.error(OUT_OF_RANGE);
    }
}

fn linsert(ctx: &mut Ctx, argv: &[&[u8]]) {
    let after = if args::is(argv[2], "after") {
        true
    } else if args::is(argv[2], "before") {
        false
    } else {
        return ctx.out.error(SYNTAX_ERR);
    };
    let mut e = match coll::modify::<List>(ctx.keys, argv[1], Event::list("linsert")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(e)) => e,
    };
    let l = coll::get_mut::<List>(&mut e);
    if l.insert(argv[3], after, argv[4]) {
        let n = l.len();
        e.mark_changed();
        ctx.out.int(n as i64);
    } else {
        ctx.out.int(-1);
    }
}

fn lrem(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let count = match args::int(argv[2]) {
        Ok(c) => c,
        Err(e) => return ctx.out.error(e),
    };
    let (removed, empty) = match coll::modify::<List>(ctx.keys, key, Event::list("lrem")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(mut e)) => {
            let l = coll::get_mut::<List>(&mut e);
            let removed = l.remove(argv[3], count);
            let empty = l.is_empty();
            if removed > 0 {
                e.mark_changed();
            }
            (removed, empty)
        }
    };
    if removed > 1 {
        ctx.keys.add_dirty(removed as u64 - 1);
    }
    if empty {
        coll::delete_empty(ctx.keys, key);
    }
    ctx.out.int(removed as i64);
}

fn ltrim(ctx: &mut Ctx, argv: &[&[u8]]) {
    let key = argv[1];
    let (start, end) = match (args::int(argv[2]), args::int(argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return ctx.out.error(e),
    };
    // Redis counts the removed elements (none: no change counted, ltrim still announced).
    let ev = Event::list("ltrim").clean();
    let (trimmed, empty) = match coll::modify::<List>(ctx.keys, key, ev) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.ok(),
        Ok(Some(mut e)) => {
            let l = coll::get_mut::<List>(&mut e);
            let llen = l.len() as i64;
            let (ltrim, rtrim) = match clamp_range(start, end, llen) {
                None => (llen, 0),
                Some((s, e)) => (s, llen - e - 1),
            };
            l.del_range(0, ltrim as usize);
            l.del_range(-rtrim, rtrim as usize);
            let empty = l.is_empty();
            // Redis announces ltrim even when nothing was removed.
            e.mark_changed();
            (ltrim + rtrim, empty)
        }
    };
    ctx.keys.add_dirty(trimmed as u64);
    if empty {
        coll::delete_empty(ctx.keys, key);
    }
    ctx.out.ok();
}
