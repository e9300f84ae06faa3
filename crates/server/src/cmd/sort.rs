//! SORT and SORT_RO (Redis 7.0's sort.c on the command seam): the elements of a list, set
//! or sorted set, ordered by themselves or by weights looked up through a BY pattern
//! (numeric, or ALPHA), cut by LIMIT, each replaced by what GET patterns find, replied or
//! STOREd as a list.
//!
//! BY and GET patterns name keys that only the data tells; such a call holds its whole
//! database (see [`keys_needed`], used by the dispatcher's lock plan), any other call
//! only its key and STORE destination.

pub(crate) mod order;
mod pattern;
mod score;

use super::args::{self, is, SYNTAX_ERR, WRONGTYPE};
use super::{coll, Ctx, Handler};
use engine::coll::listpack::Item as ListItem;
use engine::coll::set::{fmt_int, Elem as SetElem};
use engine::coll::List;
use engine::locked::Read;
use engine::{Event, Locked, ValueMut};
use order::{bytes, pqsort, Compare, Item};
use pattern::{Found, Pattern};
use smallvec::SmallVec;

pub const COMMANDS: &[(&str, Handler)] = &[("sort", sort), ("sort_ro", sort_ro)];

const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// SORT's options as sortCommandGeneric reads them (later ones override earlier ones).
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// LIMIT offset count (count -1: to the end).
    limit: (i64, i64),
    store: Option<&'a [u8]>,
    /// The last BY pattern.
    by: Option<Pattern<'a>>,
    /// A BY pattern without `*` was given: the elements keep their order.
    dontsort: bool,
    gets: SmallVec<[Pattern<'a>; 4]>,
}

impl Options<'_> {
    /// Do BY or GET patterns look up keys?
    fn reads_other_keys(&self) -> bool {
        (!self.dontsort && self.by.is_some_and(|p| p.reads_keys()))
            || self.gets.iter().any(Pattern::reads_keys)
    }
}

/// `full_access`: the client's user may read every key (BY with a pattern and GET need
/// it, as Redis's ACL check).
fn parse<'a>(
    argv: &[&'a [u8]],
    readonly: bool,
    full_access: bool,
) -> Result<Options<'a>, &'static str> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dontsort: false,
        gets: SmallVec::new(),
    };
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = argv[j];
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            o.limit = (args::int(argv[j + 1])?, args::int(argv[j + 2])?);
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            o.store = Some(argv[j + 1]);
            j += 1;
        } else if is(a, "by") && left >= 1 {
            let p = argv[j + 1];
            o.by = Some(Pattern::parse(p));
            if !score::c_str(p).contains(&b'*') {
                o.dontsort = true;
            } else if !full_access {
                return Err("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if !full_access {
                return Err("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            o.gets.push(Pattern::parse(argv[j + 1]));
            j += 1;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(o)
}

/// The keys this SORT (`readonly`: SORT_RO) call touches, for the dispatcher's lock plan:
/// None when BY or GET patterns look keys up (the plan is then the client's whole
/// database, so the call stays atomic); otherwise the sorted key and the STORE
/// destination, as this parser finds them (Redis's sortGetKeys, which COMMAND GETKEYS
/// follows, takes the word after *any* STORE, e.g. `BY` in `STORE BY STORE dst`); none
/// when the options do not parse (the call fails before touching a key).
pub fn keys_needed<'a>(argv: &[&'a [u8]], readonly: bool) -> Option<SmallVec<[&'a [u8]; 2]>> {
    let mut keys = SmallVec::new();
    if let Ok(o) = parse(argv, readonly, true) {
        if o.reads_other_keys() {
            return None;
        }
        keys.push(argv[1]);
        keys.extend(o.store);
    }
    Some(keys)
}

fn sort(ctx: &mut Ctx, argv: &[&[u8]]) {
    run(ctx, argv, false)
}

fn sort_ro(ctx: &mut Ctx, argv: &[&[u8]]) {
    run(ctx, argv, true)
}

/// The elements being sorted: their bytes and looked-up ALPHA values in two buffers, and
/// one [`Item`] each pointing into them.
#[derive(Default)]
struct Vector {
    elems: Vec<u8>,
    vals: Vec<u8>,
    items: Vec<Item>,
}

impl Vector {
    fn push(&mut self, b: &[u8]) {
        let at = self.elems.len();
        self.elems.extend_from_slice(b);
        self.items.push(Item {
            elem: (at, b.len()),
            score: 0.0,
            by: None,
            int: false,
        });
    }

    /// An element stored as an integer: its own weight is known without parsing (Redis
    /// casts an integer-encoded element).
    fn push_int(&mut self, n: i64) {
        self.push(fmt_int(n, &mut [0; 20]));
        if let Some(it) = self.items.last_mut() {
            it.score = n as f64;
            it.int = true;
        }
    }

    fn push_list_item(&mut self, it: ListItem<'_>) {
        match it {
            ListItem::Int(n) => self.push_int(n),
            ListItem::Str(s) => self.push(s),
        }
    }

    fn elem(&self, i: usize) -> &[u8] {
        bytes(&self.elems, self.items[i].elem)
    }
}

fn run(ctx: &mut Ctx, argv: &[&[u8]], readonly: bool) {
    let full_access = match &ctx.client.user {
        Some(u) if !u.unrestricted() => ctx
            .srv
            .commands
            .lookup(argv)
            .is_none_or(|cmd| u.may_read_every_key(cmd, argv)),
        _ => true,
    };
    let mut o = match parse(argv, readonly, full_access) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let mut v = Vector::default();
    let (start, end) = match load(ctx.keys, argv[1], &mut o, &mut v) {
        Ok(range) => range,
        Err(e) => return ctx.out.error(e),
    };
    let mut name = Vec::new();
    if !o.dontsort {
        let converted = weigh(ctx.keys, &o, &mut v, &mut name);
        order(&o, &mut v, start, end);
        if !converted {
            return ctx.out.error(NOT_DOUBLE);
        }
    }
    let rows = if end >= start {
        (end - start + 1) as usize
    } else {
        0
    };
    let outputlen = rows * o.gets.len().max(1);
    let range = if rows > 0 {
        start as usize..end as usize + 1
    } else {
        0..0
    };
    match o.store {
        None => {
            let (keys, out) = (&mut ctx.keys, &mut *ctx.out);
            out.array(outputlen);
            for i in range {
                let elem = v.elem(i);
                if o.gets.is_empty() {
                    out.bulk(elem);
                }
                for g in &o.gets {
                    g.apply(keys, elem, &mut name, |found| match found {
                        None => out.null(),
                        Some(Found::Bytes(b)) => out.bulk(b),
                        Some(Found::Int(n)) => out.bulk_int(n),
                    });
                }
            }
        }
        Some(dst) => {
            // createQuicklistObject: Redis's default options, not the configured ones.
            let mut list = List::new();
            for i in range {
                let elem = v.elem(i);
                if o.gets.is_empty() {
                    list.push(elem, false);
                }
                for g in &o.gets {
                    g.apply(ctx.keys, elem, &mut name, |found| match found {
                        None => list.push(b"", false),
                        Some(Found::Bytes(b)) => list.push(b, false),
                        Some(Found::Int(n)) => list.push(fmt_int(n, &mut [0; 20]), false),
                    });
                }
            }
            if outputlen > 0 {
                coll::insert(ctx.keys, dst, list, Event::list("sortstore"));
                ctx.keys.add_dirty(outputlen as u64 - 1);
            } else {
                ctx.keys.remove(dst, Event::DEL);
            }
            ctx.out.int(outputlen as i64);
        }
    }
}

/// Look the key up (a read: hit or miss, `keymiss`), settle what is sorted and which part
/// is returned as Redis does, and copy the elements in. Returns the returned part as
/// indexes (start, end) into `v.items`; empty when end < start.
fn load(
    keys: &mut Locked,
    key: &[u8],
    o: &mut Options,
    v: &mut Vector,
) -> Result<(i64, i64), &'static str> {
    let db = keys.db();
    let mut value = keys.read_in(db, key, Read::NORMAL).map(|e| e.value_mut());
    let len = match &value {
        None => 0,
        Some(ValueMut::List(l)) => l.len(),
        Some(ValueMut::Set(s)) => s.len(),
        Some(ValueMut::ZSet(z)) => z.len(),
        Some(_) => return Err(WRONGTYPE),
    } as i64;
    // A set's own order is its hash table's: a stored result, or one a script sees, is
    // sorted (ALPHA) so that it is the same wherever the command is replayed.
    let replayed = o.store.is_some() || crate::script::state::in_script();
    if o.dontsort && replayed && matches!(value, Some(ValueMut::Set(_))) {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    // LIMIT, clamped to the collection.
    let mut start = o.limit.0.clamp(0, len);
    let count = o.limit.1.clamp(-1, len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    // Lists and sorted sets in their own order: only the returned range is read.
    let whole = start == 0 && end == len - 1;
    let wanted = if o.dontsort && !whole {
        (end - start + 1) as usize
    } else {
        len as usize
    };
    match value.as_mut() {
        None => {}
        Some(ValueMut::List(l)) => {
            if !o.dontsort {
                read_list(l, 0, true, len as usize, v);
            } else if end >= start {
                let first = if o.desc { len - start - 1 } else { start };
                read_list(l, first as usize, !o.desc, wanted, v);
                end -= start;
                start = 0;
            }
        }
        Some(ValueMut::Set(s)) => {
            for m in s.iter() {
                match m {
                    SetElem::Int(n) => v.push_int(n),
                    SetElem::Bytes(b) => v.push(b),
                }
            }
        }
        Some(ValueMut::ZSet(z)) => {
            // Redis converts a listpack sorted set for SORT, for good.
            z.convert_to_skiplist();
            if o.dontsort {
                if wanted > 0 {
                    let rank = if o.desc { len - start - 1 } else { start };
                    z.walk(rank as usize, o.desc, |m, _| {
                        v.push(m);
                        v.items.len() < wanted
                    });
                }
                end -= start;
                start = 0;
            } else {
                z.walk(0, false, |m, _| {
                    v.push(m);
                    true
                });
            }
        }
        Some(_) => unreachable!("type checked above"),
    }
    Ok((start, end))
}

/// Copy `n` elements of a list from index `first` towards the tail (`forward`) or the
/// head, through Redis's list iterator.
fn read_list(l: &mut List, first: usize, forward: bool, n: usize, v: &mut Vector) {
    if n > 0 {
        l.visit(first, forward, |it| {
            v.push_list_item(it);
            v.items.len() < n
        });
    }
}

/// Load each element's weight (numeric) or ALPHA BY value; false if a numeric weight
/// does not convert (every lookup is still made, as Redis makes them).
fn weigh(keys: &mut Locked, o: &Options, v: &mut Vector, name: &mut Vec<u8>) -> bool {
    let mut converted = true;
    for i in 0..v.items.len() {
        let elem = bytes(&v.elems, v.items[i].elem);
        let (score, by) = match o.by {
            Some(p) => {
                let vals = &mut v.vals;
                p.apply(keys, elem, name, |found| match (found, o.alpha) {
                    (None, _) => (Some(0.0), None),
                    (Some(f), true) => {
                        let at = vals.len();
                        match f {
                            Found::Bytes(b) => vals.extend_from_slice(b),
                            Found::Int(n) => vals.extend_from_slice(fmt_int(n, &mut [0; 20])),
                        }
                        (Some(0.0), Some((at, vals.len() - at)))
                    }
                    (Some(Found::Int(n)), false) => (Some(n as f64), None),
                    (Some(Found::Bytes(b)), false) => (score::weight(b), None),
                })
            }
            None if o.alpha => (Some(0.0), None),
            None if v.items[i].int => (Some(v.items[i].score), None),
            None => (score::weight(elem), None),
        };
        converted &= score.is_some();
        let it = &mut v.items[i];
        it.score = score.unwrap_or(0.0);
        it.by = by;
    }
    converted
}

/// Sort as Redis does: its partial quicksort when BY and a LIMIT narrower than the whole
/// are given, glibc's stable merge sort otherwise.
fn order(o: &Options, v: &mut Vector, start: i64, end: i64) {
    let mode = if o.alpha {
        Compare::Alpha {
            by: o.by.is_some(),
            store: o.store.is_some(),
        }
    } else {
        Compare::Numeric
    };
    let (elems, vals) = (&v.elems, &v.vals);
    let mut cmp = |a: &Item, b: &Item| {
        let c = mode.cmp(elems, vals, a, b);
        if o.desc {
            c.reverse()
        } else {
            c
        }
    };
    let len = v.items.len() as i64;
    if o.by.is_some() && (start != 0 || end != len - 1) {
        pqsort(&mut v.items, start, end, &mut cmp);
    } else {
        v.items.sort_by(cmp);
    }
}
