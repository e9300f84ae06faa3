//! XPENDING (summary and extended form), XCLAIM and XAUTOCLAIM: reading and moving a
//! group's pending entries. The claims propagate as XCLAIM ... FORCE JUSTID, as Redis's.

use super::super::args::{self, is, SYNTAX_ERR};
use super::super::{coll, Ctx};
use super::{claim_command, group_ev, interval_id, no_group, reply_entry, reply_id, strict_id};
use engine::coll::stream::{Group, Nack, StreamId};
use engine::coll::Stream;
use resp::ReplyBuf;

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(ctx: &mut Ctx, argv: &[&[u8]]) {
    let argc = argv.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return ctx.out.error(SYNTAX_ERR);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if is(argv[3], "idle") {
            min_idle = match args::int(argv[4]) {
                Ok(n) => n,
                Err(e) => return ctx.out.error(e),
            };
            if argc < 8 {
                return ctx.out.error(SYNTAX_ERR);
            }
            at += 2;
        }
        let count = match args::int(argv[at + 2]) {
            Ok(n) => n.max(0) as usize,
            Err(e) => return ctx.out.error(e),
        };
        let start = match interval_id(argv[at], true) {
            Ok(id) => id,
            Err(e) => return ctx.out.error(e),
        };
        let end = match interval_id(argv[at + 1], false) {
            Ok(id) => id,
            Err(e) => return ctx.out.error(e),
        };
        range = Some((min_idle, start, end, count, argv.get(at + 3).copied()));
    }
    let (key, group) = (argv[1], argv[2]);
    let now = ctx.keys.now();
    let g = match coll::read::<Stream>(ctx.keys, key) {
        Err(e) => return ctx.out.error(e),
        Ok(s) => match s.and_then(|s| s.group(group)) {
            Some(g) => g,
            None => return ctx.out.error_bytes(&no_group(key, group, "")),
        },
    };
    match range {
        None => pending_summary(ctx.out, g),
        Some((min_idle, start, end, count, consumer)) => {
            let ids: Vec<StreamId> = match consumer {
                Some(c) => match g.consumers.get(c) {
                    Some(c) => c.pel.range(start..).copied().collect(),
                    None => return ctx.out.array(0),
                },
                None => g.pel.range(start..).map(|(id, _)| *id).collect(),
            };
            let mut rows = Vec::new();
            for id in ids {
                if rows.len() >= count || id > end {
                    break;
                }
                let Some(n) = g.pel.get(&id) else { continue };
                if min_idle != 0 && now.wrapping_sub(n.delivery_time) < min_idle {
                    continue;
                }
                rows.push((id, n));
            }
            ctx.out.array(rows.len());
            for (id, n) in rows {
                ctx.out.array(4);
                reply_id(ctx.out, id);
                ctx.out.bulk(&n.consumer);
                ctx.out.int(now.wrapping_sub(n.delivery_time).max(0));
                ctx.out.int(n.delivery_count as i64);
            }
        }
    }
}

/// XPENDING key group: how many, the first and last IDs, and the consumers that have some.
fn pending_summary(out: &mut ReplyBuf, g: &Group) {
    out.array(4);
    out.int(g.pel.len() as i64);
    match (g.pel.keys().next(), g.pel.keys().next_back()) {
        (Some(first), Some(last)) => {
            reply_id(out, *first);
            reply_id(out, *last);
            let owners: Vec<_> = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .collect();
            out.array(owners.len());
            for (name, c) in owners {
                out.array(2);
                out.bulk(name);
                out.bulk_int(c.pel.len() as i64);
            }
        }
        _ => {
            out.null();
            out.null();
            out.null_array();
        }
    }
}

/// XCLAIM's options.
struct ClaimOpts {
    force: bool,
    justid: bool,
    /// Delivery time to set (IDLE / TIME), else now.
    time: Option<i64>,
    retry: Option<u64>,
    last_id: StreamId,
}

fn claim_option_int(arg: &[u8], what: &str) -> Result<i64, Vec<u8>> {
    args::int(arg).map_err(|_| format!("ERR Invalid {what} option argument for XCLAIM").into())
}

fn parse_claim_opts(argv: &[&[u8]], now: i64) -> Result<ClaimOpts, Vec<u8>> {
    let mut o = ClaimOpts {
        force: false,
        justid: false,
        time: None,
        retry: None,
        last_id: StreamId::MIN,
    };
    let mut j = 0;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let opt = argv[j];
        if is(opt, "force") {
            o.force = true;
        } else if is(opt, "justid") {
            o.justid = true;
        } else if is(opt, "idle") && more {
            j += 1;
            o.time = Some(now.wrapping_sub(claim_option_int(argv[j], "IDLE")?));
        } else if is(opt, "time") && more {
            j += 1;
            o.time = Some(claim_option_int(argv[j], "TIME")?);
        } else if is(opt, "retrycount") && more {
            j += 1;
            let n = claim_option_int(argv[j], "RETRYCOUNT")?;
            o.retry = (n >= 0).then_some(n as u64);
        } else if is(opt, "lastid") && more {
            j += 1;
            o.last_id = strict_id(argv[j])?;
        } else {
            return Err(args::error_text(&[
                b"ERR Unrecognized XCLAIM option '",
                args::c_str(opt),
                b"'",
            ]));
        }
        j += 1;
    }
    Ok(o)
}

/// What claiming one pending entry did.
enum Claimed {
    /// Not pending (or too recently delivered): nothing.
    Skipped,
    /// Its entry is gone from the stream: the pending entry was dropped (its last state).
    Dropped(Nack),
    /// Now the consumer's, as this.
    Taken(Nack),
}

/// How a claim sets the pending entry.
#[derive(Clone, Copy)]
struct Rule {
    /// Make a pending entry for an ID the stream has but the group does not (FORCE).
    force: bool,
    /// Idle time to wait for (0: none).
    min_idle: i64,
    /// The delivery time to set.
    time: i64,
    /// The delivery count to set (RETRYCOUNT), else one more unless JUSTID.
    count: Option<u64>,
    justid: bool,
}

/// Claim `id` for `consumer` (created on first use; `*created` says so): the shared step of
/// XCLAIM and XAUTOCLAIM.
fn claim_one(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    id: StreamId,
    now: i64,
    rule: Rule,
    created: &mut bool,
) -> Claimed {
    let Rule {
        force,
        min_idle,
        time,
        count,
        justid,
    } = rule;
    let exists = s.get(id).is_some();
    let Some(g) = s.group_mut(group) else {
        return Claimed::Skipped;
    };
    if !exists {
        return match g.drop_pending(id) {
            Some(n) => Claimed::Dropped(n),
            None => Claimed::Skipped,
        };
    }
    let forced = force && !g.pel.contains_key(&id);
    match g.pel.get(&id) {
        None if !forced => return Claimed::Skipped,
        Some(n) if min_idle != 0 && now.wrapping_sub(n.delivery_time) < min_idle => {
            return Claimed::Skipped
        }
        _ => {}
    }
    let (name, new) = g.lookup_or_create(consumer, now);
    *created |= new;
    if forced {
        g.pel.insert(
            id,
            Nack {
                delivery_time: now,
                delivery_count: 1,
                consumer: name.clone(),
            },
        );
    }
    g.assign(id, &name);
    let Some(n) = g.pel.get_mut(&id) else {
        return Claimed::Skipped;
    };
    n.delivery_time = time;
    match count {
        Some(c) => n.delivery_count = c,
        None if !justid => n.delivery_count = n.delivery_count.wrapping_add(1),
        None => {}
    }
    Claimed::Taken(n.clone())
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
pub fn xclaim(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (key, group, consumer) = (argv[1], argv[2], argv[3]);
    match coll::read::<Stream>(ctx.keys, key) {
        Err(e) => return ctx.out.error(e),
        Ok(s) if s.and_then(|s| s.group(group)).is_none() => {
            return ctx.out.error_bytes(&no_group(key, group, ""))
        }
        Ok(_) => {}
    }
    let min_idle = match args::int(argv[4]) {
        Ok(n) => n.max(0),
        Err(_) => {
            return ctx
                .out
                .error("ERR Invalid min-idle-time argument for XCLAIM")
        }
    };
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match StreamId::parse(argv[j], 0, true) {
            Some(id) => ids.push((id, argv[j])),
            None => break,
        }
        j += 1;
    }
    let now = ctx.keys.now();
    let o = match parse_claim_opts(&argv[j..], now) {
        Ok(o) => o,
        Err(e) => return ctx.out.error_bytes(&e),
    };
    let time = o.time.filter(|&t| (0..=now).contains(&t)).unwrap_or(now);
    let rule = Rule {
        force: o.force,
        min_idle,
        time,
        count: o.retry,
        justid: o.justid,
    };
    let mut e = match coll::modify::<Stream>(ctx.keys, key, engine::Event::NONE) {
        Ok(Some(e)) => e,
        _ => return ctx.out.error_bytes(&no_group(key, group, "")),
    };
    let s = coll::get_mut::<Stream>(&mut e);
    let mut propagate_last_id = false;
    if let Some(g) = s.group_mut(group) {
        if o.last_id > g.last_id {
            g.last_id = o.last_id;
            propagate_last_id = true;
        }
    }
    let mut body = ReplyBuf::new(ctx.out.proto);
    let mut claimed = 0usize;
    let mut dirty = 0u64;
    let mut created = false;
    let mut props: Vec<(Vec<u8>, Nack)> = Vec::new();
    for (id, arg) in ids {
        let res = claim_one(s, group, consumer, id, now, rule, &mut created);
        match res {
            Claimed::Skipped => {}
            Claimed::Dropped(n) => {
                props.push((arg.to_vec(), n));
                propagate_last_id = false;
                dirty += 1;
            }
            Claimed::Taken(n) => {
                if o.justid {
                    reply_id(&mut body, id);
                } else if let Some(entry) = s.get(id) {
                    reply_entry(&mut body, &entry);
                }
                claimed += 1;
                props.push((arg.to_vec(), n));
                propagate_last_id = false;
                dirty += 1;
            }
        }
    }
    let group_state = s.group(group).map(|g| (g.last_id, g.entries_read));
    drop(e);
    if created {
        ctx.keys.notify(key, group_ev("xgroup-createconsumer"));
    }
    if let Some((last_id, _)) = group_state {
        for (arg, n) in &props {
            ctx.propagate.rewrite.push(claim_command(
                key,
                group,
                arg,
                (&n.consumer, n.delivery_time, n.delivery_count),
                last_id,
            ));
        }
    }
    if propagate_last_id {
        if let Some((last_id, entries_read)) = group_state {
            let (last, n) = (last_id.to_string(), entries_read.to_string());
            ctx.propagate.also(&[
                b"XGROUP",
                b"SETID",
                key,
                group,
                last.as_bytes(),
                b"ENTRIESREAD",
                n.as_bytes(),
            ]);
            dirty += 1;
        }
    }
    ctx.keys.add_dirty(dirty);
    ctx.propagate.only_rewrites();
    ctx.out.array(claimed);
    ctx.out.raw(&body.out);
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(ctx: &mut Ctx, argv: &[&[u8]]) {
    let (key, group, consumer) = (argv[1], argv[2], argv[3]);
    // lookupKeyRead comes first: a hit or miss (and `keymiss`) even when an argument
    // is refused.
    ctx.keys.get(key);
    let min_idle = match args::int(argv[4]) {
        Ok(n) => n.max(0),
        Err(_) => {
            return ctx
                .out
                .error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
        }
    };
    let start = match interval_id(argv[5], true) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        if is(argv[j], "count") && j + 1 < argv.len() {
            const MAX: i64 = i64::MAX / 16;
            count = match args::int(argv[j + 1]) {
                Ok(n) if (1..=MAX).contains(&n) => n,
                _ => return ctx.out.error("ERR COUNT must be > 0"),
            };
            j += 1;
        } else if is(argv[j], "justid") {
            justid = true;
        } else {
            return ctx.out.error(SYNTAX_ERR);
        }
        j += 1;
    }
    let now = ctx.keys.now();
    let mut e = match coll::modify::<Stream>(ctx.keys, key, engine::Event::NONE) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(e)) => e,
        Ok(None) => return ctx.out.error_bytes(&no_group(key, group, "")),
    };
    let s = coll::get_mut::<Stream>(&mut e);
    if s.group(group).is_none() {
        return ctx.out.error_bytes(&no_group(key, group, ""));
    }
    let mut attempts = count.saturating_mul(10);
    let mut body = ReplyBuf::new(ctx.out.proto);
    let mut claimed = 0usize;
    let mut deleted = Vec::new();
    let mut created = false;
    let mut props: Vec<(StreamId, Nack)> = Vec::new();
    let mut cursor = start;
    let mut next = None;
    loop {
        let Some(id) = s
            .group(group)
            .and_then(|g| g.pel.range(cursor..).next().map(|(id, _)| *id))
        else {
            next = None;
            break;
        };
        if attempts == 0 || count == 0 {
            next = Some(id);
            break;
        }
        attempts -= 1;
        cursor = id.incr().unwrap_or(StreamId::MAX);
        let rule = Rule {
            force: false,
            min_idle,
            time: now,
            count: None,
            justid,
        };
        match claim_one(s, group, consumer, id, now, rule, &mut created) {
            Claimed::Skipped => {}
            Claimed::Dropped(n) => {
                props.push((id, n));
                deleted.push(id);
                count -= 1;
            }
            Claimed::Taken(n) => {
                if justid {
                    reply_id(&mut body, id);
                } else if let Some(entry) = s.get(id) {
                    reply_entry(&mut body, &entry);
                }
                props.push((id, n));
                claimed += 1;
                count -= 1;
            }
        }
        if id == StreamId::MAX {
            break;
        }
    }
    let last_id = s.group(group).map_or(StreamId::MIN, |g| g.last_id);
    drop(e);
    if created {
        ctx.keys.notify(key, group_ev("xgroup-createconsumer"));
    }
    for (id, n) in &props {
        let id = id.to_string();
        ctx.propagate.rewrite.push(claim_command(
            key,
            group,
            id.as_bytes(),
            (&n.consumer, n.delivery_time, n.delivery_count),
            last_id,
        ));
    }
    ctx.keys.add_dirty(props.len() as u64);
    ctx.propagate.only_rewrites();
    ctx.out.array(3);
    reply_id(ctx.out, next.unwrap_or(StreamId::MIN));
    ctx.out.array(claimed);
    ctx.out.raw(&body.out);
    ctx.out.array(deleted.len());
    for id in deleted {
        reply_id(ctx.out, id);
    }
}
