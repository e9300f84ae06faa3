//! XREAD (xreadCommand without a group).

use super::super::args::{self, is, SYNTAX_ERR};
use super::super::{coll, Ctx};
use super::{reply_entries, strict_id};
use engine::coll::stream::StreamId;
use engine::coll::Stream;
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
            i += 1;
            let ms =
                args::int(argv[i]).map_err(|_| "ERR timeout is not an integer or out of range")?;
            if ms < 0 {
                return Err("ERR timeout is negative".into());
            }
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
    // The keys are where the command's key spec says (the first STREAMS word); a group
    // or consumer named STREAMS before it would move them out of the locked set.
    if argv[1..].iter().position(|w| is(w, "streams")) != Some(at - 2) {
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
    let a = match parse(argv, false) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(&e),
    };
    // The IDs, resolved against the streams as they are now ($ = the last ID).
    let mut after = Vec::with_capacity(a.keys.len());
    for (key, id) in a.keys.iter().zip(&a.ids) {
        let s = match coll::read::<Stream>(&mut ctx.keys, key) {
            Ok(s) => s,
            Err(e) => return ctx.out.error(e),
        };
        if *id == b"$" {
            after.push(s.map_or(StreamId::MIN, |s| s.last_id()));
        } else if *id == b">" {
            return ctx.out.error(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            );
        } else {
            match strict_id(id) {
                Ok(id) => after.push(id),
                Err(e) => return ctx.out.error(e),
            }
        }
    }
    if !serve(ctx, &a.keys, &after, a.count) {
        // Nothing to serve: Skein answers as on a timeout (BLOCK is not served yet).
        ctx.out.null_array();
    }
}

/// Reply the entries after `after[i]` of each stream that has some; false (nothing
/// written) when none has.
pub fn serve(ctx: &mut Ctx, keys: &[&[u8]], after: &[StreamId], count: usize) -> bool {
    let resp3 = ctx.out.resp3();
    let mut body = ReplyBuf::new(ctx.out.proto);
    let mut found = 0;
    for (key, gt) in keys.iter().zip(after) {
        let Ok(Some(s)) = coll::read::<Stream>(&mut ctx.keys, key) else {
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
