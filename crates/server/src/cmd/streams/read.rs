//! XREAD and XREADGROUP (xreadCommand), and serving them when they blocked.

use super::super::args::{self, is, SYNTAX_ERR};
use super::super::{coll, Ctx};
use super::{
    claim_command, group_ev, no_group, read_for_update, reply_entries, reply_entry, reply_id,
    strict_id,
};
use crate::blocking::Op;
use crate::propagate::{encode, Op as PropOp};
use engine::coll::stream::StreamId;
use engine::coll::Stream;
use engine::{Event, Locked};
use resp::ReplyBuf;

/// What XREAD/XREADGROUP parsed before looking at the keys.
pub struct ReadArgs<'a> {
    /// Absolute deadline in ms (0: forever) when BLOCK was given.
    pub block: Option<i64>,
    /// 0: no limit.
    pub count: usize,
    pub keys: Vec<&'a [u8]>,
    pub ids: Vec<&'a [u8]>,
    pub group: Option<(&'a [u8], &'a [u8])>,
    pub noack: bool,
}

/// xreadCommand's option parsing.
pub fn parse<'a>(argv: &[&'a [u8]], group_cmd: bool) -> Result<ReadArgs<'a>, String> {
    let mut a = ReadArgs {
        block: None,
        count: 0,
        keys: Vec::new(),
        ids: Vec::new(),
        group: None,
        noack: false,
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = argv[i];
        if is(o, "block") && more > 0 {
            if crate::script::state::in_script() {
                // (The command's name as the script spelled it.)
                return Err(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    args::text(argv[0])
                ));
            }
            i += 1;
            let ms = args::timeout_ms(argv[i])?;
            a.block = Some(if ms > 0 {
                engine::wall_ms().saturating_add(ms)
            } else {
                0
            });
        } else if is(o, "count") && more > 0 {
            i += 1;
            a.count = args::int(argv[i])?.max(0) as usize;
        } else if is(o, "streams") && more > 0 {
            let n = argv.len() - i - 1;
            if !n.is_multiple_of(2) {
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
            }
            streams_at = Some(i + 1);
            break;
        } else if is(o, "group") && more >= 2 {
            if !group_cmd {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            a.group = Some((argv[i + 1], argv[i + 2]));
            i += 2;
        } else if is(o, "noack") {
            if !group_cmd {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            a.noack = true;
        } else {
            return Err(SYNTAX_ERR.into());
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(SYNTAX_ERR.into());
    };
    // The keys are where the command's key spec says: after the first STREAMS word from
    // argument 4 on for XREADGROUP (past GROUP group consumer), from 1 on for XREAD. A
    // STREAMS word the spec meets first (a group or consumer so named after COUNT or
    // BLOCK) would move them out of the locked set.
    let spec_from = if group_cmd { 4 } else { 1 };
    let spec_at = argv
        .iter()
        .skip(spec_from)
        .position(|w| is(w, "streams"))
        .map(|p| p + spec_from + 1);
    if spec_at != Some(at) {
        return Err(SYNTAX_ERR.into());
    }
    if group_cmd && a.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    let n = (argv.len() - at) / 2;
    a.keys = argv[at..at + n].to_vec();
    a.ids = argv[at + n..].to_vec();
    Ok(a)
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key ... id ...
pub fn xread(ctx: &mut Ctx, argv: &[&[u8]]) {
    read(ctx, argv, false);
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS
/// key ... id ...
pub fn xreadgroup(ctx: &mut Ctx, argv: &[&[u8]]) {
    read(ctx, argv, true);
}

/// xreadCommand.
fn read(ctx: &mut Ctx, argv: &[&[u8]], group_cmd: bool) {
    let a = match parse(argv, group_cmd) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(&e),
    };
    let after = match resolve(ctx, &a) {
        Ok(after) => after,
        Err(e) => return ctx.out.error_bytes(&e),
    };
    let served = match a.group {
        Some((group, consumer)) => {
            let r = GroupRead {
                group,
                consumer,
                count: a.count,
                noack: a.noack,
            };
            serve_group(ctx, &a.keys, &after, &r)
        }
        None => {
            let after: Vec<StreamId> = after.iter().map(|a| a.unwrap_or(StreamId::MAX)).collect();
            serve(ctx, &a.keys, &after, a.count)
        }
    };
    if served {
        return;
    }
    match a.block {
        Some(deadline) => {
            let wait = Wait {
                after,
                // Redis's XREAD_BLOCKED_DEFAULT_COUNT when no COUNT was given.
                count: if a.count == 0 { 1000 } else { a.count },
                group: a.group.map(|(g, c)| (g.to_vec(), c.to_vec(), a.noack)),
            };
            super::super::blocking::block(ctx, &a.keys, Op::Stream(Box::new(wait)), deadline);
        }
        None => ctx.out.null_array(),
    }
}

/// The IDs, resolved against the streams as they are now: `$` is the last ID, `>` (and
/// the maximal ID, as in Redis) is None: the group's last delivered ID.
fn resolve(ctx: &mut Ctx, a: &ReadArgs) -> Result<Vec<Option<StreamId>>, Vec<u8>> {
    let mut after = Vec::with_capacity(a.keys.len());
    for (key, id) in a.keys.iter().zip(&a.ids) {
        let s = coll::read::<Stream>(ctx.keys, key)?;
        if let Some((group, _)) = a.group {
            if s.and_then(|s| s.group(group)).is_none() {
                return Err(no_group(key, group, " in XREADGROUP with GROUP option"));
            }
        }
        if *id == b"$" {
            if a.group.is_some() {
                return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into());
            }
            after.push(Some(s.map_or(StreamId::MIN, |s| s.last_id())));
        } else if *id == b">" {
            if a.group.is_none() {
                return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into());
            }
            after.push(None);
        } else {
            let id = strict_id(id)?;
            after.push((id != StreamId::MAX).then_some(id));
        }
    }
    Ok(after)
}

/// An XREADGROUP's group, consumer and options.
pub struct GroupRead<'a> {
    pub group: &'a [u8],
    pub consumer: &'a [u8],
    pub count: usize,
    pub noack: bool,
}

/// XREADGROUP's synchronous serve: each stream with a history ID gets the consumer's
/// pending entries from there; each with `>` gets the entries after the group's last ID,
/// if there are any. Consumers are created on first use. Propagates XCLAIM for each
/// new pending entry (XGROUP SETID with NOACK) as Redis does. False (nothing written,
/// nothing changed) when no stream had anything to serve.
pub fn serve_group(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    after: &[Option<StreamId>],
    r: &GroupRead,
) -> bool {
    let resp3 = ctx.out.resp3();
    let now = ctx.keys.now();
    let mut body = ReplyBuf::new(ctx.out.proto);
    let mut props = Vec::new();
    let mut found = 0u64;
    for (key, gt) in keys.iter().zip(after) {
        let Ok(Some(mut e)) = read_for_update(ctx.keys, key) else {
            continue;
        };
        let s = coll::get_mut::<Stream>(&mut e);
        let Some(g) = s.group(r.group) else {
            continue;
        };
        if gt.is_none() && s.edge_id(false).is_none_or(|top| top <= g.last_id) {
            continue;
        }
        found += 1;
        if !resp3 {
            body.array(2);
        }
        body.bulk(key);
        let created = match gt {
            Some(gt) => {
                let created = match s.group_mut(r.group) {
                    Some(g) => g.lookup_or_create(r.consumer, now).1,
                    None => false,
                };
                if created && r.noack {
                    props.push(create_consumer_command(key, r));
                }
                let start = gt.incr().unwrap_or(StreamId::MIN);
                let hist = s.read_history(r.group, r.consumer, start, r.count, now);
                body.array(hist.len());
                for (id, entry) in hist {
                    match entry {
                        Some(entry) => reply_entry(&mut body, &entry),
                        None => {
                            body.array(2);
                            reply_id(&mut body, id);
                            body.null_array();
                        }
                    }
                }
                created
            }
            None => read_new(s, key, r, now, &mut body, &mut props),
        };
        drop(e);
        if created {
            ctx.keys.notify(key, group_ev("xgroup-createconsumer"));
        }
    }
    if found == 0 {
        return false;
    }
    ctx.keys.add_dirty(found);
    ctx.propagate.rewrite.extend(props);
    ctx.propagate.only_rewrites();
    if resp3 {
        ctx.out.map(found as usize);
    } else {
        ctx.out.array(found as usize);
    }
    ctx.out.raw(&body.out);
    true
}

fn create_consumer_command(key: &[u8], r: &GroupRead) -> Vec<Vec<u8>> {
    [b"XGROUP", &b"CREATECONSUMER"[..], key, r.group, r.consumer]
        .iter()
        .map(|a| a.to_vec())
        .collect()
}

/// XREADGROUP `>` on one stream: the consumer looked up (or created), the entries after
/// the group's last ID delivered to it and replied into `out`, and what Redis propagates
/// for that pushed to `props` (XGROUP CREATECONSUMER with NOACK, an XCLAIM per pending
/// entry, or XGROUP SETID with NOACK). Returns whether the consumer was created.
fn read_new(
    s: &mut Stream,
    key: &[u8],
    r: &GroupRead,
    now: i64,
    out: &mut ReplyBuf,
    props: &mut Vec<Vec<Vec<u8>>>,
) -> bool {
    let Some(g) = s.group_mut(r.group) else {
        return false;
    };
    let (name, created) = g.lookup_or_create(r.consumer, now);
    if created && r.noack {
        props.push(create_consumer_command(key, r));
    }
    let Some(read) = s.read_group(r.group, &name, r.count, r.noack, now) else {
        return created;
    };
    reply_entries(out, &read.entries);
    if r.noack {
        if !read.entries.is_empty() {
            let (last, n) = (read.last_id.to_string(), read.entries_read.to_string());
            let args: [&[u8]; 7] = [
                b"XGROUP",
                b"SETID",
                key,
                r.group,
                last.as_bytes(),
                b"ENTRIESREAD",
                n.as_bytes(),
            ];
            props.push(args.iter().map(|a| a.to_vec()).collect());
        }
    } else {
        for entry in &read.entries {
            let id = entry.id.to_string();
            let nack = (r.consumer, now, 1);
            props.push(claim_command(key, r.group, id.as_bytes(), nack, entry.id));
        }
    }
    created
}

/// What a blocked XREAD / XREADGROUP waits for.
#[derive(Clone, Debug)]
pub struct Wait {
    /// Per key of the waiter (in its order): the ID to read after (None: the group's).
    pub after: Vec<Option<StreamId>>,
    pub count: usize,
    /// XREADGROUP's group, consumer and NOACK.
    pub group: Option<(Vec<u8>, Vec<u8>, bool)>,
}

/// Serve a blocked XREAD / XREADGROUP from `key` (its lock held), as Redis's
/// serveClientsBlockedOnStreamKey: its reply into `out` and its propagated commands into
/// `ops`, or false to leave it waiting. An XREADGROUP whose group or stream is gone
/// gets Redis's error.
pub fn serve_waiter(
    keys: &mut Locked,
    wkeys: &[Vec<u8>],
    wait: &Wait,
    key: &[u8],
    out: &mut ReplyBuf,
    ops: &mut Vec<PropOp>,
) -> bool {
    let Some(i) = wkeys.iter().position(|k| k == key) else {
        return false;
    };
    let (db, now) = (keys.db(), keys.now());
    let header = |out: &mut ReplyBuf| {
        if out.resp3() {
            out.map(1);
        } else {
            out.array(1);
            out.array(2);
        }
        out.bulk(key);
    };
    let Some((group, consumer, noack)) = &wait.group else {
        let Ok(Some(s)) = coll::peek::<Stream>(keys, key) else {
            return false;
        };
        let gt = wait.after[i].unwrap_or(StreamId::MIN);
        if s.last_id() <= gt {
            return false;
        }
        header(out);
        let start = gt.incr().unwrap_or(StreamId::MIN);
        reply_entries(out, &s.range(start, StreamId::MAX, false, wait.count));
        return true;
    };
    let Ok(Some(mut e)) = coll::modify::<Stream>(keys, key, Event::NONE) else {
        out.error("UNBLOCKED the stream key no longer exists");
        return true;
    };
    let s = coll::get_mut::<Stream>(&mut e);
    let Some(g) = s.group(group) else {
        out.error("NOGROUP the consumer group this client was blocked on no longer exists");
        return true;
    };
    if s.last_id() <= g.last_id {
        return false;
    }
    header(out);
    let r = GroupRead {
        group,
        consumer,
        count: wait.count,
        noack: *noack,
    };
    let mut props = Vec::new();
    let created = read_new(s, key, &r, now, out, &mut props);
    drop(e);
    if created {
        keys.notify(key, group_ev("xgroup-createconsumer"));
    }
    for p in props {
        let args: Vec<&[u8]> = p.iter().map(|a| a.as_slice()).collect();
        ops.push((db, encode(&args)));
    }
    true
}

/// Reply the entries after `after[i]` of each stream that has some; false (nothing
/// written) when none has.
pub fn serve(ctx: &mut Ctx, keys: &[&[u8]], after: &[StreamId], count: usize) -> bool {
    let resp3 = ctx.out.resp3();
    let mut body = ReplyBuf::new(ctx.out.proto);
    let mut found = 0;
    for (key, gt) in keys.iter().zip(after) {
        let Ok(Some(s)) = coll::read::<Stream>(ctx.keys, key) else {
            continue;
        };
        if s.edge_id(false).is_none_or(|top| top <= *gt) {
            continue;
        }
        found += 1;
        if !resp3 {
            body.array(2);
        }
        body.bulk(key);
        let start = gt.incr().unwrap_or(StreamId::MIN);
        reply_entries(&mut body, &s.range(start, StreamId::MAX, false, count));
    }
    if found == 0 {
        return false;
    }
    if resp3 {
        ctx.out.map(found);
    } else {
        ctx.out.array(found);
    }
    ctx.out.raw(&body.out);
    true
}
