//! XADD and XTRIM, with their trimming options (streamParseAddOrTrimArgsOrReply) and
//! propagated forms: the generated ID written in, and an approximate trim written as the
//! exact one it turned out to be.

use super::super::args::{self, is, SYNTAX_ERR};
use super::super::{coll, Ctx};
use super::{ev, strict_id, INVALID_ID};
use engine::coll::stream::{AddError, IdArg, NewId, StreamId, Trim};
use engine::coll::Stream;

/// What XADD/XTRIM parsed.
struct AddArgs {
    /// The ID argument's position (XADD).
    id_pos: usize,
    id: NewId,
    no_mkstream: bool,
    trim: Option<Trim>,
    /// Position of the MAXLEN/MINID argument (rewritten when propagating `~`).
    trim_arg: usize,
    approx: bool,
    limit: u64,
}

/// streamParseAddOrTrimArgsOrReply.
fn parse(argv: &[&[u8]], xadd: bool, node_max_entries: u64) -> Result<AddArgs, &'static str> {
    let mut a = AddArgs {
        id_pos: argv.len(),
        id: NewId::Auto,
        no_mkstream: false,
        trim: None,
        trim_arg: 0,
        approx: false,
        limit: 0,
    };
    let mut limit_given = false;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = argv[i];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if a.trim.is_some() {
                return Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
            }
            a.approx = false;
            let next = argv[i + 1];
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let arg = argv[i + 1];
            a.trim = Some(if is(opt, "maxlen") {
                let n = args::int(arg)?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.");
                }
                Trim::MaxLen(n as u64)
            } else {
                Trim::MinId(strict_id(arg)?)
            });
            i += 1;
            a.trim_arg = i;
        } else if is(opt, "limit") && more > 0 {
            let n = args::int(argv[i + 1])?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.");
            }
            a.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            a.no_mkstream = true;
        } else if xadd {
            a.id = match StreamId::parse_arg(opt, 0, true, true).ok_or(INVALID_ID)? {
                IdArg::Exact(id) => NewId::Exact(id),
                IdArg::AutoSeq(ms) => NewId::AutoSeq(ms),
            };
            break;
        } else {
            return Err(SYNTAX_ERR);
        }
        i += 1;
    }
    a.id_pos = i;
    if a.limit != 0 && a.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        );
    }
    if !xadd && a.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy");
    }
    if limit_given {
        if !a.approx {
            return Err("ERR syntax error, LIMIT cannot be used without the special ~ option");
        }
    } else if a.approx {
        a.limit = node_max_entries.saturating_mul(100);
        if a.limit == 0 {
            a.limit = 10_000;
        }
        a.limit = a.limit.min(1_000_000);
    } else {
        a.limit = 0;
    }
    Ok(a)
}

/// Trim `s` as parsed; returns the entries removed.
fn trim(s: &mut Stream, a: &AddArgs) -> u64 {
    match a.trim {
        Some(how) => s.trim(how, a.approx, a.limit),
        None => 0,
    }
}

/// Propagate an approximate trim as the exact one it turned out to be
/// (streamRewriteApproxSpecifier and streamRewriteTrimArgument): `=` and the length or
/// first ID it left.
fn propagate_exact_trim(p: &mut crate::propagate::PropagateAs, a: &AddArgs, s: &Stream) {
    p.set_arg(a.trim_arg - 1, b"=".to_vec());
    let value = match a.trim {
        Some(Trim::MaxLen(_)) => s.len().to_string().into_bytes(),
        _ => s.first_id_with_tombstones().text().as_bytes().to_vec(),
    };
    p.set_arg(a.trim_arg, value);
}

fn node_max_entries(ctx: &Ctx) -> u64 {
    ctx.srv.config.hot.coll_limits().stream_node_max_entries
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub fn xadd(ctx: &mut Ctx, argv: &[&[u8]]) {
    let lim = ctx.srv.config.hot.coll_limits();
    let a = match parse(argv, true, lim.stream_node_max_entries) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(e),
    };
    let fields_at = a.id_pos + 1;
    if fields_at > argv.len()
        || argv.len() - fields_at < 2
        || !(argv.len() - fields_at).is_multiple_of(2)
    {
        return ctx
            .out
            .error("ERR wrong number of arguments for 'xadd' command");
    }
    if a.id == NewId::Exact(StreamId::MIN) {
        return ctx
            .out
            .error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = argv[1];
    let pairs = &argv[fields_at..];
    let now = ctx.keys.now().max(0) as u64;
    let add = |s: &mut Stream| -> Result<(StreamId, u64), &'static str> {
        if s.last_id() == StreamId::MAX {
            return Err(
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            );
        }
        let id = s.append(a.id, pairs, now, &lim).map_err(|e| match e {
            AddError::NotGreater => {
                "ERR The ID specified in XADD is equal or smaller than the target stream top item"
            }
            AddError::SeqExhausted | AddError::TooLarge => {
                "ERR Elements are too large to be stored"
            }
        })?;
        Ok((id, trim(s, &a)))
    };
    let existing = match coll::modify::<Stream>(ctx.keys, key, ev("xadd")) {
        Err(e) => return ctx.out.error(e),
        Ok(Some(mut e)) => {
            let s = coll::get_mut::<Stream>(&mut e);
            let r = match add(s) {
                Ok(r) => r,
                Err(err) => return ctx.out.error(err),
            };
            if a.approx {
                propagate_exact_trim(&mut ctx.propagate, &a, s);
            }
            e.mark_changed();
            Some(r)
        }
        Ok(None) => None,
    };
    let (id, trimmed) = match existing {
        Some(r) => r,
        None if a.no_mkstream => return ctx.out.null(),
        None => {
            let mut s = Stream::new();
            let r = match add(&mut s) {
                Ok(r) => r,
                Err(err) => return ctx.out.error(err),
            };
            if a.approx {
                propagate_exact_trim(&mut ctx.propagate, &a, &s);
            }
            coll::insert(ctx.keys, key, s, ev("xadd"));
            r
        }
    };
    if trimmed > 0 {
        ctx.keys.notify(key, ev("xtrim").clean());
    }
    let text = id.text();
    ctx.out.bulk(text.as_bytes());
    if !matches!(a.id, NewId::Exact(_)) {
        ctx.propagate.set_arg(a.id_pos, text.as_bytes().to_vec());
    }
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
pub fn xtrim(ctx: &mut Ctx, argv: &[&[u8]]) {
    let a = match parse(argv, false, node_max_entries(ctx)) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(e),
    };
    let key = argv[1];
    let mut e = match coll::modify::<Stream>(ctx.keys, key, ev("xtrim")) {
        Err(e) => return ctx.out.error(e),
        Ok(None) => return ctx.out.int(0),
        Ok(Some(e)) => e,
    };
    let s = coll::get_mut::<Stream>(&mut e);
    let deleted = trim(s, &a);
    if deleted > 0 {
        if a.approx {
            propagate_exact_trim(&mut ctx.propagate, &a, s);
        }
        e.mark_changed();
    }
    drop(e);
    if deleted > 1 {
        ctx.keys.add_dirty(deleted - 1);
    }
    ctx.out.int(deleted as i64);
}
